#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <linux/pkt_sched.h>

#include <cstring>
#include <thread>

#include "core/veth_network.hpp"
#include "tests/helpers.hpp"

using namespace rig;
using namespace rig::testing;

namespace {
sockaddr_in addr_of(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}
}  // namespace

TEST_CASE("veth network: the rig side reaches the target side, and nothing of it is in the host's namespace") {
  if (!can_make_netns()) return;
  const host_network before = host_network::now();
  unsigned long client_ino = 0, target_ino = 0;
  {
    veth_network net = veth_network::create();
    client_ino = net.ns(veth_network::side::client).inode();
    target_ino = net.ns(veth_network::side::target).inode();
    CHECK(client_ino != target_ino);
    CHECK(client_ino != netns::current().inode());

    // Each interface exists only on its side.
    auto c = net.route(veth_network::side::client), t = net.route(veth_network::side::target), host = route_socket();
    CHECK(link_exists(c.get(), veth_network::client_if));
    CHECK_FALSE(link_exists(c.get(), veth_network::target_if));
    CHECK(link_exists(t.get(), veth_network::target_if));
    CHECK_FALSE(link_exists(host.get(), veth_network::client_if));
    CHECK_FALSE(link_exists(host.get(), veth_network::target_if));

    // A listener in the target namespace, a connection from the client namespace.
    unique_fd lst = socket_in_netns(net.ns(veth_network::side::target).fd(), AF_INET, SOCK_STREAM | SOCK_CLOEXEC);
    sockaddr_in la = addr_of(veth_network::target_addr, 0);
    REQUIRE(::bind(lst.get(), reinterpret_cast<sockaddr*>(&la), sizeof la) == 0);
    REQUIRE(::listen(lst.get(), 4) == 0);
    socklen_t len = sizeof la;
    ::getsockname(lst.get(), reinterpret_cast<sockaddr*>(&la), &len);
    unique_fd cli = socket_in_netns(net.ns(veth_network::side::client).fd(), AF_INET, SOCK_STREAM | SOCK_CLOEXEC);
    sockaddr_in ta = addr_of(veth_network::target_addr, ntohs(la.sin_port));
    REQUIRE(::connect(cli.get(), reinterpret_cast<sockaddr*>(&ta), sizeof ta) == 0);
    unique_fd srv(::accept(lst.get(), nullptr, nullptr));
    REQUIRE(srv);
    sockaddr_in peer{};
    len = sizeof peer;
    ::getpeername(srv.get(), reinterpret_cast<sockaddr*>(&peer), &len);
    char ip[32];
    inet_ntop(AF_INET, &peer.sin_addr, ip, sizeof ip);
    CHECK(std::string(ip) == veth_network::client_addr);
    CHECK(::send(cli.get(), "ping", 4, 0) == 4);
    char buf[8] = {};
    CHECK(::recv(srv.get(), buf, sizeof buf, 0) == 4);
    CHECK(std::string(buf) == "ping");
    const auto counters = read_link_counters(c.get(), veth_network::client_if);
    CHECK(counters.tx_packets > 0);

  }
  host_network::now().check_unchanged_since(before);
  CHECK_FALSE(netns_in_use(client_ino));
  CHECK_FALSE(netns_in_use(target_ino));
}

TEST_CASE("netns scope: threads started inside inherit the namespace, the caller returns to its own") {
  if (!can_make_netns()) return;
  const unsigned long home = netns::current().inode();
  netns ns = netns::create();
  {
    netns_scope in(ns.fd());
    CHECK(netns::current().inode() == ns.inode());
    unsigned long seen = 0;
    std::thread([&] { seen = netns::current().inode(); }).join();
    CHECK(seen == ns.inode());
  }
  CHECK(netns::current().inode() == home);
}

TEST_CASE("root qdisc save and restore: the kernel default comes back after rig's tbf") {
  if (!can_make_netns()) return;
  veth_network net = veth_network::create();
  auto c = net.route(veth_network::side::client);
  const int ifindex = link_index(c.get(), veth_network::client_if);
  const auto saved = saved_root_qdisc::save(c.get(), ifindex);
  REQUIRE(saved.prior());
  CHECK(saved.prior()->handle == 0);
  const std::string default_kind = saved.prior()->kind;
  // A tbf as tc sends it: 1 MB/s, 10 ms of burst (psched ticks are 64 ns), 50 KB queue.
  tc_tbf_qopt q{};
  q.rate.rate = 1'000'000;
  q.limit = 50'000;
  q.buffer = uint32_t(10'000'000 / 64);
  attr_writer w;
  w.attr(TCA_TBF_PARMS, q);
  replace_root_qdisc(c.get(), ifindex, 0x10000, "tbf", w.bytes);
  auto now = root_qdisc(c.get(), ifindex);
  REQUIRE(now);
  CHECK(now->kind == "tbf");
  CHECK(now->handle == 0x10000);
  saved.restore(c.get());
  now = root_qdisc(c.get(), ifindex);
  REQUIRE(now);
  CHECK(now->kind == default_kind);
  CHECK(now->handle == 0);
}
