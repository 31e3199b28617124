#pragma once
// Shared by the benchmarks.
#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/bind.hpp"
#include "core/clock.hpp"
#include "core/options.hpp"
#include "workloads/workload.hpp"

namespace rig::bench {

// The median of the repeats (the upper middle one for an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Same-run comparison with a peer tool: medians over the repeats; ratio = rig / peer per run.
struct comparison {
  double peer = 0, rig = 0, ratio = 0;
};

// Runs the peer, then rig, `repeats` times (alternated, so drift hits both), printing each
// run's figures through `show`.
inline comparison alternate(int repeats, const std::string& peer_name, const std::function<double()>& peer,
                            const std::function<double()>& rig, const std::function<std::string(double)>& show) {
  std::vector<double> peers, rigs, ratios;
  for (int r = 0; r < repeats; ++r) {
    const double p = peer(), g = rig();
    peers.push_back(p);
    rigs.push_back(g);
    ratios.push_back(g / p);
    fmt::print("  run {}: {} {}, rig {}, ratio {:.3f}\n", r + 1, peer_name, show(p), show(g), g / p);
  }
  return {median(peers), median(rigs), median(ratios)};
}

struct phase_hooks {
  std::function<void()> during;       // on this thread once the phase has started
  std::function<void()> before_stop;  // after the phase, before the workload stops
};

// Workload W bound from TOML text, started with `env` (its clock and windows filled in here),
// warmed up, measured for one phase of `ms`, stopped: that phase's figures.
template <typename W>
phase_stats one_phase(const option_table& table, const std::string& toml, workload_env env, int64_t ms,
                      const phase_hooks& hooks = {}, int64_t warmup_ms = 300) {
  const toml::table t = toml::parse(toml);
  bind_context ctx{"bench", "[bench]", "bench", nullptr, {}};
  diagnostics d;
  W w(bind_options(table, t, ctx, d));
  run_clock clock;
  window_sink windows;
  clock.start_ns = mono_ns();
  clock.phase_ns = {ms * ns_per_ms};
  env.clock = &clock;
  env.windows = &windows;
  w.start(env);
  std::this_thread::sleep_for(std::chrono::milliseconds(warmup_ms));
  const int64_t t0 = mono_ns();
  clock.begin_phase(0, t0);
  if (hooks.during) hooks.during();
  std::this_thread::sleep_until(std::chrono::steady_clock::time_point(std::chrono::nanoseconds(t0 + ms * ns_per_ms)));
  clock.end_phase(mono_ns());
  if (hooks.before_stop) hooks.before_stop();
  w.stop();
  return all_phases(w).at(0);
}

}  // namespace rig::bench
