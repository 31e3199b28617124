#include "workloads/stream.hpp"

#include <sys/prctl.h>

#include <thread>

#include "core/clock.hpp"

namespace rig {

using asio::ip::tcp;

option_table with_stream_options(option_table own) {
  option_table t = {
      {.name = "connections", .type = opt_type::integer, .default_text = "1",
       .help = "TCP connections, each with one request in flight", .min = 1, .max = 100'000},
      {.name = "threads", .type = opt_type::integer, .default_text = "1",
       .help = "threads, each with its own event loop; connections are spread over them", .min = 1, .max = 256},
  };
  t.insert(t.end(), own.begin(), own.end());
  t.push_back({.name = "timeout", .type = opt_type::duration, .default_text = "\"2s\"",
               .help = "a request not answered within this is counted as a timeout and its connection reopened",
               .min = 1e6, .max = 3600e9});
  t.push_back({.name = "pacing", .type = opt_type::string, .default_text = "\"sleep\"",
               .help = "open loop: sleep until each send (a timer wake-up, ~25-50 us late on a VM), or spin: each "
                       "thread polls its loop without sleeping and sends on time (~1 us), at the cost of a busy CPU "
                       "per thread",
               .allowed = {"sleep", "spin"}});
  t.push_back({.name = "connect_timeout", .type = opt_type::duration, .default_text = "\"1s\"",
               .help = "time allowed for a TCP connect", .min = 1e6, .max = 3600e9});
  t.push_back({.name = "connection", .type = opt_type::string, .default_text = "\"keep\"",
               .help = "keep: each connection carries request after request; per_request: a new connection for "
                       "each request, closed after its reply (a server that forks per connection, as PostgreSQL, "
                       "forks per request; the connect is not in the latency of a closed loop)",
               .allowed = {"keep", "per_request"}});
  return with_load_options(std::move(t), true);
}

void check_stream_options(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  check_load_model(v, ctx, diags);
  if (v.is_set("pacing") && !v.has("rate") && !v.has("steps"))
    diags.add(v.where("pacing"), "'pacing' in " + ctx.section + " applies to an open loop; set 'rate' or 'steps'");
  if (v.integer("threads") > v.integer("connections"))
    diags.add(v.where("threads"), "'threads' in " + ctx.section + " exceeds 'connections': a thread would idle");
}

namespace {
// pair: a socket pair to rig's proxy, where EPIPE means the other end closed (on TCP it
// follows a reset; a unix socket cannot be reset).
error_kind classify(const boost::system::error_code& ec, bool timed_out, bool pair, error_kind otherwise) {
  if (timed_out) return error_kind::timeout;
  if (ec == asio::error::broken_pipe) return pair ? error_kind::closed : error_kind::reset;
  if (ec == asio::error::connection_reset) return error_kind::reset;
  if (ec == asio::error::eof) return error_kind::closed;
  return otherwise;
}
}  // namespace

struct stream_workload::worker {
  asio::io_context ioc{1};
  std::unique_ptr<thread_recorder> rec;
  std::vector<std::unique_ptr<conn>> conns;  // destroyed before ioc
  std::thread th;
};

// The rig's own sockets add no Nagle delays unless an injector asks.
stream_workload::stream_workload(const option_values& v)
    : opts_(v), load_(load_model::from(v)), sockets_(socket_policy{.nodelay = true}) {
  connections_ = int(v.integer("connections"));
  threads_ = int(v.integer("threads"));
  timeout_ns_ = v.duration_ns("timeout");
  connect_timeout_ns_ = v.duration_ns("connect_timeout");
  spin_ = load_.open() && v.str("pacing") == "spin";
  per_request_ = v.str("connection") == "per_request";
}

stream_workload::~stream_workload() { stop(); }

void stream_workload::start(const workload_env& env) {
  clock_ = env.clock;
  for (int t = 0; t < threads_; ++t) {
    auto w = std::make_unique<worker>();
    w->rec = std::make_unique<thread_recorder>(*env.clock, *env.windows, env.name);
    workers_.push_back(std::move(w));
  }
  hosted h{env.port, nullptr};
  if (env.host_on_loop) h = env.host_on_loop(workers_[0]->ioc);
  const auto ep = tcp::endpoint(asio::ip::make_address(env.host), h.port);
  const int64_t t0 = mono_ns() + 10 * ns_per_ms;
  for (int i = 0; i < connections_; ++i) {
    auto& w = *workers_[size_t(i % threads_)];
    auto c = make_conn(w.ioc);
    if (load_.open()) {
      c->plan.emplace(load_, *env.clock, connections_, i, env.seed);
      c->plan->start(t0);
    }
    // The hosting loop's connections reach what it hosts through a socket pair; the rest by TCP.
    asio::co_spawn(w.ioc, run_connection(w, *c, ep, &w == workers_[0].get() ? h.connect_local : nullptr),
                   asio::detached);
    w.conns.push_back(std::move(c));
  }
  for (auto& w : workers_) {
    asio::co_spawn(w->ioc, sweep(*w), asio::detached);
    w->th = std::thread([&ioc = w->ioc, spin = spin_] {
      if (spin) {
        while (!ioc.stopped()) ioc.poll();
      } else {
        ioc.run();
      }
    });
  }
}

void stream_workload::stop() noexcept {
  if (stopped_.exchange(true)) return;
  for (auto& w : workers_) w->ioc.stop();
  for (auto& w : workers_) {
    if (w->th.joinable()) w->th.join();
    // What was due in a phase and got no outcome: the request each connection was on, and the
    // schedule's requests due before the run's phases ended that it never took.
    for (auto& c : w->conns) {
      if (c->due_ns != INT64_MAX) w->rec->not_done(c->due_ns, c->sent);
      if (c->plan) count_never_taken(*w->rec, *c->plan, *clock_);
    }
    w->rec->flush();
  }
}

awaitable<void> stream_workload::sweep(worker& w) {
  asio::steady_timer t(w.ioc);
  for (;;) {
    t.expires_after(std::chrono::milliseconds(10));
    boost::system::error_code ec;
    co_await t.async_wait(asio::redirect_error(use_awaitable, ec));
    const int64_t now = mono_ns();
    int64_t hold = INT64_MAX;
    for (auto& c : w.conns) {
      if (c->deadline_ns && now > c->deadline_ns) {
        c->deadline_ns = 0;
        c->timed_out = true;
        c->sock.close(ec);  // the pending operation completes with operation_aborted
      }
      hold = std::min(hold, c->hold_ns());
    }
    w.rec->hold_from(hold);
    w.rec->tick(now);
  }
}

awaitable<void> stream_workload::run_connection(worker& w, conn& c, tcp::endpoint ep,
                                                std::function<int()> connect_local) {
  thread_recorder& rec = *w.rec;
  asio::steady_timer backoff(w.ioc);
  for (;;) {
    boost::system::error_code ec;
    c.timed_out = false;
    c.deadline_ns = mono_ns() + connect_timeout_ns_;
    c.sock = stream_socket(w.ioc);
    c.pair = bool(connect_local);
    if (connect_local) {
      const int fd = connect_local();
      if (fd >= 0) c.sock.assign(asio::generic::stream_protocol(AF_UNIX, 0), fd, ec);
      else ec = asio::error::connection_refused;
    } else {
      co_await c.sock.async_connect(asio::generic::stream_protocol::endpoint(ep),
                                    asio::redirect_error(use_awaitable, ec));
    }
    c.deadline_ns = 0;
    if (ec || c.timed_out) {
      rec.error(error_kind::connect, mono_ns());
      c.sock.close(ec);
      backoff.expires_after(std::chrono::milliseconds(50));
      co_await backoff.async_wait(asio::redirect_error(use_awaitable, ec));
      continue;
    }
    // Socket options (nodelay, sockbuf) are TCP's: a socket pair to the proxy has none, and
    // the proxy's own sockets to the target take them instead.
    const int fd = connect_local ? -1 : c.sock.native_handle();
    if (fd >= 0) sockets_.add(fd);
    connected(c);
    c.free_ns = mono_ns();
    co_await request_loop(w, c);
    if (fd >= 0) sockets_.remove(fd);
    c.sock.close(ec);
  }
}

awaitable<void> stream_workload::request_loop(worker& w, conn& c) {
  thread_recorder& rec = *w.rec;
  for (;;) {
    boost::system::error_code ec;
    int64_t intended = 0;
    if (c.plan) {
      intended = c.plan->next();
      c.due_ns = intended;
      c.sent = false;
      // Spinning: a timer wakes the connection shortly before its send, then it yields to the
      // loop's other work until the moment comes (no timer interrupt or wake-up on the path).
      const int64_t lead = spin_ ? spin_lead_ns : 0;
      if (intended - lead > mono_ns()) {
        c.pace.expires_at(asio::steady_timer::time_point(std::chrono::nanoseconds(intended - lead)));
        co_await c.pace.async_wait(asio::redirect_error(use_awaitable, ec));
      }
      while (spin_ && mono_ns() < intended) co_await asio::post(c.sock.get_executor(), use_awaitable);
    } else if (load_.think_ns) {
      c.pace.expires_after(std::chrono::nanoseconds(load_.think_ns));
      co_await c.pace.async_wait(asio::redirect_error(use_awaitable, ec));
    }
    const int64_t sent = mono_ns();
    if (!c.plan) intended = sent;  // closed loop: no schedule to lag behind
    c.due_ns = intended;
    c.sent = true;
    c.deadline_ns = sent + timeout_ns_;
    const reply r = co_await exchange(c);
    c.deadline_ns = 0;
    const int64_t done = mono_ns();
    const int64_t lag = generator_lag_ns(intended, c.free_ns, sent);
    c.free_ns = done;
    c.due_ns = INT64_MAX;  // the outcome is recorded below, before anything else runs on this loop
    if (r.ec) {
      rec.error(classify(r.ec, c.timed_out, c.pair, r.io_error), done, 0, intended);
      co_return;
    }
    if (r.failure) rec.error(*r.failure, done, r.status, intended);
    else rec.record(intended, sent, done, lag, r.status);
    if (r.reconnect || per_request_) co_return;
  }
}

std::vector<phase_stats> stream_workload::results() const {
  return merge_phases_of(workers_);
}

finished_phases stream_workload::take_finished_phases() { return take_finished_of(workers_); }

}  // namespace rig
