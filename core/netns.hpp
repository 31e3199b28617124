#pragma once
#include <functional>
#include <string>

#include "core/fd.hpp"

namespace rig {

// A network namespace held by a file descriptor. rig's namespaces are anonymous (no
// bind mount under /run/netns): the kernel frees one as soon as the last fd, socket and
// process in it is gone, so a crashed rig cannot leave one behind.
class netns {
 public:
  static netns create();   // a new, empty namespace (only a down "lo" in it)
  static netns current();  // the calling thread's
  netns() = default;
  int fd() const { return fd_.get(); }
  explicit operator bool() const { return bool(fd_); }
  unsigned long inode() const;  // the namespace's identity, as /proc/PID/ns/net shows it

 private:
  explicit netns(unique_fd fd) : fd_(std::move(fd)) {}
  unique_fd fd_;
};

// Runs fn on a short-lived thread that has joined the namespace, so the caller's thread
// never changes namespace. Exceptions from fn propagate.
void run_in_netns(int ns_fd, const std::function<void()>& fn);

// A socket that lives in the given namespace (a socket stays in the namespace it was made in).
unique_fd socket_in_netns(int ns_fd, int domain, int type, int protocol = 0);

// Moves the calling thread into a namespace and back on destruction. Threads the caller
// starts meanwhile inherit it, and so do children it forks.
class netns_scope {
 public:
  explicit netns_scope(int ns_fd);
  ~netns_scope();
  netns_scope(const netns_scope&) = delete;
  netns_scope& operator=(const netns_scope&) = delete;

 private:
  netns prior_;
};

}  // namespace rig
