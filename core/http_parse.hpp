#pragma once
// Incremental HTTP/1.1 message framing for the http workload (responses) and the built-in
// target (requests): bytes go in as they arrive, split anywhere; the parser says where a
// message ends. Bodies are skipped, not kept: a load generator needs their length only.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace rig {

// Header names compare without regard to case (RFC 9110).
bool http_name_equals(std::string_view a, std::string_view b);

class http_parser {
 public:
  enum class kind { response, request };
  enum class state { head, body, chunk_size, chunk_data, chunk_crlf, trailers, done, error };

  explicit http_parser(kind k) : kind_(k) {}
  // A new message; a response to HEAD has no body whatever its headers say.
  void reset(bool head_request = false);
  // Consumes bytes of the current message from [p, p+n); returns how many. Stops at the
  // message's end (done()) or at an error; bytes after the end belong to the next message.
  size_t feed(const char* p, size_t n);

  // The peer closed: completes a body that runs until close (HTTP/1.0 style); false when
  // the message was cut short instead.
  bool end_of_stream();
  bool done() const { return state_ == state::done; }
  bool failed() const { return state_ == state::error; }
  const std::string& error() const { return error_; }
  int status() const { return status_; }              // responses
  std::string_view method() const { return method_; }  // requests
  std::string_view target() const { return target_; }  // requests: the path and query
  bool keep_alive() const { return keep_alive_; }
  uint64_t body_bytes() const { return body_seen_; }

  static constexpr size_t max_head_bytes = 64 * 1024;

 private:
  size_t fail(std::string why);
  bool parse_head();  // the start line and headers in head_
  size_t feed_line(const char* p, size_t n, bool& complete);  // into line_, up to LF

  kind kind_;
  state state_ = state::head;
  bool head_request_ = false;
  std::string head_, line_, error_;
  std::string method_, target_;
  int status_ = 0;
  bool keep_alive_ = true, chunked_ = false;
  uint64_t remaining_ = 0, body_seen_ = 0;
};

}  // namespace rig
