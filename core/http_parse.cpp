#include "core/http_parse.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>

namespace rig {

bool http_name_equals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return (x | 0x20) == (y | 0x20); });
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

// "a, b,c" contains token t (case-insensitive)
bool has_token(std::string_view list, std::string_view t) {
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (http_name_equals(trim(list.substr(0, comma)), t)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

constexpr uint64_t until_close = std::numeric_limits<uint64_t>::max();
constexpr size_t max_line_bytes = 4096;

}  // namespace

void http_parser::reset(bool head_request) {
  state_ = state::head;
  head_request_ = head_request;
  head_.clear();
  line_.clear();
  error_.clear();
  method_.clear();
  target_.clear();
  status_ = 0;
  keep_alive_ = true;
  chunked_ = false;
  remaining_ = 0;
  body_seen_ = 0;
}

size_t http_parser::fail(std::string why) {
  state_ = state::error;
  error_ = std::move(why);
  return 0;
}

bool http_parser::parse_head() {
  std::string_view h(head_);
  const size_t eol = h.find('\n');
  const std::string_view start = trim(h.substr(0, eol));
  h.remove_prefix(eol + 1);
  bool http10 = false;
  if (kind_ == kind::response) {
    // HTTP/1.1 200 OK
    if (start.size() < 12 || start.substr(0, 7) != "HTTP/1." || start[8] != ' ')
      return fail("not an HTTP/1.x status line: " + std::string(start.substr(0, 40))), false;
    http10 = start[7] == '0';
    const auto r = std::from_chars(start.data() + 9, start.data() + 12, status_);
    if (r.ec != std::errc() || r.ptr != start.data() + 12 || status_ < 100 || status_ > 599)
      return fail("bad status code in: " + std::string(start.substr(0, 40))), false;
  } else {
    // GET /path HTTP/1.1
    const size_t sp1 = start.find(' '), sp2 = start.rfind(' ');
    if (sp1 == std::string_view::npos || sp2 == sp1 || start.substr(sp2 + 1, 7) != "HTTP/1.")
      return fail("not an HTTP/1.x request line: " + std::string(start.substr(0, 40))), false;
    method_ = start.substr(0, sp1);
    target_ = start.substr(sp1 + 1, sp2 - sp1 - 1);
    http10 = start.substr(sp2 + 1) == "HTTP/1.0";
  }
  keep_alive_ = !http10;
  bool have_length = false;
  uint64_t length = 0;
  while (!h.empty()) {
    const size_t e = h.find('\n');
    const std::string_view line = h.substr(0, e);
    h.remove_prefix(e == std::string_view::npos ? h.size() : e + 1);
    if (trim(line).empty()) break;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return fail("header line without ':': " + std::string(line.substr(0, 40))), false;
    const std::string_view name = line.substr(0, colon), value = trim(line.substr(colon + 1));
    if (http_name_equals(name, "content-length")) {
      const auto r = std::from_chars(value.data(), value.data() + value.size(), length);
      if (r.ec != std::errc() || r.ptr != value.data() + value.size())
        return fail("bad Content-Length: " + std::string(value)), false;
      have_length = true;
    } else if (http_name_equals(name, "transfer-encoding")) {
      chunked_ = has_token(value, "chunked");
    } else if (http_name_equals(name, "connection")) {
      if (has_token(value, "close")) keep_alive_ = false;
      if (has_token(value, "keep-alive")) keep_alive_ = true;
    }
  }
  if (kind_ == kind::response && status_ < 200) {  // interim (100 Continue): the real one follows
    head_.clear();
    state_ = state::head;
    return true;
  }
  if (kind_ == kind::response && (head_request_ || status_ == 204 || status_ == 304)) {
    state_ = state::done;
  } else if (chunked_) {
    state_ = state::chunk_size;
  } else if (have_length) {
    remaining_ = length;
    state_ = length ? state::body : state::done;
  } else if (kind_ == kind::response) {
    remaining_ = until_close;  // HTTP/1.0 style: the body ends when the server closes
    keep_alive_ = false;
    state_ = state::body;
  } else {
    state_ = state::done;  // a request without a body
  }
  return true;
}

size_t http_parser::feed_line(const char* p, size_t n, bool& complete) {
  const void* lf = std::memchr(p, '\n', n);
  const size_t take = lf ? size_t(static_cast<const char*>(lf) - p) + 1 : n;
  line_.append(p, take);
  complete = lf != nullptr;
  if (line_.size() > max_line_bytes) return fail("chunk line longer than 4 KiB");
  return take;
}

size_t http_parser::feed(const char* p, size_t n) {
  size_t used = 0;
  while (used < n && state_ != state::done && state_ != state::error) {
    const char* q = p + used;
    const size_t avail = n - used;
    switch (state_) {
      case state::head: {
        const size_t from = head_.size() >= 3 ? head_.size() - 3 : 0;
        const size_t take = std::min(avail, max_head_bytes + 1 - head_.size());
        head_.append(q, take);
        const size_t end = head_.find("\r\n\r\n", from);
        if (end == std::string::npos) {
          if (head_.size() > max_head_bytes) return used + fail("message head longer than 64 KiB");
          used += take;
          break;
        }
        const size_t extra = head_.size() - (end + 4);
        head_.resize(end + 4);
        used += take - extra;
        if (!parse_head()) return used;
        break;
      }
      case state::body: {
        const uint64_t take = std::min<uint64_t>(avail, remaining_);
        used += size_t(take);
        body_seen_ += take;
        if (remaining_ != until_close && (remaining_ -= take) == 0) state_ = state::done;
        break;
      }
      case state::chunk_size:
      case state::chunk_crlf:
      case state::trailers: {
        bool complete = false;
        used += feed_line(q, avail, complete);
        if (!complete || state_ == state::error) break;
        const std::string_view line = trim(line_);
        if (state_ == state::chunk_size) {
          uint64_t size = 0;
          const std::string_view hex = line.substr(0, line.find(';'));
          const auto r = std::from_chars(hex.data(), hex.data() + hex.size(), size, 16);
          if (hex.empty() || r.ec != std::errc() || r.ptr != hex.data() + hex.size())
            return used + fail("bad chunk size: " + std::string(line.substr(0, 40)));
          remaining_ = size;
          state_ = size ? state::chunk_data : state::trailers;
        } else if (state_ == state::chunk_crlf) {
          if (!line.empty()) return used + fail("chunk not followed by CRLF");
          state_ = state::chunk_size;
        } else if (line.empty()) {
          state_ = state::done;
        }
        line_.clear();
        break;
      }
      case state::chunk_data: {
        const uint64_t take = std::min<uint64_t>(avail, remaining_);
        used += size_t(take);
        body_seen_ += take;
        if ((remaining_ -= take) == 0) state_ = state::chunk_crlf;
        break;
      }
      case state::done:
      case state::error:
        break;
    }
  }
  return used;
}

bool http_parser::end_of_stream() {
  if (state_ == state::body && remaining_ == until_close) {
    state_ = state::done;
    return true;
  }
  return false;
}

}  // namespace rig
