#pragma once
// Reading one HTTP/1.1 message off a stream with http_parser: the http workload's replies
// and the built-in target's requests.
#include <vector>

#include "core/asio.hpp"
#include "core/http_parse.hpp"

namespace rig {

// Bytes read from a connection and not yet parsed (the next message's, once one ends).
struct http_inbuf {
  explicit http_inbuf(size_t bytes) : buf(bytes) {}
  void clear() { pos = len = 0; }
  std::vector<char> buf;
  size_t pos = 0, len = 0;
};

// Feeds `p` (reset by the caller) what `in` holds, then waits for readability and reads,
// until the message ends (p.done()) or is malformed (p.failed()). A body that runs until the
// server closes ends at EOF. Returns the I/O error that stopped it, if any. Waiting first
// spares the read that would find nothing (a reply is never there the moment its request
// has gone).
template <typename Stream>
awaitable<boost::system::error_code> read_http_message(Stream& s, http_parser& p, http_inbuf& in) {
  boost::system::error_code ec;
  for (;;) {
    if (in.pos < in.len) in.pos += p.feed(in.buf.data() + in.pos, in.len - in.pos);
    if (p.done() || p.failed()) co_return ec;
    co_await s.async_wait(Stream::wait_read, asio::redirect_error(use_awaitable, ec));
    size_t n = 0;
    if (!ec) n = s.read_some(asio::buffer(in.buf), ec);
    if (ec) {
      if (ec == asio::error::eof && p.end_of_stream()) ec = {};
      co_return ec;
    }
    in.pos = 0;
    in.len = n;
  }
}

}  // namespace rig
