#include "targets/builtin_service.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <optional>
#include <fmt/format.h>
#include <iostream>
#include <iterator>
#include <sstream>

#include "core/files.hpp"
#include "core/clock.hpp"
#include "core/spin.hpp"
#include "core/error.hpp"
#include "core/wire.hpp"
#include "core/http_read.hpp"
#include "rig_failpoint.hpp"

namespace rig {

using asio::ip::tcp;
using local_stream = asio::local::stream_protocol;

const option_table& builtin_options() {
  static const option_table t = {
      {.name = "protocol", .type = opt_type::string, .default_text = "\"tcp\"",
       .help = "wire protocol of the built-in target (tcp: rig's framed request/reply; http: HTTP/1.1 keep-alive, "
               "any method and path)",
       .allowed = {"tcp", "http"}},
      {.name = "reply_size", .type = opt_type::size, .default_text = "\"64B\"",
       .help = "http: the reply body's size, unless the request's query asks for ?size=BYTES", .min = 0,
       .max = 64.0 * 1048576},
      {.name = "port", .type = opt_type::integer, .default_text = "0",
       .help = "TCP port on 127.0.0.1; 0 picks a free one", .min = 0, .max = 65535},
      {.name = "workers", .type = opt_type::integer, .default_text = "4",
       .help = "worker threads that handle requests", .min = 1, .max = 1024},
      {.name = "queue_capacity", .type = opt_type::integer, .default_text = "1024",
       .help = "requests waiting for a worker before new ones are rejected; 1 forces the overflow path",
       .min = 1, .max = 1'000'000},
      {.name = "reply_writes", .type = opt_type::integer, .default_text = "1",
       .help = "the reply is written in this many send() calls (2 lets Nagle + delayed ACK bite)",
       .min = 1, .max = 64},
      {.name = "catch_exceptions", .type = opt_type::boolean, .default_text = "true",
       .help = "a worker catches an exception and survives; false: the worker thread dies, its request unanswered "
               "(failpoints: worker.handle, queue.push, reply.write, wal.fsync)"},
      {.name = "on_error", .type = opt_type::string, .default_text = "\"close\"",
       .help = "what a worker that caught an exception does with its request: close the connection, leave it "
               "unanswered (silent: the client waits), or reply with an error (tcp: status error; http: 500)",
       .allowed = {"close", "silent", "reply"}},
      {.name = "reply_growth", .type = opt_type::size, .default_text = "\"0B\"",
       .help = "each reply grows by this per request served before it, as a reply that serializes a growing "
               "data set does (http; a tcp workload refuses a reply larger than it asked for)",
       .min = 0, .max = 1048576},
      {.name = "reply_limit", .type = opt_type::size, .default_text = "\"0B\"",
       .help = "a reply larger than this fails inside the worker (as an out-of-memory error would); 0: no limit",
       .min = 0, .max = 1024.0 * 1048576},
      {.name = "retain_per_request", .type = opt_type::size, .default_text = "\"0B\"",
       .help = "bytes kept forever per request (memory accumulation)", .min = 0, .max = 64.0 * 1048576},
      {.name = "work", .type = opt_type::duration, .default_text = "\"0us\"",
       .help = "CPU work per request: a loop calibrated at start to take this long at full speed, so a "
               "slower or throttled CPU stretches it",
       .min = 0, .max = 10e9},
      {.name = "io_wait", .type = opt_type::duration, .default_text = "\"0us\"",
       .help = "time each request waits off the CPU (a call to a downstream service), so workers, not CPUs, bound "
               "the rate: workers / io_wait requests per second",
       .min = 0, .max = 10e9},
      {.name = "wal", .type = opt_type::boolean, .default_text = "false",
       .help = "append and fsync a log record per request (disk latency becomes request latency)"},
      {.name = "wal_direct", .type = opt_type::boolean, .default_text = "false",
       .help = "write the log in 4 KiB O_DIRECT|O_DSYNC blocks (each reaches the disk in the target's own "
               "context, so cgroup v1 disk caps apply; buffered writeback escapes them)"},
      {.name = "wal_path", .type = opt_type::string, .default_text = "",
       .help = "write-ahead log file (default: target.wal in the run directory)"},
      {.name = "nodelay", .type = opt_type::boolean, .default_text = "true",
       .help = "TCP_NODELAY on accepted sockets (the nodelay injector turns it off)"},
      {.name = "io_threads", .type = opt_type::integer, .default_text = "1",
       .help = "threads running the acceptor and connection reads", .min = 1, .max = 64},
  };
  return t;
}

builtin_config builtin_config::from(const option_values& v) {
  builtin_config c;
  c.http = v.str("protocol") == "http";
  c.reply_size = v.bytes("reply_size");
  c.port = int(v.integer("port"));
  c.workers = int(v.integer("workers"));
  c.queue_capacity = int(v.integer("queue_capacity"));
  c.reply_writes = int(v.integer("reply_writes"));
  c.catch_exceptions = v.boolean("catch_exceptions");
  const auto on_error = v.str("on_error");
  c.on_error = on_error == "silent"  ? error_policy::silent
               : on_error == "reply" ? error_policy::reply
                                     : error_policy::close;
  c.reply_growth = v.bytes("reply_growth");
  c.reply_limit = v.bytes("reply_limit");
  c.retain_per_request = v.bytes("retain_per_request");
  c.work_ns = v.duration_ns("work");
  c.io_wait_ns = v.duration_ns("io_wait");
  c.wal = v.boolean("wal");
  c.wal_direct = v.boolean("wal_direct");
  if (v.has("wal_path")) c.wal_path = v.str("wal_path");
  c.nodelay = v.boolean("nodelay");
  c.io_threads = int(v.integer("io_threads"));
  return c;
}

struct builtin_service::connection {
  explicit connection(tcp::socket s) : sock(std::move(s)), done(sock.get_executor()) {}
  tcp::socket sock;
  asio::steady_timer done;  // cancelled by the worker once the reply is written
  std::atomic<bool> reply_done{false};
  std::atomic<bool> failed{false};
  std::vector<char> body;
};

namespace {
constexpr size_t wal_block_bytes = 4096;
constexpr uint64_t wal_ring_blocks = 256;  // a 1 MiB file
}  // namespace

builtin_service::builtin_service(builtin_config cfg)
    : cfg_(std::move(cfg)), acceptor_(ioc_), sockets_(socket_policy{.nodelay = cfg_.nodelay}) {}

builtin_service::~builtin_service() { stop(); }

void builtin_service::start() {
  if (cfg_.work_ns > 0) work_iterations_ = uint64_t(spin_per_ns() * double(cfg_.work_ns));  // at full speed
  if (cfg_.wal) {
    if (cfg_.wal_path.empty()) cfg_.wal_path = "target.wal";
    // A regular file of this user, never through a link (as root, a planted one had the target
    // append its records to another's file), never a FIFO (the open blocked the start).
    if (const std::string why = user_data_file_refusal(cfg_.wal_path); !why.empty())
      throw std::runtime_error("wal_path: " + why);
    if (cfg_.wal_direct) {
      // A ring of blocks: direct writes that never extend the file.
      wal_fd_.reset(::open(cfg_.wal_path.c_str(), O_WRONLY | O_CREAT | O_DIRECT | O_DSYNC | O_NOFOLLOW | O_CLOEXEC, 0644));
      throw_system_error_on(!wal_fd_, "open write-ahead log " + cfg_.wal_path + " with O_DIRECT",
                            "the file system must support direct I/O (tmpfs does not)");
      void* block = nullptr;
      throw_system_error_on(::posix_memalign(&block, wal_block_bytes, wal_block_bytes) != 0, "posix_memalign");
      std::memset(block, 0, wal_block_bytes);
      wal_block_.reset(static_cast<char*>(block));
      // Written once in full, so each record is a pure overwrite: one disk write, no
      // file-system metadata to commit with it.
      for (uint64_t b = 0; b < wal_ring_blocks; ++b)
        throw_system_error_on(::pwrite(wal_fd_.get(), wal_block_.get(), wal_block_bytes, off_t(b * wal_block_bytes)) !=
                                  ssize_t(wal_block_bytes),
                              "write-ahead log " + cfg_.wal_path);
    } else {
      wal_fd_.reset(::open(cfg_.wal_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644));
      throw_system_error_on(!wal_fd_, "open write-ahead log " + cfg_.wal_path);
    }
  }
  port_ = listen_on(acceptor_, cfg_.bind, uint16_t(cfg_.port));
  asio::co_spawn(ioc_, accept_loop(), asio::detached);
  for (int i = 0; i < cfg_.workers; ++i) workers_.emplace_back([this] { worker_main(); });
  // Ready means every worker is in the pool, so the first sample sees them all.
  while (live_workers_.load() < cfg_.workers) std::this_thread::sleep_for(std::chrono::microseconds(100));
  for (int i = 0; i < cfg_.io_threads; ++i) io_threads_.emplace_back([this] { ioc_.run(); });
}

void builtin_service::stop() noexcept {
  if (stopping_.exchange(true)) return;
  {
    std::lock_guard lk(queue_mu_);
    queue_closed_ = true;
  }
  queue_cv_.notify_all();
  ioc_.stop();
  for (auto& t : io_threads_)
    if (t.joinable()) t.join();
  // A worker blocked writing to a slow client wakes when the sockets close.
  {
    std::lock_guard lk(conns_mu_);
    for (auto& c : conns_) ::shutdown(c->sock.native_handle(), SHUT_RDWR);
  }
  for (auto& t : workers_)
    if (t.joinable()) t.join();
  std::lock_guard lk(conns_mu_);
  conns_.clear();
}

awaitable<void> builtin_service::accept_loop() {
  for (;;) {
    boost::system::error_code ec;
    // Each connection gets a strand so several io threads never touch one socket at once.
    tcp::socket s(asio::make_strand(ioc_));
    co_await acceptor_.async_accept(s, asio::redirect_error(use_awaitable, ec));
    if (ec) {
      if (ec == asio::error::operation_aborted) co_return;
      continue;
    }
    auto c = std::make_shared<connection>(std::move(s));
    sockets_.add(c->sock.native_handle());
    {
      std::lock_guard lk(conns_mu_);
      conns_.insert(c);
    }
    asio::co_spawn(c->sock.get_executor(), cfg_.http ? serve_http(c) : serve(c), asio::detached);
  }
}

awaitable<void> builtin_service::serve(std::shared_ptr<connection> c) {
  wire::request_header h{};
  for (;;) {
    boost::system::error_code ec;
    co_await asio::async_read(c->sock, asio::buffer(&h, sizeof h), asio::redirect_error(use_awaitable, ec));
    if (ec) break;
    if (h.magic != wire::request_magic || h.request_bytes < wire::header_bytes ||
        h.request_bytes > wire::max_frame_bytes || h.response_bytes < wire::header_bytes ||
        h.response_bytes > wire::max_frame_bytes) {
      ++protocol_errors_;
      break;
    }
    c->body.resize(h.request_bytes - wire::header_bytes);
    if (!c->body.empty()) {
      co_await asio::async_read(c->sock, asio::buffer(c->body), asio::redirect_error(use_awaitable, ec));
      if (ec) break;
    }
    c->reply_done = false;
    c->done.expires_at(asio::steady_timer::time_point::max());
    if (!try_push(job{c, h.seq, h.response_bytes})) {
      ++rejected_;
      wire::reply_header r{wire::reply_magic, uint32_t(wire::status::rejected), 0, h.seq};
      co_await asio::async_write(c->sock, asio::buffer(&r, sizeof r), asio::redirect_error(use_awaitable, ec));
      if (ec) break;
      continue;
    }
    if (!c->reply_done) co_await c->done.async_wait(asio::redirect_error(use_awaitable, ec));
    if (c->failed) break;
  }
  close(c);
}

void builtin_service::close(const std::shared_ptr<connection>& c) {
  boost::system::error_code ignored;
  c->sock.shutdown(tcp::socket::shutdown_both, ignored);
  sockets_.remove(c->sock.native_handle());
  std::lock_guard lk(conns_mu_);
  conns_.erase(c);
}

namespace {
// The reply body's size a request asks for with ?size=BYTES (or &size=), if it does.
std::optional<uint64_t> size_asked(std::string_view target) {
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view kv = query.substr(0, amp);
    if (kv.substr(0, 5) == "size=") {
      uint64_t n = 0;
      const auto r = std::from_chars(kv.data() + 5, kv.data() + kv.size(), n);
      if (r.ec == std::errc() && r.ptr == kv.data() + kv.size()) return n;
      return std::nullopt;
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

std::string http_status_reply(std::string_view status, bool close) {
  return fmt::format("HTTP/1.1 {}\r\nContent-Length: 0\r\n{}\r\n", status, close ? "Connection: close\r\n" : "");
}
}  // namespace

awaitable<void> builtin_service::serve_http(std::shared_ptr<connection> c) {
  http_parser req(http_parser::kind::request);
  http_inbuf in(16 * 1024);
  uint32_t seq = 0;
  for (;;) {
    req.reset();
    boost::system::error_code ec = co_await read_http_message(c->sock, req, in);
    if (ec) break;
    const auto asked = req.failed() ? std::nullopt : size_asked(req.target());
    if (req.failed() || (asked && *asked > wire::max_frame_bytes)) {
      ++protocol_errors_;
      const std::string r = http_status_reply("400 Bad Request", true);
      co_await asio::async_write(c->sock, asio::buffer(r), asio::redirect_error(use_awaitable, ec));
      break;
    }
    c->reply_done = false;
    c->done.expires_at(asio::steady_timer::time_point::max());
    job j{c, ++seq, uint32_t(asked.value_or(cfg_.reply_size))};
    j.http = true;
    j.head = req.method() == "HEAD";
    j.close = !req.keep_alive();
    if (!try_push(std::move(j))) {
      ++rejected_;
      const std::string r = http_status_reply("503 Service Unavailable", !req.keep_alive());
      co_await asio::async_write(c->sock, asio::buffer(r), asio::redirect_error(use_awaitable, ec));
      if (ec || !req.keep_alive()) break;
      continue;
    }
    if (!c->reply_done) co_await c->done.async_wait(asio::redirect_error(use_awaitable, ec));
    if (c->failed || !req.keep_alive()) break;
  }
  close(c);
}

bool builtin_service::try_push(job j) {
  try {
    if (RIG_FAILPOINT("queue.push")) return false;  // error (or throw): refused as if the queue were full
  } catch (const failpoint_error&) {
    return false;
  }
  {
    std::lock_guard lk(queue_mu_);
    if (queue_closed_ || int(queue_.size()) >= cfg_.queue_capacity) return false;
    queue_.push_back(std::move(j));
  }
  queue_cv_.notify_one();
  return true;
}

bool builtin_service::pop(job& j) {
  std::unique_lock lk(queue_mu_);
  queue_cv_.wait(lk, [&] { return queue_closed_ || !queue_.empty(); });
  if (queue_.empty()) return false;
  j = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

void builtin_service::worker_main() {
  ++live_workers_;
  std::vector<char> buf;
  job j;
  try {
    while (pop(j)) {
      if (cfg_.catch_exceptions) {
        try {
          handle(j, buf);
        } catch (const std::exception& e) {
          ++exceptions_caught_;
          std::cerr << "rig target: worker caught: " << e.what() << "\n";
          request_failed(j);
        }
      } else {
        handle(j, buf);
      }
      j.conn.reset();
    }
  } catch (const std::exception& e) {
    // The thread ends without returning to the pool, as in seed case 2; its request is never answered.
    ++workers_died_;
    std::cerr << "rig target: worker died: " << e.what() << "\n";
  }
  --live_workers_;
}

namespace {

// Writes all of [p, p+n) on a non-blocking socket; false when the peer is gone.
bool send_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w > 0) {
      p += w;
      n -= size_t(w);
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd pf{fd, POLLOUT, 0};
      if (::poll(&pf, 1, 10'000) <= 0 || (pf.revents & (POLLERR | POLLHUP))) return false;
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

// After a caught exception: what on_error asks for the request that was being handled.
void builtin_service::request_failed(job& j) {
  if (cfg_.on_error == builtin_config::error_policy::silent) return;  // no answer; the connection waits for one
  if (cfg_.on_error == builtin_config::error_policy::reply) {
    std::string r;
    if (j.http) {
      r = http_status_reply("500 Internal Server Error", j.close);
    } else {
      const wire::reply_header h{wire::reply_magic, uint32_t(wire::status::error), 0, j.seq};
      r.assign(reinterpret_cast<const char*>(&h), sizeof h);
    }
    if (send_all(j.conn->sock.native_handle(), r.data(), r.size())) {
      j.conn->reply_done = true;
      asio::post(j.conn->sock.get_executor(), [c = j.conn] { c->done.cancel(); });
      return;
    }
  }
  j.conn->failed = true;
  asio::post(j.conn->sock.get_executor(), [c = j.conn] { c->done.cancel(); });
}

void builtin_service::handle(job& j, std::vector<char>& buf) {
  if (int e = RIG_FAILPOINT("worker.handle")) throw system_error("failpoint worker.handle", e);
  const uint64_t served_before = requests_++;  // taken by a worker; counted before the reply so a client never sees it missing
  if (work_iterations_ > 0) spin(work_iterations_);
  if (cfg_.io_wait_ns > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(cfg_.io_wait_ns));
  if (cfg_.retain_per_request > 0) {
    auto block = std::make_unique<char[]>(cfg_.retain_per_request);
    std::memset(block.get(), 0xa5, cfg_.retain_per_request);  // touched, so it shows in RSS
    std::lock_guard lk(retained_mu_);
    retained_.push_back(std::move(block));
    retained_bytes_ += int64_t(cfg_.retain_per_request);
  }
  if (wal_fd_) {
    char record[64] = {};
    std::snprintf(record, sizeof record, "seq=%u t=%lld\n", j.seq, static_cast<long long>(mono_ns()));
    std::lock_guard lk(wal_mu_);
    if (wal_block_) {
      std::memcpy(wal_block_.get(), record, sizeof record);
      const off_t at = off_t(wal_blocks_written_++ % wal_ring_blocks) * wal_block_bytes;
      if (int e = RIG_FAILPOINT("wal.fsync"))  // O_DSYNC: the write is the durability point
        throw system_error("write-ahead log (failpoint wal.fsync)", e);
      if (::pwrite(wal_fd_.get(), wal_block_.get(), wal_block_bytes, at) != ssize_t(wal_block_bytes))
        throw system_error("write-ahead log", errno);
    } else if (::write(wal_fd_.get(), record, sizeof record) != ssize_t(sizeof record)) {
      throw system_error("write-ahead log", errno);
    } else if (int e = RIG_FAILPOINT("wal.fsync")) {
      throw system_error("write-ahead log fsync (failpoint wal.fsync)", e);
    } else if (::fsync(wal_fd_.get()) != 0) {
      throw system_error("write-ahead log fsync", errno);
    }
  }
  uint64_t body_bytes = j.http ? j.response_bytes : j.response_bytes - wire::header_bytes;
  body_bytes += cfg_.reply_growth * served_before;
  if (cfg_.reply_limit > 0 && body_bytes > cfg_.reply_limit)
    throw std::length_error(fmt::format("a reply of {} bytes is over the limit of {} bytes", body_bytes, cfg_.reply_limit));
  if (body_bytes > wire::max_frame_bytes)
    throw std::length_error(fmt::format("a reply of {} bytes is over the largest frame", body_bytes));
  if (j.http) {
    buf.clear();  // the head formatted into the worker's buffer: no allocation once it has grown
    fmt::format_to(std::back_inserter(buf),
                   "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: application/octet-stream\r\n{}\r\n",
                   body_bytes, j.close ? "Connection: close\r\n" : "");
    if (!j.head) buf.resize(buf.size() + body_bytes, 'r');
  } else {
    buf.resize(wire::header_bytes + body_bytes);
    wire::reply_header r{wire::reply_magic, uint32_t(wire::status::ok), uint32_t(body_bytes), j.seq};
    std::memcpy(buf.data(), &r, sizeof r);
  }
  if (int e = RIG_FAILPOINT("reply.write")) throw system_error("reply write (failpoint reply.write)", e);
  const int fd = j.conn->sock.native_handle();
  const size_t pieces = size_t(cfg_.reply_writes);
  size_t off = 0;
  bool ok = true;
  for (size_t i = 0; i < pieces && ok; ++i) {
    const size_t end = buf.size() * (i + 1) / pieces;
    if (end > off) ok = send_all(fd, buf.data() + off, end - off);
    off = end;
  }
  if (!ok) j.conn->failed = true;
  j.conn->reply_done = true;
  asio::post(j.conn->sock.get_executor(), [c = j.conn] { c->done.cancel(); });
}

builtin_counters builtin_service::counters() const {
  builtin_counters c;
  c.workers = cfg_.workers;
  c.live_workers = live_workers_;
  {
    std::lock_guard lk(const_cast<std::mutex&>(queue_mu_));
    c.queue_depth = int64_t(queue_.size());
  }
  c.queue_capacity = cfg_.queue_capacity;
  c.rejected = rejected_;
  c.retained_bytes = retained_bytes_;
  c.requests = requests_;
  {
    std::lock_guard lk(const_cast<std::mutex&>(conns_mu_));
    c.connections = int64_t(conns_.size());
  }
  c.exceptions_caught = exceptions_caught_;
  c.workers_died = workers_died_;
  c.protocol_errors = protocol_errors_;
  return c;
}

namespace {

// "nodelay=0 sndbuf=4096" -> policy; false on a malformed word.
bool parse_policy(std::istringstream& in, socket_policy& p, std::string& bad) {
  std::string word;
  while (in >> word) {
    const auto eq = word.find('=');
    if (eq == std::string::npos) {
      bad = word;
      return false;
    }
    const std::string k = word.substr(0, eq), v = word.substr(eq + 1);
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (end == v.c_str() || *end) {
      bad = word;
      return false;
    }
    if (k == "nodelay") p.nodelay = n != 0;
    else if (k == "sndbuf") p.send_buffer = int(n);
    else if (k == "rcvbuf") p.receive_buffer = int(n);
    else {
      bad = word;
      return false;
    }
  }
  return true;
}

}  // namespace

std::string builtin_service::control(std::string_view line) {
  std::istringstream in{std::string(line)};
  std::string cmd;
  in >> cmd;
  if (cmd == "stats") {
    const auto c = counters();
    return fmt::format(
        "ok workers={} live_workers={} queue_depth={} queue_capacity={} rejected={} retained_bytes={} "
        "requests={} connections={} exceptions_caught={} workers_died={} protocol_errors={}",
        c.workers, c.live_workers, c.queue_depth, c.queue_capacity, c.rejected, c.retained_bytes, c.requests,
        c.connections, c.exceptions_caught, c.workers_died, c.protocol_errors);
  }
  if (cmd == "reset") {
    socket_policy p;
    std::string bad;
    if (!parse_policy(in, p, bad)) return "error bad policy word '" + bad + "'";
    sockets_.reset_socket_policy(p);
    return "ok";
  }
  if (cmd == "policy" || cmd == "check") {
    socket_policy p;
    std::string bad;
    if (!parse_policy(in, p, bad)) return "error bad policy word '" + bad + "'";
    if (cmd == "policy" && !p.nodelay && !p.send_buffer && !p.receive_buffer) {
      const auto now = sockets_.socket_policy_now();
      std::string out = "ok";
      if (now.nodelay) out += fmt::format(" nodelay={}", *now.nodelay ? 1 : 0);
      if (now.send_buffer) out += fmt::format(" sndbuf={}", *now.send_buffer);
      if (now.receive_buffer) out += fmt::format(" rcvbuf={}", *now.receive_buffer);
      return out;
    }
    const auto r = cmd == "policy" ? sockets_.set_socket_policy(p) : sockets_.check_socket_policy(p);
    return fmt::format("ok sockets={} matching={}", r.sockets, r.matching);
  }
  return "error unknown command '" + cmd + "' (stats, policy, check, reset)";
}

void builtin_service::serve_control(const std::string& where) {
  if (where.rfind("fd:", 0) == 0) {
    const int fd = std::atoi(where.c_str() + 3);
    if (fd < 3 || ::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
      throw std::runtime_error("--control " + where + ": no such inherited descriptor");
    local_stream::socket s(ioc_);
    s.assign(local_stream(), fd);
    ++control_sessions_;
    asio::co_spawn(ioc_, control_session(std::move(s)), asio::detached);
    return;
  }
  std::string name = where;
  if (!name.empty() && name[0] == '@') name[0] = '\0';  // abstract namespace: nothing left on disk
  control_acceptor_ = std::make_unique<local_stream::acceptor>(ioc_, local_stream::endpoint(name));
  asio::co_spawn(ioc_, control_loop(), asio::detached);
}

awaitable<void> builtin_service::control_loop() {
  for (;;) {
    boost::system::error_code ec;
    local_stream::socket s(ioc_);
    co_await control_acceptor_->async_accept(s, asio::redirect_error(use_awaitable, ec));
    if (ec) co_return;
    // A socket name anyone could open: only this user's processes, and only a few at once.
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(s.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::geteuid() ||
        control_sessions_ >= max_control_sessions)
      continue;
    ++control_sessions_;
    asio::co_spawn(ioc_, control_session(std::move(s)), asio::detached);
  }
}

awaitable<void> builtin_service::control_session(local_stream::socket s) {
  struct session_count {
    int& n;
    ~session_count() { --n; }
  } counted{control_sessions_};
  std::string in;
  for (;;) {
    boost::system::error_code ec;
    const size_t n =
        co_await asio::async_read_until(s, asio::dynamic_buffer(in), '\n', asio::redirect_error(use_awaitable, ec));
    if (ec) co_return;
    std::string reply = control(std::string_view(in).substr(0, n - 1)) + "\n";
    in.erase(0, n);
    co_await asio::async_write(s, asio::buffer(reply), asio::redirect_error(use_awaitable, ec));
    if (ec) co_return;
  }
}

}  // namespace rig
