#pragma once
#include <atomic>

#include "core/asio.hpp"
#include "workloads/workload.hpp"

namespace rig {

const option_table& tcp_workload_options();
void check_tcp_workload(const option_values& v, const bind_context& ctx, diagnostics& diags);

// N connections over T threads (one io_context each), one request in flight per
// connection. Closed loop, or open loop at a total rate with latency from the intended
// send time. Speaks the built-in target's protocol, or raw bytes to any server.
class tcp_workload final : public workload {
 public:
  explicit tcp_workload(const option_values& v);
  ~tcp_workload() override;

  void start(const workload_env& env) override;
  void stop() noexcept override;
  std::vector<phase_stats> results() const override;
  bool can_host_on_loop() const override { return true; }
  socket_tunable* sockets() override { return &sockets_; }
  nlohmann::json describe() const override;

 private:
  struct conn;
  struct worker;
  awaitable<void> run_connection(worker& w, conn& c, asio::ip::tcp::endpoint ep, std::function<int()> connect_local);
  awaitable<void> request_loop(worker& w, conn& c);
  awaitable<void> sweep(worker& w);

  option_values opts_;
  int connections_ = 1, threads_ = 1;
  double rate_ = 0;
  int64_t think_ns_ = 0, timeout_ns_ = 0, connect_timeout_ns_ = 0;
  uint32_t request_size_ = 64, response_size_ = 64;
  std::string raw_request_, until_;
  std::vector<std::unique_ptr<worker>> workers_;
  std::atomic<bool> stopped_{false};
  socket_set sockets_;
};

}  // namespace rig
