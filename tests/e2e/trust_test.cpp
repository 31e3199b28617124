// A root tool the host can trust, end to end: a target's whole process tree is the run's (a
// daemon it leaves, a setsid grandchild) and goes with it at the end, on SIGINT, and after
// SIGKILL + `rig cleanup`; the target holds no descriptor of rig's; a run directory swapped for
// a link mid-run redirects no write; a killed rig's state makes `rig run` refuse with exit 5
// (or be undone first with --cleanup-first); no other user can reach rig's sockets.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <sstream>

#include "../helpers.hpp"
#include "core/failpoint_channel.hpp"
#include "core/journal.hpp"
#include "targets/control_client.hpp"

using namespace rig;
using namespace rig::testing;
namespace fs = std::filesystem;

namespace {

bool root() {
  if (::geteuid() == 0) return true;
  MESSAGE("skipped: needs root (cgroups, another user's identity)");
  return false;
}

// The pid a script wrote to `file`, with its start time, once it is there.
std::pair<pid_t, unsigned long long> pid_from(const std::string& file) {
  for (int i = 0; i < 300 && slurp(file).find('\n') == std::string::npos; ++i) ::usleep(10'000);
  pid_t p = 0;
  std::istringstream(slurp(file)) >> p;
  return {p, process_start_time(p)};
}

// (A start time of 0: it was gone already when its pid was read.)
bool same_process_alive(const std::pair<pid_t, unsigned long long>& p) {
  return p.first > 0 && p.second != 0 && process_start_time(p.first) == p.second;
}

// A scenario whose command target is `sh -c SCRIPT`; {rig} in the script is the rig binary.
void write_scenario(const std::string& path, const std::string& script, const std::string& last_phase = "1s") {
  std::string s = script;
  for (size_t at; (at = s.find("{rig}")) != std::string::npos;) s.replace(at, 5, RIG_BINARY);
  std::ofstream(path) << fmt::format(R"(name = "trust"
[target]
kind = "command"
run = ["/bin/sh", "-c", '''{}''']
ready_timeout = "5s"
[workloads.rr]
kind = "tcp"
connections = 1
rate = "100/s"
timeout = "1s"
[[phases]]
name = "baseline"
duration = "1s"
[[phases]]
name = "last"
duration = "{}"
)",
                                     s, last_phase);
}

// Runs a function in a child process with another user's identity; its exit code.
template <class F>
int as_user(uid_t uid, F fn) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) _exit(100);
    _exit(fn());
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

constexpr uid_t other_user = 54321;

// A built-in target under a tcp workload at 100/s, one phase.
void write_builtin_scenario(const std::string& path, const std::string& name, const std::string& phase,
                            const std::string& duration) {
  std::ofstream(path) << fmt::format(R"(name = "{}"
[target]
kind = "builtin"
[workloads.rr]
kind = "tcp"
connections = 1
rate = "100/s"
[[phases]]
name = "{}"
duration = "{}"
)",
                                     name, phase, duration);
}

}  // namespace

TEST_CASE("trust: a command target that daemonizes is refused, naming its foreground flag, and its daemon is gone") {
  if (!root()) return;
  temp_dir tmp;
  write_scenario(tmp.path + "/s.toml",
                 "setsid {rig} target --bind {host} --port {port} & echo $! > " + tmp.path + "/daemon.pid; exit 0");
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path + "/runs"}, tmp.path, 60'000,
                           {"RIG_STATE_DIR=" + tmp.path + "/state"});
  INFO(run.stdout_text() << run.err);
  const auto daemon = pid_from(tmp.path + "/daemon.pid");
  REQUIRE(daemon.first > 0);
  CHECK(run.code == 4);
  CHECK(run.err.find("daemonized") != std::string::npos);
  CHECK(run.err.find("foreground") != std::string::npos);
  CHECK(run.err.find("--daemonize no") != std::string::npos);
  CHECK_FALSE(same_process_alive(daemon));
  CHECK_FALSE(fs::exists(tmp.path + "/state"));
}

namespace {

enum class ending { normal, sigint, sigkill };

// The grandchild: a setsid sleep, or (escape) one that first writes itself into the root cgroup
// of every hierarchy on the host, as a root process can, so no cgroup of the run holds it.
void grandchild_ends_with_run(ending how, bool escape = false) {
  temp_dir tmp;
  const std::string state = tmp.path + "/state";
  const std::vector<std::string> env = {"RIG_STATE_DIR=" + state};
  const std::string grandchild =
      escape ? "(for m in $(awk '$3 ~ /^cgroup/ {print $2}' /proc/self/mounts); do echo 0 > $m/cgroup.procs; done; "
               "exec setsid sleep 300)"
             : "setsid sleep 300";
  write_scenario(tmp.path + "/s.toml",
                 grandchild + " & echo $! > " + tmp.path + "/gc.pid; exec {rig} target --bind {host} --port {port}",
                 how == ending::normal ? "1s" : "60s");
  const std::vector<std::string> args = {"run", tmp.path + "/s.toml", "--out", tmp.path + "/runs"};
  if (how == ending::normal) {
    const auto run = run_rig(args, tmp.path, 60'000, env);
    INFO(run.stdout_text() << run.err);
    CHECK(run.code == 0);
    const auto r = run.report();
    CHECK(r["target"]["cgroup"]["tree"]["path"].get<std::string>().find("/rig/run-") != std::string::npos);
    if (escape) {  // seen, said and ended
      std::string kinds;
      for (const auto& e : r["events"]) kinds += e["kind"].get<std::string>() + " ";
      INFO(kinds);
      CHECK(kinds.find("escaped ") != std::string::npos);
      CHECK(kinds.find("escaped_ended") != std::string::npos);
    }
  } else {
    auto rig = child_process::spawn({.argv = {RIG_BINARY, args[0], args[1], args[2], args[3]},
                                     .capture_stdout = true, .stderr_path = tmp.path + "/stderr.txt", .env = env});
    bool in_last = false;
    while (auto line = rig.read_line(30'000))
      if (line->find("▶ last") != std::string::npos) {
        in_last = true;
        break;
      }
    REQUIRE(in_last);
    REQUIRE(same_process_alive(pid_from(tmp.path + "/gc.pid")));
    ::kill(rig.pid(), how == ending::sigint ? SIGINT : SIGKILL);
    while (rig.read_line(20'000)) {
    }
    REQUIRE(rig.wait(20'000));
    if (how == ending::sigint) {
      CHECK(rig.exit_code() == 130);
    } else {
      const auto cleanup = run_rig({"cleanup"}, tmp.path, 60'000, env);
      INFO(cleanup.stdout_text() << cleanup.err);
      CHECK(cleanup.code == 0);
      // In the run's cgroup, the cgroup's kill ends it; outside every cgroup of the run, the
      // journal named it (by pid and start time).
      if (!escape) CHECK(cleanup.stdout_text().find("rig started was still in it: killed first") != std::string::npos);
      else
        CHECK(cleanup.stdout_text().find(fmt::format("process {}: killed", pid_from(tmp.path + "/gc.pid").first)) !=
              std::string::npos);
    }
  }
  const auto gc = pid_from(tmp.path + "/gc.pid");
  REQUIRE(gc.first > 0);
  for (int i = 0; i < 100 && same_process_alive(gc); ++i) ::usleep(10'000);
  CHECK_MESSAGE(!same_process_alive(gc), "the target's setsid grandchild outlived the run: pid ", gc.first);
  CHECK_FALSE(fs::exists(state));
}

}  // namespace

TEST_CASE("trust: a target's setsid grandchild ends with the run (normal end)") {
  if (root()) grandchild_ends_with_run(ending::normal);
}
TEST_CASE("trust: a target's setsid grandchild ends with the run (SIGINT)") {
  if (root()) grandchild_ends_with_run(ending::sigint);
}
TEST_CASE("trust: a target's setsid grandchild ends with the run (SIGKILL, then rig cleanup)") {
  if (root()) grandchild_ends_with_run(ending::sigkill);
}

// The kernel's process events follow the tree wherever it goes (root: they need CAP_NET_ADMIN).
TEST_CASE("trust: a target's child that moves itself to the root cgroup of every hierarchy ends with the run (normal end)") {
  if (root()) grandchild_ends_with_run(ending::normal, true);
}
TEST_CASE("trust: a target's child that moves itself to the root cgroup of every hierarchy ends with the run (SIGINT)") {
  if (root()) grandchild_ends_with_run(ending::sigint, true);
}
TEST_CASE("trust: a target's child that moves itself to the root cgroup of every hierarchy ends with the run (SIGKILL, then rig cleanup)") {
  if (root()) grandchild_ends_with_run(ending::sigkill, true);
}

TEST_CASE("trust: the target holds only its standard descriptors, and no shim or failpoint variable it does not need") {
  temp_dir tmp;
  // Printed to the target's own output (no redirection: a shell keeps a copy of a redirected fd).
  write_scenario(tmp.path + "/s.toml", "ls -l /proc/$$/fd; echo ENV; cat /proc/$$/environ; echo; echo END; "
                                       "exec {rig} target --bind {host} --port {port}");
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path + "/runs"}, tmp.path, 60'000,
                           {"RIG_STATE_DIR=" + tmp.path + "/state"});
  INFO(run.stdout_text() << run.err);
  REQUIRE(run.code == 0);
  std::set<int> fds;
  const std::string log = slurp(run.run_dir() + "/target.log");
  INFO(log);
  REQUIRE(log.find("ENV") != std::string::npos);
  const std::string listing = log.substr(0, log.find("ENV")), env = log.substr(log.find("ENV"), log.find("END"));
  std::istringstream in(listing);
  for (std::string line; std::getline(in, line);)
    if (const auto arrow = line.find(" -> "); arrow != std::string::npos) {
      const auto sp = line.rfind(' ', arrow - 1);
      fds.insert(std::stoi(line.substr(sp + 1, arrow - sp - 1)));
    }
  for (int fd : fds) CHECK_MESSAGE(fd <= 2, "descriptor ", fd, " of rig's reached the target");
  for (const char* var : {"LD_PRELOAD=", "RIG_SHIM_FD=", "RIG_FAILPOINT_SOCKET="})
    CHECK_MESSAGE(env.find(var) == std::string::npos, var, " is in the target's environment");
}

TEST_CASE("trust: a run directory swapped for a link mid-run: every file goes to the directory rig made") {
  temp_dir tmp;
  const std::string runs = tmp.path + "/runs", decoy = tmp.path + "/decoy";
  fs::create_directories(decoy);
  std::ofstream(decoy + "/report.json") << "precious";
  ::chmod((decoy + "/report.json").c_str(), 0600);
  std::ofstream(tmp.path + "/s.toml") << R"(name = "swap"
[target]
kind = "builtin"
wal = true
[workloads.rr]
kind = "tcp"
connections = 1
rate = "200/s"
[[phases]]
name = "baseline"
duration = "1s"
[[phases]]
name = "last"
duration = "2s"
)";
  auto rig = child_process::spawn({.argv = {RIG_BINARY, "run", tmp.path + "/s.toml", "--out", runs},
                                   .capture_stdout = true,
                                   .stderr_path = tmp.path + "/stderr.txt",
                                   .env = {"RIG_STATE_DIR=" + tmp.path + "/state"}});
  std::string out;
  bool started = false;
  while (auto line = rig.read_line(30'000)) {
    out += *line + "\n";
    if (line->find("▶ baseline") != std::string::npos) {
      started = true;
      break;
    }
  }
  REQUIRE(started);
  std::string made;
  for (const auto& e : fs::directory_iterator(runs)) made = e.path();
  REQUIRE_FALSE(made.empty());
  fs::rename(made, made + ".moved");
  fs::create_directory_symlink(decoy, made);
  while (auto line = rig.read_line(30'000)) out += *line + "\n";
  REQUIRE(rig.wait(30'000));
  INFO(out << slurp(tmp.path + "/stderr.txt"));
  CHECK(rig.exit_code() == 0);
  CHECK(slurp(decoy + "/report.json") == "precious");
  std::set<std::string> in_decoy;
  for (const auto& e : fs::directory_iterator(decoy)) in_decoy.insert(e.path().filename());
  CHECK(in_decoy == std::set<std::string>{"report.json"});
  for (const char* f : {"report.json", "report.html", "timeseries.csv", "scenario.toml", "target.log", "target.wal"})
    CHECK_MESSAGE(fs::exists(made + ".moved/" + f), f, " is not in the directory rig made");
  // The path printed is where the files are, not the name now holding the attacker's link.
  CHECK(out.find("report: " + made + ".moved/report.json") != std::string::npos);
  CHECK(out.find("report: " + made + "/report.json") == std::string::npos);
  const auto report = nlohmann::json::parse(slurp(made + ".moved/report.json"));
  CHECK(report["status"] == "ok");
}

TEST_CASE("trust: after a killed rig, rig run refuses with exit 5, and --cleanup-first undoes the dead rig's changes first") {
  temp_dir tmp;
  const std::string state = tmp.path + "/state";
  const std::vector<std::string> env = {"RIG_STATE_DIR=" + state};
  std::ofstream(tmp.path + "/s.toml") << R"(name = "stale"
[target]
kind = "builtin"
[workloads.rr]
kind = "tcp"
connections = 1
rate = "100/s"
[[phases]]
name = "baseline"
duration = "30s"
)";
  auto killed = child_process::spawn({.argv = {RIG_BINARY, "run", tmp.path + "/s.toml", "--out", tmp.path + "/runs"},
                                      .capture_stdout = true, .stderr_path = tmp.path + "/killed.txt", .env = env});
  bool running = false;
  while (auto line = killed.read_line(30'000))
    if (line->find("▶ baseline") != std::string::npos) {
      running = true;
      break;
    }
  REQUIRE(running);
  ::kill(killed.pid(), SIGKILL);
  REQUIRE(killed.wait(5000));
  REQUIRE(fs::exists(state));

  const std::vector<std::string> quick = {"run", tmp.path + "/s.toml", "--out", tmp.path + "/runs", "--set",
                                          "phases.baseline.duration=1s"};
  const auto refused = run_rig(quick, tmp.path, 60'000, env);
  INFO(refused.stdout_text() << refused.err);
  CHECK(refused.code == 5);
  CHECK(refused.err.find("rig cleanup") != std::string::npos);
  CHECK(refused.err.find("--cleanup-first") != std::string::npos);
  CHECK(fs::exists(state));
  // A suite refused the same way says in its JUnit what to run, not only "exit 5".
  const auto suite = run_rig({"suite", tmp.path + "/s.toml", "--out", tmp.path + "/suites", "--junit",
                              tmp.path + "/junit.xml", "--phase-duration", "1s"},
                             tmp.path, 60'000, env);
  CHECK(suite.code != 0);
  const std::string junit = slurp(tmp.path + "/junit.xml");
  INFO(junit);
  CHECK(junit.find("run `rig cleanup`") != std::string::npos);
  CHECK(junit.find("--cleanup-first") != std::string::npos);

  auto with_flag = quick;
  with_flag.push_back("--cleanup-first");
  const auto cleaned = run_rig(with_flag, tmp.path, 60'000, env);
  INFO(cleaned.stdout_text() << cleaned.err);
  CHECK(cleaned.code == 0);
  CHECK(cleaned.err.find(fmt::format("rig cleanup: rig pid {}", killed.pid())) != std::string::npos);
  CHECK(cleaned.err.find("removed") != std::string::npos);
  CHECK_FALSE(fs::exists(state));
}

TEST_CASE("trust: the failpoint channel refuses another user, in its 0700 directory and by its peer credentials") {
  if (!root()) return;
  temp_dir tmp;
  ::chmod(tmp.path.c_str(), 0755);
  ::setenv("RIG_STATE_DIR", (tmp.path + "/state").c_str(), 1);
  const scope_exit unset([] { ::unsetenv("RIG_STATE_DIR"); });
  failpoint_channel ch;
  struct stat st {};
  REQUIRE(::stat(ch.path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  auto connect_and_hello = [&] {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, ch.path().c_str(), sizeof a.sun_path - 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return errno == EACCES ? 10 : 11;
    const std::string hello = fmt::format("hello pid={}\n", ::getpid());
    (void)!::write(fd, hello.data(), hello.size());
    ::usleep(300'000);
    return 0;
  };
  CHECK(as_user(other_user, connect_and_hello) == 10);  // the directory is rig's user's alone
  // Even with the directory and the socket opened to everyone, the channel takes no other user.
  ::chmod((tmp.path + "/state").c_str(), 0755);
  ::chmod(ch.path().c_str(), 0777);
  CHECK(as_user(other_user, connect_and_hello) == 0);
  CHECK(ch.await_processes(200) == 0);
  CHECK(connect_and_hello() == 0);  // rig's own user is taken
  CHECK(ch.await_processes(200) == 1);
  ::chmod((tmp.path + "/state").c_str(), 0700);
}

TEST_CASE("trust: the built-in target's named control socket serves only its own user, a few connections at a time") {
  if (!root()) return;
  temp_dir tmp;
  const std::string name = fmt::format("@rig-trust-test-{}", ::getpid());
  auto target = child_process::spawn({.argv = {RIG_BINARY, "target", "--port", "0", "--control", name},
                                      .capture_stdout = true, .stderr_path = tmp.path + "/target.txt"});
  REQUIRE(target.read_line(10'000));
  auto attack = [&] {
    control_client c;
    try {
      c.connect(name, 1000);
      c.request("policy nodelay=0 sndbuf=1 rcvbuf=1");
      return 1;  // answered: the attack got through
    } catch (const std::exception&) {
      return 0;
    }
  };
  CHECK(as_user(other_user, attack) == 0);
  control_client mine;
  mine.connect(name, 2000);
  const std::string policy = mine.request("policy");
  INFO(policy);
  CHECK(policy.find("nodelay=0") == std::string::npos);  // nothing was set by the other user
  CHECK(policy.find("sndbuf=1 ") == std::string::npos);
  // Up to the bound, and no more: the next connection is closed unanswered.
  std::vector<std::unique_ptr<control_client>> held;
  for (int i = 1; i < 8; ++i) {
    held.push_back(std::make_unique<control_client>());
    held.back()->connect(name, 2000);
    CHECK(held.back()->request("stats").find("requests=") != std::string::npos);
  }
  control_client one_too_many;
  one_too_many.connect(name, 1000);
  CHECK_THROWS(one_too_many.request("stats"));
  held.pop_back();  // one goes: a new one is served again, once the target has seen it go
  // (~ms; tried every 100 ms for up to 5 s, as a sanitized target on a loaded machine is slower).
  std::string answer;
  for (int i = 0; i < 50 && answer.empty(); ++i) {
    ::usleep(100'000);
    control_client again;
    try {
      again.connect(name, 2000);
      answer = again.request("stats");
    } catch (const std::exception&) {
    }
  }
  CHECK(answer.find("requests=") != std::string::npos);
}

TEST_CASE("trust: every writer refuses a link another user planted in a shared sticky directory, and the file it leads to is untouched") {
  if (!root()) return;
  temp_dir tmp;
  ::chmod(tmp.path.c_str(), 0755);
  const std::string shared = tmp.path + "/shared";  // as /tmp is: every user may make names, sticky
  fs::create_directory(shared);
  ::chmod(shared.c_str(), 01777);
  const std::string victim = tmp.path + "/victim";  // root's own 0600 file
  std::ofstream(victim) << "precious";
  ::chmod(victim.c_str(), 0600);
  auto plant = [&](const std::string& name) {
    const std::string at = shared + "/" + name;
    REQUIRE(as_user(other_user, [&] { return ::symlink(victim.c_str(), at.c_str()) == 0 ? 0 : 1; }) == 0);
    return at;
  };
  write_builtin_scenario(tmp.path + "/s.toml", "files", "only", "1s");
  const std::string runs = tmp.path + "/runs";
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", runs}, tmp.path);
  REQUIRE(run.code == 0);
  const std::string dir = run.run_dir();
  struct writer {
    std::vector<std::string> args;
    std::string planted;
  };
  const std::string hlog = plant("files-rr.latency.hlog"), history = plant("history.json");
  const std::vector<writer> writers = {
      {{"run", tmp.path + "/s.toml", "--out", runs, "--junit", plant("run.xml")}, shared + "/run.xml"},
      {{"suite", tmp.path + "/s.toml", "--out", runs, "--junit", plant("suite.xml")}, shared + "/suite.xml"},
      {{"export", dir, "--format", "openmetrics", "--out", plant("metrics.txt")}, shared + "/metrics.txt"},
      {{"export", dir, "--format", "hdr-log", "--out", shared}, hlog},
      {{"compare", dir, dir, "--out", plant("compare.html")}, shared + "/compare.html"},
      {{"compare", dir, dir, "--out", tmp.path + "/c.html", "--fail-if", "p99 > 100x", "--junit", plant("compare.xml")}, shared + "/compare.xml"},
      {{"history", runs, "--out", shared}, history},
  };
  for (const auto& w : writers) {
    const auto r = run_rig(w.args, tmp.path, 60'000);
    INFO(w.args[0] << " " << w.args[w.args.size() - 2] << " " << w.args.back() << ": exit " << r.code << "\n"
                   << r.stdout_text() << r.err);
    CHECK(r.code == 2);  // refused before anything is written (compare --junit too)
    CHECK(r.err.find(w.planted + " is a symbolic link") != std::string::npos);
    CHECK(slurp(victim) == "precious");
    CHECK(fs::is_symlink(w.planted));
  }
  // A link at a directory of the path: the other user's link into root's own 0700 directory.
  // Every writer followed it (root's history.json replaced; run directories made inside).
  const std::string vault = tmp.path + "/vault";
  fs::create_directory(vault);
  ::chmod(vault.c_str(), 0700);
  std::ofstream(vault + "/history.json") << "precious";
  ::chmod((vault + "/history.json").c_str(), 0600);
  const std::string via = shared + "/L";
  REQUIRE(as_user(other_user, [&] { return ::symlink(vault.c_str(), via.c_str()) == 0 ? 0 : 1; }) == 0);
  const std::vector<std::vector<std::string>> through_dir = {
      {"run", tmp.path + "/s.toml", "--out", runs, "--junit", via + "/run.xml"},
      {"run", tmp.path + "/s.toml", "--run-dir", via + "/r1"},
      {"run", tmp.path + "/s.toml", "--out", via},
      {"suite", tmp.path + "/s.toml", "--out", via},
      {"export", dir, "--format", "openmetrics", "--out", via + "/m.txt"},
      {"export", dir, "--format", "hdr-log", "--out", via},
      {"compare", dir, dir, "--out", via + "/c.html"},
      {"history", runs, "--out", via},
  };
  for (const auto& args : through_dir) {
    const auto r = run_rig(args, tmp.path, 60'000);
    INFO(args[0] << " " << args.back() << ": exit " << r.code << "\n" << r.stdout_text() << r.err);
    CHECK(r.code != 0);
    CHECK(r.err.find(via + " is a symbolic link of uid " + std::to_string(other_user) + " to a directory of uid 0") !=
          std::string::npos);
  }
  CHECK(slurp(vault + "/history.json") == "precious");
  size_t in_vault = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(vault)) ++in_vault;
  CHECK(in_vault == 1);
  // Paths a scenario gives that rig (or its target) writes: the built-in target's WAL and the
  // disk workload's file, each a link the other user planted to root's own file.
  const std::string wal = plant("wal.log"), disk = plant("disk.dat");
  std::ofstream(tmp.path + "/wal.toml") << fmt::format(R"(name = "wal"
[target]
kind = "builtin"
wal = true
wal_path = "{}"
[workloads.rr]
kind = "tcp"
connections = 1
rate = "50/s"
[[phases]]
name = "only"
duration = "1s"
)",
                                                       wal);
  std::ofstream(tmp.path + "/disk.toml") << fmt::format(R"(name = "disk"
[target]
kind = "builtin"
[workloads.d]
kind = "disk"
path = "{}"
mode = "write"
direct = false
rate = "10/s"
[[phases]]
name = "only"
duration = "1s"
)",
                                                        disk);
  for (const auto& [file, key] : {std::pair{"/wal.toml", "wal_path"}, {"/disk.toml", "'path'"}}) {
    const auto r = run_rig({"run", tmp.path + file, "--out", runs}, tmp.path, 60'000);
    INFO(file << ": exit " << r.code << "\n" << r.stdout_text() << r.err);
    CHECK(r.code != 0);
    CHECK(r.stdout_text().find("status: ok") == std::string::npos);
    CHECK((r.stdout_text() + r.err).find(" is a symbolic link") != std::string::npos);
    CHECK(slurp(victim) == "precious");
  }
  struct stat st {};
  REQUIRE(::stat(victim.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(st.st_uid == 0);
}

TEST_CASE("trust: control characters in a report's names reach no terminal raw: they are shown escaped") {
  temp_dir tmp;
  write_builtin_scenario(tmp.path + "/s.toml", "names", "only", "1s");
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path + "/runs"}, tmp.path);
  REQUIRE(run.code == 0);
  // A report edited by someone else: an escape sequence (clear the screen, a title) in its names.
  auto r = nlohmann::json::parse(slurp(run.run_dir() + "/report.json"));
  const std::string esc = "\x1b[2J\x1b]0;owned\x07";
  r["scenario"]["name"] = "names" + esc;
  r["phases"][0]["name"] = "only" + esc;
  r["expectations"] = nlohmann::json::array({{{"expr", "x" + esc}, {"ok", false}, {"actual", "1\r\xc2\x9b"}}});
  std::ofstream(run.run_dir() + "/report.json") << r.dump();
  // A run directory another user named with an escape sequence, in a history directory.
  fs::copy(run.run_dir(), tmp.path + "/runs/C" + esc, fs::copy_options::recursive);
  for (const auto& args : std::vector<std::vector<std::string>>{{"compare", run.run_dir(), run.run_dir(), "--out",
                                                                  tmp.path + "/c.html"},
                                                                 {"report", run.run_dir()},
                                                                 {"history", tmp.path + "/runs", "--out", tmp.path}}) {
    const auto out = run_rig(args, tmp.path);
    INFO(args[0] << ": exit " << out.code << "\n" << out.stdout_text() << out.err);
    CHECK(out.code == 0);
    const std::string all = out.stdout_text() + out.err;
    CHECK(all.find('\x1b') == std::string::npos);
    CHECK(all.find('\x07') == std::string::npos);
    CHECK(all.find('\r') == std::string::npos);
    CHECK(all.find("\xc2\x9b") == std::string::npos);
    if (args[0] != "report") CHECK(all.find("\\x1b[2J") != std::string::npos);  // said, visibly
  }
}

TEST_CASE("trust: SIGTERM then SIGINT exits 143 every time, before the phases and in one") {
  temp_dir tmp;
  write_builtin_scenario(tmp.path + "/s.toml", "signals", "baseline", "30s");
  // Both pending when rig looks (sent as it starts): the kernel hands SIGINT first, the lower
  // number; it exited 130 then. In a phase: SIGTERM is taken at once, SIGINT waits behind it.
  for (const char* when : {"rig ", "rig ", "rig ", "▶ baseline"}) {
    auto rig = child_process::spawn({.argv = {RIG_BINARY, "run", tmp.path + "/s.toml", "--out", tmp.path + "/runs"},
                                     .capture_stdout = true,
                                     .stderr_path = tmp.path + "/stderr.txt"});
    bool seen = false;
    while (auto line = rig.read_line(30'000))
      if (line->find(when) != std::string::npos) {
        seen = true;
        break;
      }
    REQUIRE(seen);
    ::kill(rig.pid(), SIGTERM);
    ::kill(rig.pid(), SIGINT);
    while (rig.read_line(30'000)) {
    }
    REQUIRE(rig.wait(30'000));
    INFO(when << ": " << slurp(tmp.path + "/stderr.txt"));
    CHECK(rig.exit_code() == 143);
  }
}
