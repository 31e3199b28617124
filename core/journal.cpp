#include "core/journal.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <sstream>

#include "core/cgroup.hpp"
#include "core/error.hpp"
#include "core/proc.hpp"

namespace rig {

std::string state_dir() {
  if (const char* d = ::getenv("RIG_STATE_DIR"); d && *d) return d;
  if (::geteuid() == 0) return "/run/rig";
  // Without root /run is not ours: the user's runtime directory, else one in /tmp.
  if (const char* x = ::getenv("XDG_RUNTIME_DIR"); x && *x && ::access(x, W_OK) == 0) return std::string(x) + "/rig";
  return fmt::format("/tmp/rig-{}", ::geteuid());
}

journal& journal::self() {
  static journal j;
  return j;
}

std::string journal::path() const { return fmt::format("{}/journal-{}.log", state_dir(), ::getpid()); }

void journal::record(const std::string& line) {
  if (pid_ != ::getpid()) {  // first use, or a forked child: the parent's changes are not its own
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    open_ = 0;
    pid_ = ::getpid();
  }
  if (fd_ < 0) {
    path_ = path();
    std::filesystem::create_directories(state_dir());
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    throw_system_error_on(fd_ < 0, "open journal " + path_);
  }
  const std::string text = line + "\n";
  throw_system_error_on(::write(fd_, text.data(), text.size()) != ssize_t(text.size()), "write journal " + path_);
  ::fdatasync(fd_);
  ++open_;
}

void journal::done(const std::string& line) {
  if (fd_ < 0 || pid_ != ::getpid()) return;
  const std::string text = "done " + line + "\n";
  if (::write(fd_, text.data(), text.size()) == ssize_t(text.size())) --open_;
  if (open_ <= 0) close_clean();
}

void journal::close_clean() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  open_ = 0;
  ::unlink(path_.c_str());
  ::rmdir(state_dir().c_str());  // the directory too, once no rig keeps a journal there
}

std::vector<stale_journal> stale_journals() {
  std::vector<stale_journal> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(state_dir(), ec)) {
    const std::string name = e.path().filename();
    int pid = 0;
    if (std::sscanf(name.c_str(), "journal-%d.log", &pid) != 1 || pid <= 0) continue;
    if (::kill(pid, 0) == 0 || errno == EPERM) continue;  // that rig still runs
    stale_journal j;
    j.path = e.path();
    j.pid = pid;
    std::ifstream in(j.path);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) {
      if (l.rfind("done ", 0) == 0) {
        auto it = std::find(lines.begin(), lines.end(), l.substr(5));
        if (it != lines.end()) lines.erase(it);
      } else if (!l.empty()) {
        lines.push_back(l);
      }
    }
    if (lines.empty()) {  // everything was undone; only the file was left
      ::unlink(j.path.c_str());
      ::rmdir(state_dir().c_str());
      continue;
    }
    j.pending = lines;
    out.push_back(j);
  }
  return out;
}

unsigned long long process_start_time(pid_t pid) {
  const auto fields = stat_fields(pid);
  if (!fields) return 0;
  std::istringstream f(*fields);
  std::string state, skip;
  f >> state;
  if (state == "Z" || state == "X") return 0;  // exited, not yet reaped: gone for our purposes
  for (int field = 4; field < 22; ++field) f >> skip;
  unsigned long long start = 0;
  f >> start;
  return start;
}

std::string process_entry(pid_t pid) {
  const auto start = process_start_time(pid);
  return start ? fmt::format("process {} {}", pid, start) : std::string();
}

namespace {

// Waits up to timeout_ms until done() holds; true if it did.
template <class F>
bool wait_until(F done, int timeout_ms = 3000) {
  for (int waited = 0;; waited += 10) {
    if (done()) return true;
    if (waited >= timeout_ms) return false;
    ::usleep(10'000);
  }
}

// SIGKILL (which also ends a stopped process) to each pid, then waits for them to go.
bool kill_all(const std::vector<pid_t>& pids) {
  for (pid_t p : pids) ::kill(p, SIGKILL);
  return wait_until([&] {
    return std::all_of(pids.begin(), pids.end(), [](pid_t p) { return process_start_time(p) == 0; });
  });
}

std::vector<pid_t> pids_in(const std::string& procs_file) {
  std::vector<pid_t> pids;
  std::ifstream in(procs_file);
  for (pid_t p; in >> p;) pids.push_back(p);
  return pids;
}

// Processes in the network namespace `ino`, and whether anything (a process in it, or an
// fd to it) still holds it.
std::vector<pid_t> processes_in_netns(unsigned long ino, bool* held) {
  std::vector<pid_t> in;
  const std::string link = fmt::format("net:[{}]", ino);
  *held = false;
  std::error_code ec;
  for (const auto& p : std::filesystem::directory_iterator("/proc", ec)) {
    const pid_t pid = std::atoi(p.path().filename().c_str());
    if (pid <= 0) continue;
    struct stat st {};
    if (::stat((p.path() / "ns/net").c_str(), &st) == 0 && st.st_ino == ino) {
      in.push_back(pid);
      *held = true;
    }
    std::error_code fd_ec;
    for (const auto& fd : std::filesystem::directory_iterator(p.path() / "fd", fd_ec))
      if (std::filesystem::read_symlink(fd.path(), fd_ec).string() == link) *held = true;
  }
  return in;
}

std::string plural(size_t n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

// Undoes one journal line; false when the change could not be undone.
bool undo(const std::string& line, std::vector<std::string>& report) {
  std::istringstream in(line);
  std::string kind, a, b;
  in >> kind >> a;
  if (kind == "cgroup") {
    if (!std::filesystem::exists(a)) {
      report.push_back("cgroup " + a + ": already gone");
      return true;
    }
    // What is still inside was started by the killed rig (a target, a helper, their children).
    const auto left = pids_in(a + "/cgroup.procs");
    kill_all(left);
    wait_until([&] { return pids_in(a + "/cgroup.procs").empty(); });
    if (!remove_cgroup_dir(a)) {
      report.push_back(fmt::format("cgroup {}: NOT removed ({})", a, strerror(errno)));
      return false;
    }
    ::rmdir((a.substr(0, a.rfind("/rig/")) + "/rig").c_str());  // the parent too, once no run uses it
    report.push_back(fmt::format("cgroup {}: removed{}", a,
                                 left.empty() ? "" : " (" + plural(left.size(), "process", "processes") +
                                                         " rig started were still in it: killed first)"));
    return true;
  }
  if (kind == "subtree") {
    in >> b;
    try {
      if (!std::filesystem::exists(a + "/rig")) write_control(a + "/cgroup.subtree_control", "-" + b);
      report.push_back(fmt::format("{}/cgroup.subtree_control: {} taken back", a, b));
    } catch (const std::exception& e) {
      report.push_back(fmt::format("{}/cgroup.subtree_control: {} left on ({})", a, b, e.what()));
    }
    return true;
  }
  if (kind == "process") {
    const pid_t pid = std::atoi(a.c_str());
    unsigned long long start = 0;
    in >> start;
    const bool same = pid > 0 && process_start_time(pid) == start;
    // Its process group: the children it started, even after it died itself. A pid still
    // used as a group id is never handed to a new process, so the group is the rig's.
    const bool group = pid > 0 && ::kill(-pid, 0) == 0;
    if (!same && !group) {
      report.push_back(fmt::format("process {}: already gone", pid));
      return true;
    }
    if (group) ::kill(-pid, SIGKILL);
    const bool gone = kill_all(same ? std::vector<pid_t>{pid} : std::vector<pid_t>{}) &&
                      wait_until([&] { return ::kill(-pid, 0) != 0; });
    report.push_back(fmt::format("process {}{}: {}", pid, same ? "" : " (its group; it had exited)",
                                 gone ? "killed" : "NOT gone after SIGKILL"));
    return gone;
  }
  if (kind == "netns") {
    const unsigned long ino = std::stoul(a);
    bool held = false;
    const auto left = processes_in_netns(ino, &held);
    kill_all(left);  // only processes rig started can be in the run's namespace
    const bool freed = wait_until([&] {
      processes_in_netns(ino, &held);
      return !held;
    });
    report.push_back(fmt::format("network namespace net:[{}] (and the veth end in it): {}{}", ino,
                                 freed ? "freed" : "NOT freed (something still holds it)",
                                 left.empty() ? "" : " after killing " + plural(left.size(), "process", "processes") +
                                                         " in it"));
    return freed;
  }
  if (kind == "file") {
    if (::unlink(a.c_str()) == 0 || errno == ENOENT) {
      report.push_back("file " + a + ": removed");
      return true;
    }
    report.push_back(fmt::format("file {}: NOT removed ({})", a, strerror(errno)));
    return false;
  }
  if (kind == "restore") {
    std::string text;
    std::getline(in >> std::ws, text);
    try {
      write_control(a, text);
      report.push_back(fmt::format("{}: \"{}\" written back", a, text));
      return true;
    } catch (const std::exception& e) {
      report.push_back(fmt::format("{}: NOT restored to \"{}\" ({})", a, text, e.what()));
      return false;
    }
  }
  report.push_back("unknown journal line, left alone: " + line);
  return false;
}

}  // namespace

replay_result replay(const stale_journal& j) {
  replay_result r;
  for (auto it = j.pending.rbegin(); it != j.pending.rend(); ++it) r.complete = undo(*it, r.lines) && r.complete;
  if (r.complete) {
    ::unlink(j.path.c_str());
    ::rmdir(state_dir().c_str());
  }
  return r;
}

}  // namespace rig
