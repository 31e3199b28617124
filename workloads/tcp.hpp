#pragma once
#include <string_view>

#include "workloads/stream.hpp"

namespace rig {

const option_table& tcp_workload_options();
void check_tcp_workload(const option_values& v, const bind_context& ctx, diagnostics& diags);

// Request/reply over TCP in the built-in target's framed protocol, or raw bytes to any
// server (a fixed-size reply, or one ending with a delimiter).
class tcp_workload final : public stream_workload {
 public:
  explicit tcp_workload(const option_values& v);
  nlohmann::json describe() const override;

 private:
  struct tcp_conn;
  std::unique_ptr<conn> make_conn(asio::io_context& ioc) override;
  void connected(conn& c) override;
  awaitable<reply> exchange(conn& c) override;
  void check_raw_reply(std::string_view got, size_t stray_bytes, reply& r) const;

  uint32_t request_size_ = 64, response_size_ = 64;
  std::string raw_request_, until_;
  std::string expect_reply_, expect_prefix_;  // empty: not checked
  std::vector<std::string> error_prefixes_;
};

}  // namespace rig
