#pragma once
// The TCP sockets of another process, read by rig itself: a copy of each descriptor
// (pidfd_getfd, root, Linux 5.6) and getsockopt on it. What a program's sockets really have,
// whatever the shim inside it reports: the independent read-back of a socket injection.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rig {

struct peeked_socket {
  pid_t pid = 0;
  uint64_t inode = 0;
  bool listening = false;
  int nodelay = -1;            // TCP_NODELAY (0/1); -1: unread
  int sndbuf = 0, rcvbuf = 0;  // SO_SNDBUF / SO_RCVBUF as the kernel reports them (twice the ask)
  int buf_locks = -1;          // SO_BUF_LOCK bits (1: send size fixed, 2: receive); -1: the kernel cannot say
};

// Every TCP socket the processes hold (a socket two of them share, once); throws saying why
// when one cannot be read (not root, a kernel without pidfd_getfd). A process that exits
// meanwhile is skipped.
std::vector<peeked_socket> peek_tcp_sockets(const std::vector<pid_t>& pids);

// Why rig cannot read other processes' sockets here ("" when it can): not root.
std::string socket_peek_unavailable();

}  // namespace rig
