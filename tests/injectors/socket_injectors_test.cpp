#include <doctest/doctest.h>

#include <thread>

#include "../helpers.hpp"
#include "core/bind.hpp"
#include "core/cgroup.hpp"
#include "core/clock.hpp"
#include "injectors/socket_injectors.hpp"
#include "targets/builtin_service.hpp"
#include "workloads/tcp.hpp"

using namespace rig;
using rig::testing::bind_text;

namespace {
// The built-in target with a two-connection tcp workload on it: sockets on both sides.
struct both_sides {
  builtin_service svc{builtin_config{}};
  run_clock clock;
  window_sink windows;
  tcp_workload w{bind_text(tcp_workload_options(), "connections = 2\n")};
  run_context ctx;
  both_sides() {
    svc.start();
    clock.start_ns = mono_ns();
    w.start({"rr", "127.0.0.1", svc.port(), &clock, &windows});
    // Both connections up on both sides: 200 ms at least, and as long as a loaded machine under
    // a sanitizer takes (up to 10 s).
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const socket_policy any;
    for (int i = 0; i < 980 && (svc.sockets().check_socket_policy(any).sockets < 2 ||
                                w.sockets()->check_socket_policy(any).sockets < 2);
         ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ctx = run_context{"builtin", std::nullopt, {"target", &svc.sockets(), "test"}, "", {{"workload rr", w.sockets(), "test"}}};
  }
};
}  // namespace

TEST_CASE("nodelay where=both: applied, read back on every socket, reverted to the prior state") {
  both_sides sides;
  auto& svc = sides.svc;
  auto& w = sides.w;
  auto& ctx = sides.ctx;
  auto inj = make_nodelay(bind_text(nodelay_options(), "where = \"both\"\n"));
  REQUIRE(inj->probe(ctx).ok);
  inj->apply(ctx);
  const auto v = inj->verify(ctx);
  CHECK(v.ok);
  CHECK(v.text == "target: 2 of 2 sockets read back TCP_NODELAY=0; workload rr: 2 of 2 sockets read back TCP_NODELAY=0");
  CHECK(v.measured["sockets"] == 4);
  CHECK(v.measured["sockets_matching"] == 4);

  const auto u = inj->revert(ctx);
  CHECK(u.ok);
  INFO(u.text);
  CHECK(u.text.find("target: back to") != std::string::npos);
  CHECK(u.text.find("2 sockets read back") != std::string::npos);
  socket_policy on;
  on.nodelay = true;
  CHECK(svc.sockets().check_socket_policy(on).matching == 2);
  CHECK(w.sockets()->check_socket_policy(on).matching == 2);
  CHECK(svc.sockets().socket_policy_now().nodelay == true);
  inj->revert(ctx);  // idempotent
  w.stop();
}

TEST_CASE("nodelay verification fails loudly when there is nothing to change") {
  builtin_service svc(builtin_config{});
  svc.start();
  run_context ctx{"builtin", std::nullopt, {"target", &svc.sockets(), "test"}, "", {}};
  auto inj = make_nodelay(bind_text(nodelay_options(), "where = \"target\"\n"));
  inj->apply(ctx);
  const auto v = inj->verify(ctx);
  CHECK_FALSE(v.ok);
  CHECK(v.text.find("no open sockets") != std::string::npos);
  inj->revert(ctx);
}

TEST_CASE("nodelay probe names what is missing") {
  run_context ctx{"endpoint", std::nullopt, {"target"}, "the endpoint target is a process rig did not start", {}};
  auto inj = make_nodelay(bind_text(nodelay_options(), "where = \"target\"\n"));
  const auto p = inj->probe(ctx);
  CHECK_FALSE(p.ok);
  CHECK(p.reason.find("where = \"workload\"") != std::string::npos);
}

TEST_CASE("sockbuf where=both: buffers clamped on both sides, then restored to their prior sizes") {
  both_sides sides;
  auto& svc = sides.svc;
  auto& w = sides.w;
  auto& ctx = sides.ctx;
  const auto opts = bind_text(sockbuf_options(), "send = \"4KiB\"\nreceive = \"4KiB\"\nwhere = \"both\"\n");
  auto inj = make_sockbuf(opts);
  REQUIRE(find_injector_kind("sockbuf")->needs(opts, cgroup_layout::detect()).target_sockets);
  inj->apply(ctx);
  const auto v = inj->verify(ctx);
  CHECK(v.ok);
  CHECK(v.measured["sockets_matching"] == 4);
  socket_policy tiny;
  tiny.send_buffer = 4096;
  tiny.receive_buffer = 4096;
  inj->revert(ctx);
  // Back to the kernel's sizes of before: no longer within the clamp.
  CHECK(svc.sockets().check_socket_policy(tiny).matching == 0);
  CHECK(w.sockets()->check_socket_policy(tiny).matching == 0);
  CHECK_FALSE(svc.sockets().socket_policy_now().send_buffer.has_value());
  w.stop();
}

TEST_CASE("sockbuf needs a size") {
  diagnostics d;
  const toml::table t = toml::parse(std::string_view("where = \"target\"\n"), std::string_view("s.toml"));
  bind_context ctx{"s.toml", "[injectors.b]", "injectors.b", nullptr, {"s.toml", 3, 1, {}}};
  check_sockbuf(bind_options(sockbuf_options(), t, ctx, d), ctx, d);
  REQUIRE(d.size() == 1);
  CHECK(d.str() == "s.toml:3:1: sockbuf in [injectors.b] needs 'send', 'receive' or both, e.g. send = \"4KiB\"");
}
