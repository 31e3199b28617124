// Nothing left behind, per injector kind: a run is stopped mid-phase, with the injection in
// force, (a) by SIGINT, which reverts and exits 130, and (b) by SIGKILL, after which
// `rig cleanup` undoes what the journal names. Either way the host is as before: no rig
// namespace or veth, root qdiscs and links as before, no rig cgroup directory, cpufreq files
// as before, no process the run started, no failpoint socket, no journal.
#include <doctest/doctest.h>
#include <signal.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <sstream>

#include "../helpers.hpp"
#include "core/journal.hpp"

using namespace rig;
using namespace rig::testing;
namespace fs = std::filesystem;

namespace {

struct kind_case {
  const char* target;    // the [target] table's keys
  const char* injector;  // the [injectors.x] table's keys, kind first
  bool needs_disk = false;  // the run directory must be on a block device
};

const std::map<std::string, kind_case>& cases() {
  static const std::map<std::string, kind_case> all = {
      {"nodelay", {"", "kind = \"nodelay\"\nwhere = \"both\""}},
      {"sockbuf", {"", "kind = \"sockbuf\"\nsend = \"4KiB\"\nreceive = \"4KiB\"\nwhere = \"both\""}},
      {"proxy", {"", "kind = \"proxy\"\ntoxic = \"latency\"\nlatency = \"1ms\""}},
      {"netem", {"", "kind = \"netem\"\ndelay = \"1ms\""}},
      {"rate", {"", "kind = \"rate\"\nrate = \"1MB/s\""}},
      {"memory", {"", "kind = \"memory\"\nlimit = \"256MiB\""}},
      {"cpu", {"", "kind = \"cpu\"\nscale = \"50%\""}},
      {"disk", {"wal = true\nwal_direct = true", "kind = \"disk\"\nwrite_iops = \"500/s\"", true}},
      {"noise", {"", "kind = \"noise\"\nthreads = 1"}},
      {"file_faults", {"wal = true", "kind = \"file_faults\"\nops = [\"write\"]\ndelay = \"1ms\"\nerror = \"none\""}},
      {"pause", {"", "kind = \"pause\"\nperiod = \"200ms\"\npause_for = \"100ms\""}},
      {"threads", {"catch_exceptions = false", "kind = \"threads\"\nprobability = 0.01"}},
      {"failpoint", {"", "kind = \"failpoint\"\nfailpoint = \"reply.write\"\naction = \"delay\"\ndelay = \"1ms\""}},
      {"kill", {"", "kind = \"kill\"\nat = \"60s\""}},
  };
  return all;
}

// cpufreq files of every CPU (none on a host without cpufreq): path -> contents.
std::map<std::string, std::string> cpufreq_files() {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (const auto& cpu : fs::directory_iterator("/sys/devices/system/cpu", ec))
    for (const char* f : {"scaling_max_freq", "scaling_min_freq", "scaling_governor", "scaling_setspeed"})
      if (const auto p = cpu.path() / "cpufreq" / f; fs::exists(p)) out[p] = slurp(p);
  return out;
}

// Processes holding a file under dir open (every process a run starts has its log there).
std::vector<pid_t> processes_using(const std::string& dir) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& p : fs::directory_iterator("/proc", ec)) {
    const pid_t pid = std::atoi(p.path().filename().c_str());
    if (pid <= 0 || pid == ::getpid()) continue;
    std::error_code fd_ec;
    for (const auto& fd : fs::directory_iterator(p.path() / "fd", fd_ec))
      if (fs::read_symlink(fd.path(), fd_ec).string().rfind(dir + "/", 0) == 0) {
        out.push_back(pid);
        break;
      }
  }
  return out;
}

// What the journal said the run had changed, while the injection was in force.
struct changes {
  std::vector<std::string> cgroups, files;
  std::vector<std::pair<pid_t, unsigned long long>> processes;
  std::vector<unsigned long> namespaces;
  std::string text;
};

changes read_journal(const std::string& path) {
  changes c;
  c.text = slurp(path);
  std::istringstream in(c.text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string kind, a;
    f >> kind >> a;
    a = decode_field(a).value_or("");
    if (kind == "cgroup") c.cgroups.push_back(a);
    if (kind == "file") c.files.push_back(a);
    if (kind == "netns") c.namespaces.push_back(std::stoul(a));
    if (kind == "process") {
      unsigned long long start = 0;
      f >> start;
      c.processes.push_back({std::atoi(a.c_str()), start});
    }
  }
  return c;
}

enum class stop_by { sigint, sigkill };

void crash_in_phase(const std::string& kind, stop_by how) {
  const auto& kc = cases().at(kind);
  temp_dir tmp;
  if (kc.needs_disk && on_tmpfs(tmp.path)) return;
  const std::string state = tmp.path + "/state";
  const std::vector<std::string> env = {"RIG_STATE_DIR=" + state};  // this test's journal only
  std::ofstream(tmp.path + "/s.toml") << fmt::format(R"(name = "crash-{0}"
[target]
kind = "builtin"
workers = 2
{1}
[workloads.rr]
kind = "tcp"
connections = 2
rate = "200/s"
timeout = "1s"
[injectors.x]
{2}
[[phases]]
name = "baseline"
duration = "1s"
[[phases]]
name = "injected"
duration = "60s"
inject = ["x"]
)",
                                                     kind, kc.target, kc.injector);
  const auto host_before = host_network::now();
  const auto cpufreq_before = cpufreq_files();

  auto rig = child_process::spawn({.argv = {RIG_BINARY, "run", tmp.path + "/s.toml", "--out", tmp.path + "/runs"},
                                   .capture_stdout = true,
                                   .stderr_path = tmp.path + "/stderr.txt",
                                   .env = env});
  std::string out;
  bool injected = false;
  while (auto line = rig.read_line(30'000)) {
    out += *line + "\n";
    if (line->find("✓ x") != std::string::npos) {
      injected = true;
      break;
    }
  }
  if (!injected) {
    REQUIRE(rig.wait(20'000));
    const std::string err = slurp(tmp.path + "/stderr.txt");
    // Exit 3: the injector cannot work on this host (netem without sch_netem); it says why.
    REQUIRE_MESSAGE(rig.exit_code() == 3, out, err);
    // The remedy named is the host's (a module), not root for a rig that is root.
    if (::geteuid() == 0) CHECK_MESSAGE(err.find("Run as root") == std::string::npos, err);
    if (kind == "netem") CHECK_MESSAGE(err.find("sch_netem") != std::string::npos, err);
    MESSAGE("skipped: ", kind, " cannot run on this host: ", err);
    return;
  }
  ::usleep(300'000);  // well inside the phase, with the injection in force
  const std::string journal_path = fmt::format("{}/journal-{}-{}.log", state, rig.pid(), process_start_time(rig.pid()));
  const changes c = read_journal(journal_path);
  INFO("journal while injected:\n" << c.text);
  REQUIRE_FALSE(c.processes.empty());  // the target, at least
  CHECK_FALSE(c.cgroups.empty());      // the target's process tree, always
  if (kind == "rate" || kind == "netem") CHECK(c.namespaces.size() == 2);
  if (kind == "memory" || kind == "cpu" || kind == "disk") CHECK_FALSE(c.cgroups.empty());
  if (kind == "threads" || kind == "failpoint") CHECK(c.files.size() == 1);

  if (how == stop_by::sigint) {
    ::kill(rig.pid(), SIGINT);
    while (auto line = rig.read_line(20'000)) out += *line + "\n";
    REQUIRE(rig.wait(20'000));
    INFO(out << slurp(tmp.path + "/stderr.txt"));
    CHECK(rig.exit_code() == 130);
    CHECK(out.find("status: interrupted") != std::string::npos);
  } else {
    ::kill(rig.pid(), SIGKILL);
    REQUIRE(rig.wait(5000));
    CHECK(fs::exists(journal_path));  // left behind, for rig cleanup
    const auto cleanup = run_rig({"cleanup"}, tmp.path, 60'000, env);
    INFO("rig cleanup:\n" << cleanup.stdout_text());
    CHECK(cleanup.code == 0);
    CHECK(cleanup.stdout_text().find(fmt::format("rig pid {}", rig.pid())) != std::string::npos);
    CHECK(cleanup.stdout_text().find("NOT") == std::string::npos);
  }

  // The host as before.
  host_network::now().check_unchanged_since(host_before);
  CHECK(cpufreq_files() == cpufreq_before);
  for (const auto& d : c.cgroups) CHECK_MESSAGE(!fs::exists(d), "cgroup left: ", d);
  for (const auto& f : c.files) CHECK_MESSAGE(!fs::exists(f), "file left: ", f);
  for (const auto& [pid, start] : c.processes)
    CHECK_MESSAGE(process_start_time(pid) != start, "process left: ", pid);
  for (const auto ino : c.namespaces) CHECK_MESSAGE(!netns_in_use(ino), "network namespace left: ", ino);
  const auto using_run = processes_using(tmp.path);
  CHECK_MESSAGE(using_run.empty(), "a process of the run is still running: pid ", using_run.empty() ? 0 : using_run[0]);
  CHECK_MESSAGE(!fs::exists(state), "the state directory is left: ", state);
}

}  // namespace

#define CRASH_TESTS(kind)                                                                                    \
  TEST_CASE("crash: " kind " injected, SIGINT mid-phase: exit 130, reverted, the host as before") {          \
    crash_in_phase(kind, stop_by::sigint);                                                                   \
  }                                                                                                          \
  TEST_CASE("crash: " kind " injected, SIGKILL mid-phase, then rig cleanup: the host as before") {           \
    crash_in_phase(kind, stop_by::sigkill);                                                                  \
  }

CRASH_TESTS("nodelay")
CRASH_TESTS("sockbuf")
CRASH_TESTS("proxy")
CRASH_TESTS("netem")
CRASH_TESTS("rate")
CRASH_TESTS("memory")
CRASH_TESTS("cpu")
CRASH_TESTS("disk")
CRASH_TESTS("noise")
CRASH_TESTS("file_faults")
CRASH_TESTS("pause")
CRASH_TESTS("threads")
CRASH_TESTS("failpoint")
CRASH_TESTS("kill")

TEST_CASE("crash: every injector kind has its crash tests") {
  const auto out = run_rig({"list", "injectors"}, temp_dir().path);
  size_t kinds = 0;
  for (const auto& line : out.out)
    if (line.size() > 2 && line.rfind("  ", 0) == 0 && line[2] != ' ') {
      const std::string kind = line.substr(2, line.find(' ', 2) - 2);
      ++kinds;
      CHECK_MESSAGE(cases().count(kind) == 1, "no crash test for injector kind ", kind);
    }
  CHECK(kinds == cases().size());
}
