#include "core/net.hpp"

#include <cstdlib>

#include "core/asio.hpp"

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

}  // namespace rig
