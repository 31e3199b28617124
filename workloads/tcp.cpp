#include <fmt/format.h>

#include <cstring>
#include <string_view>

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
      {.name = "expect_reply", .type = opt_type::string, .default_text = "",
       .help = "raw protocol: the reply must be exactly these bytes (e.g. \"+PONG\\r\\n\"); any other is a bad_reply error"},
      {.name = "expect_prefix", .type = opt_type::string, .default_text = "",
       .help = "raw protocol: the reply must start with these bytes; any other is a bad_reply error"},
      {.name = "error_prefix", .type = opt_type::strings, .default_text = "",
       .help = "raw protocol: a reply starting with one of these is the server's error reply, counted as an "
               "error_reply error (e.g. [\"-\"] for redis, [\"ERROR\", \"CLIENT_ERROR\", \"SERVER_ERROR\"] for memcached)"},
  });
  return t;
}

namespace {

// What a raw reply must look like, checked against how it ends (its size, its delimiter).
void check_expected_reply(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  if (v.has("expect_reply") && v.has("expect_prefix"))
    diags.add(v.where("expect_prefix"), "'expect_reply' and 'expect_prefix' in " + ctx.section +
                                            " conflict: a reply is checked whole or by its start");
  for (const char* k : {"expect_reply", "expect_prefix"})
    if (v.has(k) && v.str(k).empty()) diags.add(v.where(k), fmt::format("'{}' in {} is empty", k, ctx.section));
  if (v.has("error_prefix"))
    for (const auto& e : v.strings("error_prefix"))
      if (e.empty()) diags.add(v.where("error_prefix"), "'error_prefix' in " + ctx.section + " holds an empty prefix");
  const bool sized = v.is_set("response_size") && !v.has("response_until");
  if (v.has("expect_reply") && sized && v.str("expect_reply").size() != v.bytes("response_size"))
    diags.add(v.where("expect_reply"),
              fmt::format("'expect_reply' in {} is {} bytes but 'response_size' reads {}: no reply could match",
                          ctx.section, v.str("expect_reply").size(), v.bytes("response_size")));
  if (v.has("expect_prefix") && sized && v.str("expect_prefix").size() > v.bytes("response_size"))
    diags.add(v.where("expect_prefix"),
              fmt::format("'expect_prefix' in {} is {} bytes, longer than the {} 'response_size' reads", ctx.section,
                          v.str("expect_prefix").size(), v.bytes("response_size")));
  if (v.has("expect_reply") && v.has("response_until")) {
    const auto& e = v.str("expect_reply");
    const auto& u = v.str("response_until");
    if (e.size() < u.size() || e.compare(e.size() - u.size(), u.size(), u) != 0 || e.find(u) != e.size() - u.size())
      diags.add(v.where("expect_reply"), fmt::format("'expect_reply' in {} must end with 'response_until' and hold "
                                                     "it only there: a reply ends at its first delimiter",
                                                     ctx.section));
  }
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

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
    check_expected_reply(v, ctx, diags);
  } else if (v.has("response_until")) {
    diags.add(v.where("response_until"),
              "'response_until' in " + ctx.section + " applies to raw protocols only; set 'request' as well");
  } else if (const char* k = v.has("expect_reply") ? "expect_reply" : v.has("expect_prefix") ? "expect_prefix"
                             : v.has("error_prefix")  ? "error_prefix"
                                                      : nullptr) {
    diags.add(v.where(k), fmt::format("'{}' in {} applies to raw protocols only (the built-in protocol checks its "
                                      "own replies); set 'request' as well",
                                      k, ctx.section));
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
  if (v.has("expect_reply")) expect_reply_ = v.str("expect_reply");
  if (v.has("expect_prefix")) expect_prefix_ = v.str("expect_prefix");
  if (v.has("error_prefix")) error_prefixes_ = v.strings("error_prefix");
}

// A raw reply, read whole: the server's error reply, one that is not what was expected, or bytes
// past it (the reply was longer than its size or its first delimiter: the stream is out of step).
void tcp_workload::check_raw_reply(std::string_view got, size_t stray_bytes, reply& r) const {
  for (const auto& e : error_prefixes_)
    if (starts_with(got, e)) {
      r.failure = error_kind::error_reply;
      break;
    }
  if (!r.failure && ((!expect_reply_.empty() && got != expect_reply_) ||
                     (!expect_prefix_.empty() && !starts_with(got, expect_prefix_))))
    r.failure = error_kind::bad_reply;
  if (stray_bytes && !per_request()) {
    r.failure = error_kind::bad_reply;
    r.reconnect = true;  // the next reply would start inside this one
  }
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
  // Bytes waiting before a request was sent: the last reply was longer than it was read as.
  if (!builtin && c.sock.available(r.ec) > 0 && !r.ec) {
    r.failure = error_kind::bad_reply;
    r.reconnect = true;
    co_return r;
  }
  if (r.ec) co_return r;
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
    if (!r.ec) check_raw_reply(std::string_view(c.resp.data(), c.resp.size()), c.sock.available(r.ec), r);
  } else {
    const size_t n = co_await asio::async_read_until(c.sock, asio::dynamic_buffer(c.until_buf), until_,
                                                     asio::redirect_error(use_awaitable, r.ec));
    if (!r.ec) {
      check_raw_reply(std::string_view(c.until_buf).substr(0, n), c.until_buf.size() - n + c.sock.available(r.ec), r);
      c.until_buf.erase(0, n);
    }
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
