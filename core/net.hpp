#pragma once
#include <cstdint>
#include <string>

namespace rig {

// Splits "127.0.0.1:6379", "[::1]:6379" or "localhost:80"; false when malformed. Port 0
// (pick a free one) only when allow_zero.
bool split_host_port(const std::string& address, std::string& host, uint16_t& port, bool allow_zero = false);
// localhost, 127.0.0.0/8 or ::1: the only places rig sends traffic to.
bool is_loopback(const std::string& host);
// A TCP connect to host:port (IPv4) succeeds now.
bool port_accepts(const std::string& host, uint16_t port);
// Polls port_accepts every 20 ms for up to timeout_ms.
bool wait_port_accepts(const std::string& host, uint16_t port, int timeout_ms);

}  // namespace rig
