#include "injectors/proxy.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <deque>
#include <fmt/format.h>
#include <future>
#include <map>
#include <random>

#include "core/clock.hpp"
#include "core/units.hpp"

namespace rig {

using asio::ip::tcp;

const option_table& proxy_options() {
  static const option_table t = {
      {.name = "toxic", .type = opt_type::string, .default_text = "",
       .help = "Toxiproxy's toxic: latency, bandwidth, slicer, slow_close, timeout, reset_peer or limit_data",
       .allowed = {"latency", "bandwidth", "slicer", "slow_close", "timeout", "reset_peer", "limit_data"},
       .required = true},
      {.name = "stream", .type = opt_type::string, .default_text = "\"downstream\"",
       .help = "direction: downstream (target to client), upstream (client to target) or both",
       .allowed = {"downstream", "upstream", "both"}},
      {.name = "toxicity", .type = opt_type::real, .default_text = "1.0",
       .help = "fraction of connections the toxic affects, decided once per connection", .min = 0, .max = 1},
      {.name = "latency", .type = opt_type::duration, .default_text = "",
       .help = "latency: added to every chunk of data", .min = 0, .max = 3600e9},
      {.name = "jitter", .type = opt_type::duration, .default_text = "",
       .help = "latency: uniform +/- spread around latency", .min = 0, .max = 3600e9},
      {.name = "rate", .type = opt_type::byte_rate, .default_text = "",
       .help = "bandwidth: the rate data may pass at", .min = 1, .max = 100e9},
      {.name = "average_size", .type = opt_type::size, .default_text = "",
       .help = "slicer: average size of the segments data is cut into", .min = 1, .max = 64.0 * 1048576},
      {.name = "size_variation", .type = opt_type::size, .default_text = "",
       .help = "slicer: uniform +/- spread of the segment size", .min = 0, .max = 64.0 * 1048576},
      {.name = "delay", .type = opt_type::duration, .default_text = "",
       .help = "slicer: pause between segments; slow_close: how long a close is held back", .min = 0,
       .max = 3600e9},
      {.name = "timeout", .type = opt_type::duration, .default_text = "",
       .help = "timeout: close after this while passing nothing (0: never close, drop forever); reset_peer: "
               "reset after this",
       .min = 0, .max = 3600e9},
      {.name = "bytes", .type = opt_type::size, .default_text = "",
       .help = "limit_data: close the connection once this much has passed", .min = 1, .max = 1e15},
  };
  return t;
}

namespace {
// Which keys each toxic takes, and which it must have.
const std::map<std::string, std::pair<std::vector<std::string>, std::vector<std::string>>> toxic_keys = {
    {"latency", {{"latency", "jitter"}, {"latency"}}},
    {"bandwidth", {{"rate"}, {"rate"}}},
    {"slicer", {{"average_size", "size_variation", "delay"}, {"average_size"}}},
    {"slow_close", {{"delay"}, {"delay"}}},
    {"timeout", {{"timeout"}, {"timeout"}}},
    {"reset_peer", {{"timeout"}, {}}},
    {"limit_data", {{"bytes"}, {"bytes"}}},
};
const std::vector<std::string> toxic_params = {"latency", "jitter", "rate", "average_size", "size_variation",
                                               "delay", "timeout", "bytes"};
}  // namespace

void check_proxy(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  if (!v.has("toxic")) return;
  const std::string& t = v.str("toxic");
  const auto& [takes, needs] = toxic_keys.at(t);
  for (const auto& k : toxic_params)
    if (v.is_set(k) && std::find(takes.begin(), takes.end(), k) == takes.end())
      diags.add(v.where(k), fmt::format("'{}' in {} does not apply to toxic '{}' (it takes: {})", k, ctx.section, t,
                                        fmt::join(takes, ", ")));
  for (const auto& k : needs)
    if (!v.has(k)) diags.add(ctx.table_pos, fmt::format("toxic '{}' in {} needs '{}'", t, ctx.section, k));
}

toxic_spec toxic_spec::from(const std::string& name, const option_values& v) {
  toxic_spec t;
  t.name = name;
  t.type = v.str("toxic");
  const std::string& s = v.str("stream");
  t.upstream = s != "downstream";
  t.downstream = s != "upstream";
  t.toxicity = v.real("toxicity");
  if (v.has("latency")) t.latency_ns = v.duration_ns("latency");
  if (v.has("jitter")) t.jitter_ns = v.duration_ns("jitter");
  if (v.has("rate")) t.rate = v.per_second("rate");
  if (v.has("average_size")) t.average_size = v.bytes("average_size");
  if (v.has("size_variation")) t.size_variation = v.bytes("size_variation");
  if (v.has("delay")) t.delay_ns = v.duration_ns("delay");
  if (v.has("timeout")) t.timeout_ns = v.duration_ns("timeout");
  if (v.has("bytes")) t.bytes = v.bytes("bytes");
  return t;
}

std::string toxic_spec::str() const {
  std::string s = type;
  auto us = [](int64_t ns) { return format_duration_us(double(ns) / 1e3); };
  if (type == "latency") s += " " + us(latency_ns) + (jitter_ns ? " ±" + us(jitter_ns) : "");
  if (type == "bandwidth")
    s += rate >= 1e6 ? fmt::format(" {:g}MB/s", rate / 1e6) : rate >= 1e3 ? fmt::format(" {:g}KB/s", rate / 1e3)
                                                             : fmt::format(" {:g}B/s", rate);
  if (type == "slicer")
    s += fmt::format(" {}±{} every {}", format_bytes(double(average_size)), format_bytes(double(size_variation)),
                     us(delay_ns));
  if (type == "slow_close") s += " " + us(delay_ns);
  if (type == "timeout" || type == "reset_peer") s += " after " + us(timeout_ns);
  if (type == "limit_data") s += " " + format_bytes(double(bytes));
  s += upstream && downstream ? " both ways" : upstream ? " upstream" : " downstream";
  return s + fmt::format(", toxicity {:g}", toxicity);
}

struct toxic_proxy::toxic {
  toxic_spec spec;
  int id = 0;
  std::atomic<uint64_t> affected{0}, spared{0}, chunks{0}, bytes{0}, slices{0}, closed{0}, reset{0}, dropped{0};
  std::atomic<int64_t> delay_sum_ns{0}, delayed_chunks{0}, max_late_ns{0}, late_sum_ns{0};
};

struct toxic_proxy::chunk {
  std::vector<char> data;
  int64_t t_ns = 0;
  bool eof = false;
};

struct toxic_proxy::pipe {
  pipe(asio::any_io_executor ex, stream_socket& f, stream_socket& t, bool down)
      : from(f), to(t), downstream(down), signal(ex), space(ex), wait(ex) {}
  stream_socket& from;
  stream_socket& to;
  bool downstream;
  std::deque<chunk> queue;
  size_t queued_bytes = 0;
  bool reader_done = false;
  asio::steady_timer signal, space, wait;  // data queued; room in the queue; the writer's pauses
  uint64_t passed = 0;                     // bytes written on (limit_data)
  bool writer_busy = false;                // the writer holds a chunk (it may be waiting on a toxic)
  std::vector<char> buf = std::vector<char>(64 * 1024);  // the reader's, reused
  uint64_t seen_version = ~0ull;
  std::shared_ptr<const std::vector<std::shared_ptr<toxic>>> toxics;
  int64_t paced_until_ns = 0;              // bandwidth
};

struct toxic_proxy::connection {
  connection(stream_socket c, uint64_t seed, std::atomic<int>& open, socket_set& upstream_set)
      : open_count(open),
        upstream_sockets(upstream_set),
        client(std::move(c)),
        server(client.get_executor()),
        rng(seed),
        up(client.get_executor(), client, server, false),
        down(client.get_executor(), server, client, true) {}
  ~connection() {
    forget_upstream();
    if (counted) --open_count;
  }
  std::atomic<int>& open_count;
  socket_set& upstream_sockets;
  int upstream_fd = -1;  // in upstream_sockets while >= 0
  bool counted = false;
  stream_socket client, server;
  std::mt19937_64 rng;
  std::map<int, bool> affected;  // toxic id -> this connection is affected
  bool closing = false;
  pipe up, down;

  void forget_upstream() {
    if (upstream_fd >= 0) upstream_sockets.remove(upstream_fd);
    upstream_fd = -1;
  }

  void close(bool reset) {
    if (closing) return;
    closing = true;
    forget_upstream();
    boost::system::error_code ec;
    for (stream_socket* s : {&client, &server}) {
      if (reset && s->is_open()) {
        linger l{1, 0};  // close with RST: "connection reset by peer" on the other side
        ::setsockopt(s->native_handle(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
      } else if (s->is_open()) {
        // A plain close: data sent to us that nobody will read is dropped first, else the
        // kernel answers the close with a reset (TCP and unix sockets alike) and the peer
        // sees "reset" where the toxic meant "closed". Bounded: a peer streaming without
        // pause cannot hold the close up.
        char sink[16 * 1024];
        for (int i = 0; i < 64 && ::recv(s->native_handle(), sink, sizeof sink, MSG_DONTWAIT) > 0; ++i) {
        }
      }
      s->close(ec);
    }
    for (pipe* p : {&up, &down}) {
      p->signal.cancel();
      p->space.cancel();
      p->wait.cancel();
    }
  }
};

toxic_proxy::toxic_proxy(uint64_t seed, std::string listen_host, uint16_t listen_port)
    : listen_host_(std::move(listen_host)),
      upstream_port_(0),
      listen_port_(listen_port),
      seed_(seed),
      acceptor_(own_),
      chain_(std::make_shared<const std::vector<std::shared_ptr<toxic>>>()) {}

toxic_proxy::~toxic_proxy() { stop(); }

void toxic_proxy::start_for(const std::string& upstream_host, uint16_t upstream_port) {
  upstream_host_ = upstream_host;
  upstream_port_ = upstream_port;
  port_ = listen_on(acceptor_, listen_host_, listen_port_);
  asio::co_spawn(*loop_, accept_loop(), asio::detached);
  thread_ = std::thread([this] { loop_->run(); });
}

void toxic_proxy::start_on(asio::io_context& loop, const std::string& upstream_host, uint16_t upstream_port) {
  upstream_host_ = upstream_host;
  upstream_port_ = upstream_port;
  loop_ = &loop;
  acceptor_ = asio::ip::tcp::acceptor(loop);
  port_ = listen_on(acceptor_, listen_host_, listen_port_);
  asio::co_spawn(*loop_, accept_loop(), asio::detached);
}

void toxic_proxy::stop() noexcept {
  if (stopped_.exchange(true)) return;
  if (loop_ == &own_) {
    loop_->stop();
    if (thread_.joinable()) thread_.join();
    return;
  }
  // A borrowed loop: close everything on it and let its coroutines finish there.
  auto done = std::make_shared<std::promise<void>>();  // shared: the post may outlive a timed-out wait
  auto closed = done->get_future();
  asio::post(*loop_, [this, done] {
    boost::system::error_code ec;
    acceptor_.close(ec);
    for (auto& w : live_)
      if (auto c = w.lock()) c->close(false);
    done->set_value();
  });
  closed.wait_for(std::chrono::seconds(2));
  const int64_t deadline = mono_ns() + 2 * ns_per_s;
  while (connections_.load() > 0 && mono_ns() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

int toxic_proxy::add_toxic(const toxic_spec& t) {
  std::lock_guard lk(mu_);
  auto x = std::make_shared<toxic>();
  x->spec = t;
  x->id = next_id_++;
  auto next = std::make_shared<std::vector<std::shared_ptr<toxic>>>(*chain_);
  next->push_back(x);
  chain_ = next;
  version_.fetch_add(1, std::memory_order_release);
  retired_.push_back(x);
  return x->id;
}

void toxic_proxy::remove_toxic(int id) {
  std::lock_guard lk(mu_);
  auto next = std::make_shared<std::vector<std::shared_ptr<toxic>>>();
  for (const auto& t : *chain_)
    if (t->id != id) next->push_back(t);
  chain_ = next;
  version_.fetch_add(1, std::memory_order_release);
}

std::shared_ptr<const std::vector<std::shared_ptr<toxic_proxy::toxic>>> toxic_proxy::chain() const {
  std::lock_guard lk(mu_);
  return chain_;
}

void toxic_proxy::refresh(pipe& p) const {
  // The chain is re-read only after it changed, not under the lock for every chunk.
  if (const uint64_t v = version_.load(std::memory_order_acquire); v != p.seen_version) {
    p.toxics = chain();
    p.seen_version = v;
  }
}

std::vector<toxic_spec> toxic_proxy::active() const {
  std::vector<toxic_spec> out;
  for (const auto& t : *chain()) out.push_back(t->spec);
  return out;
}

toxic_counters toxic_proxy::counters(int id) const {
  std::lock_guard lk(mu_);
  toxic_counters c;
  for (const auto& t : retired_)
    if (t->id == id) {
      c.connections_affected = t->affected;
      c.connections_spared = t->spared;
      c.chunks = t->chunks;
      c.bytes = t->bytes;
      c.slices = t->slices;
      c.closed = t->closed;
      c.reset = t->reset;
      c.dropped_bytes = t->dropped;
      if (t->delayed_chunks) {
        c.mean_added_delay_us = double(t->delay_sum_ns) / double(t->delayed_chunks) / 1e3;
        c.mean_lateness_us = double(t->late_sum_ns) / double(t->delayed_chunks) / 1e3;
      }
      c.max_lateness_us = double(t->max_late_ns) / 1e3;
    }
  return c;
}

void toxic_proxy::adopt(stream_socket client) {
  auto c = std::make_shared<connection>(std::move(client), seed_ + next_conn_++, connections_, upstream_sockets_);
  std::erase_if(live_, [](const auto& w) { return w.expired(); });
  live_.push_back(c);
  asio::co_spawn(*loop_, serve(c), asio::detached);
}

int toxic_proxy::connect_local() {
  if (stopped_.load()) return -1;
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return -1;
  stream_socket s(*loop_);
  boost::system::error_code ec;
  s.assign(asio::generic::stream_protocol(AF_UNIX, 0), pair[0], ec);
  if (ec) {
    ::close(pair[0]);
    ::close(pair[1]);
    return -1;
  }
  adopt(std::move(s));
  return pair[1];
}

awaitable<void> toxic_proxy::accept_loop() {
  for (;;) {
    boost::system::error_code ec;
    stream_socket s(*loop_);
    co_await acceptor_.async_accept(s, asio::redirect_error(use_awaitable, ec));
    if (ec) {
      if (ec == asio::error::operation_aborted) co_return;
      continue;
    }
    s.set_option(tcp::no_delay(true), ec);
    adopt(std::move(s));
  }
}

namespace {

// Timers on this VM wake 100-250 us late: sleep to just before the deadline, spin the rest.
awaitable<void> wait_until(asio::steady_timer& t, int64_t when_ns) {
  constexpr int64_t early = 300 * ns_per_us;
  if (when_ns - mono_ns() > early) {
    t.expires_at(asio::steady_timer::time_point(std::chrono::nanoseconds(when_ns - early)));
    boost::system::error_code ec;
    co_await t.async_wait(asio::redirect_error(use_awaitable, ec));
    if (ec) co_return;
  }
  while (mono_ns() < when_ns) {
  }
}

}  // namespace

awaitable<void> toxic_proxy::serve(std::shared_ptr<connection> c) {
  boost::system::error_code ec;
  tcp::endpoint up(asio::ip::make_address(upstream_host_), upstream_port_);
  co_await c->server.async_connect(asio::generic::stream_protocol::endpoint(up),
                                   asio::redirect_error(use_awaitable, ec));
  if (ec || c->closing) {
    c->close(false);
    co_return;
  }
  c->upstream_fd = c->server.native_handle();
  upstream_sockets_.add(c->upstream_fd);  // TCP_NODELAY on, or what an injector forces now
  ++connections_;
  c->counted = true;
  for (pipe* p : {&c->up, &c->down}) {
    asio::co_spawn(*loop_, read_side(c, *p), asio::detached);
    asio::co_spawn(*loop_, write_side(c, *p), asio::detached);
  }
  co_return;
}

awaitable<void> toxic_proxy::read_side(std::shared_ptr<connection> c, pipe& p) {
  constexpr size_t max_queued = 1 << 20;  // back-pressure: a slowed writer stops the reader
  for (;;) {
    boost::system::error_code ec;
    while (p.queued_bytes > max_queued && !c->closing) {
      p.space.expires_at(asio::steady_timer::time_point::max());
      co_await p.space.async_wait(asio::redirect_error(use_awaitable, ec));
    }
    if (c->closing) co_return;
    const size_t n = co_await p.from.async_read_some(asio::buffer(p.buf), asio::redirect_error(use_awaitable, ec));
    chunk ch;
    ch.t_ns = mono_ns();
    if (!ec && p.queue.empty() && !p.writer_busy) {
      // Fast path: no toxic acts on this direction, so the reader forwards the data itself.
      refresh(p);
      bool any = false;
      for (const auto& t : *p.toxics) any = any || (p.downstream ? t->spec.downstream : t->spec.upstream);
      if (!any) {
        co_await asio::async_write(p.to, asio::buffer(p.buf.data(), n), asio::redirect_error(use_awaitable, ec));
        if (ec) {
          c->close(false);
          co_return;
        }
        p.passed += n;
        continue;
      }
    }
    if (ec) {
      ch.eof = true;
      p.queue.push_back(std::move(ch));
      p.reader_done = true;
      p.signal.cancel();
      co_return;
    }
    ch.data.assign(p.buf.begin(), p.buf.begin() + long(n));
    p.queued_bytes += n;
    p.queue.push_back(std::move(ch));
    p.signal.cancel();
  }
}

awaitable<void> toxic_proxy::write_side(std::shared_ptr<connection> c, pipe& p) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (;;) {
    boost::system::error_code ec;
    while (p.queue.empty() && !c->closing) {
      p.signal.expires_at(asio::steady_timer::time_point::max());
      co_await p.signal.async_wait(asio::redirect_error(use_awaitable, ec));
    }
    if (c->closing) co_return;
    chunk ch = std::move(p.queue.front());
    p.queue.pop_front();
    p.writer_busy = true;
    struct idle_on_exit {
      bool& busy;
      ~idle_on_exit() { busy = false; }
    } idle{p.writer_busy};
    p.queued_bytes -= ch.data.size();
    p.space.cancel();

    refresh(p);
    const auto toxics = p.toxics;  // held: a toxic removed mid-chunk stays alive until the chunk is done
    std::vector<toxic*> mine;     // the toxics that act on this chunk, in chain order
    for (const auto& t : *toxics) {
      if (!(p.downstream ? t->spec.downstream : t->spec.upstream)) continue;
      auto [it, fresh] = c->affected.try_emplace(t->id, false);
      if (fresh) {
        it->second = unit(c->rng) < t->spec.toxicity;
        ++(it->second ? t->affected : t->spared);
        // Toxics that act on the connection itself start their clock when it first meets them.
        if (it->second && (t->spec.type == "reset_peer" || (t->spec.type == "timeout" && t->spec.timeout_ns > 0))) {
          asio::co_spawn(
              *loop_,
              [this, c, t = t]() -> awaitable<void> {
                asio::steady_timer timer(*loop_);
                timer.expires_after(std::chrono::nanoseconds(t->spec.timeout_ns));
                boost::system::error_code e;
                co_await timer.async_wait(asio::redirect_error(use_awaitable, e));
                bool still = false;
                for (const auto& x : *chain()) still = still || x->id == t->id;
                if (!still || c->closing) co_return;
                ++(t->spec.type == "reset_peer" ? t->reset : t->closed);
                c->close(t->spec.type == "reset_peer");
              },
              asio::detached);
        }
      }
      if (it->second) mine.push_back(t.get());
    }

    if (ch.eof) {
      for (toxic* t : mine)
        if (t->spec.type == "slow_close") co_await wait_until(p.wait, ch.t_ns + t->spec.delay_ns);
      if (c->closing) co_return;
      p.to.shutdown(tcp::socket::shutdown_send, ec);
      if (c->up.reader_done && c->down.reader_done && c->up.queue.empty() && c->down.queue.empty()) c->close(false);
      co_return;
    }

    int64_t due = ch.t_ns;
    bool drop = false, close_after = false;
    toxic *bandwidth = nullptr, *slicer = nullptr;
    for (toxic* t : mine) {
      ++t->chunks;
      t->bytes += ch.data.size();
      const auto& s = t->spec;
      if (s.type == "latency") {
        const double j = s.jitter_ns ? (unit(c->rng) * 2 - 1) * double(s.jitter_ns) : 0.0;
        due += std::max<int64_t>(0, s.latency_ns + int64_t(j));
        co_await wait_until(p.wait, due);
        if (c->closing) co_return;
        const int64_t now = mono_ns();
        t->delay_sum_ns += now - ch.t_ns;
        ++t->delayed_chunks;
        t->late_sum_ns += std::max<int64_t>(0, now - due);
        if (now - due > t->max_late_ns) t->max_late_ns = now - due;
      } else if (s.type == "timeout" || s.type == "reset_peer") {
        drop = drop || s.type == "timeout";  // a reset_peer connection carries data until it is reset
      } else if (s.type == "limit_data") {
        if (p.passed + ch.data.size() >= s.bytes) {
          ch.data.resize(size_t(s.bytes - std::min(s.bytes, p.passed)));
          close_after = true;
          ++t->closed;
        }
      } else if (s.type == "bandwidth") {
        bandwidth = t;
      } else if (s.type == "slicer") {
        slicer = t;
      }
    }
    if (drop) {
      for (toxic* t : mine)
        if (t->spec.type == "timeout") t->dropped += ch.data.size();
      continue;
    }

    // Write: in slices (slicer), paced (bandwidth), or whole.
    size_t off = 0;
    while (off < ch.data.size()) {
      size_t piece = ch.data.size() - off;
      if (slicer) {
        const double var = double(slicer->spec.size_variation);
        const double size = double(slicer->spec.average_size) + (unit(c->rng) * 2 - 1) * var;
        piece = std::min(piece, size_t(std::max(1.0, size)));
      }
      if (bandwidth) {
        // Pieces worth at most 10 ms at the rate, so the flow is smooth, not bursty.
        piece = std::min(piece, size_t(std::max(1.0, bandwidth->spec.rate / 100)));
        // Like a link: a piece is through once its last byte would have crossed at the rate.
        const int64_t start = std::max(std::max(mono_ns(), ch.t_ns), p.paced_until_ns);
        p.paced_until_ns = start + int64_t(double(piece) / bandwidth->spec.rate * 1e9);
        co_await wait_until(p.wait, p.paced_until_ns);
      }
      if (slicer) ++slicer->slices;
      co_await asio::async_write(p.to, asio::buffer(ch.data.data() + off, piece),
                                 asio::redirect_error(use_awaitable, ec));
      if (ec || c->closing) {
        c->close(false);
        co_return;
      }
      off += piece;
      p.passed += piece;
      if (slicer && slicer->spec.delay_ns && off < ch.data.size())
        co_await wait_until(p.wait, mono_ns() + slicer->spec.delay_ns);
    }
    if (close_after) {
      c->close(false);
      co_return;
    }
  }
}

}  // namespace rig
