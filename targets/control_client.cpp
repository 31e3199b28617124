#include "targets/control_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <sstream>
#include <stdexcept>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/netns.hpp"

namespace rig {

void control_client::connect(const std::string& path, int timeout_ms, int netns_fd) {
  std::lock_guard lk(mu_);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) throw std::invalid_argument("control socket path too long: " + path);
  std::memcpy(addr.sun_path, path.data(), path.size());
  if (!path.empty() && path[0] == '@') addr.sun_path[0] = '\0';
  const socklen_t len = socklen_t(offsetof(sockaddr_un, sun_path) + path.size());
  unique_fd fd = netns_fd >= 0 ? socket_in_netns(netns_fd, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC)
                               : unique_fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  throw_system_error_on(!fd, "control socket");
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  throw_system_error_on(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0,
                        "connect to the target's control channel");
  fd_ = std::move(fd);
}

void control_client::adopt(unique_fd fd, int timeout_ms) {
  std::lock_guard lk(mu_);
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  fd_ = std::move(fd);
}

std::string control_client::request(const std::string& line) {
  std::lock_guard lk(mu_);
  if (!fd_) throw std::runtime_error("target control channel is not connected");
  const std::string out = line + "\n";
  if (::send(fd_.get(), out.data(), out.size(), MSG_NOSIGNAL) != ssize_t(out.size()))
    throw_system_error("send to the target's control channel");
  for (;;) {
    if (auto nl = buffered_.find('\n'); nl != std::string::npos) {
      std::string reply = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      if (reply.rfind("ok", 0) == 0) return reply.size() > 3 ? reply.substr(3) : std::string{};
      throw std::runtime_error("target refused '" + line + "': " + reply);
    }
    char buf[1024];
    const ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
    if (n <= 0) {
      fd_.reset();
      throw std::runtime_error("target control channel closed or timed out");
    }
    buffered_.append(buf, size_t(n));
  }
}

std::map<std::string, int64_t> control_client::parse_pairs(const std::string& text) {
  std::map<std::string, int64_t> out;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    const auto eq = word.find('=');
    if (eq == std::string::npos) continue;
    out[word.substr(0, eq)] = std::strtoll(word.c_str() + eq + 1, nullptr, 10);
  }
  return out;
}

}  // namespace rig
