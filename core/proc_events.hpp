#pragma once
// The kernel's process events (the netlink proc connector): each fork, exec and exit on the
// host as it happens. rig follows the target's process tree with them, so a process of the
// tree that dies, and how (its wait status), is seen whoever reaps it: a pre-forked worker its
// master respawns, a per-connection backend, a child under su. Needs CAP_NET_ADMIN (root) and
// the host's first network namespace (the kernel sends the events only there).
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/fd.hpp"

namespace rig {

class proc_events {
 public:
  struct exit_event {
    pid_t pid = 0;
    int status = 0;     // the wait status: WIFSIGNALED, WTERMSIG, WEXITSTATUS, WCOREDUMP read it
    int64_t t_ns = 0;   // when rig read it (monotonic)
    std::string comm;   // the process's name (its last exec's, read while it ran)
  };

  // A process's name now (/proc/PID/comm), nullopt when it is gone.
  static std::optional<std::string> comm_of(pid_t pid);

  // Subscribed and reading on a thread of its own; null when this host cannot give the events
  // (not root, another network namespace, a kernel without them), the reason in *why.
  static std::unique_ptr<proc_events> open(std::string* why);
  ~proc_events();
  proc_events(const proc_events&) = delete;
  proc_events& operator=(const proc_events&) = delete;

  // A process of the tree, alive as far as the events have said.
  struct tree_process {
    pid_t pid = 0;
    unsigned long long start = 0;  // /proc/PID/stat field 22, read at its fork (0: gone by then)
    std::string comm;
  };

  // Follows these processes, and every process forked from a followed one from now on (once a
  // tree root is set, those named here count as the tree's).
  void follow(const std::vector<pid_t>& pids);
  bool followed(pid_t pid) const;
  // The process whose tree this is (the target rig started): it and everything forked from it,
  // however it leaves its process group or cgroup, are the tree; once a root is set, exits are
  // kept only for the tree. Set as soon as the pid is known: its fork may not have been read
  // yet, and is then taken for the tree when it is.
  void set_tree_root(pid_t root);
  std::vector<tree_process> tree() const;
  // The followed processes that exited since the last call, in order.
  std::vector<exit_event> take_exits();
  // The exit of this one process, if the events have said it yet (taken; the others stay).
  std::optional<exit_event> take_exit_of(pid_t pid);
  // Events the kernel dropped because rig read too slowly (ENOBUFS): a count may be short.
  uint64_t lost() const { return lost_.load(std::memory_order_relaxed); }

 private:
  explicit proc_events(unique_fd fd);
  void read_loop();
  void handle(const void* event);

  unique_fd fd_;
  unique_fd wake_;  // an eventfd: the destructor ends read_loop's poll
  std::atomic<uint64_t> lost_{0};
  mutable std::mutex mu_;
  struct followed_process {
    std::string comm;
    pid_t parent = 0;
    unsigned long long start = 0;
    bool in_tree = false;
  };
  std::map<pid_t, followed_process> followed_;
  pid_t root_ = 0;
  std::vector<exit_event> exits_;
  std::thread thread_;
};

}  // namespace rig
