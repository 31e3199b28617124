#include "injectors/proxy.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <deque>
#include <fmt/format.h>
#include <future>
#include <map>

#include "core/clock.hpp"
#include "core/draw.h"
#include "core/units.hpp"

namespace rig {

using asio::ip::tcp;

// A toxic in the chain: the same object for as long as it is there, so a chunk that holds
// the chain holds its toxics.
struct toxic_proxy::link {
  std::shared_ptr<toxic> t;
  int id = 0;
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
  std::shared_ptr<const std::vector<link>> toxics;
  std::map<int, int64_t> marks;            // toxic id -> its mark on this direction (toxic_flow::mark_ns)
  std::vector<const link*> acting;         // the toxics acting on the chunk being written (reused: no allocation per chunk)
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
  draw_stream rng;  // the connection's stream ("proxy.connection", its number)
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
      chain_(std::make_shared<const std::vector<link>>()) {}

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

int toxic_proxy::add_toxic(std::shared_ptr<toxic> t) {
  std::lock_guard lk(mu_);
  auto next = std::make_shared<std::vector<link>>(*chain_);
  next->push_back({std::move(t), next_id_++});
  chain_ = next;
  version_.fetch_add(1, std::memory_order_release);
  return next->back().id;
}

void toxic_proxy::remove_toxic(int id) {
  std::lock_guard lk(mu_);
  auto next = std::make_shared<std::vector<link>>();
  for (const auto& l : *chain_)
    if (l.id != id) next->push_back(l);
  chain_ = next;
  version_.fetch_add(1, std::memory_order_release);
}

std::shared_ptr<const std::vector<toxic_proxy::link>> toxic_proxy::chain() const {
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

std::vector<std::shared_ptr<const toxic>> toxic_proxy::active() const {
  std::vector<std::shared_ptr<const toxic>> out;
  for (const auto& l : *chain()) out.push_back(l.t);
  return out;
}

void toxic_proxy::adopt(stream_socket client) {
  const uint64_t stream = rig_stream_seed(seed_, "proxy.connection", next_conn_++);  // the n-th accepted, its own
  auto c = std::make_shared<connection>(std::move(client), stream, connections_, upstream_sockets_);
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
      for (const auto& l : *p.toxics) any = any || l.t->acts_on(p.downstream);
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

// Which toxics act on the chunk, in chain order: those on this direction that affect the
// connection (decided once per connection and toxic, by toxicity). A toxic that ends
// connections starts its clock when the connection first meets it.
const std::vector<const toxic_proxy::link*>& toxic_proxy::acting(const std::shared_ptr<connection>& c, pipe& p) {
  auto& mine = p.acting;
  mine.clear();
  for (const link& l : *p.toxics) {
    if (!l.t->acts_on(p.downstream)) continue;
    auto [it, fresh] = c->affected.try_emplace(l.id, false);
    if (fresh) {
      it->second = c->rng.unit() <= l.t->toxicity();
      ++(it->second ? l.t->affected : l.t->spared);
      if (auto end = it->second ? l.t->ends() : std::nullopt)
        asio::co_spawn(*loop_, end_after(c, l, *end), asio::detached);
    }
    if (it->second) mine.push_back(&l);
  }
  return mine;
}

awaitable<void> toxic_proxy::end_after(std::shared_ptr<connection> c, link l, connection_end end) {
  asio::steady_timer timer(*loop_);
  timer.expires_after(std::chrono::nanoseconds(end.after_ns));
  boost::system::error_code ec;
  co_await timer.async_wait(asio::redirect_error(use_awaitable, ec));
  bool still = false;
  for (const auto& x : *chain()) still = still || x.id == l.id;
  if (!still || c->closing) co_return;
  l.t->on_end();
  c->close(end.reset);
}

awaitable<void> toxic_proxy::write_side(std::shared_ptr<connection> c, pipe& p) {
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
    const auto held = p.toxics;  // a toxic removed mid-chunk stays alive until the chunk is done
    const std::vector<const link*>& mine = acting(c, p);
    if (ch.eof) {
      for (const link* l : mine)
        if (const int64_t d = l->t->close_delay_ns()) co_await wait_until(p.wait, ch.t_ns + d);
      if (c->closing) co_return;
      p.to.shutdown(tcp::socket::shutdown_send, ec);
      if (c->up.reader_done && c->down.reader_done && c->up.queue.empty() && c->down.queue.empty()) c->close(false);
      co_return;
    }
    if (!co_await pass(c, p, ch, mine)) co_return;
  }
}

// One chunk through the toxics in chain order: held (latency), cut or dropped (limit_data,
// timeout), then written in pieces (slicer, bandwidth). False once the connection is over.
awaitable<bool> toxic_proxy::pass(std::shared_ptr<connection> c, pipe& p, chunk& ch,
                                  const std::vector<const link*>& mine) {
  toxic_chunk tc{.arrived_ns = ch.t_ns, .due_ns = ch.t_ns, .size = ch.data.size()};
  auto flow = [&](const link* l) { return toxic_flow{c->rng, p.passed, p.marks[l->id]}; };
  for (const link* l : mine) {
    ++l->t->chunks;
    l->t->bytes += ch.data.size();
    toxic_flow f = flow(l);
    l->t->on_chunk(tc, f);
    if (tc.due_ns > mono_ns()) {
      co_await wait_until(p.wait, tc.due_ns);
      if (c->closing) co_return false;
    }
    l->t->held(tc, mono_ns());
  }
  if (tc.drop) co_return true;

  boost::system::error_code ec;
  for (size_t off = 0; off < tc.size;) {
    size_t piece = tc.size - off;
    int64_t due = 0, pause = 0;
    for (const link* l : mine) {
      toxic_flow f = flow(l);
      piece = std::min(piece, std::max<size_t>(1, l->t->piece_limit(f)));
    }
    for (const link* l : mine) {
      toxic_flow f = flow(l);
      due = std::max(due, l->t->piece_due_ns(piece, tc, f, mono_ns()));
    }
    if (due) co_await wait_until(p.wait, due);
    co_await asio::async_write(p.to, asio::buffer(ch.data.data() + off, piece),
                               asio::redirect_error(use_awaitable, ec));
    if (ec || c->closing) {
      c->close(false);
      co_return false;
    }
    off += piece;
    p.passed += piece;
    for (const link* l : mine) pause = std::max(pause, l->t->piece_written(off < tc.size));
    if (pause) co_await wait_until(p.wait, mono_ns() + pause);
  }
  if (tc.close_after) {
    c->close(false);
    co_return false;
  }
  co_return true;
}

}  // namespace rig
