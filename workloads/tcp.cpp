#include <cstring>

#include "core/asio.hpp"
#include "core/clock.hpp"
#include "core/wire.hpp"
#include "workloads/tcp.hpp"

namespace rig {

using asio::ip::tcp;

const option_table& tcp_workload_options() {
  static const option_table t = with_stream_options({
      {.name = "request_size", .type = opt_type::size, .default_text = "\"64B\"",
       .help = "built-in protocol: request frame size (at least 16B, the header)", .min = 16,
       .max = 64.0 * 1048576},
      {.name = "response_size", .type = opt_type::size, .default_text = "\"64B\"",
       .help = "built-in protocol: reply size asked for; raw protocols: bytes to read per reply", .min = 1,
       .max = 64.0 * 1048576},
      {.name = "request", .type = opt_type::string, .default_text = "",
       .help = "raw protocol: bytes sent per request (e.g. \"PING\\r\\n\"); absent: the built-in protocol"},
      {.name = "response_until", .type = opt_type::string, .default_text = "",
       .help = "raw protocol: a reply ends with this delimiter (e.g. \"\\r\\n\")"},
  });
  return t;
}

void check_tcp_workload(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  check_stream_options(v, ctx, diags);
  const bool raw = v.has("request");
  if (raw) {
    if (v.str("request").empty()) diags.add(v.where("request"), "'request' in " + ctx.section + " is empty");
    if (v.is_set("response_until") && v.is_set("response_size"))
      diags.add(v.where("response_until"),
                "'response_until' and 'response_size' in " + ctx.section + " conflict: a reply ends one way");
    if (!v.is_set("response_until") && !v.is_set("response_size"))
      diags.add(v.where("request"), "raw 'request' in " + ctx.section +
                                        " needs 'response_size' or 'response_until' to know where a reply ends");
    if (v.has("response_until") && v.str("response_until").empty())
      diags.add(v.where("response_until"), "'response_until' in " + ctx.section + " is empty");
  } else if (v.has("response_until")) {
    diags.add(v.where("response_until"),
              "'response_until' in " + ctx.section + " applies to raw protocols only; set 'request' as well");
  } else if (v.bytes("response_size") < wire::header_bytes) {
    diags.add(v.where("response_size"),
              "'response_size' in " + ctx.section + " must be at least 16B with the built-in protocol");
  }
}

struct tcp_workload::tcp_conn : conn {
  using conn::conn;
  std::vector<char> req, resp;
  std::string until_buf;
  uint32_t seq = 0;
};

tcp_workload::tcp_workload(const option_values& v) : stream_workload(v) {
  request_size_ = uint32_t(v.bytes("request_size"));
  response_size_ = uint32_t(v.bytes("response_size"));
  if (v.has("request")) raw_request_ = v.str("request");
  if (v.has("response_until")) until_ = v.str("response_until");
}

std::unique_ptr<stream_workload::conn> tcp_workload::make_conn(asio::io_context& ioc) {
  auto c = std::make_unique<tcp_conn>(ioc);
  if (raw_request_.empty()) {
    c->req.assign(request_size_, 0);
    c->resp.resize(response_size_);
  } else {
    c->req.assign(raw_request_.begin(), raw_request_.end());
    c->resp.resize(until_.empty() ? response_size_ : 0);
  }
  return c;
}

void tcp_workload::connected(conn& base) { static_cast<tcp_conn&>(base).until_buf.clear(); }

awaitable<stream_workload::reply> tcp_workload::exchange(conn& base) {
  auto& c = static_cast<tcp_conn&>(base);
  reply r;
  const bool builtin = raw_request_.empty();
  if (builtin) {
    wire::request_header h{wire::request_magic, request_size_, response_size_, ++c.seq};
    std::memcpy(c.req.data(), &h, sizeof h);
  }
  co_await asio::async_write(c.sock, asio::buffer(c.req), asio::redirect_error(use_awaitable, r.ec));
  if (r.ec) {
    r.io_error = error_kind::write;
    co_return r;
  }
  if (builtin) {
    wire::reply_header h{};
    co_await asio::async_read(c.sock, asio::buffer(&h, sizeof h), asio::redirect_error(use_awaitable, r.ec));
    if (!r.ec && (h.magic != wire::reply_magic || h.seq != c.seq ||
                  h.payload_bytes > response_size_ - wire::header_bytes)) {
      r.failure = error_kind::protocol;
      r.reconnect = true;
      co_return r;
    }
    if (!r.ec && h.payload_bytes)
      co_await asio::async_read(c.sock, asio::buffer(c.resp.data(), h.payload_bytes),
                                asio::redirect_error(use_awaitable, r.ec));
    if (!r.ec && h.status == uint32_t(wire::status::rejected)) r.failure = error_kind::rejected;
    if (!r.ec && h.status == uint32_t(wire::status::error)) r.failure = error_kind::status_5xx;  // the server's own error
  } else if (until_.empty()) {
    co_await asio::async_read(c.sock, asio::buffer(c.resp), asio::redirect_error(use_awaitable, r.ec));
  } else {
    const size_t n = co_await asio::async_read_until(c.sock, asio::dynamic_buffer(c.until_buf), until_,
                                                     asio::redirect_error(use_awaitable, r.ec));
    if (!r.ec) c.until_buf.erase(0, n);
  }
  co_return r;
}

nlohmann::json tcp_workload::describe() const {
  return {{"kind", "tcp"},
          {"load_model", load_.describe()},
          {"protocol", raw_request_.empty() ? "builtin" : "raw"},
          {"params", opts_.to_json()}};
}

}  // namespace rig
