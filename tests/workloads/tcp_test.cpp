#include <doctest/doctest.h>
#include <sys/socket.h>

#include <cmath>
#include <thread>

#include "../helpers.hpp"
#include "phase_run.hpp"
#include "core/clock.hpp"
#include "targets/builtin_service.hpp"
#include "workloads/tcp.hpp"

using namespace rig;
using rig::testing::bind_text;
using rig::testing::errors_of;

namespace {

// The tcp workload against host:port for one phase.
struct tcp_harness : rig::testing::phase_run<tcp_workload> {
  tcp_harness(const std::string& toml, uint16_t port, const std::string& host = "127.0.0.1")
      : phase_run(bind_text(tcp_workload_options(), toml), {"rr", host, port}) {}
  phase_stats run_phase(int64_t ms) { return phase(ms); }
};

}  // namespace

TEST_CASE("closed loop against the built-in target: every request answered, no send lag") {
  builtin_service svc(builtin_config{});
  svc.start();
  tcp_harness h("connections = 2\nthreads = 2\n", svc.port());
  const auto s = h.run_phase(1000);
  MESSAGE("closed loop: " << s.ops << " ops in 1 s, p50 " << double(s.latency.percentile(50)) / 1e3 << " us");
  CHECK(s.ops > 500);
  CHECK(s.error_total() == 0);
  CHECK(s.latency.count() == s.ops);
  CHECK(s.service.count() == s.ops);
  CHECK(s.send_lag.count() == 0);
  CHECK(svc.counters().requests >= int64_t(s.ops));
}

TEST_CASE("open loop holds the asked rate and records send lag beside latency") {
  builtin_service svc(builtin_config{});
  svc.start();
  tcp_harness h("connections = 4\nrate = \"1000/s\"\n", svc.port());
  const auto s = h.run_phase(2000);
  MESSAGE("open loop at 1000/s for 2 s: " << s.ops << " ops in " << h.window_s() << " s, send lag p50 "
                                           << double(s.send_lag.percentile(50)) / 1e3 << " us");
  // Uniform arrivals: exactly 1000 a second of the phase, give or take open_loop_slack_s() of
  // them at its edges (100 ops; 250 under a sanitizer).
  CHECK(std::abs(double(s.ops) - 1000 * h.window_s()) <= 1000 * rig::testing::open_loop_slack_s());
  CHECK(s.error_total() == 0);
  CHECK(s.send_lag.count() > s.ops / 2);
  // Latency from the intended time is never below service time from the actual send.
  CHECK(s.latency.percentile(50) >= s.service.percentile(50));
}

TEST_CASE("steps and Poisson arrivals against the built-in target: the asked rates, the generator keeping up") {
  builtin_service svc(builtin_config{});
  svc.start();
  // 200/s for 0.5 s, then 2000/s for 0.5 s: ~100 + ~1000 requests, Poisson-spaced.
  tcp_harness h("connections = 4\nsteps = [\"200/s\", \"2000/s\"]\nstep = \"500ms\"\narrival = \"poisson\"\n",
            svc.port());
  const auto s = h.run_phase(1000);
  MESSAGE("steps 200/s then 2000/s, Poisson, 1 s: " << s.ops << " ops in " << h.window_s() << " s, " << s.late_sends
                                                    << " sent late");
  // Poisson arrivals: the count is Poisson(mean), mean 200 x 0.5 s + 2000/s x the rest of the phase
  // (~1,100), sigma its square root (~33); 5 sigma. Beside it the edges (open_loop_slack_s()): at
  // the end requests at 2000/s may be unsent or unanswered when the phase ends, at the start
  // requests at 200/s sent late into it.
  const double mean = 200 * 0.5 + 2000 * (h.window_s() - 0.5), sigma = std::sqrt(mean);
  CHECK(double(s.ops) >= mean - 5 * sigma - 2000 * rig::testing::open_loop_slack_s());
  CHECK(double(s.ops) <= mean + 5 * sigma + 200 * rig::testing::open_loop_slack_s());
  CHECK(s.error_total() == 0);
  if (!rig::testing::sanitized_skip("the generator's punctuality: instrumented code sends late"))
    CHECK(double(s.late_sends) <= 0.01 * double(s.ops));
  // Poisson bunches sends, so some wait behind a busy connection: lag without generator blame.
  CHECK(s.send_lag.count() > 0);
}

TEST_CASE("a server that never answers produces timeouts, not a hang") {
  rig::testing::silent_listener quiet;
  tcp_harness h("connections = 2\ntimeout = \"100ms\"\n", quiet.port);
  const int64_t t0 = mono_ns();
  const auto s = h.run_phase(1000);
  CHECK(mono_ns() - t0 < 3 * ns_per_s);
  MESSAGE("timeouts in 1 s at 100 ms each over 2 connections: " << errors_of(s, error_kind::timeout));
  CHECK(errors_of(s, error_kind::timeout) >= 10);
  CHECK(s.ops == 0);
}

TEST_CASE("nothing listening: connect errors are counted") {
  tcp_harness h("connections = 1\n", rig::testing::free_port());
  const auto s = h.run_phase(500);
  CHECK(errors_of(s, error_kind::connect) >= 3);
  CHECK(s.ops == 0);
}

TEST_CASE("the rig's own sockets take a socket policy and read it back") {
  builtin_service svc(builtin_config{});
  svc.start();
  tcp_harness h("connections = 3\n", svc.port());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  socket_policy off;
  off.nodelay = false;
  CHECK(h.w->sockets()->socket_policy_now().nodelay == true);
  const auto r = h.w->sockets()->set_socket_policy(off);
  CHECK(r.sockets == 3);
  CHECK(r.matching == 3);
  CHECK(h.w->sockets()->check_socket_policy(off).matching == 3);
  CHECK(h.w->sockets()->socket_policy_now().nodelay == false);
  h.w->stop();
}

TEST_CASE("raw protocol against a real redis-server: PING answered with +PONG") {
  const std::string redis = rig::testing::which("redis-server");
  if (redis.empty()) {
    MESSAGE("skipped: redis-server is not installed (scripts/install-deps.sh installs it)");
    return;
  }
  const uint16_t port = rig::testing::free_port();
  auto server = child_process::spawn({.argv = {redis, "--port", std::to_string(port), "--bind", "127.0.0.1",
                                               "--save", "", "--appendonly", "no", "--daemonize", "no"},
                                      .stderr_path = "/dev/null"});
  REQUIRE(rig::testing::wait_listening(port));
  tcp_harness h("connections = 2\nrequest = \"PING\\r\\n\"\nresponse_until = \"\\r\\n\"\n", port);
  const auto s = h.run_phase(1000);
  MESSAGE("redis PING closed loop: " << s.ops << " ops in 1 s");
  CHECK(s.ops > 500);
  CHECK(s.error_total() == 0);
  server.stop();
}

namespace {

// A redis-server of the test's own on a free port, or nothing (and the reason said) when redis is absent.
struct test_redis {
  uint16_t port = rig::testing::free_port();
  child_process proc;
  bool up = false;
  test_redis() {
    const std::string redis = rig::testing::which("redis-server");
    if (redis.empty()) {
      MESSAGE("skipped: redis-server is not installed (scripts/install-deps.sh installs it)");
      return;
    }
    proc = child_process::spawn({.argv = {redis, "--port", std::to_string(port), "--bind", "127.0.0.1", "--save", "",
                                          "--appendonly", "no", "--daemonize", "no", "--enable-debug-command", "yes"},
                                 .stderr_path = "/dev/null"});
    REQUIRE(rig::testing::wait_listening(port));
    up = true;
  }
  ~test_redis() { proc.stop(); }
};

}  // namespace

TEST_CASE("replies checked on a real redis-server: the expected reply counts, an error reply and a wrong one do not") {
  test_redis redis;
  if (!redis.up) return;
  {
    tcp_harness h("connections = 2\nrequest = \"PING\\r\\n\"\nresponse_until = \"\\r\\n\"\nexpect_reply = \"+PONG\\r\\n\"\n"
              "error_prefix = [\"-\"]\n",
              redis.port);
    const auto s = h.run_phase(500);
    CHECK(s.ops > 200);
    CHECK(s.error_total() == 0);
  }
  {
    // redis answers an unknown command with "-ERR unknown command ...": an error reply, with its latency.
    tcp_harness h("connections = 2\nrequest = \"PONG\\r\\n\"\nresponse_until = \"\\r\\n\"\nerror_prefix = [\"-\"]\n",
              redis.port);
    const auto s = h.run_phase(500);
    CHECK(s.ops == 0);
    CHECK(errors_of(s, error_kind::error_reply) > 200);
    CHECK(s.error_latency.count() == errors_of(s, error_kind::error_reply));
    CHECK(s.all_latency.count() == errors_of(s, error_kind::error_reply));
    CHECK(s.latency.count() == 0);
  }
  {
    // No error prefix given, but the reply is not the one expected: a bad reply, never a success.
    tcp_harness h("connections = 2\nrequest = \"PONG\\r\\n\"\nresponse_until = \"\\r\\n\"\nexpect_prefix = \"+\"\n",
              redis.port);
    const auto s = h.run_phase(500);
    CHECK(s.ops == 0);
    CHECK(errors_of(s, error_kind::bad_reply) > 200);
  }
}

TEST_CASE("a reply longer than it is read as is a bad reply, not several fast successes") {
  test_redis redis;
  if (!redis.up) return;
  // A 512 KiB value read as 1000-byte replies: before, each slice counted as a reply (1,059 ops/s, p50 7.6 us).
  tcp_harness populate("connections = 1\nrequest = \"DEBUG POPULATE 1 big 524288\\r\\n\"\nresponse_size = \"5B\"\n"
                   "expect_reply = \"+OK\\r\\n\"\n",
                   redis.port);
  REQUIRE(populate.run_phase(200).ops > 0);
  tcp_harness sliced("connections = 1\nrequest = \"GET big:0\\r\\n\"\nresponse_size = \"1000B\"\n", redis.port);
  const auto s = sliced.run_phase(500);
  // Each bad reply ends its connection; a slice may pass only when the rest of the value had not
  // yet arrived, and the next request then finds it: never more successes than bad replies.
  CHECK(errors_of(s, error_kind::bad_reply) > 0);
  CHECK(s.ops <= errors_of(s, error_kind::bad_reply));
  // A bulk string read to its first "\r\n" leaves its body behind: the same.
  tcp_harness until("connections = 1\nrequest = \"GET big:0\\r\\n\"\nresponse_until = \"\\r\\n\"\n", redis.port);
  const auto u = until.run_phase(500);
  CHECK(errors_of(u, error_kind::bad_reply) > 0);
  CHECK(u.ops <= errors_of(u, error_kind::bad_reply));
  // Read whole, the same value is a success every time.
  tcp_harness whole("connections = 1\nrequest = \"GET big:0\\r\\n\"\nresponse_size = \"524299B\"\nexpect_prefix = \"$524288\\r\\n\"\n",
                redis.port);
  const auto w = whole.run_phase(500);
  CHECK(w.ops > 10);
  CHECK(w.error_total() == 0);
}
