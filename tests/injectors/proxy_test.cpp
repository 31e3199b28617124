// rig's toxic proxy with real sockets: the built-in target behind it, the tcp workload
// in front, and plain sockets where a stream's exact shape is measured.
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <fmt/format.h>
#include <map>
#include <thread>

#include "../helpers.hpp"
#include "core/bind.hpp"
#include "core/clock.hpp"
#include "injectors/proxy.hpp"
#include "injectors/proxy_injector.hpp"
#include "injectors/socket_injectors.hpp"
#include "targets/builtin_service.hpp"
#include "workloads/tcp.hpp"

using namespace rig;
using rig::testing::bind_text;

namespace {

std::shared_ptr<toxic> make(const std::string& toml) { return make_toxic("t", bind_text(proxy_options(), toml)); }

uint64_t count(const std::shared_ptr<toxic>& t, const char* key) { return t->counters()[key].get<uint64_t>(); }

// The built-in target behind a proxy, with a closed-loop tcp workload in front of it. The
// proxy runs on the workload's event loop, as `rig run` runs it (`rig proxy`, on a thread of
// its own, is tested end to end): that loop's connections reach it through socket pairs,
// or over TCP (as rig run does when a reset_peer toxic needs a real reset).
struct proxied_run {
  builtin_service svc{builtin_config{}};
  run_clock clock;
  window_sink windows;
  std::unique_ptr<tcp_workload> w;
  toxic_proxy proxy{7};  // after w: destroyed before the event loop it runs on

  enum class hop { pair, tcp };
  explicit proxied_run(const std::string& workload_toml, hop via = hop::pair) {
    svc.start();
    w = std::make_unique<tcp_workload>(bind_text(tcp_workload_options(), workload_toml));
    clock.start_ns = mono_ns();
    workload_env env{"rr", "127.0.0.1", 0, &clock, &windows};
    env.host_on_loop = [this, via](asio::io_context& loop) {
      proxy.start_on(loop, "127.0.0.1", svc.port());
      hosted h{proxy.port(), nullptr};
      if (via == hop::pair) h.connect_local = [this] { return proxy.connect_local(); };
      return h;
    };
    w->start(env);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  void phase(int index, int64_t ms) {
    clock.phase = index;
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    clock.phase = -1;
  }
  std::vector<phase_stats> finish() {
    proxy.stop();  // closes its connections on the loop, which still runs
    CHECK(proxy.connections() == 0);
    w->stop();
    return all_phases(*w);
  }
};



// An upstream that writes `bytes` in one go to the first connection, then closes it.
std::thread serve_bytes(rig::testing::silent_listener& l, size_t bytes) {
  return std::thread([&l, bytes] {
    unique_fd c(::accept(l.fd.get(), nullptr, nullptr));
    std::vector<char> data(bytes, 'x');
    size_t off = 0;
    while (off < bytes) {
      const ssize_t n = ::send(c.get(), data.data() + off, bytes - off, MSG_NOSIGNAL);
      if (n <= 0) return;
      off += size_t(n);
    }
  });
}

}  // namespace

TEST_CASE("latency toxic: p50 grows by the asked latency, within max(2%, 200 us)") {
  // Open loop at one request per 2L, with and without the toxic, so both phases pay the
  // same cost of waking idle threads on this VM (~100 us per hop after a sleep): a busy
  // closed-loop baseline would hide that cost and blame it on the toxic.
  for (int64_t ms : {1, 10, 50}) {
    proxied_run run(fmt::format("connections = 1\nrate = \"{}/s\"\n", 1000.0 / double(2 * ms)));
    const int64_t phase_ms = std::max<int64_t>(800, 40 * 2 * ms);
    run.phase(0, phase_ms);
    const auto t = make(fmt::format("toxic = \"latency\"\nlatency = \"{}ms\"\n", ms));
    run.proxy.add_toxic(t);
    run.phase(1, phase_ms);
    const auto c = t->counters();
    const auto stats = run.finish();
    const double base = double(stats[0].latency.percentile(50)) / 1e3;
    const double with = double(stats[1].latency.percentile(50)) / 1e3;
    const double added = with - base, want = double(ms) * 1000;
    MESSAGE("latency " << ms << " ms: p50 " << base << " us -> " << with << " us, added " << added
                       << " us; the proxy measured " << c["mean_added_delay_us"] << " us, worst lateness "
                       << c["max_lateness_us"] << " us");
    // The toxic itself: each chunk held the asked latency, to 2% (its lateness apart).
    const double held = c["mean_added_delay_us"].get<double>() - c["mean_lateness_us"].get<double>();
    CHECK(std::abs(held - want) <= 0.02 * want);
    // End to end. An instrumented build stretches the hop from the proxy to the workload and
    // back (a TSan run beside another test added 10,210 us at 10 ms, the proxy's own figure
    // 10,012 us; an ASan run 2,262 us at 1 ms, the proxy's 1,149 us): there the bound is
    // max(4%, 500 us), from 10 ms up, where that stretch is small beside the delay.
    if (!rig::testing::sanitized()) CHECK(std::abs(added - want) <= std::max(0.02 * want, 200.0));
    else if (ms >= 10) CHECK(std::abs(added - want) <= std::max(0.04 * want, 500.0));
    CHECK(c["connections_affected"] == 1);
    CHECK(stats[1].error_total() == 0);
  }
}

TEST_CASE("bandwidth toxic: a stream passes within 5% of the asked rate") {
  for (double rate : {100e3, 1e6}) {
    rig::testing::silent_listener up;
    toxic_proxy proxy(1);
    proxy.start_for("127.0.0.1", up.port);
    proxy.add_toxic(make(fmt::format("toxic = \"bandwidth\"\nrate = \"{}KB/s\"\n", rate / 1e3)));
    const size_t bytes = size_t(rate * 2);  // two seconds' worth
    auto server = serve_bytes(up, bytes);
    auto fd = rig::testing::connect_loopback(proxy.port());
    std::vector<char> buf(1 << 16);
    size_t got = 0, first = 0;
    int64_t t_first = 0, t_last = 0;
    while (got < bytes) {
      const ssize_t n = ::recv(fd.get(), buf.data(), buf.size(), 0);
      if (n <= 0) break;
      if (!t_first) {
        t_first = mono_ns();
        first = size_t(n);
      }
      t_last = mono_ns();
      got += size_t(n);
    }
    server.join();
    REQUIRE(got == bytes);
    const double measured = double(got - first) / (double(t_last - t_first) / 1e9);
    MESSAGE("bandwidth " << rate << " B/s: measured " << measured << " B/s (" << measured / rate << "x)");
    CHECK(measured == doctest::Approx(rate).epsilon(0.05));
  }
}

TEST_CASE("slicer toxic: data arrives in segments of the asked size") {
  rig::testing::silent_listener up;
  toxic_proxy proxy(1);
  proxy.start_for("127.0.0.1", up.port);
  const auto slicer = make("toxic = \"slicer\"\naverage_size = \"100B\"\nsize_variation = \"0B\"\ndelay = \"2ms\"\n");
  proxy.add_toxic(slicer);
  auto server = serve_bytes(up, 4000);
  auto fd = rig::testing::connect_loopback(proxy.port());
  std::vector<size_t> sizes;
  char buf[8192];
  size_t got = 0;
  while (got < 4000) {
    const ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
    if (n <= 0) break;
    sizes.push_back(size_t(n));
    got += size_t(n);
  }
  server.join();
  CHECK(got == 4000);
  const auto exact = std::count(sizes.begin(), sizes.end(), size_t(100));
  MESSAGE("slicer: " << sizes.size() << " reads, " << exact << " of exactly 100 B; proxy counted "
                     << count(slicer, "slices") << " slices");
  CHECK(*std::max_element(sizes.begin(), sizes.end()) <= 200);  // at most two slices ever coalesce
  CHECK(exact >= 36);
  CHECK(count(slicer, "slices") == 40);
}

TEST_CASE("slow_close toxic: the end of the stream arrives the asked delay after the data") {
  for (const int64_t delay_ms : {0, 200}) {
    rig::testing::silent_listener up;
    toxic_proxy proxy(1);
    proxy.start_for("127.0.0.1", up.port);
    const auto t = make(fmt::format("toxic = \"slow_close\"\ndelay = \"{}ms\"\n", delay_ms));
    if (delay_ms) proxy.add_toxic(t);
    auto server = serve_bytes(up, 100);
    auto fd = rig::testing::connect_loopback(proxy.port());
    char buf[256];
    size_t got = 0;
    int64_t t_data = 0;
    ssize_t n = 0;
    while ((n = ::recv(fd.get(), buf, sizeof buf, 0)) > 0) {
      got += size_t(n);
      if (!t_data) t_data = mono_ns();
    }
    const double eof_after_ms = double(mono_ns() - t_data) / 1e6;
    server.join();
    MESSAGE("slow_close " << delay_ms << " ms: end of stream " << eof_after_ms << " ms after the data");
    CHECK(n == 0);  // a close, not a reset
    CHECK(got == 100);
    CHECK(eof_after_ms >= double(delay_ms) * 0.95);
    CHECK(eof_after_ms <= double(delay_ms) + 100);
    if (delay_ms) CHECK(count(t, "connections_affected") == 1);
  }
}

TEST_CASE("every toxic in the registry: its own keys in the proxy's table, its required ones asked for") {
  const std::map<opt_type, std::string> sample = {
      {opt_type::duration, "\"10ms\""}, {opt_type::size, "\"1KiB\""}, {opt_type::byte_rate, "\"1MB/s\""}};
  REQUIRE(toxic_kinds().size() >= 7);
  for (const auto& k : toxic_kinds()) {
    CAPTURE(k.name);
    std::string toml = fmt::format("toxic = \"{}\"\n", k.name), bare = toml;
    for (const auto& o : k.options()) {
      // The proxy's table takes the key, with the type the toxic gives it (shared keys agree).
      const auto& all = proxy_options();
      const auto it = std::find_if(all.begin(), all.end(), [&](const auto& x) { return x.name == o.name; });
      REQUIRE(it != all.end());
      CHECK(it->type == o.type);
      CHECK(!it->required);
      REQUIRE(sample.count(o.type));
      if (o.required) toml += fmt::format("{} = {}\n", o.name, sample.at(o.type));
    }
    diagnostics d;
    bind_context ctx{"p.toml", "[injectors.p]", "injectors.p", nullptr, {"p.toml", 1, 1, {}}};
    check_proxy(bind_text(proxy_options(), bare), ctx, d);
    size_t required = 0;
    for (const auto& o : k.options()) required += o.required;
    CHECK(d.size() == required);  // one "needs" per required key
    const auto t = make(toml);
    CHECK(t->type() == k.name);
    CHECK(t->str().rfind(std::string(k.name), 0) == 0);
    CHECK(t->counters().contains("connections_affected"));
  }
}

TEST_CASE("reset_peer shows up as resets in the workload, timeout as timeouts") {
  SUBCASE("reset_peer: a reset over TCP; over a socket pair, which cannot carry one, mostly a close") {
    for (const auto via : {proxied_run::hop::tcp, proxied_run::hop::pair}) {
      proxied_run run("connections = 2\ntimeout = \"500ms\"\n", via);
      const auto t = make("toxic = \"reset_peer\"\ntimeout = \"50ms\"\n");
      run.proxy.add_toxic(t);
      run.phase(0, 800);
      const uint64_t reset = count(t, "connections_reset");
      const auto s = run.finish();
      const auto resets = s[0].errors[size_t(error_kind::reset)], closes = s[0].errors[size_t(error_kind::closed)];
      const std::string over = via == proxied_run::hop::tcp ? "TCP" : "a socket pair";
      MESSAGE("reset_peer over " << over << ": " << resets << " resets, " << closes << " closes, proxy reset "
                                 << reset);
      CHECK(reset >= 4);
      if (via == proxied_run::hop::tcp) {
        CHECK(resets >= 4);
        CHECK(closes == 0);
      } else {
        CHECK(closes >= 4);  // mostly: a reset only when a request sat unread at the close
      }
    }
  }
  SUBCASE("timeout (blackhole)") {
    proxied_run run("connections = 2\ntimeout = \"100ms\"\n");
    run.proxy.add_toxic(make("toxic = \"timeout\"\ntimeout = \"0ms\"\nstream = \"upstream\"\n"));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // requests already past the proxy finish
    run.phase(0, 800);
    const auto s = run.finish();
    CHECK(s[0].errors[size_t(error_kind::timeout)] >= 8);
    CHECK(s[0].ops == 0);
  }
  SUBCASE("limit_data closes the connection") {
    proxied_run run("connections = 1\nresponse_size = \"1KiB\"\n");
    run.proxy.add_toxic(make("toxic = \"limit_data\"\nbytes = \"10KiB\"\n"));
    run.phase(0, 500);
    const auto s = run.finish();
    CHECK(s[0].errors[size_t(error_kind::closed)] >= 2);
    CHECK(s[0].errors[size_t(error_kind::closed)] == s[0].error_total());  // a close, never seen as a reset
    CHECK(s[0].ops >= 9);
  }
}

TEST_CASE("toxics come and go on the same connections, and toxicity picks a share of them") {
  proxied_run run("connections = 40\nthreads = 2\n");
  const auto t = make("toxic = \"latency\"\nlatency = \"2ms\"\ntoxicity = 0.5\n");
  const int id = run.proxy.add_toxic(t);
  // Each connection is decided when its first data passes the toxic: a sanitized build, slower,
  // once had 12 of the 40 pass nothing in 500 ms (under TSan, beside another test).
#ifdef RIG_SANITIZED
  run.phase(0, 2000);
#else
  run.phase(0, 500);
#endif
  CHECK(run.proxy.active().size() == 1);
  run.proxy.remove_toxic(id);
  CHECK(run.proxy.active().empty());
  run.phase(1, 300);
  const uint64_t affected = count(t, "connections_affected"), spared = count(t, "connections_spared");
  CHECK(run.proxy.connections() == 40);  // nothing was dropped
  const auto s = run.finish();
  CHECK(s[0].error_total() == 0);
  CHECK(s[1].error_total() == 0);
  MESSAGE("toxicity 0.5 over 40 connections: " << affected << " affected");
  CHECK(affected + spared == 40);
  CHECK(affected >= 10);
  CHECK(affected <= 30);
}

TEST_CASE("the proxy injector: verified by reading its toxic back, each phase's counters its own, reverted") {
  proxied_run run("connections = 2\n");
  run_context ctx;
  ctx.proxy = &run.proxy;
  auto inj = make_proxy_injector("lat", bind_text(proxy_options(), "toxic = \"latency\"\nlatency = \"1ms\"\n"));
  std::vector<uint64_t> chunks;
  for (int phase = 0; phase < 2; ++phase) {
    inj->apply(ctx);
    const auto v = inj->verify(ctx);
    INFO(v.text);
    CHECK(v.ok);
    CHECK(v.text.find("active in the proxy (toxic 1 of the chain)") != std::string::npos);
    run.phase(phase, 300);
    const auto m = inj->measure(ctx);
    chunks.push_back(m["chunks"].get<uint64_t>());
    CHECK(m["connections_affected"] == 2);  // this phase's: not the sum of both
    const auto u = inj->revert(ctx);
    CHECK(u.ok);
    CHECK(run.proxy.active().empty());
    run.phase(-1, 100);
  }
  run.finish();
  MESSAGE("chunks per phase: " << chunks[0] << ", " << chunks[1]);
  CHECK(chunks[0] > 50);
  CHECK(chunks[1] > 50);
  CHECK(chunks[1] < 2 * chunks[0]);  // counted afresh, not carried over
}

TEST_CASE("toxic keys that do not belong to the toxic are refused") {
  diagnostics d;
  const toml::table t = toml::parse(std::string_view("toxic = \"latency\"\nrate = \"1MB/s\"\n"), std::string_view("p.toml"));
  bind_context ctx{"p.toml", "[injectors.p]", "injectors.p", nullptr, {"p.toml", 1, 1, {}}};
  const auto v = bind_options(proxy_options(), t, ctx, d);
  check_proxy(v, ctx, d);
  d.sort_by_position();
  REQUIRE(d.size() == 2);
  CHECK(d.items()[0].str() == "p.toml:1:1: toxic 'latency' in [injectors.p] needs 'latency'");
  CHECK(d.items()[1].str() == "p.toml:2:1: 'rate' in [injectors.p] does not apply to toxic 'latency' (it takes: latency, jitter)");
}

TEST_CASE("through the proxy, where = workload acts on the proxy's sockets to the target") {
  // Two threads: the first loop's connections are socket pairs to the proxy (no TCP options
  // of their own), the second's are TCP connections to it.
  proxied_run run("connections = 4\nthreads = 2\n");
  run_context ctx;
  ctx.workloads = {{"workload rr", run.w->sockets(), "the rig's own sockets", true},
                   {"proxy", run.proxy.upstream_sockets(), "the proxy's sockets to the target"}};
  auto inj = make_nodelay(bind_text(nodelay_options(), "where = \"workload\"\n"));
  REQUIRE(inj->probe(ctx).ok);
  inj->apply(ctx);
  const auto v = inj->verify(ctx);
  INFO(v.text);
  CHECK(v.ok);
  CHECK(v.measured["workload rr"]["sockets"] == 2);  // the second loop's TCP connections to the proxy
  CHECK(v.measured["proxy"]["sockets"] == 4);        // one per connection, toward the target
  CHECK(v.measured["proxy"]["matching"] == 4);
  socket_policy on;
  on.nodelay = true;
  CHECK(run.proxy.upstream_sockets()->check_socket_policy(on).matching == 0);
  run.phase(0, 200);
  CHECK(inj->revert(ctx).ok);
  CHECK(run.proxy.upstream_sockets()->check_socket_policy(on).matching == 4);
  const auto s = run.finish();
  CHECK(s[0].ops > 0);
  CHECK(s[0].error_total() == 0);
  CHECK(run.proxy.upstream_sockets()->check_socket_policy(on).sockets == 0);  // closed ones are forgotten
}
