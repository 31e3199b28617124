#pragma once
// Shared by the tests: bind a kind's options from TOML text, find free ports, start
// real servers the tests need.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/fd.hpp"
#include "core/options.hpp"
#include "core/process.hpp"

namespace rig::testing {

inline option_values bind_text(const option_table& table, const std::string& text) {
  const toml::table t = toml::parse(std::string_view(text), std::string_view("test.toml"));
  bind_context ctx{"test.toml", "[test]", "test", nullptr, {}};
  diagnostics d;
  auto v = bind_options(table, t, ctx, d);
  REQUIRE_MESSAGE(d.empty(), d.str());
  return v;
}

// A TCP listener on 127.0.0.1 that accepts (through the kernel backlog) and never answers.
struct silent_listener {
  unique_fd fd;
  uint16_t port = 0;
  silent_listener() : fd(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd.get(), 64) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
};

// A port on 127.0.0.1 that nothing listens on (bound then released).
inline uint16_t free_port() {
  silent_listener l;
  return l.port;
}

// A directory under /tmp, removed with everything in it when the test ends.
struct temp_dir {
  std::string path;
  temp_dir() {
    char t[] = "/tmp/rig-test-XXXXXX";
    REQUIRE(::mkdtemp(t));
    path = t;
  }
  ~temp_dir() { std::filesystem::remove_all(path); }
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A blocking client socket connected to 127.0.0.1:port, with a receive timeout.
inline unique_fd connect_loopback(uint16_t port, int timeout_s = 10) {
  unique_fd fd(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  timeval tv{timeout_s, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

inline std::string which(const std::string& prog) {
  for (const char* dir : {"/usr/local/bin/", "/usr/bin/", "/usr/sbin/", "/bin/"})
    if (::access((dir + prog).c_str(), X_OK) == 0) return dir + prog;
  return {};
}

}  // namespace rig::testing
