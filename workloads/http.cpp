#include "workloads/http.hpp"

#include <fmt/format.h>

namespace rig {

const option_table& http_workload_options() {
  static const option_table t = with_stream_options({
      {.name = "method", .type = opt_type::string, .default_text = "\"GET\"", .help = "the request method",
       .allowed = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}},
      {.name = "path", .type = opt_type::string, .default_text = "\"/\"",
       .help = "the request target: path and query (the built-in target reads ?size=BYTES as the reply body's size)"},
      {.name = "headers", .type = opt_type::string_map, .default_text = "",
       .help = "extra request headers, e.g. { Accept = \"*/*\" }; Host is set unless given here"},
      {.name = "body", .type = opt_type::string, .default_text = "", .help = "the request body, sent as given"},
      {.name = "body_size", .type = opt_type::size, .default_text = "",
       .help = "a request body of this many bytes, made up by rig (instead of 'body')", .min = 0,
       .max = 64.0 * 1048576},
  });
  return t;
}

namespace {
bool token_char(char ch) {
  return std::isalnum(static_cast<unsigned char>(ch)) || std::string_view("!#$%&'*+-.^_`|~").find(ch) != std::string_view::npos;
}
}  // namespace

void check_http_workload(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  check_stream_options(v, ctx, diags);
  if (v.has("body") && v.has("body_size"))
    diags.add(v.where("body_size"), "'body' and 'body_size' in " + ctx.section + " conflict: one body per request");
  const std::string& path = v.str("path");
  if (path.empty() || (path[0] != '/' && path != "*") || path.find_first_of(" \r\n") != std::string::npos)
    diags.add(v.where("path"), "'path' in " + ctx.section + " must start with '/' and hold no spaces or line breaks");
  if (v.has("headers"))
    for (const auto& [name, value] : v.map("headers")) {
      bool ok = !name.empty();
      for (char ch : name) ok = ok && token_char(ch);
      if (!ok || value.find_first_of("\r\n") != std::string::npos)
        diags.add(v.where("headers"), fmt::format("header '{}' in {} is not a valid HTTP header (a token name, a "
                                                  "value without line breaks)", name, ctx.section));
      else if (http_name_equals(name, "Content-Length") || http_name_equals(name, "Transfer-Encoding"))
        diags.add(v.where("headers"), fmt::format("header '{}' in {}: rig sets the body's framing itself; use 'body' "
                                                  "or 'body_size'", name, ctx.section));
    }
}

struct http_workload::http_conn : conn {
  using conn::conn;
  http_parser parser{http_parser::kind::response};
  http_inbuf in{64 * 1024};
};

http_workload::http_workload(const option_values& v) : stream_workload(v) { head_ = v.str("method") == "HEAD"; }

void http_workload::start(const workload_env& env) {
  const std::string& method = opts_.str("method");
  std::string body;
  if (opts_.has("body")) body = opts_.str("body");
  if (opts_.has("body_size")) body.assign(opts_.bytes("body_size"), 'x');
  bool host_given = false;
  std::string extra;
  if (opts_.has("headers"))
    for (const auto& [name, value] : opts_.map("headers")) {
      host_given = host_given || http_name_equals(name, "Host");
      extra += name + ": " + value + "\r\n";
    }
  request_ = fmt::format("{} {} HTTP/1.1\r\n", method, opts_.str("path"));
  if (!host_given) request_ += fmt::format("Host: {}:{}\r\n", env.host, env.port);
  request_ += "User-Agent: rig\r\n" + extra;
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH")
    request_ += fmt::format("Content-Length: {}\r\n", body.size());
  request_ += "\r\n" + body;
  stream_workload::start(env);
}

std::unique_ptr<stream_workload::conn> http_workload::make_conn(asio::io_context& ioc) {
  return std::make_unique<http_conn>(ioc);
}

void http_workload::connected(conn& base) {
  static_cast<http_conn&>(base).in.clear();
}

awaitable<stream_workload::reply> http_workload::exchange(conn& base) {
  auto& c = static_cast<http_conn&>(base);
  reply r;
  co_await asio::async_write(c.sock, asio::buffer(request_), asio::redirect_error(use_awaitable, r.ec));
  if (r.ec) {
    r.io_error = error_kind::write;
    co_return r;
  }
  c.parser.reset(head_);
  r.ec = co_await read_http_message(c.sock, c.parser, c.in);
  if (r.ec) co_return r;
  if (c.parser.failed()) {
    r.failure = error_kind::protocol;
    r.reconnect = true;
    co_return r;
  }
  r.status = c.parser.status();
  if (r.status >= 500) r.failure = error_kind::status_5xx;
  else if (r.status >= 400) r.failure = error_kind::status_4xx;
  r.reconnect = !c.parser.keep_alive();
  co_return r;
}

nlohmann::json http_workload::describe() const {
  return {{"kind", "http"},
          {"load_model", load_.describe()},
          {"request", fmt::format("{} {}", opts_.str("method"), opts_.str("path"))},
          {"params", opts_.to_json()}};
}

}  // namespace rig
