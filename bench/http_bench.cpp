// rig's http workload against wrk on the same nginx, same threads and connections,
// alternated in one run. Prints both req/s and the ratio (goal >= 1.05), medians over the
// repeats.
//   build/bench/http_bench [repeats=5] [seconds=3] [connections=16] [threads=1] [path=/index.html]
#include <filesystem>
#include <fmt/format.h>
#include <thread>

#include "bench/bench.hpp"
#include "core/clock.hpp"
#include "core/process.hpp"
#include "tests/nginx.hpp"
#include "workloads/http.hpp"

using namespace rig;

namespace {

double rig_rps(uint16_t port, int seconds, int connections, int threads, const std::string& path) {
  const auto s = rig::bench::one_phase<http_workload>(
      http_workload_options(), fmt::format("connections = {}\nthreads = {}\npath = \"{}\"\n", connections, threads, path),
      {"bench", "127.0.0.1", port}, seconds * 1000);  // 300 ms warm-up first, as wrk's connect phase
  if (s.error_total()) fmt::print("  rig: {} errors\n", s.error_total());
  return double(s.ops) / seconds;
}

double wrk_rps(const std::string& wrk, uint16_t port, int seconds, int connections, int threads,
               const std::string& path) {
  auto c = child_process::spawn({.argv = {wrk, fmt::format("-t{}", threads), fmt::format("-c{}", connections),
                                          fmt::format("-d{}s", seconds),
                                          fmt::format("http://127.0.0.1:{}{}", port, path)},
                                 .capture_stdout = true});
  double rps = 0;
  while (auto line = c.read_line(60'000))
    if (line->rfind("Requests/sec:", 0) == 0) rps = std::stod(line->substr(13));
  c.wait(10'000);
  return rps;
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 5;
  const int seconds = argc > 2 ? std::atoi(argv[2]) : 3;
  const int connections = argc > 3 ? std::atoi(argv[3]) : 16;
  const int threads = argc > 4 ? std::atoi(argv[4]) : 1;
  const std::string path = argc > 5 ? argv[5] : "/index.html";
  const std::string wrk = find_in_path("wrk"), nginx = find_in_path("nginx");
  if (wrk.empty() || nginx.empty()) {
    fmt::print(stderr, "http_bench: needs wrk and nginx (scripts/install-deps.sh --bench installs them)\n");
    return 3;
  }
  char tmpl[] = "/tmp/rig-http-bench-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const uint16_t port = 18000 + uint16_t(::getpid() % 2000);
  const auto files = rig::testing::nginx_files::write(dir, port);
  auto server = child_process::spawn({.argv = files.argv(nginx), .stderr_path = dir + "/stderr.log"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto c = rig::bench::alternate(
      repeats, "wrk", [&] { return wrk_rps(wrk, port, seconds, connections, threads, path); },
      [&] { return rig_rps(port, seconds, connections, threads, path); },
      [](double v) { return fmt::format("{:.0f} req/s", v); });
  server.stop();
  std::filesystem::remove_all(dir);
  fmt::print("http GET {} against nginx, {} connection(s) on {} thread(s): wrk {:.0f} req/s, rig {:.0f} req/s "
             "(medians), ratio {:.3f} (goal >= 1.05: {})\n",
             path, connections, threads, c.peer, c.rig, c.ratio, c.ratio >= 1.05 ? "met" : "MISSED");
}
