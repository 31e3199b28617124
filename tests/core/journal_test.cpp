// The journal of host changes, replayed by `rig cleanup` after the rig that wrote it died
// without undoing them, and the promises that make that replay safe on a shared host: records
// name their objects so a reused number never matches (pid + start time, a namespace never by
// its inode alone, a journal by its rig's pid + start time), every record is checked against
// what rig could have made before it is acted on, paths are encoded, and the state directory
// is one no one else controls. Tampered records are tried on decoys the test owns only.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <sstream>

#include "../helpers.hpp"
#include "core/cgroup.hpp"
#include "core/cpufreq.hpp"
#include "core/failpoint_channel.hpp"
#include "core/journal.hpp"
#include "core/netns.hpp"
#include "core/process.hpp"

using namespace rig;
using rig::testing::slurp;
using rig::testing::temp_dir;
namespace fs = std::filesystem;

namespace {

// An environment variable set for this test only.
struct scoped_env {
  std::string name;
  explicit scoped_env(const char* n, const std::string& value) : name(n) { ::setenv(n, value.c_str(), 1); }
  ~scoped_env() { ::unsetenv(name.c_str()); }
};

// RIG_STATE_DIR set for this test only.
struct private_state_dir : scoped_env {
  std::string path;
  explicit private_state_dir(const std::string& p) : scoped_env("RIG_STATE_DIR", p), path(p) {}
};

// A killed rig: SIGKILL, with no destructor and no revert.
[[noreturn]] void killed() {
  ::kill(::getpid(), SIGKILL);
  _exit(9);
}

// Runs fn (which ends with killed()) in a forked child. Returns the child's pid (reaped).
template <class F>
pid_t die_after(F fn) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    try {
      fn();
    } catch (...) {
      _exit(3);
    }
    _exit(4);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  return pid;
}

// A journal as a killed rig left it, with these records (written through the journal itself).
pid_t plant(const std::vector<std::string>& records) {
  return die_after([&] {
    for (const auto& r : records) journal::self().record(r);
    killed();
  });
}

bool alive(pid_t pid) { return process_start_time(pid) != 0; }

std::string all_lines(const replay_result& r) { return fmt::format("{}", fmt::join(r.lines, "\n")); }

bool root() {
  if (::geteuid() == 0) return true;
  MESSAGE("skipped: needs root");
  return false;
}

// A process of the test's own, in a session of its own (as a `setsid` child would be).
child_process decoy_process() { return child_process::spawn({.argv = {"/bin/sleep", "300"}}); }

// The next fork() gets pid `want` (forced through ns_last_pid); the child runs `argv` in a
// session of its own. Tries a few times, as other processes may take the number first.
pid_t fork_with_pid(pid_t want, const char* program) {
  // Start times count in clock ticks: the new process must not start in the old one's tick.
  ::usleep(30'000);
  for (int attempt = 0; attempt < 50; ++attempt) {
    {
      std::ofstream last("/proc/sys/kernel/ns_last_pid");
      last << want - 1;
    }
    const pid_t p = ::fork();
    if (p == 0) {
      ::setsid();
      ::execl(program, program, "300", nullptr);
      _exit(127);
    }
    if (p == want) {
      for (int i = 0; i < 200 && slurp("/proc/" + std::to_string(p) + "/comm") != "sleep\n"; ++i) ::usleep(5000);
      return p;
    }
    ::kill(p, SIGKILL);
    ::waitpid(p, nullptr, 0);
  }
  return -1;
}

}  // namespace

TEST_CASE("journal: fields are percent-encoded so no byte of a path can change a record") {
  CHECK(encode_field("/run/rig dir/fp-1-1.sock") == "/run/rig%20dir/fp-1-1.sock");
  CHECK(encode_field("a\nb%c\x7f") == "a%0Ab%25c%7F");
  for (const std::string raw : {"", "plain", "sp ace", "new\nline", "100%", "tab\there", "\xff\x01"})
    CHECK(decode_field(encode_field(raw)) == raw);
  CHECK_FALSE(decode_field("bad%2"));
  CHECK_FALSE(decode_field("bad%zz"));
  CHECK(journal_line("restore", {"/a b/c", "42"}) == "restore /a%20b/c 42");
}

TEST_CASE("journal: a killed rig's cpufreq files are written back by replay, max before min, and the speed") {
  temp_dir tmp;
  private_state_dir state(tmp.path + "/state");
  scoped_env root("RIG_CPUFREQ_ROOT", tmp.path);  // the tree the test made stands for sysfs
  const std::string d = tmp.path + "/cpu0/cpufreq";
  fs::create_directories(d);
  std::ofstream(d + "/cpuinfo_max_freq") << "3000000\n";
  std::ofstream(d + "/cpuinfo_min_freq") << "800000\n";
  std::ofstream(d + "/scaling_max_freq") << "2800000\n";
  std::ofstream(d + "/scaling_min_freq") << "2000000\n";
  std::ofstream(d + "/scaling_governor") << "userspace\n";
  std::ofstream(d + "/scaling_setspeed") << "2500000\n";

  const pid_t dead = die_after([&] {
    cpufreq_pin pin(tmp.path);
    pin.pin({0}, 1'000'000);
    killed();
  });
  CHECK(slurp(d + "/scaling_max_freq") == "1000000");  // what the killed rig left
  CHECK(slurp(d + "/scaling_setspeed") == "1000000");

  const auto stale = stale_journals();
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].pid == dead);
  CHECK(stale[0].problem.empty());
  REQUIRE(stale[0].pending.size() == 3);
  CHECK(stale[0].pending[0].line == 2);  // the first line says whose journal it is
  const auto r = replay(stale[0]);
  INFO(all_lines(r));
  CHECK(r.complete);
  REQUIRE(r.lines.size() == 3);
  CHECK(r.lines[0].find("scaling_max_freq: \"2800000\" written back") != std::string::npos);
  CHECK(r.lines[1].find("scaling_min_freq: \"2000000\" written back") != std::string::npos);
  CHECK(r.lines[2].find("scaling_setspeed: \"2500000\" written back") != std::string::npos);
  CHECK(slurp(d + "/scaling_max_freq") == "2800000");
  CHECK(slurp(d + "/scaling_min_freq") == "2000000");
  CHECK(slurp(d + "/scaling_setspeed") == "2500000");
  CHECK_FALSE(fs::exists(state.path));  // the journal and the state directory went
  CHECK(stale_journals().empty());
}

TEST_CASE("journal: cpufreq restore records through the kernel's policy links are replayed, and a link elsewhere is refused") {
  // Current kernels: cpuN/cpufreq is a link to ../cpufreq/policyM, the policy CPU N belongs to.
  // rig writes through the link and journals the path it wrote; the replay resolves the link,
  // and writes only a policy's own file of a policy that covers that CPU.
  temp_dir tmp;
  private_state_dir state(tmp.path + "/state");
  scoped_env root("RIG_CPUFREQ_ROOT", tmp.path);
  const std::string policy = tmp.path + "/cpufreq/policy0";
  fs::create_directories(policy);
  std::ofstream(policy + "/cpuinfo_max_freq") << "3000000\n";
  std::ofstream(policy + "/cpuinfo_min_freq") << "800000\n";
  std::ofstream(policy + "/scaling_max_freq") << "2800000\n";
  std::ofstream(policy + "/scaling_min_freq") << "2000000\n";
  std::ofstream(policy + "/scaling_governor") << "schedutil\n";
  std::ofstream(policy + "/related_cpus") << "0\n";
  fs::create_directories(tmp.path + "/cpu0");
  fs::create_directory_symlink("../cpufreq/policy0", tmp.path + "/cpu0/cpufreq");
  // Decoys: cpu1's cpufreq leads outside any policy; cpu2's to a policy that does not cover it.
  const std::string decoy = tmp.path + "/decoy";
  fs::create_directories(decoy);
  std::ofstream(decoy + "/scaling_max_freq") << "keep me";
  fs::create_directories(tmp.path + "/cpu1");
  fs::create_directory_symlink("../decoy", tmp.path + "/cpu1/cpufreq");
  fs::create_directories(tmp.path + "/cpu2");
  fs::create_directory_symlink("../cpufreq/policy0", tmp.path + "/cpu2/cpufreq");

  die_after([&] {
    cpufreq_pin pin(tmp.path);
    pin.pin({0}, 1'000'000);
    journal::self().record(journal_line("restore", {tmp.path + "/cpu1/cpufreq/scaling_max_freq", "1"}));
    journal::self().record(journal_line("restore", {tmp.path + "/cpu2/cpufreq/scaling_max_freq", "2"}));
    killed();
  });
  CHECK(slurp(policy + "/scaling_max_freq") == "1000000");  // what the killed rig left
  const auto stale = stale_journals();
  REQUIRE(stale.size() == 1);
  const auto r = replay(stale[0]);
  INFO(all_lines(r));
  CHECK_FALSE(r.complete);  // the two decoy records are refused
  CHECK(all_lines(r).find("cpu1/cpufreq/scaling_max_freq") != std::string::npos);
  CHECK(all_lines(r).find("which is not scaling_max_freq of a cpufreq policy covering cpu1") != std::string::npos);
  CHECK(all_lines(r).find("which is not scaling_max_freq of a cpufreq policy covering cpu2") != std::string::npos);
  CHECK(all_lines(r).find("scaling_max_freq: \"2800000\" written back") != std::string::npos);
  CHECK(slurp(policy + "/scaling_max_freq") == "2800000");
  CHECK(slurp(policy + "/scaling_min_freq") == "2000000");
  CHECK(slurp(decoy + "/scaling_max_freq") == "keep me");
  fs::remove(stale[0].path);
}

TEST_CASE("journal: a pid out of range refuses its record and the replay goes on (never aborted, never cut to another pid)") {
  temp_dir tmp;
  private_state_dir state(tmp.path + "/state");
  auto victim = decoy_process();  // the record after the bad ones: replayed, so the replay went on
  const auto start = process_start_time(victim.pid());
  plant({journal_line("process", {std::to_string(victim.pid()), std::to_string(start)}),
         journal_line("process", {"9999999999999999999", "1"}),  // 19 digits: stol threw, and the cleanup ended
         journal_line("process", {"4294967297", "1"}),           // 2^32 + 1: cut to pid 1 before
         journal_line("netns", {"99999999999999999999"})});
  const auto stale = stale_journals();
  REQUIRE(stale.size() == 1);
  const auto r = replay(stale[0]);
  INFO(all_lines(r));
  CHECK_FALSE(r.complete);
  CHECK(all_lines(r).find("the pid 9999999999999999999 is out of range (at most 4194304)") != std::string::npos);
  CHECK(all_lines(r).find("the pid 4294967297 is out of range") != std::string::npos);
  CHECK(all_lines(r).find("REFUSED") != std::string::npos);
  CHECK(all_lines(r).find(fmt::format("process {}: killed", victim.pid())) != std::string::npos);
  CHECK_FALSE(victim.running());
  fs::remove(stale[0].path);
}

TEST_CASE("journal: replay kills the process it names by pid and start time, and nothing of its group") {
  temp_dir tmp;
  private_state_dir state(tmp.path + "/state");
  // The killed "rig" starts a journaled shell that starts a grandchild, then stops itself (as
  // the pause injector leaves a target). Both ignore the SIGTERM the rig's death sends.
  const std::string pids = tmp.path + "/pids";
  die_after([&] {
    auto c = child_process::spawn(
        {.argv = {"/bin/sh", "-c", "trap '' HUP TERM; sleep 300 & echo $$ $! > " + pids + "; kill -STOP $$; wait"},
         .journaled = true});
    for (int i = 0; i < 200 && slurp(pids).find('\n') == std::string::npos; ++i) ::usleep(10'000);
    killed();
  });
  pid_t shell = 0, grandchild = 0;
  std::istringstream(slurp(pids)) >> shell >> grandchild;
  REQUIRE(shell > 0);
  REQUIRE(grandchild > 0);
  const auto grandchild_start = process_start_time(grandchild);
  CHECK(alive(shell));  // what a killed rig leaves on the host
  CHECK(alive(grandchild));

  auto stale = stale_journals();
  REQUIRE(stale.size() == 1);
  REQUIRE(stale[0].pending.size() == 1);
  CHECK(stale[0].pending[0].text == fmt::format("process {} {}", shell, process_start_time(shell)));
  const auto r = replay(stale[0]);
  INFO(all_lines(r));
  CHECK(r.complete);
  CHECK(r.lines[0] == fmt::format("process {}: killed", shell));
  CHECK_FALSE(alive(shell));
  // Outside a cgroup of the run, what it started cannot be proven rig's: untouched (a
  // target's tree is followed through its cgroup; see the cgroup tests and the e2e runs).
  CHECK(alive(grandchild));
  CHECK(kill_process_if_same(grandchild, grandchild_start) == kill_outcome::killed);
  CHECK(stale_journals().empty());
}

TEST_CASE("journal: a process whose pid passed to a new session leader is left alone (pid reuse via ns_last_pid)") {
  if (!root()) return;
  temp_dir tmp;
  private_state_dir state(tmp.path + "/state");
  // The killed rig's target died with it; its number goes to a `setsid sleep` of someone else.
  pid_t target = 0;
  unsigned long long target_start = 0;
  const std::string pid_file = tmp.path + "/target";
  const pid_t dead = die_after([&] {
    auto c = child_process::spawn({.argv = {"/bin/sleep", "0.2"}, .journaled = true});
    std::ofstream(pid_file) << c.pid() << " " << process_start_time(c.pid());
    killed();
  });
  std::istringstream(slurp(pid_file)) >> target >> target_start;
  REQUIRE(target > 0);
  for (int i = 0; i < 300 && fs::exists("/proc/" + std::to_string(target)); ++i) ::usleep(10'000);  // ends, reaped
  const pid_t other = fork_with_pid(target, "/bin/sleep");
  if (other < 0) {
    MESSAGE("skipped: pid " << target << " could not be had again through ns_last_pid");
    return;
  }
  const scope_exit stop_other([&] {
    ::kill(other, SIGKILL);
    ::waitpid(other, nullptr, 0);
  });
  CHECK(::kill(-other, 0) == 0);  // a process group of that number exists: the old guard accepted it
  auto stale = stale_journals();
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].pid == dead);
  const auto r = replay(stale[0]);
  INFO(all_lines(r));
  CHECK(r.complete);
  REQUIRE(r.lines.size() == 1);
  CHECK(r.lines[0].find("already gone") != std::string::npos);
  CHECK(r.lines[0].find("left alone") != std::string::npos);
  ::usleep(50'000);
  CHECK(alive(other));
}

TEST_CASE("journal: a journal whose rig's pid now belongs to another process is still replayed") {
  if (!root()) return;
  temp_dir tmp;
  private_state_dir state(tmp.path + "/state");
  const std::string f = state.path + "/fp-1-1.sock";
  const pid_t dead = die_after([&] {
    failpoint_channel ch;  // a socket in the state directory, journaled
    killed();
  });
  REQUIRE(stale_journals().size() == 1);
  const pid_t other = fork_with_pid(dead, "/bin/sleep");
  if (other < 0) {
    MESSAGE("skipped: pid " << dead << " could not be had again through ns_last_pid");
    return;
  }
  const scope_exit stop_other([&] {
    ::kill(other, SIGKILL);
    ::waitpid(other, nullptr, 0);
  });
  auto stale = stale_journals();  // the pid is alive, but it is not the rig that wrote the journal
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].pid == dead);
  const auto r = replay(stale[0]);
  INFO(all_lines(r));
  CHECK(r.complete);
  CHECK(stale_journals().empty());
  CHECK(alive(other));
}

TEST_CASE("journal: a namespace whose inode was handed to another namespace is never entered or emptied") {
  if (!root() || !rig::testing::can_make_netns()) return;
  temp_dir tmp;
  private_state_dir state(tmp.path + "/state");
  unsigned long ino = 0;
  const std::string ino_file = tmp.path + "/ino";
  die_after([&] {
    netns ns = netns::create();
    journal::self().record(journal_line("netns", {std::to_string(ns.inode())}));
    std::ofstream(ino_file) << ns.inode();
    killed();
  });
  std::istringstream(slurp(ino_file)) >> ino;
  // Someone else's namespace, with a process in it: the kernel gives it the freed number at once.
  netns other = netns::create();
  MESSAGE("the freed namespace's inode " << std::string(other.inode() == ino ? "was" : "was not")
                                         << " handed to the next one");
  auto sleeper = child_process::spawn({.argv = {"/bin/sleep", "300"}, .netns_fd = other.fd()});
  auto stale = stale_journals();
  REQUIRE(stale.size() == 1);
  if (other.inode() != ino) {
    // The same situation, made certain: the record names the other namespace's number.
    plant({journal_line("netns", {std::to_string(other.inode())})});
    for (const auto& j : stale) replay(j);
    stale = stale_journals();
    REQUIRE(stale.size() == 1);
  }
  const auto r = replay(stale[0]);
  INFO(all_lines(r));
  CHECK(r.complete);
  CHECK(r.lines[0].find("left alone") != std::string::npos);
  ::usleep(50'000);
  CHECK(sleeper.running());
}

TEST_CASE("journal: records outside rig's domain are refused with their line number, and their decoys untouched") {
  temp_dir tmp;
  private_state_dir state(tmp.path + "/state");
  // Decoys the test owns: a process, a file, a directory posing as a cgroup that lists the process.
  auto victim = decoy_process();
  const std::string decoy_file = tmp.path + "/precious";
  std::ofstream(decoy_file) << "keep me";
  const std::string fake_cgroup = tmp.path + "/rig/run-1-1-1";
  fs::create_directories(fake_cgroup);
  std::ofstream(fake_cgroup + "/cgroup.procs") << victim.pid() << "\n";
  fs::create_directories(state.path);
  ::chmod(state.path.c_str(), 0700);
  // A socket-looking name in the state directory that is a link to the decoy.
  fs::create_symlink(decoy_file, state.path + "/fp-9-9.sock");
  const auto victim_start = process_start_time(victim.pid());
  const std::vector<std::string> tampered = {
      journal_line("cgroup", {fake_cgroup}),                       // not on a cgroupfs
      journal_line("cgroup", {"/sys/fs/cgroup/memory/rig/../x"}),  // a '..' component
      journal_line("file", {decoy_file}),                          // outside the state directory
      journal_line("file", {state.path + "/fp-9-9.sock"}),         // not a socket
      journal_line("restore", {decoy_file, "0"}),                  // not a cpufreq file
      journal_line("restore", {"/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq", "x y"}),  // not a number
      journal_line("subtree", {tmp.path, "memory"}),  // not a cgroup2 mount point
      // pid 1 and 0 (with a start time no process has, so even a missing check could not reach them)
      journal_line("process", {"1", std::to_string(process_start_time(1) + 12345)}),
      journal_line("process", {"0", "1"}),
      journal_line("process", {"-1", "1"}),
      journal_line("netns", {"abc"}),
      "frobnicate something",
      fmt::format("process {} {} extra", victim.pid(), victim_start),  // one field too many
      "file " + tmp.path + "/a b",                                     // an unencoded space
      "file %zz",                                                      // a malformed escape
  };
  plant(tampered);
  auto stale = stale_journals();
  REQUIRE(stale.size() == 1);
  REQUIRE(stale[0].pending.size() == tampered.size());
  const auto r = replay(stale[0]);
  INFO(all_lines(r));
  CHECK_FALSE(r.complete);
  REQUIRE(r.lines.size() == tampered.size());
  for (size_t i = 0; i < tampered.size(); ++i) {
    const auto& line = r.lines[tampered.size() - 1 - i];  // replayed last first
    CHECK_MESSAGE(line.rfind(fmt::format("line {}: REFUSED", i + 2), 0) == 0, line);
  }
  CHECK(victim.running());
  CHECK(slurp(decoy_file) == "keep me");
  CHECK(fs::is_symlink(state.path + "/fp-9-9.sock"));
  CHECK(fs::exists(fake_cgroup));
  CHECK(fs::exists(stale[0].path));  // kept, for a person to read
  fs::remove(stale[0].path);
}

TEST_CASE("journal: a cgroup record on a real cgroupfs is refused unless it is this journal's run cgroup") {
  if (!root()) return;
  const auto layout = cgroup_layout::detect();
  const auto* tree = layout.find("tree");
  if (!tree) {
    MESSAGE("skipped: no cgroup hierarchy here (" << layout.describe() << ")");
    return;
  }
  temp_dir tmp;
  private_state_dir state(tmp.path + "/state");
  // Decoy cgroups the test makes: one beside rig/, one in rig/ named for another rig.
  const std::string beside = tree->mount + "/rig-test-decoy-" + std::to_string(::getpid());
  const std::string other_run = tree->mount + "/rig/run-1-1-" + std::to_string(::getpid());
  REQUIRE(::mkdir(beside.c_str(), 0755) == 0);
  ::mkdir((tree->mount + "/rig").c_str(), 0755);
  REQUIRE(::mkdir(other_run.c_str(), 0755) == 0);
  auto in_beside = child_process::spawn({.argv = {"/bin/sleep", "300"}, .cgroup_procs = {beside + "/cgroup.procs"}});
  auto in_other = child_process::spawn({.argv = {"/bin/sleep", "300"}, .cgroup_procs = {other_run + "/cgroup.procs"}});
  const scope_exit cleanup([&] {
    in_beside.stop();
    in_other.stop();
    remove_cgroup_dir(beside);
    remove_cgroup_dir(other_run);
    ::rmdir((tree->mount + "/rig").c_str());
  });
  plant({journal_line("cgroup", {beside}), journal_line("cgroup", {other_run})});
  const auto stale = stale_journals();
  REQUIRE(stale.size() == 1);
  const auto r = replay(stale[0]);
  INFO(all_lines(r));
  CHECK_FALSE(r.complete);
  REQUIRE(r.lines.size() == 2);
  CHECK(r.lines[0].find("REFUSED, not a run cgroup of this journal's rig") != std::string::npos);
  CHECK(r.lines[1].find("REFUSED, not a directory in rig/") != std::string::npos);
  CHECK(in_beside.running());
  CHECK(in_other.running());
  fs::remove(stale[0].path);
}

TEST_CASE("journal: a state directory with a space: the record names the whole path, and replay removes that file") {
  temp_dir tmp;
  private_state_dir state(tmp.path + "/state dir");
  const std::string first_word = tmp.path + "/state";  // what a split on whitespace would remove
  std::ofstream(first_word) << "keep me";
  std::string sock;
  const std::string name_file = tmp.path + "/sock";
  die_after([&] {
    failpoint_channel ch;
    std::ofstream(name_file) << ch.path();
    killed();
  });
  sock = slurp(name_file);
  REQUIRE(fs::exists(sock));
  const auto stale = stale_journals();
  REQUIRE(stale.size() == 1);
  REQUIRE(stale[0].pending.size() == 1);
  CHECK(stale[0].pending[0].text.find("%20") != std::string::npos);
  const auto r = replay(stale[0]);
  INFO(all_lines(r));
  CHECK(r.complete);
  CHECK_FALSE(fs::exists(sock));
  CHECK(slurp(first_word) == "keep me");
}

TEST_CASE("journal: a state directory someone else could control is refused, naming it and what is wrong") {
  temp_dir tmp;
  auto refused_for = [&](const std::string& dir, const std::string& why) {
    private_state_dir state(dir);
    try {
      open_state_dir(true);
      FAIL("accepted ", dir);
    } catch (const std::exception& e) {
      CHECK(std::string(e.what()).find(dir) != std::string::npos);
      CHECK_MESSAGE(std::string(e.what()).find(why) != std::string::npos, e.what());
    }
    CHECK_THROWS(stale_journals());
    CHECK_THROWS(journal::self().record("file " + dir + "/fp-1-1.sock"));
  };
  fs::create_directories(tmp.path + "/open");
  ::chmod((tmp.path + "/open").c_str(), 0777);
  refused_for(tmp.path + "/open", "writable by every user");
  fs::create_directories(tmp.path + "/group");
  ::chmod((tmp.path + "/group").c_str(), 0770);
  refused_for(tmp.path + "/group", "writable by its group");
  fs::create_directories(tmp.path + "/real");
  fs::create_symlink(tmp.path + "/real", tmp.path + "/link");
  refused_for(tmp.path + "/link", "symbolic link");
  if (::geteuid() == 0) {
    fs::create_directories(tmp.path + "/theirs");
    ::chmod((tmp.path + "/theirs").c_str(), 0700);
    REQUIRE(::chown((tmp.path + "/theirs").c_str(), 54321, 54321) == 0);
    refused_for(tmp.path + "/theirs", "owned by uid 54321");
  }
  // A good one is made 0700.
  private_state_dir state(tmp.path + "/fresh");
  CHECK(bool(open_state_dir(true)));
  struct stat st {};
  REQUIRE(::stat(state.path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
}

TEST_CASE("journal: a symlink planted where a rig's journal will be is never written through") {
  temp_dir tmp;
  private_state_dir state(tmp.path + "/state");
  const std::string decoy = tmp.path + "/precious";
  std::ofstream(decoy) << "keep me";
  int to_parent[2], to_child[2];
  REQUIRE(::pipe(to_parent) == 0);
  REQUIRE(::pipe(to_child) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const std::string mine = journal::self().path();
    (void)!::write(to_parent[1], mine.data(), mine.size());
    ::close(to_parent[1]);
    char go;
    (void)!::read(to_child[0], &go, 1);  // the attacker plants the link meanwhile
    try {
      journal::self().record(journal_line("file", {state.path + "/fp-1-1.sock"}));
    } catch (...) {
      _exit(0);  // refused
    }
    _exit(1);
  }
  ::close(to_parent[1]);
  char buf[4096];
  const ssize_t n = ::read(to_parent[0], buf, sizeof buf);
  REQUIRE(n > 0);
  fs::create_directories(state.path);
  ::chmod(state.path.c_str(), 0700);
  fs::create_symlink(decoy, std::string(buf, size_t(n)));
  (void)!::write(to_child[1], "x", 1);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(slurp(decoy) == "keep me");
  for (int fd : {to_parent[0], to_child[0], to_child[1]}) ::close(fd);
}

TEST_CASE("journal: a planted /tmp/rig-UID is refused, and the victim's cleanup acts on nothing in it") {
  if (!root()) return;
  // The victim: a user without XDG_RUNTIME_DIR, whose state dir is the predictable /tmp/rig-UID.
  // The attacker, another user, made it first (mode 777) and planted a journal in it.
  const uid_t victim = 54000 + uid_t(::getpid() % 1000), attacker = victim + 1;
  const std::string dir = fmt::format("/tmp/rig-{}", victim);
  REQUIRE_FALSE(fs::exists(dir));
  temp_dir tmp;
  REQUIRE(::chmod(tmp.path.c_str(), 0755) == 0);
  const std::string precious = tmp.path + "/victim-file";
  std::ofstream(precious) << "keep me";
  REQUIRE(::chown(precious.c_str(), victim, victim) == 0);
  REQUIRE(::mkdir(dir.c_str(), 0777) == 0);
  const scope_exit remove_dir([&] { fs::remove_all(dir); });
  ::chmod(dir.c_str(), 0777);
  REQUIRE(::chown(dir.c_str(), attacker, attacker) == 0);
  const std::string planted = dir + "/journal-2-1.log";
  std::ofstream(planted) << "rig-journal 2 2 1\n" << journal_line("file", {precious}) << "\n";
  REQUIRE(::chown(planted.c_str(), attacker, attacker) == 0);

  // `rig cleanup` as the victim, with HOME (or none) as given; its exit status (102: no exec).
  auto cleanup_as_victim = [&](const std::string& home) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::unsetenv("RIG_STATE_DIR");
      ::unsetenv("XDG_RUNTIME_DIR");
      ::unsetenv("XDG_STATE_HOME");
      if (home.empty()) ::unsetenv("HOME");
      else ::setenv("HOME", home.c_str(), 1);
      const int out = ::open((tmp.path + "/out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (out < 0) _exit(101);
      if (::setgroups(0, nullptr) != 0 || ::setgid(victim) != 0 || ::setuid(victim) != 0) _exit(100);
      ::dup2(out, 1);
      ::dup2(out, 2);
      ::execl(RIG_BINARY, RIG_BINARY, "cleanup", nullptr);
      _exit(102);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    return WEXITSTATUS(status);
  };
  // Without a runtime directory or a home of its own: /tmp/rig-UID, which the attacker holds: refused.
  const int code = cleanup_as_victim("");
  if (code == 102) {  // the exec failed: another user cannot reach the binary
    MESSAGE("skipped: uid " << victim << " cannot execute " << RIG_BINARY
                            << " (a directory above it is not searchable by other users)");
    return;
  }
  std::string out = slurp(tmp.path + "/out");
  INFO(out);
  CHECK(code == 4);
  CHECK(out.find(dir) != std::string::npos);
  CHECK(out.find(fmt::format("owned by uid {}", attacker)) != std::string::npos);
  CHECK(slurp(precious) == "keep me");
  // With a home of its own (no one else can write it): the state directory is in it, where no
  // other user can make the name first, and the squatted /tmp/rig-UID is not even looked at.
  const std::string home = tmp.path + "/home";
  REQUIRE(::mkdir(home.c_str(), 0700) == 0);
  REQUIRE(::chown(home.c_str(), victim, victim) == 0);
  CHECK(cleanup_as_victim(home) == 0);
  out = slurp(tmp.path + "/out");
  CHECK(out.find("nothing to undo") != std::string::npos);
  CHECK(out.find(dir) == std::string::npos);
  CHECK(slurp(precious) == "keep me");
}

TEST_CASE("journal: a rig that undoes its changes leaves no journal, and a forked child does not write into it") {
  temp_dir tmp;
  private_state_dir state(tmp.path + "/state");
  auto c = child_process::spawn({.argv = {"/bin/sleep", "30"}, .journaled = true});
  const std::string mine = journal::self().path();
  CHECK(slurp(mine).find(fmt::format("process {} ", c.pid())) != std::string::npos);
  struct stat st {};
  REQUIRE(::lstat(mine.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  die_after([&] {
    journal::self().record(journal_line("file", {state.path + "/fp-1-1.sock"}));
    killed();
  });
  CHECK(slurp(mine).find("fp-1-1") == std::string::npos);
  c.stop();
  CHECK_FALSE(fs::exists(mine));
  // The child's own journal is stale; replaying it finds its file already gone.
  const auto stale = stale_journals();
  REQUIRE(stale.size() == 1);
  CHECK(replay(stale[0]).complete);
  CHECK_FALSE(fs::exists(state.path));
}
