#include "core/process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>

#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <fstream>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/host.hpp"
#include "core/journal.hpp"
#include "core/pidfd.hpp"
#include "core/proc.hpp"

extern char** environ;

namespace rig {

namespace {
constexpr size_t max_inherited_fds = 16;
}  // namespace

child_process child_process::spawn(const spawn_options& opts) {
  if (opts.argv.empty()) throw std::invalid_argument("spawn: empty argv");
  std::vector<char*> argv;
  for (const auto& a : opts.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  // Everything the child needs is built here: between fork and exec only async-signal-safe calls.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const auto key = kv.substr(0, kv.find('='));
    bool replaced = false;
    for (const auto& add : opts.env) replaced = replaced || add.substr(0, add.find('=')) == key;
    if (!replaced) env_strings.push_back(kv);
  }
  for (const auto& add : opts.env) env_strings.push_back(add);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  if (opts.inherit_fds.size() > max_inherited_fds) throw std::invalid_argument("spawn: inherit_fds takes up to 16 fds");
  int inherit_above = 3;  // above every inherited fd's number in the child
  for (const auto& [from, to] : opts.inherit_fds) {
    if (to < 3) throw std::invalid_argument("spawn: an inherited fd goes to a number of 3 or more");
    inherit_above = std::max(inherit_above, to + 1);
  }
  int out_pipe[2] = {-1, -1};
  if (opts.capture_stdout) throw_system_error_on(::pipe2(out_pipe, O_CLOEXEC) != 0, "pipe");
  int err_fd = -1;
  const std::string& err_path = opts.output_path.empty() ? opts.stderr_path : opts.output_path;
  if (!err_path.empty()) {
    err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    throw_system_error_on(err_fd < 0, "open " + err_path);
  }
  // The cgroups are joined by the child itself, before its first instruction of the new program.
  std::vector<unique_fd> cgroup_fds;
  for (const auto& f : opts.cgroup_procs) {
    cgroup_fds.emplace_back(::open(f.c_str(), O_WRONLY | O_CLOEXEC));
    throw_system_error_on(!cgroup_fds.back(), "open " + f);
  }
  // Closed by exec (or exit): spawn returns only once the child runs the new program, so it
  // is in its cgroups and namespace by then.
  int exec_pipe[2];
  throw_system_error_on(::pipe2(exec_pipe, O_CLOEXEC) != 0, "pipe");
  const pid_t parent = ::getpid();
  const rlimit nofile = fd_limit_given();  // rig raised its own; the program gets what rig was given
  const pid_t pid = ::fork();
  if (pid < 0) throw_system_error("fork");
  if (pid == 0) {
    close(exec_pipe[0]);
    // Only async-signal-safe calls until exec.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (opts.own_process_group) setpgid(0, 0);
    if (opts.parent_death_signal) {
      prctl(PR_SET_PDEATHSIG, opts.parent_death_signal);
      if (getppid() != parent) _exit(127);
    }
    if (out_pipe[1] >= 0) dup2(out_pipe[1], STDOUT_FILENO);
    if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
    if (err_fd >= 0 && !opts.output_path.empty()) dup2(err_fd, STDOUT_FILENO);
    // Each inherited fd is first moved above every target number, so one fd's target cannot be
    // another's source; dup2 then clears close-on-exec (it would not for from == to).
    int moved[max_inherited_fds];
    for (size_t i = 0; i < opts.inherit_fds.size(); ++i)
      moved[i] = fcntl(opts.inherit_fds[i].first, F_DUPFD_CLOEXEC, inherit_above);
    // Nothing else of the rig's reaches the program: every other descriptor closes at exec,
    // made without O_CLOEXEC (Asio's sockets, say) or not.
    if (syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC) != 0)
      for (int fd = 3; fd < 65536; ++fd) fcntl(fd, F_SETFD, FD_CLOEXEC);
    for (size_t i = 0; i < opts.inherit_fds.size(); ++i) dup2(moved[i], opts.inherit_fds[i].second);
    if (opts.netns_fd >= 0 && setns(opts.netns_fd, CLONE_NEWNET) != 0) {
      static const char msg[] = "rig: cannot join the target's network namespace (setns)\n";
      (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
      _exit(126);
    }
    for (const auto& fd : cgroup_fds)
      if (write(fd.get(), "0", 1) != 1) {
        static const char msg[] = "rig: cannot join the target's cgroup (cgroup.procs)\n";
        (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
        _exit(126);
      }
    setrlimit(RLIMIT_NOFILE, &nofile);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  ::close(exec_pipe[1]);
  child_process c;
  c.pid_ = pid;
  c.pidfd_.reset(open_pidfd(pid));  // it cannot be reaped before this: it is our child
  c.group_ = opts.own_process_group;
  if (opts.journaled) {
    try {
      c.journal_line_ = process_entry(pid);  // before exec: the start time is the fork's
      if (!c.journal_line_.empty()) journal::self().record(c.journal_line_);
    } catch (...) {
      c.journal_line_.clear();
      ::close(exec_pipe[0]);
      if (out_pipe[1] >= 0) ::close(out_pipe[1]), ::close(out_pipe[0]);
      if (err_fd >= 0) ::close(err_fd);
      throw;  // c's destructor stops the child
    }
  }
  char sink;
  while (::read(exec_pipe[0], &sink, 1) < 0 && errno == EINTR) {
  }
  ::close(exec_pipe[0]);
  if (out_pipe[1] >= 0) {
    ::close(out_pipe[1]);
    c.out_ = line_reader(unique_fd(out_pipe[0]));
  }
  if (err_fd >= 0) ::close(err_fd);
  return c;
}

child_process::child_process(child_process&& o) noexcept { *this = std::move(o); }

child_process& child_process::operator=(child_process&& o) noexcept {
  if (this != &o) {
    stop();
    pid_ = std::exchange(o.pid_, -1);
    pidfd_ = std::move(o.pidfd_);
    exited_ = std::exchange(o.exited_, false);
    reaped_ = std::exchange(o.reaped_, false);
    group_ = std::exchange(o.group_, false);
    status_ = o.status_;
    out_ = std::move(o.out_);
    journal_line_ = std::exchange(o.journal_line_, {});
  }
  return *this;
}

std::optional<std::string> child_process::read_line(int timeout_ms) {
  std::string line;
  if (out_.read_line(line, timeout_ms) != line_reader::got::line) return std::nullopt;
  return line;
}

void child_process::exited(int status) noexcept {
  status_ = status;
  exited_ = true;
  if (!journal_line_.empty()) journal::self().done(std::exchange(journal_line_, {}));
}

void child_process::reap() noexcept {
  if (reaped_ || pid_ <= 0) return;
  int status = 0;
  if (::waitpid(pid_, &status, 0) == pid_ && !exited_) exited(status);
  reaped_ = true;
  group_ = false;  // never signalled again: its number may be reused from here on
}

bool child_process::running() {
  if (pid_ <= 0 || exited_) return false;
  // Seen without reaping it: the zombie keeps its number (and its group's) from being reused.
  siginfo_t si{};
  if (::waitid(P_PID, id_t(pid_), &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid_) {
    const bool signalled = si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED;
    exited(signalled ? (si.si_status & 0x7f) | (si.si_code == CLD_DUMPED ? 0x80 : 0) : (si.si_status & 0xff) << 8);
  }
  return !exited_;
}

namespace {

// Live (not zombie) members of process group `pgid` other than its leader.
bool group_has_members(pid_t pgid) {
  DIR* d = ::opendir("/proc");
  if (!d) return false;
  bool any = false;
  while (const dirent* e = ::readdir(d)) {
    const pid_t p = std::atoi(e->d_name);
    if (p <= 0 || p == pgid) continue;
    if (const auto h = stat_head(p); h && h->pgrp == pgid && h->state != 'Z') {
      any = true;
      break;
    }
  }
  ::closedir(d);
  return any;
}

}  // namespace

void child_process::stop(int grace_ms) noexcept {
  if (pid_ <= 0 || reaped_) return;
  auto signal = [&](int sig) {
    if (group_) ::kill(-pid_, sig);  // the leader is not reaped: the group id is still the child's
    if (pidfd_) pidfd_signal(pidfd_.get(), sig);
    else if (!exited_) ::kill(pid_, sig);
  };
  const bool members = group_ && group_has_members(pid_);
  if (running() || members) {
    signal(SIGTERM);
    const int64_t deadline = mono_ns() + int64_t(grace_ms) * ns_per_ms;
    while ((running() || (group_ && group_has_members(pid_))) && mono_ns() < deadline) ::usleep(5000);
    signal(SIGKILL);
    for (int i = 0; i < 200 && group_ && group_has_members(pid_); ++i) ::usleep(5000);
  }
  reap();
}

std::string child_process::exit_description() const {
  if (pid_ <= 0) return "not started";
  if (!exited_) return "running";
  if (WIFEXITED(status_)) return "exited with status " + std::to_string(WEXITSTATUS(status_));
  if (WIFSIGNALED(status_))
    return "killed by signal " + std::to_string(WTERMSIG(status_)) + " (" + strsignal(WTERMSIG(status_)) + ")";
  return "stopped";
}

std::optional<int> child_process::exit_signal() const {
  if (exited_ && WIFSIGNALED(status_)) return WTERMSIG(status_);
  return std::nullopt;
}

std::optional<int> child_process::exit_code() const {
  if (exited_ && WIFEXITED(status_)) return WEXITSTATUS(status_);
  return std::nullopt;
}

std::optional<exit_info> child_process::ended() {
  if (pid_ <= 0 || running()) return std::nullopt;
  return exit_info{exit_description(), exit_code(), exit_signal()};
}

bool child_process::wait(int timeout_ms) {
  const int64_t deadline = mono_ns() + int64_t(timeout_ms) * ns_per_ms;
  while (running()) {
    if (mono_ns() >= deadline) return false;
    ::usleep(5000);
  }
  return true;
}

kill_outcome kill_process_if_same(pid_t pid, unsigned long long start, int timeout_ms) {
  if (pid <= 0) return kill_outcome::gone;
  const unique_fd fd(open_pidfd(pid));
  if (!fd) return kill_outcome::gone;
  const auto now = process_start_time(pid);  // of the process the pidfd holds, or 0 if it exited
  if (now == 0) return kill_outcome::gone;
  if (now != start) return kill_outcome::not_same;
  if (pidfd_signal(fd.get(), SIGKILL) != 0) return errno == ESRCH ? kill_outcome::gone : kill_outcome::survived;
  pollfd p{fd.get(), POLLIN, 0};  // readable once it has exited
  return ::poll(&p, 1, timeout_ms) == 1 ? kill_outcome::killed : kill_outcome::survived;
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string file_tail(const std::string& path, size_t lines) {
  const std::string text = read_text_file(path).value_or("");
  if (text.empty()) return "(nothing: " + path + " is empty)";
  size_t at = text.size();
  for (size_t n = 0; n <= lines && at > 0; ++n) {
    at = text.rfind('\n', at - 1);
    if (at == std::string::npos) return text;
  }
  return text.substr(at + 1);
}

namespace {

// A file that can be run: a regular file (a directory passes access(X_OK) too) with execute permission.
bool executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::string find_in_path(const std::string& name) {
  if (name.empty()) return {};
  if (name.find('/') != std::string::npos) return executable_file(name) ? name : std::string{};
  const char* path = ::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string dir = dirs.substr(start, end - start);
    const std::string full = (dir.empty() ? "." : dir) + "/" + name;
    if (executable_file(full)) return full;
    start = end + 1;
  }
  return {};
}

std::string self_exe() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  throw_system_error_on(n < 0, "readlink /proc/self/exe");
  return std::string(buf, size_t(n));
}

}  // namespace rig
