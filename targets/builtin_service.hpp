#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/asio.hpp"
#include "core/fd.hpp"
#include "core/options.hpp"
#include "core/socket_policy.hpp"

namespace rig {

// Knobs of the built-in target; each seed case is reproduced by turning one of them.
struct builtin_config {
  std::string bind = "127.0.0.1";
  bool http = false;          // HTTP/1.1 instead of rig's framed protocol
  uint64_t reply_size = 64;   // http: the body's size unless a request asks ?size=
  int port = 0;
  int workers = 4;
  int queue_capacity = 1024;  // 1 forces the overflow path
  int reply_writes = 1;       // reply written in this many send() calls
  bool catch_exceptions = true;
  enum class error_policy { close, silent, reply } on_error = error_policy::close;  // a caught exception's request
  uint64_t reply_growth = 0;  // bytes each reply grows per request served before it
  uint64_t reply_limit = 0;   // a larger reply fails in the worker; 0: none
  uint64_t retain_per_request = 0;  // bytes kept forever per request (accumulation)
  int64_t work_ns = 0;              // CPU work per request (a calibrated loop)
  int64_t io_wait_ns = 0;           // time off the CPU per request (a downstream call)
  bool wal = false;                 // append + fsync a record per request
  bool wal_direct = false;          // the log written in 4 KiB O_DIRECT|O_DSYNC blocks instead
  std::string wal_path;
  bool nodelay = true;  // TCP_NODELAY on accepted sockets, the target's normal setting
  int io_threads = 1;

  static builtin_config from(const option_values& v);
};

const option_table& builtin_options();

struct builtin_counters {
  int64_t workers = 0, live_workers = 0, queue_depth = 0, queue_capacity = 0, rejected = 0,
          retained_bytes = 0, requests = 0, connections = 0, exceptions_caught = 0, workers_died = 0,
          protocol_errors = 0;
};

// A small real TCP service: acceptor and connection reads on Asio coroutines, a bounded
// queue, a worker pool that does the work and writes the reply in pieces.
class builtin_service {
 public:
  explicit builtin_service(builtin_config cfg);
  ~builtin_service();

  void start();
  void stop() noexcept;
  uint16_t port() const { return port_; }
  builtin_counters counters() const;

  // Line commands of the control channel ("stats", "policy nodelay=0", ...).
  std::string control(std::string_view line);
  // Serves the control channel on a unix socket ("@name" = abstract namespace) to processes of
  // this user only, up to max_control_sessions at a time; or ("fd:N") on one inherited,
  // connected socket, which no other process can reach at all.
  void serve_control(const std::string& where);
  static constexpr int max_control_sessions = 8;

  socket_tunable& sockets() { return sockets_; }

 private:
  struct connection;
  struct job {
    std::shared_ptr<connection> conn;
    uint32_t seq;
    uint32_t response_bytes;  // tcp: the whole frame; http: the body
    bool http = false, head = false, close = false;
  };

  awaitable<void> accept_loop();
  awaitable<void> serve(std::shared_ptr<connection> c);
  awaitable<void> serve_http(std::shared_ptr<connection> c);
  void close(const std::shared_ptr<connection>& c);
  awaitable<void> control_loop();
  awaitable<void> control_session(asio::local::stream_protocol::socket s);
  void worker_main();
  void handle(job& j, std::vector<char>& buf);
  void request_failed(job& j);
  bool try_push(job j);
  bool pop(job& j);

  builtin_config cfg_;
  asio::io_context ioc_;
  asio::ip::tcp::acceptor acceptor_;
  std::unique_ptr<asio::local::stream_protocol::acceptor> control_acceptor_;
  int control_sessions_ = 0;  // on the io thread only
  uint16_t port_ = 0;
  std::vector<std::thread> io_threads_, workers_;
  std::atomic<bool> stopping_{false};

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<job> queue_;
  bool queue_closed_ = false;

  std::mutex conns_mu_;
  std::set<std::shared_ptr<connection>> conns_;
  socket_set sockets_;

  std::mutex retained_mu_;
  std::vector<std::unique_ptr<char[]>> retained_;
  uint64_t work_iterations_ = 0;  // the loop count that takes `work_ns` at full speed
  std::mutex wal_mu_;
  unique_fd wal_fd_;
  std::unique_ptr<char, void (*)(void*)> wal_block_{nullptr, &free};  // aligned, for O_DIRECT
  uint64_t wal_blocks_written_ = 0;

  std::atomic<int64_t> live_workers_{0}, rejected_{0}, retained_bytes_{0}, requests_{0}, exceptions_caught_{0},
      workers_died_{0}, protocol_errors_{0};
};

}  // namespace rig
