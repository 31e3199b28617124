#pragma once
// A workload started on its own, one measured phase, then stopped: its figures.
#include <doctest/doctest.h>

#include <memory>
#include <thread>

#include "core/clock.hpp"
#include "workloads/workload.hpp"

namespace rig::testing {

// How far an open loop's count in a phase may stray from rate x the phase's length: at its end,
// requests intended but not yet sent or answered (the generator or the target starved that long
// by load); at its start, requests intended before it and sent late into it. 100 ms covers the
// scheduler delays a loaded 2-CPU machine gives a thread; 250 ms under a sanitizer, whose
// instrumented threads run several times slower.
inline double open_loop_slack_s() {
#ifdef RIG_SANITIZED
  return 0.25;
#else
  return 0.1;
#endif
}

// A phase's errors of one kind.
inline uint64_t errors_of(const phase_stats& s, error_kind k) { return s.errors[size_t(k)]; }

template <typename W>
struct phase_run {
  run_clock clock;
  window_sink windows;
  std::unique_ptr<W> w;
  int64_t window_ns = 0;  // how long the last phase really lasted: a sleep overruns on a loaded machine

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
    clock.begin_phase(0, mono_ns());
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    clock.end_phase(mono_ns());
    window_ns = mono_ns() - clock.phase_start_ns;
    w->stop();
    auto r = all_phases(*w);
    REQUIRE(!r.empty());
    return r[0];
  }
  double window_s() const { return double(window_ns) / 1e9; }
};

}  // namespace rig::testing
