#include "core/net.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "core/asio.hpp"
#include "core/fd.hpp"

namespace rig {

bool split_host_port(const std::string& a, std::string& host, uint16_t& port, bool allow_zero) {
  const auto colon = a.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == a.size()) return false;
  host = a.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  const long p = std::strtol(a.c_str() + colon + 1, &end, 10);
  if (*end || p < (allow_zero ? 0 : 1) || p > 65535) return false;
  port = uint16_t(p);
  return true;
}

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  const auto addr = asio::ip::make_address(host, ec);
  return !ec && addr.is_loopback();
}

bool port_accepts(const std::string& host, uint16_t port) {
  unique_fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) return false;
  return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
}

bool wait_port_accepts(const std::string& host, uint16_t port, int timeout_ms) {
  for (int waited = 0;; waited += 20) {
    if (port_accepts(host, port)) return true;
    if (waited >= timeout_ms) return false;
    ::usleep(20'000);
  }
}

}  // namespace rig
