#pragma once
#include "core/http_read.hpp"
#include "workloads/stream.hpp"

namespace rig {

const option_table& http_workload_options();
void check_http_workload(const option_values& v, const bind_context& ctx, diagnostics& diags);

// HTTP/1.1 keep-alive: one request in flight per connection, the same request each time
// (built once, never formatted per request); replies framed by Content-Length, chunked
// encoding or the server's close, their bodies skipped. Status classes are counted; 4xx and
// 5xx replies are errors.
class http_workload final : public stream_workload {
 public:
  explicit http_workload(const option_values& v);
  void start(const workload_env& env) override;
  nlohmann::json describe() const override;

 private:
  struct http_conn;
  std::unique_ptr<conn> make_conn(asio::io_context& ioc) override;
  void connected(conn& c) override;
  awaitable<reply> exchange(conn& c) override;

  std::string request_;  // the whole request, head and body
  bool head_ = false;    // HEAD: replies have no body
};

}  // namespace rig
