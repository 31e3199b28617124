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
#include "core/socket_policy.hpp"
#include "injectors/toxics/toxic.hpp"

namespace rig {

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

  // Toxics act in chain order on the connections open now and to come; their counters are
  // theirs to read (toxic::counters), before and after removal.
  int add_toxic(std::shared_ptr<toxic> t);
  void remove_toxic(int id);
  std::vector<std::shared_ptr<const toxic>> active() const;  // read back, in chain order
  int connections() const { return connections_.load(); }

 private:
  struct link;  // a toxic in the chain
  struct chunk;
  struct connection;
  struct pipe;
  awaitable<void> accept_loop();
  awaitable<void> serve(std::shared_ptr<connection> c);
  void adopt(stream_socket client);
  awaitable<void> read_side(std::shared_ptr<connection> c, pipe& p);
  awaitable<void> write_side(std::shared_ptr<connection> c, pipe& p);
  const std::vector<const link*>& acting(const std::shared_ptr<connection>& c, pipe& p);
  awaitable<void> end_after(std::shared_ptr<connection> c, link l, connection_end end);
  awaitable<bool> pass(std::shared_ptr<connection> c, pipe& p, chunk& ch, const std::vector<const link*>& mine);
  std::shared_ptr<const std::vector<link>> chain() const;
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
  std::shared_ptr<const std::vector<link>> chain_;
  int next_id_ = 1;
};

}  // namespace rig
