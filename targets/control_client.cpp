#include "targets/control_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/netns.hpp"

namespace rig {

void control_client::set_fd(unique_fd fd, int timeout_ms) {
  std::lock_guard lk(mu_);
  // Replies are waited for with poll (a per-request timeout); a send to a target that stopped
  // reading gives up after the channel's timeout.
  timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  fd_ = std::move(fd);
  timeout_ms_ = timeout_ms;
  buffered_.clear();
  owed_ = 0;
}

void control_client::connect(const std::string& path, int timeout_ms, int netns_fd) {
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
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  throw_system_error_on(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0,
                        "connect to the target's control channel");
  set_fd(std::move(fd), timeout_ms);
}

void control_client::adopt(unique_fd fd, int timeout_ms) { set_fd(std::move(fd), timeout_ms); }

std::optional<std::string> control_client::read_line(int64_t deadline_ns) {
  for (;;) {
    if (auto nl = buffered_.find('\n'); nl != std::string::npos) {
      std::string line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      return line;
    }
    const int64_t left_ms = (deadline_ns - mono_ns() + 999'999) / 1'000'000;
    if (left_ms <= 0) return std::nullopt;
    pollfd p{fd_.get(), POLLIN, 0};
    const int r = ::poll(&p, 1, int(std::min<int64_t>(left_ms, INT32_MAX)));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return std::nullopt;
    char buf[1024];
    const ssize_t n = ::recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) {
      fd_.reset();
      throw std::runtime_error("target control channel closed");
    }
    buffered_.append(buf, size_t(n));
  }
}

std::string control_client::request(const std::string& line, int timeout_ms) {
  const int64_t deadline = mono_ns() + int64_t(timeout_ms < 0 ? timeout_ms_ : timeout_ms) * 1'000'000;
  // Tried, not waited on: std::timed_mutex's timed wait is pthread_mutex_clocklock, which
  // ThreadSanitizer does not see (it then reports every unlock as of an unlocked mutex).
  std::unique_lock lk(mu_, std::defer_lock);
  while (!lk.try_lock()) {
    if (mono_ns() >= deadline)
      throw std::runtime_error("target control channel busy: another request waits for the target");
    ::usleep(1000);
  }
  if (!fd_) throw std::runtime_error("target control channel is not connected");
  const std::string out = line + "\n";
  if (::send(fd_.get(), out.data(), out.size(), MSG_NOSIGNAL) != ssize_t(out.size())) {
    fd_.reset();
    throw_system_error("send to the target's control channel");
  }
  ++owed_;  // this request's reply, until it is read
  for (;;) {
    auto reply = read_line(deadline);
    if (!reply)
      throw std::runtime_error(fmt::format("the target did not answer '{}' on its control channel within {} ms",
                                           line.substr(0, line.find(' ')),
                                           timeout_ms < 0 ? timeout_ms_ : timeout_ms));
    if (--owed_ > 0) continue;  // a late reply to a request that timed out before
    if (reply->rfind("ok", 0) == 0) return reply->size() > 3 ? reply->substr(3) : std::string{};
    throw std::runtime_error("target refused '" + line + "': " + *reply);
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
