#include "core/socket_policy.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>

#include <fmt/format.h>

namespace rig {

std::string socket_policy::str() const {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : " ") + part; };
  if (nodelay) add(fmt::format("TCP_NODELAY={}", *nodelay ? 1 : 0));
  if (send_buffer) add(fmt::format("SO_SNDBUF={}", *send_buffer));
  if (receive_buffer) add(fmt::format("SO_RCVBUF={}", *receive_buffer));
  return s;
}

namespace {
int locks_of(const socket_policy& p) {
  return (p.send_buffer ? buf_lock_send : 0) | (p.receive_buffer ? buf_lock_receive : 0);
}

int read_int(int fd, int level, int name) {
  int v = 0;
  socklen_t len = sizeof v;
  return ::getsockopt(fd, level, name, &v, &len) == 0 ? v : 0;
}
}  // namespace

void socket_set::add(int fd) {
  std::lock_guard lk(mu_);
  // The kernel reports twice what was asked; half of it is what setsockopt needs to restore it.
  fds_[fd] = sizes{read_int(fd, SOL_SOCKET, SO_SNDBUF) / 2, read_int(fd, SOL_SOCKET, SO_RCVBUF) / 2};
  apply_socket_policy(fd, policy_);
}

void socket_set::reset_socket_policy(const socket_policy& prior) {
  std::lock_guard lk(mu_);
  const int keep = locks_of(prior);
  for (const auto& [fd, orig] : fds_) {
    socket_policy back = prior;
    if (!back.send_buffer && policy_.send_buffer) back.send_buffer = orig.send;
    if (!back.receive_buffer && policy_.receive_buffer) back.receive_buffer = orig.receive;
    apply_socket_policy(fd, back);
    // The sizes put back are fixed as any set size is: hand them to the kernel's autotuning.
    if (locks_of(policy_) & ~keep) {
      int locks = 0;
      socklen_t len = sizeof locks;
      if (::getsockopt(fd, SOL_SOCKET, so_buf_lock, &locks, &len) == 0 && (locks & ~keep))
        ::setsockopt(fd, SOL_SOCKET, so_buf_lock, &keep, sizeof keep);
    }
  }
  policy_ = prior;
}

void socket_set::remove(int fd) {
  std::lock_guard lk(mu_);
  fds_.erase(fd);
}

socket_report socket_set::set_socket_policy(const socket_policy& p) {
  std::lock_guard lk(mu_);
  if (p.nodelay) policy_.nodelay = p.nodelay;
  if (p.send_buffer) policy_.send_buffer = p.send_buffer;
  if (p.receive_buffer) policy_.receive_buffer = p.receive_buffer;
  socket_report r;
  for (const auto& [fd, orig] : fds_) {
    ++r.sockets;
    if (apply_socket_policy(fd, p) && socket_matches(fd, p)) ++r.matching;
  }
  return r;
}

socket_report socket_set::check_socket_policy(const socket_policy& p) {
  std::lock_guard lk(mu_);
  socket_report r;
  for (const auto& [fd, orig] : fds_) {
    ++r.sockets;
    // A size the policy does not set must not stay fixed (autotuning on), where the kernel says.
    int locks = 0;
    socklen_t len = sizeof locks;
    const bool fixed = ::getsockopt(fd, SOL_SOCKET, so_buf_lock, &locks, &len) == 0 && (locks & ~locks_of(p));
    if (socket_matches(fd, p) && !fixed) ++r.matching;
  }
  return r;
}

socket_policy socket_set::socket_policy_now() {
  std::lock_guard lk(mu_);
  return policy_;
}

bool apply_socket_policy(int fd, const socket_policy& p) {
  bool ok = true;
  if (p.nodelay) {
    int v = *p.nodelay ? 1 : 0;
    ok &= ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v) == 0;
  }
  if (p.send_buffer) {
    int v = *p.send_buffer;
    ok &= ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v) == 0;
  }
  if (p.receive_buffer) {
    int v = *p.receive_buffer;
    ok &= ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v) == 0;
  }
  return ok;
}

bool socket_matches(int fd, const socket_policy& p) {
  auto read = [fd](int level, int name, int& out) {
    socklen_t len = sizeof out;
    return ::getsockopt(fd, level, name, &out, &len) == 0;
  };
  int v = 0;
  if (p.nodelay && (!read(IPPROTO_TCP, TCP_NODELAY, v) || (v != 0) != *p.nodelay)) return false;
  // The kernel doubles SO_*BUF and enforces a floor, so "matches" means at most twice the ask.
  if (p.send_buffer && (!read(SOL_SOCKET, SO_SNDBUF, v) || v > 2 * std::max(*p.send_buffer, 2304))) return false;
  if (p.receive_buffer && (!read(SOL_SOCKET, SO_RCVBUF, v) || v > 2 * std::max(*p.receive_buffer, 1152)))
    return false;
  return true;
}

}  // namespace rig
