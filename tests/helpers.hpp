#pragma once
// Shared by the tests: bind a kind's options from TOML text, find free ports, start
// real servers the tests need.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/bind.hpp"
#include "core/fd.hpp"
#include "core/options.hpp"
#include "core/net.hpp"
#include "core/netlink.hpp"
#include "core/netns.hpp"
#include "core/process.hpp"

namespace rig::testing {

inline option_values bind_text(const option_table& table, const std::string& text) {
  const toml::table t = toml::parse(std::string_view(text), std::string_view("test.toml"));
  bind_context ctx{"test.toml", "[test]", "test", nullptr, {}};
  diagnostics d;
  auto v = bind_options(table, t, ctx, d);
  REQUIRE_MESSAGE(d.empty(), d.str());
  return v;
}

// A TCP listener on 127.0.0.1 that accepts (through the kernel backlog) and never answers.
struct silent_listener {
  unique_fd fd;
  uint16_t port = 0;
  explicit silent_listener(uint16_t on_port = 0) : fd(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(on_port);
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd.get(), 64) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
};

// A port on 127.0.0.1 that nothing listens on (bound then released).
inline uint16_t free_port() {
  silent_listener l;
  return l.port;
}

// Waits up to `timeout_ms` until something accepts on 127.0.0.1:port.
inline bool wait_listening(uint16_t port, int timeout_ms = 4000) { return wait_port_accepts("127.0.0.1", port, timeout_ms); }

// A directory under /tmp, removed with everything in it when the test ends.
struct temp_dir {
  std::string path;
  temp_dir() : temp_dir("/tmp") {}
  // Under `parent` instead (e.g. memory_dir() for files whose fsync must not wait on a disk).
  explicit temp_dir(const std::string& parent) {
    std::string t = parent + "/rig-test-XXXXXX";
    REQUIRE(::mkdtemp(t.data()));
    path = t;
  }
  // Removes the directory, after undoing what a rig journal left in its state/ subdirectory
  // names (see below).
  ~temp_dir();
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A blocking client socket connected to 127.0.0.1:port, with a receive timeout.
inline unique_fd connect_loopback(uint16_t port, int timeout_s = 10) {
  unique_fd fd(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  timeval tv{timeout_s, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// The path a `rig run` printed after "report: ", or empty.
inline std::string report_path(const std::vector<std::string>& out) {
  for (const auto& l : out)
    if (auto at = l.find("report: "); at != std::string::npos) return l.substr(at + 8);
  return {};
}

// The real rig binary run to completion: exit code, stdout lines, stderr.
struct rig_result {
  int code = -1;
  std::vector<std::string> out;
  std::string err;
  std::string stdout_text() const {
    std::string all;
    for (const auto& l : out) all += l + "\n";
    return all;
  }
  nlohmann::json report() const {
    const std::string path = report_path(out);
    return path.empty() ? nlohmann::json() : nlohmann::json::parse(slurp(path));
  }
  // The run directory it reported ("" when none).
  std::string run_dir() const {
    const std::string path = report_path(out);
    return path.empty() ? "" : std::filesystem::path(path).parent_path().string();
  }
  // A sweep's directory, from its "sweep: DIR/sweep.json" line ("" when none).
  std::string sweep_dir() const {
    for (const auto& l : out)
      if (l.rfind("sweep: ", 0) == 0) return std::filesystem::path(l.substr(7)).parent_path().string();
    return "";
  }
};

// `rig run SCENARIO --out DIR` with phases shortened: {{"baseline", "1s"}, ...}.
inline std::vector<std::string> run_args(const std::string& scenario, const std::string& out,
                                         const std::vector<std::pair<std::string, std::string>>& durations) {
  std::vector<std::string> args = {"run", scenario, "--out", out};
  for (const auto& [phase, d] : durations) {
    args.push_back("--set");
    args.push_back("phases." + phase + ".duration=" + d);
  }
  return args;
}

// A program (argv[0] a path) run to completion: its stdout lines, and its stderr through DIR/stderr.txt.
inline rig_result run_program(const std::vector<std::string>& argv, const std::string& dir, int timeout_ms = 60'000,
                              const std::vector<std::string>& env = {}) {
  auto c = child_process::spawn({.argv = argv, .capture_stdout = true, .stderr_path = dir + "/stderr.txt", .env = env});
  rig_result r;
  while (auto line = c.read_line(timeout_ms)) r.out.push_back(*line);
  REQUIRE(c.wait(timeout_ms));
  r.code = c.exit_code().value_or(-1);
  r.err = slurp(dir + "/stderr.txt");
  return r;
}

inline rig_result run_rig(const std::vector<std::string>& args, const std::string& dir, int timeout_ms = 60'000,
                          const std::vector<std::string>& env = {}) {
  std::vector<std::string> argv = {RIG_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, dir, timeout_ms, env);
}

// A test that gives rig its own state directory (RIG_STATE_DIR=TMP/state) and fails, or whose
// rig dies (a sanitizer's abort), may leave a journal there: removed with the directory, the
// cgroups and processes it names would outlive every record of them. So they are undone first,
// by `rig cleanup` on that directory, and a journal left is a failed check.
inline temp_dir::~temp_dir() {
  const std::string state = path + "/state";
  std::error_code ec;
  bool left = false;
  // A journal is a regular file (a link a test planted under the name is not one).
  for (const auto& e : std::filesystem::directory_iterator(state, ec))
    left = left || (e.path().filename().string().rfind("journal-", 0) == 0 &&
                    e.symlink_status().type() == std::filesystem::file_type::regular);
  if (left) {
    std::string said;
    try {
      auto c = child_process::spawn({.argv = {RIG_BINARY, "cleanup"},
                                     .capture_stdout = true,
                                     .stderr_path = path + "/cleanup-stderr.txt",
                                     .env = {"RIG_STATE_DIR=" + state}});
      while (auto line = c.read_line(60'000)) said += *line + "\n";
      c.wait(60'000);
      said += slurp(path + "/cleanup-stderr.txt");
    } catch (const std::exception& e) {
      said += e.what();
    }
    std::fprintf(stderr, "a rig journal was left in %s: rig cleanup said:\n%s\n", state.c_str(), said.c_str());
    if (std::uncaught_exceptions() == 0) FAIL_CHECK("a rig journal was left in " << state << "; rig cleanup said: " << said);
  }
  std::filesystem::remove_all(path, ec);
}

// `rig run DIR/FILE --out DIR`, which must succeed: its report.
inline nlohmann::json run_ok(const temp_dir& tmp, const std::string& file) {
  const auto run = run_rig({"run", tmp.path + "/" + file, "--out", tmp.path}, tmp.path);
  INFO(run.stdout_text() << run.err);
  REQUIRE(run.code == 0);
  return run.report();
}

// Runs rig, sends it `sig` half a second into phase `phase`, and collects what it wrote.
// `times` > 1: the signal again every 20 ms (an impatient second Ctrl-C during the revert).
inline rig_result interrupt_rig_in_phase(const std::vector<std::string>& args, const std::string& dir,
                                         const std::string& phase, int sig, int times = 1) {
  std::vector<std::string> argv = {RIG_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  auto c = child_process::spawn({.argv = argv, .capture_stdout = true, .stderr_path = dir + "/stderr.txt"});
  rig_result r;
  bool reached = false;
  while (auto line = c.read_line(30'000)) {
    r.out.push_back(*line);
    if (line->find("▶ " + phase) != std::string::npos) {
      reached = true;
      break;
    }
  }
  REQUIRE_MESSAGE(reached, "rig never reached phase ", phase);
  ::usleep(500'000);
  for (int i = 0; i < times; ++i) {
    if (i) ::usleep(20'000);
    if (::kill(c.pid(), sig) != 0) break;  // already gone: what it did is checked below
  }
  while (auto line = c.read_line(20'000)) r.out.push_back(*line);
  REQUIRE(c.wait(20'000));
  r.code = c.exit_code().value_or(-1);
  r.err = slurp(dir + "/stderr.txt");
  return r;
}

inline std::string which(const std::string& prog) {
  for (const char* dir : {"/usr/local/bin/", "/usr/bin/", "/usr/sbin/", "/bin/"})
    if (::access((dir + prog).c_str(), X_OK) == 0) return dir + prog;
  return {};
}

// A python3 (/usr/local/bin, /usr/bin) that can import `module` (e.g. "tomllib, jsonschema"); "" when none can.
inline std::string python_with(const std::string& module) {
  for (const std::string& p : {which("python3"), std::string("/usr/bin/python3")}) {
    if (p.empty()) continue;
    auto c = child_process::spawn({.argv = {p, "-c", "import " + module}, .output_path = "/dev/null"});
    if (c.wait(30'000) && c.exit_code() == 0) return p;
  }
  return "";
}

// What a run could leave behind on the host: links, root qdiscs and named namespaces in
// the host's namespace, and /etc/ld.so.preload. A run must leave all of it as it was.
struct host_network {
  std::set<std::string> links, root_qdiscs, named_netns, ld_so_preload;

  static host_network now() {
    namespace fs = std::filesystem;
    host_network h;
    h.ld_so_preload.insert(slurp("/etc/ld.so.preload"));
    for (const auto& e : fs::directory_iterator("/sys/class/net")) h.links.insert(e.path().filename());
    auto sk = route_socket();
    for (const auto& q : dump_qdiscs(sk.get()))
      if (q.parent == 0xFFFFFFFFu)
        h.root_qdiscs.insert(std::to_string(q.ifindex) + ":" + q.kind + ":" + std::to_string(q.handle));
    if (fs::exists("/run/netns"))
      for (const auto& e : fs::directory_iterator("/run/netns")) h.named_netns.insert(e.path().filename());
    return h;
  }
  void check_unchanged_since(const host_network& before) const {
    CHECK(links == before.links);
    CHECK(root_qdiscs == before.root_qdiscs);
    CHECK(named_netns == before.named_netns);
    CHECK(ld_so_preload == before.ld_so_preload);
  }
};

// True while any process is in the network namespace `ino` or holds an fd to it: the
// kernel frees a namespace when neither is left (sockets in it die with their process).
inline bool netns_in_use(unsigned long ino) {
  namespace fs = std::filesystem;
  const std::string link = "net:[" + std::to_string(ino) + "]";
  std::error_code ec;
  for (const auto& p : fs::directory_iterator("/proc", ec)) {
    struct stat st {};
    if (::stat((p.path() / "ns/net").c_str(), &st) == 0 && st.st_ino == ino) return true;
    for (const auto& fd : fs::directory_iterator(p.path() / "fd", ec))
      if (fs::read_symlink(fd.path(), ec).string() == link) return true;
  }
  return false;
}

// After a run: the host as before, and the run's own namespaces (report.json
// target.network.namespaces) freed.
inline void check_run_left_nothing(const host_network& before, const nlohmann::json& report) {
  host_network::now().check_unchanged_since(before);
  const auto& net = report["target"]["network"];
  if (!net.is_object()) return;
  REQUIRE(net["namespaces"].size() == 2);
  for (const auto& ino : net["namespaces"]) CHECK_MESSAGE(!netns_in_use(ino.get<unsigned long>()), "netns ", ino, " is still in use");
}

// The file system type of a path (statfs f_type), 0 when it cannot be read.
inline long statfs_type(const std::string& path) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 ? long(fs.f_type) : 0;
}

// A directory on tmpfs (/dev/shm) when the host has one, else /tmp: for a test whose target
// fsyncs per request at a rate a disk cannot keep (an fsync on this VM's disk takes ~3 ms, so a
// write-ahead log serialized on it tops out near 300 requests/s).
inline std::string memory_dir() {
  if (statfs_type("/dev/shm") == 0x01021994 && ::access("/dev/shm", W_OK) == 0) return "/dev/shm";
  return "/tmp";
}

// tmpfs has no block device to throttle and no direct I/O: says so, for a test to skip.
inline bool on_tmpfs(const std::string& dir) {
  if (statfs_type(dir) != 0x01021994) return false;
  MESSAGE("skipped: " << dir << " is tmpfs, which has no block device to throttle");
  return true;
}

// Whether this is a sanitized build (make test-asan, make test-tsan), for a bound that must
// be wider there.
constexpr bool sanitized() {
#ifdef RIG_SANITIZED
  return true;
#else
  return false;
#endif
}

// In a sanitized build (make test-asan, make test-tsan): says why a check cannot hold there
// and returns true, for the test to skip it. Speed figures shift several-fold under a
// sanitizer, and ASan's shadow memory cannot live under an address-space limit.
inline bool sanitized_skip([[maybe_unused]] const char* why) {
#ifdef RIG_SANITIZED
  MESSAGE("skipped in the " RIG_SANITIZED " build: " << why);
  return true;
#else
  return false;
#endif
}

// Two counts of the same fires that a phase's edges cut in different places: the injection's
// count is read just before the phase's first sample, the target's counters in that sample, and
// a reply is counted in the phase it arrives in (a fire just before the injection's read can be
// answered after the phase began). A fire at each edge may fall on one side only: one apart at
// each edge, either way.
inline bool same_fires(uint64_t a, uint64_t b, uint64_t edges = 1) { return a + edges >= b && a <= b + edges; }

// Network namespaces need root (CAP_SYS_ADMIN); tests that make them probe first.
inline bool can_make_netns() {
  try {
    netns::create();
    return true;
  } catch (const std::exception& e) {
    MESSAGE("skipped: cannot create a network namespace here: " << e.what());
    return false;
  }
}

// Runs a sweep scenario; its sweep directory (from the last line "sweep: DIR/sweep.json").
inline std::string run_sweep_ok(const temp_dir& tmp, const std::string& file, const std::vector<std::string>& sets) {
  std::vector<std::string> args = {"run", std::string(RIG_SOURCE_DIR "/scenarios/") + file, "--out", tmp.path};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  const auto run = run_rig(args, tmp.path, 180'000);
  INFO(run.stdout_text() << run.err);
  REQUIRE(run.code == 0);
  REQUIRE(!run.sweep_dir().empty());
  return run.sweep_dir();
}

inline double median(const nlohmann::json& level, const char* metric) {
  return level["workloads"]["rr"][metric]["median"].get<double>();
}

// The curve of a sweep.json, a level a line, for a failed check to print (INFO).
inline std::string sweep_curve(const nlohmann::json& sw) {
  std::string out = "level: ops/s p50_us p99_us (median, min p99) | knee " + sw["knee"].dump() + "\n";
  for (const auto& l : sw["levels"]) {
    const auto& w = l["workloads"]["rr"];
    const auto num = [](const nlohmann::json& v) { return v.is_number() ? v.get<double>() : -1.0; };
    out += l["label"].get<std::string>() + ": " + std::to_string(num(w["throughput_ops_s"]["median"])) + " " +
           std::to_string(num(w["p50_us"]["median"])) + " " + std::to_string(num(w["p99_us"]["median"])) + " " +
           std::to_string(num(w["p99_us"]["min"])) + "\n";
  }
  return out;
}


}  // namespace rig::testing
