#include "core/netns.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdio>
#include <exception>
#include <thread>

#include "core/error.hpp"

namespace rig {

namespace {
unique_fd open_thread_netns() {
  unique_fd fd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  throw_system_error_on(!fd, "open /proc/thread-self/ns/net");
  return fd;
}
}  // namespace

netns netns::create() {
  unique_fd fd;
  // unshare() moves the calling thread: do it on a thread of its own that then ends.
  run_in_netns(-1, [&] {
    throw_system_error_on(::unshare(CLONE_NEWNET) != 0, "create a network namespace (unshare CLONE_NEWNET)",
                          "creating network namespaces needs root (CAP_SYS_ADMIN)");
    fd = open_thread_netns();
  });
  return netns(std::move(fd));
}

netns netns::current() { return netns(open_thread_netns()); }

unsigned long netns::inode() const {
  struct stat st {};
  throw_system_error_on(::fstat(fd_.get(), &st) != 0, "fstat network namespace");
  return st.st_ino;
}

void run_in_netns(int ns_fd, const std::function<void()>& fn) {
  std::exception_ptr failure;
  std::thread t([&] {
    try {
      if (ns_fd >= 0) throw_system_error_on(::setns(ns_fd, CLONE_NEWNET) != 0, "join a network namespace (setns)");
      fn();
    } catch (...) {
      failure = std::current_exception();
    }
  });
  t.join();
  if (failure) std::rethrow_exception(failure);
}

unique_fd socket_in_netns(int ns_fd, int domain, int type, int protocol) {
  unique_fd fd;
  run_in_netns(ns_fd, [&] {
    fd.reset(::socket(domain, type | SOCK_CLOEXEC, protocol));
    throw_system_error_on(!fd, "socket");
  });
  return fd;
}

netns_scope::netns_scope(int ns_fd) : prior_(netns::current()) {
  throw_system_error_on(::setns(ns_fd, CLONE_NEWNET) != 0, "join a network namespace (setns)");
}

netns_scope::~netns_scope() {
  if (::setns(prior_.fd(), CLONE_NEWNET) != 0) std::perror("rig: cannot return to the original network namespace");
}

}  // namespace rig
