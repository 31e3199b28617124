#pragma once
// A workload started on its own, one measured phase, then stopped: its figures.
#include <doctest/doctest.h>

#include <memory>
#include <thread>

#include "core/clock.hpp"
#include "workloads/workload.hpp"

namespace rig::testing {

template <typename W>
struct phase_run {
  run_clock clock;
  window_sink windows;
  std::unique_ptr<W> w;

  // env gets this run's clock and windows.
  phase_run(const option_values& v, workload_env env) : w(std::make_unique<W>(v)) {
    clock.start_ns = mono_ns();
    env.clock = &clock;
    env.windows = &windows;
    w->start(env);
  }
  // Runs phase 0 for `ms`, stops the workload and returns the phase's figures.
  phase_stats phase(int64_t ms) {
    clock.phase_ns = {ms * 1'000'000};
    clock.phase_start_ns = mono_ns();
    clock.phase = 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    clock.phase = -1;
    w->stop();
    auto r = all_phases(*w);
    REQUIRE(!r.empty());
    return r[0];
  }
};

}  // namespace rig::testing
