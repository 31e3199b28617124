// Who listens on a port, read from /proc: the sockets of a real listener, the process that
// holds them, and the words a refusal uses.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../helpers.hpp"
#include "core/listener.hpp"

using namespace rig;

TEST_CASE("listener: a socket listening on 127.0.0.1 and one on ::1 are found, held by this process, and named") {
  rig::testing::silent_listener v4;
  auto l = tcp_listeners(v4.port);
  REQUIRE(l.size() == 1);
  CHECK(l[0].address == "127.0.0.1");
  CHECK(l[0].inode > 0);
  CHECK(socket_holders({l[0].inode}) == std::vector<pid_t>{::getpid()});
  CHECK(socket_holders({l[0].inode}, {1}).empty());  // looked for only where asked
  CHECK(tcp_listeners(v4.port, ::getpid()).size() == 1);  // the same namespace, read through our pid

  const std::string held = port_holders(v4.port, "127.0.0.1");
  INFO(held);
  CHECK(held.find(fmt::format("127.0.0.1:{} is already listened on by ", v4.port)) == 0);
  CHECK(held.find(fmt::format("(pid {})", ::getpid())) != std::string::npos);
  CHECK(port_holders(v4.port, "127.0.0.2").empty());  // another address: not in the way

  // The same port on ::1 (when the host has IPv6 on loopback).
  unique_fd s6(::socket(AF_INET6, SOCK_STREAM, 0));
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  a.sin6_port = htons(v4.port);
  if (s6.get() >= 0 && ::bind(s6.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(s6.get(), 4) == 0) {
    const auto both = tcp_listeners(v4.port);
    REQUIRE(both.size() == 2);
    CHECK(both[1].address == "::1");
  } else {
    MESSAGE("skipped the ::1 half: no IPv6 on loopback here");
  }
}

TEST_CASE("listener: a closed port has no listener, and a connected socket is not one") {
  const uint16_t port = rig::testing::free_port();
  CHECK(tcp_listeners(port).empty());
  CHECK(port_holders(port, "127.0.0.1").empty());
  rig::testing::silent_listener srv;
  auto c = rig::testing::connect_loopback(srv.port);
  CHECK(tcp_listeners(srv.port).size() == 1);  // the client's and the accepted socket are not listening
}

TEST_CASE("listener: the process tree lists a child and its child, parents first") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (::fork() == 0) ::pause();
    ::pause();
    _exit(0);
  }
  std::vector<pid_t> tree;
  for (int i = 0; i < 200 && tree.size() < 3; ++i) {
    ::usleep(5000);
    tree = process_tree(::getpid());
  }
  REQUIRE(tree.size() >= 3);
  CHECK(tree[0] == ::getpid());
  CHECK(tree[1] == child);
  const pid_t grandchild = tree[2];
  CHECK(process_name(child).find(fmt::format("(pid {})", child)) != std::string::npos);
  ::kill(grandchild, SIGKILL);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  CHECK(process_name(child) == fmt::format("pid {}", child));  // gone: the pid alone
}
