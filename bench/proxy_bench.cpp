// The proxy's own cost: the same closed-loop tcp workload against the built-in target,
// direct and through rig's proxy with no toxic (on the workload's loop, as `rig run` uses
// it, and on its own thread, as `rig proxy` runs it), alternated in one run. Prints the added
// p50 (goal <= 15 us) and the req/s ratio (goal >= 0.80), medians over the repeats.
#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "bench/bench.hpp"
#include "core/clock.hpp"
#include "injectors/proxy.hpp"
#include "targets/builtin_service.hpp"
#include "workloads/tcp.hpp"

using namespace rig;
using rig::bench::median;

namespace {

struct result {
  double p50_us, ops_s;
};

result measure(uint16_t port, int connections, int64_t ms, uint16_t shared_upstream = 0) {
  std::unique_ptr<toxic_proxy> shared;
  workload_env env{"bench", "127.0.0.1", port};
  if (shared_upstream)
    env.host_on_loop = [&](asio::io_context& loop) {
      shared = std::make_unique<toxic_proxy>();
      shared->start_on(loop, "127.0.0.1", shared_upstream);
      return hosted{shared->port(), [&] { return shared->connect_local(); }};
    };
  const auto s = rig::bench::one_phase<tcp_workload>(
      tcp_workload_options(), fmt::format("connections = {}\n", connections), env, ms,
      {.before_stop = [&] {
        if (shared) shared->stop();
      }},
      200);
  return {double(s.latency.percentile(50)) / 1e3, double(s.ops) * 1000.0 / double(ms)};
}

}  // namespace

int main(int argc, char** argv) {
  const int repeats = argc > 1 ? std::atoi(argv[1]) : 5;
  const int64_t ms = argc > 2 ? std::atoll(argv[2]) : 2000;
  builtin_service svc(builtin_config{});
  svc.start();
  toxic_proxy proxy;
  proxy.start_for("127.0.0.1", svc.port());
  for (int connections : {1, 4}) {
    // "run": the proxy as `rig run` uses it, on the workload's event loop; "thread": as
    // `rig proxy` runs it, on a thread of its own.
    std::vector<double> added_run, ratio_run, added_thread, ratio_thread;
    for (int r = 0; r < repeats; ++r) {
      const result direct = measure(svc.port(), connections, ms);
      const result run = measure(0, connections, ms, svc.port());
      const result thread = measure(proxy.port(), connections, ms);
      added_run.push_back(run.p50_us - direct.p50_us);
      ratio_run.push_back(run.ops_s / direct.ops_s);
      added_thread.push_back(thread.p50_us - direct.p50_us);
      ratio_thread.push_back(thread.ops_s / direct.ops_s);
      fmt::print("  {} conn, run {}: direct p50 {:.1f} us {:.0f} req/s; proxy on the workload's loop p50 {:.1f} us "
                 "{:.0f} req/s; proxy on its own thread p50 {:.1f} us {:.0f} req/s\n",
                 connections, r + 1, direct.p50_us, direct.ops_s, run.p50_us, run.ops_s, thread.p50_us, thread.ops_s);
    }
    const double a = median(added_run), q = median(ratio_run);
    fmt::print("proxy (rig run), {} connection{}: added p50 {:.1f} us (goal <= 15: {}), req/s ratio {:.2f} (goal >= 0.80: "
               "{})\n",
               connections, connections == 1 ? "" : "s", a, a <= 15 ? "met" : "MISSED", q, q >= 0.8 ? "met" : "MISSED");
    fmt::print("proxy (rig proxy, own thread), {} connection{}: added p50 {:.1f} us, req/s ratio {:.2f}\n", connections,
               connections == 1 ? "" : "s", median(added_thread), median(ratio_thread));
  }
}
