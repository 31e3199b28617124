#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/http_parse.hpp"

using namespace rig;

namespace {

// Feeds `msg` in pieces of `step` bytes (0: whole); returns the bytes consumed when the
// parser stopped (done or failed).
size_t feed_in_steps(http_parser& p, const std::string& msg, size_t step) {
  size_t used = 0;
  while (used < msg.size() && !p.done() && !p.failed()) {
    const size_t n = step ? std::min(step, msg.size() - used) : msg.size() - used;
    const size_t took = p.feed(msg.data() + used, n);
    used += took;
    if (took < n) break;  // stopped inside this piece
  }
  return used;
}

}  // namespace

TEST_CASE("responses framed by Content-Length, chunks and close, split at every byte") {
  struct sample {
    std::string msg;
    int status;
    uint64_t body;
    bool keep_alive;
  };
  const std::vector<sample> samples = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello", 200, 5, true},
      {"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n", 404, 0, true},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n",
       200, 15, true},
      {"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n", 204, 0, false},
      {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", 201, 2, true},
      {"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", 200, 1, false},
      {"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", 200, 1, true},
  };
  for (const auto& s : samples)
    for (size_t step : {size_t(0), size_t(1), size_t(2), size_t(3), size_t(7)}) {
      CAPTURE(s.msg);
      CAPTURE(step);
      http_parser p(http_parser::kind::response);
      p.reset();
      // The next message's bytes after this one are left alone.
      const std::string two = s.msg + "HTTP/1.1 200 OK\r\n";
      CHECK(feed_in_steps(p, two, step) == s.msg.size());
      REQUIRE(p.done());
      CHECK(p.status() == s.status);
      CHECK(p.body_bytes() == s.body);
      CHECK(p.keep_alive() == s.keep_alive);
    }
}

TEST_CASE("a body that runs until close ends at end of stream, and HEAD replies have no body") {
  http_parser p(http_parser::kind::response);
  p.reset();
  const std::string m = "HTTP/1.1 200 OK\r\n\r\nuntil the end";
  CHECK(feed_in_steps(p, m, 4) == m.size());
  CHECK(!p.done());
  CHECK(p.end_of_stream());
  CHECK(p.done());
  CHECK(p.body_bytes() == 13);
  CHECK(!p.keep_alive());
  // A cut-short Content-Length body is not completed by the close.
  p.reset();
  const std::string cut = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
  feed_in_steps(p, cut, 0);
  CHECK(!p.end_of_stream());
  p.reset(true);
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n";
  CHECK(feed_in_steps(p, head, 0) == head.size());
  CHECK(p.done());
}

TEST_CASE("malformed responses fail with a reason") {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"HTTX/1.1 200 OK\r\n\r\n", "not an HTTP/1.x status line"},
      {"HTTP/1.1 2x0 OK\r\n\r\n", "bad status code"},
      {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "bad Content-Length"},
      {"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "header line without ':'"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n", "chunk not followed by CRLF"},
      {"HTTP/1.1 200 OK\r\nX: " + std::string(70'000, 'a') + "\r\n\r\n", "longer than 64 KiB"},
  };
  for (const auto& [msg, why] : bad) {
    CAPTURE(msg.substr(0, 60));
    http_parser p(http_parser::kind::response);
    p.reset();
    feed_in_steps(p, msg, 5);
    REQUIRE(p.failed());
    CHECK(p.error().find(why) != std::string::npos);
  }
}

TEST_CASE("requests: method, target, body by Content-Length, HTTP/1.0 closes unless asked") {
  http_parser p(http_parser::kind::request);
  p.reset();
  const std::string post = "POST /x?size=10 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc";
  CHECK(feed_in_steps(p, post + "GET", 1) == post.size());
  REQUIRE(p.done());
  CHECK(p.method() == "POST");
  CHECK(p.target() == "/x?size=10");
  CHECK(p.body_bytes() == 3);
  CHECK(p.keep_alive());
  p.reset();
  feed_in_steps(p, "GET / HTTP/1.0\r\n\r\n", 0);
  REQUIRE(p.done());
  CHECK(!p.keep_alive());
  p.reset();
  feed_in_steps(p, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 0);
  CHECK(!p.keep_alive());
  p.reset();
  feed_in_steps(p, "GARBAGE\r\n\r\n", 0);
  CHECK(p.failed());
}
