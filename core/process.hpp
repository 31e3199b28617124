#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/fd.hpp"
#include "core/line_reader.hpp"

namespace rig {

struct spawn_options {
  std::vector<std::string> argv;  // argv[0] is a path (see find_in_path)
  bool capture_stdout = false;   // read it with read_line()
  std::string stderr_path;       // empty: inherit
  std::string output_path;       // stdout and stderr both to this file (instead of the two above)
  std::vector<std::string> env;  // KEY=VALUE added to (or replacing in) the rig's environment
  std::vector<std::pair<int, int>> inherit_fds;  // {fd here, fd number in the child}
  bool own_process_group = true; // a terminal's Ctrl-C reaches the rig only; it stops the child
  int parent_death_signal = 15;  // the child dies with the rig (SIGTERM)
  int netns_fd = -1;             // >= 0: the child joins this network namespace before exec
  std::vector<std::string> cgroup_procs;  // cgroup.procs files the child joins before exec
  bool journaled = false;        // a host change of the run (a target, a helper): in the journal
                                 // until reaped, so `rig cleanup` ends it if the rig was killed
};

// How a child process ended.
struct exit_info {
  std::string how;                 // "exited with status 3", "killed by signal 11 (Segmentation fault)"
  std::optional<int> code, signal;  // one of the two is set
};

// A child process the rig started. Destruction stops it (SIGTERM, then SIGKILL).
class child_process {
 public:
  static child_process spawn(const spawn_options& opts);

  child_process() = default;
  child_process(child_process&&) noexcept;
  child_process& operator=(child_process&&) noexcept;
  ~child_process() { stop(); }

  pid_t pid() const { return pid_; }
  // Next line of the child's stdout within the timeout; nullopt on timeout or EOF.
  std::optional<std::string> read_line(int timeout_ms);
  // False once the child has exited (its status is kept; it is reaped by stop()).
  bool running();
  // SIGTERM, wait up to grace_ms, then SIGKILL; to its whole process group too (what it
  // started, even after it exited itself) when it has its own, while it is not yet reaped:
  // until then no other process can be given its number as a group id. Idempotent.
  void stop(int grace_ms = 2000) noexcept;
  // "exited with status 0", "killed by signal 9 (Killed)", or "running".
  std::string exit_description() const;
  std::optional<int> exit_signal() const;
  std::optional<int> exit_code() const;  // set once it exited normally
  // Set once a started child has ended (checked now, without blocking).
  std::optional<exit_info> ended();
  // Waits up to timeout_ms for the child to exit; false if it is still running.
  bool wait(int timeout_ms);

 private:
  pid_t pid_ = -1;
  unique_fd pidfd_;       // the child itself, whatever becomes of its pid number
  bool exited_ = false;   // it has exited; its status is in status_ (as waitpid gives it)
  bool reaped_ = false;   // and it was reaped: from here on its number may be another's
  int status_ = 0;
  line_reader out_;
  bool group_ = false;        // it leads a process group of its own
  std::string journal_line_;  // "process PID START" while journaled and running
  void exited(int status) noexcept;
  void reap() noexcept;
};

enum class kill_outcome { killed, gone, not_same, survived };
// SIGKILL to process `pid` only while it is still the process that started at `start` (clock
// ticks since boot): its pidfd is opened first and the start time read after, so the number
// cannot pass to another process in between. Waits up to timeout_ms for it to go.
kill_outcome kill_process_if_same(pid_t pid, unsigned long long start, int timeout_ms = 3000);

// "SIGSEGV" for 11; "signal N" for a number without a name.
std::string signal_name(int sig);

// The last `lines` lines of a file (a child's log), for error messages; says so when it is empty.
std::string file_tail(const std::string& path, size_t lines);

// The path of the running executable (/proc/self/exe).
std::string self_exe();
// A program name resolved the way execvp would (names with '/' as they are); empty if not found.
std::string find_in_path(const std::string& name);

}  // namespace rig
