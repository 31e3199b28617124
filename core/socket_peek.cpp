#include "core/socket_peek.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "core/fd.hpp"
#include "core/pidfd.hpp"
#include "core/socket_policy.hpp"

namespace rig {

namespace {
int opt(int fd, int level, int name) {
  int v = -1;
  socklen_t len = sizeof v;
  return ::getsockopt(fd, level, name, &v, &len) == 0 ? v : -1;
}
}  // namespace

std::string socket_peek_unavailable() {
  return ::geteuid() == 0 ? "" : "reading another process's sockets (pidfd_getfd) needs root";
}

std::vector<peeked_socket> peek_tcp_sockets(const std::vector<pid_t>& pids) {
  std::vector<peeked_socket> out;
  std::set<uint64_t> seen;
  for (pid_t pid : pids) {
    unique_fd pidfd(open_pidfd(pid));
    if (!pidfd) continue;  // gone
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(fmt::format("/proc/{}/fd", pid), ec)) {
      std::error_code lec;
      const std::string target = std::filesystem::read_symlink(e.path(), lec).string();
      uint64_t inode = 0;
      if (lec || std::sscanf(target.c_str(), "socket:[%lu]", &inode) != 1 || seen.count(inode)) continue;
      const int num = std::atoi(e.path().filename().c_str());
      unique_fd fd(pidfd_getfd(pidfd.get(), num));
      if (!fd) {
        if (errno == EBADF) continue;  // closed meanwhile
        if (errno == ESRCH) break;     // the process exited
        throw std::runtime_error(fmt::format("cannot read socket {} of pid {} (pidfd_getfd): {}", num, pid,
                                             std::strerror(errno)));
      }
      const int domain = opt(fd.get(), SOL_SOCKET, SO_DOMAIN);
      if (opt(fd.get(), SOL_SOCKET, SO_TYPE) != SOCK_STREAM || (domain != AF_INET && domain != AF_INET6) ||
          opt(fd.get(), SOL_SOCKET, SO_PROTOCOL) != IPPROTO_TCP)
        continue;
      seen.insert(inode);
      peeked_socket s;
      s.pid = pid;
      s.inode = inode;
      s.listening = opt(fd.get(), SOL_SOCKET, SO_ACCEPTCONN) == 1;
      s.nodelay = opt(fd.get(), IPPROTO_TCP, TCP_NODELAY);
      if (s.nodelay > 0) s.nodelay = 1;
      s.sndbuf = opt(fd.get(), SOL_SOCKET, SO_SNDBUF);
      s.rcvbuf = opt(fd.get(), SOL_SOCKET, SO_RCVBUF);
      s.buf_locks = opt(fd.get(), SOL_SOCKET, so_buf_lock);
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace rig
