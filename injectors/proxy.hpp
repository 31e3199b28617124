#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/asio.hpp"
#include "core/options.hpp"
#include "core/socket_policy.hpp"

namespace rig {

// Toxiproxy's toxics, with its names and semantics.
struct toxic_spec {
  std::string name;  // the injector's name in the scenario
  std::string type;  // latency | bandwidth | slicer | slow_close | timeout | reset_peer | limit_data
  bool upstream = false, downstream = true;  // stream: client->target, target->client
  double toxicity = 1.0;                     // fraction of connections affected
  int64_t latency_ns = 0, jitter_ns = 0;
  double rate = 0;                           // bytes/s (bandwidth)
  uint64_t average_size = 0, size_variation = 0;  // slicer
  int64_t delay_ns = 0;                           // slicer: between slices; slow_close: before closing
  int64_t timeout_ns = 0;                         // timeout, reset_peer
  uint64_t bytes = 0;                             // limit_data

  static toxic_spec from(const std::string& name, const option_values& v);
  std::string str() const;  // "latency 10ms ±1ms downstream, toxicity 1"
};

const option_table& proxy_options();
void check_proxy(const option_values& v, const bind_context& ctx, diagnostics& diags);

// What a toxic did, counted by the proxy itself: the measured side of verification.
struct toxic_counters {
  uint64_t connections_affected = 0, connections_spared = 0;
  uint64_t chunks = 0, bytes = 0;
  double mean_added_delay_us = 0;  // latency: achieved delay beyond arrival
  double max_lateness_us = 0;      // latency: worst release after the intended time
  double mean_lateness_us = 0;     // latency: mean release after the intended time (the proxy's own wake-up cost)
  uint64_t slices = 0, closed = 0, reset = 0, dropped_bytes = 0;
};

// A TCP proxy on loopback between the workloads and the target. Toxics are added and
// removed while connections stay open; each connection decides once per toxic whether
// it is affected (toxicity).
class toxic_proxy {
 public:
  explicit toxic_proxy(uint64_t seed = 1, std::string listen_host = "127.0.0.1", uint16_t listen_port = 0);
  ~toxic_proxy();
  // On the proxy's own thread.
  void start_for(const std::string& upstream_host, uint16_t upstream_port);
  // On an event loop someone else runs (a workload's): no thread of its own, so forwarding
  // costs no cross-thread wake-up. stop() must be called while that loop still runs, and
  // the proxy destroyed before the loop is.
  void start_on(asio::io_context& loop, const std::string& upstream_host, uint16_t upstream_port);
  void stop() noexcept;
  uint16_t port() const { return port_; }
  // After start_on, on that loop's thread: a new proxied connection whose client side is one
  // end of an AF_UNIX socket pair, returned as an fd (-1 once stopped). Cheaper than a TCP
  // connect to port(): no TCP stack between the workload and the proxy. A unix socket cannot
  // be reset, so reset_peer shows up on such a connection as a close, not a reset.
  int connect_local();
  // The proxy's sockets to the target: the rig's own sockets as the target sees them, so
  // nodelay and sockbuf with where = "workload" act on them.
  socket_tunable* upstream_sockets() { return &upstream_sockets_; }

  int add_toxic(const toxic_spec& t);
  void remove_toxic(int id);
  std::vector<toxic_spec> active() const;  // read back, in chain order
  toxic_counters counters(int id) const;
  int connections() const { return connections_.load(); }

 private:
  struct toxic;
  struct chunk;
  struct connection;
  struct pipe;
  awaitable<void> accept_loop();
  awaitable<void> serve(std::shared_ptr<connection> c);
  void adopt(stream_socket client);
  awaitable<void> read_side(std::shared_ptr<connection> c, pipe& p);
  awaitable<void> write_side(std::shared_ptr<connection> c, pipe& p);
  std::shared_ptr<const std::vector<std::shared_ptr<toxic>>> chain() const;
  void refresh(pipe& p) const;

  std::string upstream_host_, listen_host_;
  uint16_t upstream_port_, listen_port_, port_ = 0;
  uint64_t seed_;
  socket_set upstream_sockets_{socket_policy{.nodelay = true}};  // before own_: outlives the connections
  asio::io_context own_{1};
  asio::io_context* loop_ = &own_;  // own_, or the borrowed loop of start_on
  asio::ip::tcp::acceptor acceptor_;
  std::vector<std::weak_ptr<connection>> live_;  // touched on the loop only
  std::thread thread_;
  std::atomic<bool> stopped_{false};
  std::atomic<int> connections_{0};
  std::atomic<uint64_t> next_conn_{0};
  std::atomic<uint64_t> version_{0};  // bumped on every chain change

  mutable std::mutex mu_;
  std::shared_ptr<const std::vector<std::shared_ptr<toxic>>> chain_;
  std::vector<std::shared_ptr<toxic>> retired_;  // counters stay readable after removal
  int next_id_ = 1;
};

}  // namespace rig
