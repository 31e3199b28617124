#pragma once
// redis-server (Debian's redis-server) as a real server for the tests: on a free loopback port,
// no persistence, its files in a directory of the caller's. Stopped (by its pid) when it goes.
#include <optional>
#include <string>

#include "core/process.hpp"
#include "helpers.hpp"

namespace rig::testing {

struct redis_server {
  child_process proc;
  uint16_t port = 0;
  std::string address() const { return "127.0.0.1:" + std::to_string(port); }

  // Started and answering, or nullopt when redis-server is not installed (the caller skips).
  static std::optional<redis_server> start(const std::string& dir) {
    const std::string bin = which("redis-server");
    if (bin.empty()) return std::nullopt;
    const uint16_t port = free_port();
    auto p = child_process::spawn({.argv = {bin, "--port", std::to_string(port), "--bind", "127.0.0.1", "--save", "",
                                            "--appendonly", "no", "--dir", dir},
                                   .capture_stdout = true});
    bool up = false;
    for (int i = 0; i < 100 && !up; ++i)
      if (auto line = p.read_line(100)) up = line->find("Ready to accept connections") != std::string::npos;
    REQUIRE_MESSAGE(up, "redis-server did not come up on port " << port);
    return redis_server{std::move(p), port};
  }
};

}  // namespace rig::testing
