#include <doctest/doctest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "../helpers.hpp"
#include "core/clock.hpp"
#include "core/fd.hpp"
#include "core/proc.hpp"
#include "core/process.hpp"
#include "core/wire.hpp"
#include "targets/builtin_service.hpp"
#include "targets/control_client.hpp"

using namespace rig;

namespace {


bool read_exact(int fd, void* p, size_t n) {
  auto* c = static_cast<char*>(p);
  while (n) {
    const ssize_t r = ::recv(fd, c, n, 0);
    if (r <= 0) return false;
    c += r;
    n -= size_t(r);
  }
  return true;
}

// One request of the built-in protocol; returns the reply status, or -1 on I/O failure.
int request(int fd, uint32_t req_bytes, uint32_t resp_bytes, uint32_t seq, uint32_t* payload = nullptr) {
  std::vector<char> buf(req_bytes, 0);
  wire::request_header h{wire::request_magic, req_bytes, resp_bytes, seq};
  std::memcpy(buf.data(), &h, sizeof h);
  if (::send(fd, buf.data(), buf.size(), MSG_NOSIGNAL) != ssize_t(buf.size())) return -1;
  wire::reply_header r{};
  if (!read_exact(fd, &r, sizeof r) || r.magic != wire::reply_magic || r.seq != seq) return -1;
  std::vector<char> body(r.payload_bytes);
  if (!read_exact(fd, body.data(), body.size())) return -1;
  if (payload) *payload = r.payload_bytes;
  return int(r.status);
}

}  // namespace

TEST_CASE("replies carry the size the request asked for, and counters count them") {
  builtin_config cfg;
  cfg.workers = 2;
  builtin_service svc(cfg);
  svc.start();
  auto fd = rig::testing::connect_loopback(svc.port());
  uint32_t payload = 0;
  for (uint32_t i = 1; i <= 10; ++i) REQUIRE(request(fd.get(), 64, 4096, i, &payload) == 0);
  CHECK(payload == 4096 - wire::header_bytes);
  const auto c = svc.counters();
  CHECK(c.requests == 10);
  CHECK(c.live_workers == 2);
  CHECK(c.connections == 1);
  CHECK(c.rejected == 0);
}

TEST_CASE("TCP_NODELAY off with two-piece replies stalls on the delayed ACK and back on it does not") {
  builtin_config cfg;
  cfg.reply_writes = 2;
  builtin_service svc(cfg);
  svc.start();
  auto fd = rig::testing::connect_loopback(svc.port());
  auto median_ms = [&](int n) {
    std::vector<double> t;
    static uint32_t seq = 0;
    for (int i = 0; i < n; ++i) {
      const int64_t t0 = mono_ns();
      REQUIRE(request(fd.get(), 64, 64, ++seq) == 0);
      t.push_back(double(mono_ns() - t0) / 1e6);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  const double fast = median_ms(50);
  socket_policy off;
  off.nodelay = false;
  const auto r = svc.sockets().set_socket_policy(off);
  CHECK(r.sockets == 1);
  CHECK(r.matching == 1);
  CHECK(svc.sockets().check_socket_policy(off).matching == 1);
  const double slow = median_ms(9);
  socket_policy on;
  on.nodelay = true;
  svc.sockets().set_socket_policy(on);
  const double again = median_ms(50);
  MESSAGE("median ms: nodelay on " << fast << ", off " << slow << ", on again " << again);
  // Off: the second piece waits for the client's delayed ACK, whose timer is 40 ms at least
  // (TCP_DELACK_MIN) and never early; load only lengthens it.
  CHECK(slow > 10.0);
  // On: no stall, a loopback round trip (~0.06 ms, a few times that under a sanitizer). 20 ms is
  // half the shortest stall, so a median under it has none; a loaded machine adds wake-ups of a
  // few ms to a round trip, not tens.
  CHECK(fast < 20.0);
  CHECK(again < 20.0);
  CHECK(slow > 2 * std::max(fast, again));
}

TEST_CASE("queue capacity 1 sends concurrent requests down the reject path") {
  builtin_config cfg;
  cfg.workers = 1;
  cfg.queue_capacity = 1;
  cfg.work_ns = 30 * ns_per_ms;
  builtin_service svc(cfg);
  svc.start();
  std::atomic<int> ok{0}, rejected{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c)
    clients.emplace_back([&] {
      auto fd = rig::testing::connect_loopback(svc.port());
      for (uint32_t i = 1; i <= 5; ++i) {
        const int s = request(fd.get(), 64, 64, i);
        if (s == 0) ++ok;
        if (s == int(wire::status::rejected)) ++rejected;
      }
    });
  for (auto& t : clients) t.join();
  CHECK(ok + rejected == 20);
  CHECK(rejected > 0);
  CHECK(ok > 0);
  CHECK(svc.counters().rejected == rejected);
}

TEST_CASE("retained bytes and the write-ahead log grow per request") {
  char dir[] = "/tmp/rig-wal-XXXXXX";
  REQUIRE(::mkdtemp(dir));
  builtin_config cfg;
  cfg.retain_per_request = 1000;
  cfg.wal = true;
  cfg.wal_path = std::string(dir) + "/target.wal";
  {
    builtin_service svc(cfg);
    svc.start();
    auto fd = rig::testing::connect_loopback(svc.port());
    for (uint32_t i = 1; i <= 25; ++i) REQUIRE(request(fd.get(), 64, 64, i) == 0);
    CHECK(svc.counters().retained_bytes == 25'000);
    struct stat st{};
    REQUIRE(::stat(cfg.wal_path.c_str(), &st) == 0);
    CHECK(st.st_size == 25 * 64);
  }
  ::unlink(cfg.wal_path.c_str());
  ::rmdir(dir);
}

TEST_CASE("the control channel answers stats and policy, and refuses nonsense") {
  builtin_service svc(builtin_config{});
  svc.start();
  auto fd = rig::testing::connect_loopback(svc.port());
  REQUIRE(request(fd.get(), 64, 64, 1) == 0);
  CHECK(svc.control("stats").find("requests=1 ") != std::string::npos);
  CHECK(svc.control("policy") == "ok nodelay=1");
  CHECK(svc.control("policy nodelay=0") == "ok sockets=1 matching=1");
  CHECK(svc.control("check nodelay=0") == "ok sockets=1 matching=1");
  CHECK(svc.control("check nodelay=1") == "ok sockets=1 matching=0");
  CHECK(svc.control("policy speed=9").rfind("error", 0) == 0);
  CHECK(svc.control("dance").rfind("error unknown command 'dance'", 0) == 0);
}

TEST_CASE("a malformed frame closes the connection and is counted") {
  builtin_service svc(builtin_config{});
  svc.start();
  auto fd = rig::testing::connect_loopback(svc.port());
  const char junk[16] = "GET / HTTP/1.1\n";
  REQUIRE(::send(fd.get(), junk, sizeof junk, 0) == 16);
  char b;
  CHECK(::recv(fd.get(), &b, 1, 0) == 0);  // closed by the target
  CHECK(svc.counters().protocol_errors == 1);
}

TEST_CASE("the control channel outlives a stopped target: a request times out, the next gets its own answer") {
  // rig's sampler asks the target for its counters while a pause injector has it stopped: the
  // request gives up at its own timeout, the channel stays, and once the target runs again the
  // late reply is skipped rather than taken as the answer to the next request.
  rig::testing::temp_dir tmp;
  const std::string name = fmt::format("@rig-control-test-{}", ::getpid());
  auto target = child_process::spawn({.argv = {RIG_BINARY, "target", "--port", "0", "--control", name},
                                      .capture_stdout = true, .stderr_path = tmp.path + "/target.txt"});
  REQUIRE(target.read_line(10'000));
  control_client c;
  c.connect(name, 2000);
  REQUIRE(c.request("stats").find("requests=") != std::string::npos);
  REQUIRE(::kill(target.pid(), SIGSTOP) == 0);
  for (int i = 0; i < 5000 && stat_head(target.pid())->state != 'T'; ++i) ::usleep(1000);  // delivery is asynchronous
  REQUIRE(stat_head(target.pid())->state == 'T');
  const int64_t t0 = mono_ns();
  CHECK_THROWS_WITH_AS(c.request("stats", 100), doctest::Contains("did not answer 'stats'"), std::runtime_error);
  const double waited_ms = double(mono_ns() - t0) / 1e6;
  CHECK(waited_ms >= 100);
  CHECK(waited_ms < 1500);  // its own 100 ms, not the channel's 2 s
  CHECK_THROWS(c.request("stats", 100));  // two replies owed now
  REQUIRE(::kill(target.pid(), SIGCONT) == 0);
  // The two owed "requests=..." replies come first and are skipped: this is policy's answer.
  const std::string policy = c.request("policy");
  CHECK(policy.rfind("nodelay=", 0) == 0);
  CHECK(c.request("stats").find("requests=") != std::string::npos);
  target.stop();
}
