#include <cstring>
#include <thread>

#include "core/asio.hpp"
#include "core/clock.hpp"
#include "core/wire.hpp"
#include "workloads/tcp.hpp"

namespace rig {

using asio::ip::tcp;

const option_table& tcp_workload_options() {
  static const option_table t = {
      {.name = "connections", .type = opt_type::integer, .default_text = "1",
       .help = "TCP connections, each with one request in flight", .min = 1, .max = 100'000},
      {.name = "threads", .type = opt_type::integer, .default_text = "1",
       .help = "threads, each with its own event loop; connections are spread over them", .min = 1, .max = 256},
      {.name = "rate", .type = opt_type::op_rate, .default_text = "",
       .help = "total requests per second, open loop (latency from the intended send time); absent: closed loop",
       .min = 0.001, .max = 1e7},
      {.name = "think", .type = opt_type::duration, .default_text = "\"0us\"",
       .help = "closed loop: pause between a reply and the next request", .min = 0, .max = 3600e9},
      {.name = "request_size", .type = opt_type::size, .default_text = "\"64B\"",
       .help = "built-in protocol: request frame size (at least 16B, the header)", .min = 16,
       .max = 64.0 * 1048576},
      {.name = "response_size", .type = opt_type::size, .default_text = "\"64B\"",
       .help = "built-in protocol: reply size asked for; raw protocols: bytes to read per reply", .min = 1,
       .max = 64.0 * 1048576},
      {.name = "request", .type = opt_type::string, .default_text = "",
       .help = "raw protocol: bytes sent per request (e.g. \"PING\\r\\n\"); absent: the built-in protocol"},
      {.name = "response_until", .type = opt_type::string, .default_text = "",
       .help = "raw protocol: a reply ends with this delimiter (e.g. \"\\r\\n\")"},
      {.name = "timeout", .type = opt_type::duration, .default_text = "\"2s\"",
       .help = "a request not answered within this is counted as a timeout and its connection reopened",
       .min = 1e6, .max = 3600e9},
      {.name = "connect_timeout", .type = opt_type::duration, .default_text = "\"1s\"",
       .help = "time allowed for a TCP connect", .min = 1e6, .max = 3600e9},
  };
  return t;
}

void check_tcp_workload(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  const bool raw = v.has("request");
  if (raw) {
    if (v.str("request").empty()) diags.add(v.where("request"), "'request' in " + ctx.section + " is empty");
    if (v.is_set("response_until") && v.is_set("response_size"))
      diags.add(v.where("response_until"),
                "'response_until' and 'response_size' in " + ctx.section + " conflict: a reply ends one way");
    if (!v.is_set("response_until") && !v.is_set("response_size"))
      diags.add(v.where("request"), "raw 'request' in " + ctx.section +
                                        " needs 'response_size' or 'response_until' to know where a reply ends");
    if (v.has("response_until") && v.str("response_until").empty())
      diags.add(v.where("response_until"), "'response_until' in " + ctx.section + " is empty");
  } else if (v.has("response_until")) {
    diags.add(v.where("response_until"),
              "'response_until' in " + ctx.section + " applies to raw protocols only; set 'request' as well");
  } else if (v.bytes("response_size") < wire::header_bytes) {
    diags.add(v.where("response_size"),
              "'response_size' in " + ctx.section + " must be at least 16B with the built-in protocol");
  }
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

struct tcp_workload::conn {
  explicit conn(asio::io_context& ioc) : sock(ioc), pace(ioc) {}
  stream_socket sock;
  asio::steady_timer pace;
  int64_t deadline_ns = 0;  // 0: nothing outstanding
  bool timed_out = false;
  bool pair = false;  // connected through a socket pair (to rig's proxy), not TCP
  int64_t next_ns = 0, interval_ns = 0;
  std::vector<char> req, resp;
  std::string until_buf;
  uint32_t seq = 0;
};

struct tcp_workload::worker {
  asio::io_context ioc{1};
  std::unique_ptr<thread_recorder> rec;
  std::vector<std::unique_ptr<conn>> conns;  // destroyed before ioc
  std::thread th;
};

// The rig's own sockets add no Nagle delays unless an injector asks.
tcp_workload::tcp_workload(const option_values& v) : opts_(v), sockets_(socket_policy{.nodelay = true}) {
  connections_ = int(v.integer("connections"));
  threads_ = int(v.integer("threads"));
  rate_ = v.has("rate") ? v.per_second("rate") : 0.0;
  think_ns_ = v.duration_ns("think");
  timeout_ns_ = v.duration_ns("timeout");
  connect_timeout_ns_ = v.duration_ns("connect_timeout");
  request_size_ = uint32_t(v.bytes("request_size"));
  response_size_ = uint32_t(v.bytes("response_size"));
  if (v.has("request")) raw_request_ = v.str("request");
  if (v.has("response_until")) until_ = v.str("response_until");
}

tcp_workload::~tcp_workload() { stop(); }

void tcp_workload::start(const workload_env& env) {
  for (int t = 0; t < threads_; ++t) {
    auto w = std::make_unique<worker>();
    w->rec = std::make_unique<thread_recorder>(*env.clock, *env.windows, env.name);
    workers_.push_back(std::move(w));
  }
  hosted h{env.port, nullptr};
  if (env.host_on_loop) h = env.host_on_loop(workers_[0]->ioc);
  const auto ep = tcp::endpoint(asio::ip::make_address(env.host), h.port);
  const int64_t t0 = mono_ns() + 10 * ns_per_ms;
  const int64_t interval = rate_ > 0 ? int64_t(double(connections_) * 1e9 / rate_) : 0;
  for (int i = 0; i < connections_; ++i) {
    auto& w = *workers_[size_t(i % threads_)];
    auto c = std::make_unique<conn>(w.ioc);
    c->interval_ns = interval;
    c->next_ns = t0 + (interval ? interval * i / connections_ : 0);  // spread the sends evenly
    if (raw_request_.empty()) {
      c->req.assign(request_size_, 0);
      c->resp.resize(response_size_);
    } else {
      c->req.assign(raw_request_.begin(), raw_request_.end());
      c->resp.resize(until_.empty() ? response_size_ : 0);
    }
    // The hosting loop's connections reach what it hosts through a socket pair; the rest by TCP.
    asio::co_spawn(w.ioc, run_connection(w, *c, ep, &w == workers_[0].get() ? h.connect_local : nullptr),
                   asio::detached);
    w.conns.push_back(std::move(c));
  }
  for (auto& w : workers_) {
    asio::co_spawn(w->ioc, sweep(*w), asio::detached);
    w->th = std::thread([&ioc = w->ioc] { ioc.run(); });
  }
}

void tcp_workload::stop() noexcept {
  if (stopped_.exchange(true)) return;
  for (auto& w : workers_) w->ioc.stop();
  for (auto& w : workers_) {
    if (w->th.joinable()) w->th.join();
    w->rec->flush();
  }
}

awaitable<void> tcp_workload::sweep(worker& w) {
  asio::steady_timer t(w.ioc);
  for (;;) {
    t.expires_after(std::chrono::milliseconds(10));
    boost::system::error_code ec;
    co_await t.async_wait(asio::redirect_error(use_awaitable, ec));
    const int64_t now = mono_ns();
    for (auto& c : w.conns)
      if (c->deadline_ns && now > c->deadline_ns) {
        c->deadline_ns = 0;
        c->timed_out = true;
        c->sock.close(ec);  // the pending operation completes with operation_aborted
      }
    w.rec->tick(now);
  }
}

awaitable<void> tcp_workload::run_connection(worker& w, conn& c, tcp::endpoint ep,
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
    c.until_buf.clear();
    co_await request_loop(w, c);
    if (fd >= 0) sockets_.remove(fd);
    c.sock.close(ec);
  }
}

awaitable<void> tcp_workload::request_loop(worker& w, conn& c) {
  thread_recorder& rec = *w.rec;
  const bool builtin = raw_request_.empty();
  for (;;) {
    boost::system::error_code ec;
    int64_t intended;
    if (c.interval_ns) {
      intended = c.next_ns;
      c.next_ns += c.interval_ns;
      if (intended > mono_ns()) {
        c.pace.expires_at(asio::steady_timer::time_point(std::chrono::nanoseconds(intended)));
        co_await c.pace.async_wait(asio::redirect_error(use_awaitable, ec));
      }
    } else {
      if (think_ns_) {
        c.pace.expires_after(std::chrono::nanoseconds(think_ns_));
        co_await c.pace.async_wait(asio::redirect_error(use_awaitable, ec));
      }
      intended = mono_ns();
    }
    const int64_t sent = mono_ns();
    if (!c.interval_ns) intended = sent;
    c.deadline_ns = sent + timeout_ns_;
    if (builtin) {
      wire::request_header h{wire::request_magic, request_size_, response_size_, ++c.seq};
      std::memcpy(c.req.data(), &h, sizeof h);
    }
    co_await asio::async_write(c.sock, asio::buffer(c.req), asio::redirect_error(use_awaitable, ec));
    if (ec) {
      rec.error(classify(ec, c.timed_out, c.pair, error_kind::write), mono_ns());
      co_return;
    }
    bool rejected = false;
    if (builtin) {
      wire::reply_header r{};
      co_await asio::async_read(c.sock, asio::buffer(&r, sizeof r), asio::redirect_error(use_awaitable, ec));
      if (!ec && (r.magic != wire::reply_magic || r.seq != c.seq ||
                  r.payload_bytes > response_size_ - wire::header_bytes)) {
        c.deadline_ns = 0;
        rec.error(error_kind::protocol, mono_ns());
        co_return;
      }
      if (!ec && r.payload_bytes)
        co_await asio::async_read(c.sock, asio::buffer(c.resp.data(), r.payload_bytes),
                                  asio::redirect_error(use_awaitable, ec));
      rejected = !ec && r.status == uint32_t(wire::status::rejected);
    } else if (until_.empty()) {
      co_await asio::async_read(c.sock, asio::buffer(c.resp), asio::redirect_error(use_awaitable, ec));
    } else {
      const size_t n = co_await asio::async_read_until(c.sock, asio::dynamic_buffer(c.until_buf), until_,
                                                       asio::redirect_error(use_awaitable, ec));
      if (!ec) c.until_buf.erase(0, n);
    }
    c.deadline_ns = 0;
    const int64_t done = mono_ns();
    if (ec) {
      rec.error(classify(ec, c.timed_out, c.pair, error_kind::read), done);
      co_return;
    }
    if (rejected) {
      rec.error(error_kind::rejected, done);
      continue;
    }
    rec.record(intended, sent, done);
  }
}

std::vector<phase_stats> tcp_workload::results() const {
  return merge_phases_of(workers_);
}

nlohmann::json tcp_workload::describe() const {
  return {{"kind", "tcp"},
          {"load_model", rate_ > 0 ? "open loop" : "closed loop"},
          {"protocol", raw_request_.empty() ? "builtin" : "raw"},
          {"params", opts_.to_json()}};
}

}  // namespace rig
