#pragma once
// The engine of the request/reply workloads over a stream (tcp, http): N connections over T
// threads, one io_context each, one request in flight per connection, paced by a load model;
// timeouts, reconnects, error kinds and the three latency histograms. A protocol supplies
// only how one request and its reply cross a connection.
#include <atomic>
#include <memory>
#include <optional>

#include "core/asio.hpp"
#include "workloads/load_model.hpp"
#include "workloads/workload.hpp"

namespace rig {

// The keys every stream workload has (connections, threads, timeouts, the load model),
// after the protocol's own.
option_table with_stream_options(option_table own);
void check_stream_options(const option_values& v, const bind_context& ctx, diagnostics& diags);

class stream_workload : public workload {
 public:
  ~stream_workload() override;
  void start(const workload_env& env) override;
  void stop() noexcept override;
  std::vector<phase_stats> results() const override;
  finished_phases take_finished_phases() override;
  bool can_host_on_loop() const override { return true; }
  socket_tunable* sockets() override { return &sockets_; }

 protected:
  explicit stream_workload(const option_values& v);

  struct conn {
    explicit conn(asio::io_context& ioc) : sock(ioc), pace(ioc) {}
    virtual ~conn() = default;
    stream_socket sock;
    asio::steady_timer pace;
    int64_t deadline_ns = 0;  // 0: nothing outstanding
    bool timed_out = false;
    bool pair = false;  // connected through a socket pair (to rig's proxy), not TCP
    std::optional<pacer> plan;  // open loop: this connection's share of the rate
    int64_t free_ns = 0;        // when the connection was last free to send (connected, reply in)
    // The request this connection is on (taken from the schedule, or sent): its intended send
    // time, INT64_MAX when none; `sent` once it went. Its phase stays open until it ends.
    int64_t due_ns = INT64_MAX;
    bool sent = false;
    // The earliest request of this connection not finished: the one it is on, else the schedule's next.
    int64_t hold_ns() const { return due_ns != INT64_MAX ? due_ns : plan ? plan->peek() : INT64_MAX; }
  };
  // How one exchange ended. ec: an I/O error (classified by `io_error` for the direction that
  // failed); failure: the reply came but says the request failed; reconnect: the connection
  // cannot carry another request (a protocol error, the server closing it).
  struct reply {
    boost::system::error_code ec;
    error_kind io_error = error_kind::read;
    std::optional<error_kind> failure;
    bool reconnect = false;
    int status = 0;  // a protocol's status code (HTTP), counted by class when set
  };
  virtual std::unique_ptr<conn> make_conn(asio::io_context& ioc) = 0;
  virtual void connected(conn&) {}  // a fresh connection: drop any state of the last one
  virtual awaitable<reply> exchange(conn& c) = 0;
  // connection = "per_request": the connection closes after this reply, and what follows it
  // there (a server's goodbye) goes with it.
  bool per_request() const { return per_request_; }

  const option_values opts_;
  const load_model load_;
  const run_clock* clock_ = nullptr;

 private:
  struct worker;
  awaitable<void> run_connection(worker& w, conn& c, asio::ip::tcp::endpoint ep, std::function<int()> connect_local);
  awaitable<void> request_loop(worker& w, conn& c);
  awaitable<void> sweep(worker& w);

  int connections_ = 1, threads_ = 1;
  int64_t timeout_ns_ = 0, connect_timeout_ns_ = 0;
  bool spin_ = false;  // pacing = "spin"
  bool per_request_ = false;  // connection = "per_request"
  static constexpr int64_t spin_lead_ns = 200'000;
  std::vector<std::unique_ptr<worker>> workers_;
  std::atomic<bool> stopped_{false};
  socket_set sockets_;
};

}  // namespace rig
