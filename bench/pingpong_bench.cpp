// TCP ping-pong, one connection, the smallest message sockperf sends (its 14-byte header):
// sockperf's client (`sockperf pp --full-rtt`) and rig's tcp workload (raw protocol, the same
// 14 bytes) against the same `sockperf sr`, alternated in one run. Prints both round-trip
// p50s and the ratio rig/sockperf (goal <= 1.10), medians over the repeats.
//   build/bench/pingpong_bench [repeats=5] [seconds=3]
#include <fmt/format.h>
#include <thread>

#include "bench/bench.hpp"
#include "core/clock.hpp"
#include "core/process.hpp"
#include "workloads/tcp.hpp"

using namespace rig;

namespace {

// A sockperf ping as its client writes it (captured): a pong of the same 14 bytes comes back.
const char* const ping_toml = R"("\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0001\u0000\u0003\u0000\u0000\u0000\u000e")";

double rig_p50_us(uint16_t port, int seconds) {
  const auto s = rig::bench::one_phase<tcp_workload>(
      tcp_workload_options(), fmt::format("connections = 1\nrequest = {}\nresponse_size = \"14B\"\n", ping_toml),
      {"bench", "127.0.0.1", port}, seconds * 1000);  // 300 ms warm-up first, as sockperf's
  if (s.error_total()) fmt::print("  rig: {} errors\n", s.error_total());
  return double(s.latency.percentile(50)) / 1e3;
}

double sockperf_p50_us(const std::string& sockperf, uint16_t port, int seconds) {
  auto c = child_process::spawn({.argv = {sockperf, "pp", "--tcp", "-i", "127.0.0.1", "-p", std::to_string(port),
                                          "-m", "14", "-t", std::to_string(seconds), "--full-rtt"},
                                 .capture_stdout = true});
  double p50 = 0;
  // "sockperf: ---> percentile 50.000 =        9.123"
  while (auto line = c.read_line(60'000))
    if (auto at = line->find("percentile 50.000 ="); at != std::string::npos) p50 = std::stod(line->substr(at + 19));
  c.wait(10'000);
  return p50;
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 5;
  const int seconds = argc > 2 ? std::atoi(argv[2]) : 3;
  const std::string sockperf = find_in_path("sockperf");
  if (sockperf.empty()) {
    fmt::print(stderr, "pingpong_bench: sockperf is not installed (scripts/install-deps.sh --bench)\n");
    return 3;
  }
  const uint16_t port = 20000 + uint16_t(::getpid() % 2000);
  auto server = child_process::spawn(
      {.argv = {sockperf, "sr", "--tcp", "-i", "127.0.0.1", "-p", std::to_string(port)}, .output_path = "/dev/null"});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto c = rig::bench::alternate(
      repeats, "sockperf", [&] { return sockperf_p50_us(sockperf, port, seconds); },
      [&] { return rig_p50_us(port, seconds); }, [](double v) { return fmt::format("p50 {:.2f} us", v); });
  server.stop();
  fmt::print("tcp ping-pong, 1 connection, 14 B: sockperf p50 {:.2f} us, rig p50 {:.2f} us (medians), ratio {:.3f} "
             "(goal <= 1.10: {})\n",
             c.peer, c.rig, c.ratio, c.ratio <= 1.10 ? "met" : "MISSED");
}
