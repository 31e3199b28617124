#pragma once
#include "core/host.hpp"
// The phases in turn: each phase's injectors applied and verified, the clock moved on, the
// watchers polled until the phase ends (or a signal comes, or the target dies), what the
// injections did measured, then reverted.
#include <cstdint>
#include <ostream>
#include <string>

#include "reports/report.hpp"
#include "rig/phase_store.hpp"
#include "rig/run_plan.hpp"
#include "rig/run_wiring.hpp"
#include "rig/timeseries.hpp"
#include "rig/watchers.hpp"

namespace rig {

// Where the run speaks: `out` for what must be seen, `chatty` for what only a person watching
// wants (nowhere with --quiet).
struct run_console {
  std::ostream& out;
  std::ostream& chatty;
  bool tty = false;
  bool quiet = false;
  int progress_every_s = 5;
};

class phase_loop {
 public:
  phase_loop(run_plan& plan, run_report& rep, phase_store& store, timeseries_stream& timeseries,
             const run_recording& rec, const run_console& con, int64_t run_start_ns, int64_t total_ns);
  // Runs every phase on what `wiring` started, until the last ends, a stop signal comes or
  // the target dies.
  void run(run_wiring& wiring);
  // Closes the open phase, if one is: its end, its resource figures (from `smp`, when there is one).
  void close_phase(bool completed, sampler* smp);
  // Reverts the injectors applied in the phase and records what each left (read back) in the
  // phase's injections; one not reverted is a revert_failed event.
  void revert_applied(run_wiring& wiring);
  // What could not be undone, in words; empty when every revert read back clean.
  const std::string& revert_failures() const { return revert_failures_; }
  // Writes timeseries.csv up to `before_ns` (whole seconds).
  void write_timeseries(int64_t before_ns, bool phase_open, sampler* smp);

  int interrupted_by() const { return interrupted_by_; }
  const std::string& target_death() const { return target_death_; }
  double t_s(int64_t ns) const { return double(ns - run_start_ns_) / 1e9; }

 private:
  void begin_phase(size_t pi, run_wiring& wiring);
  // Until the phase ends or the run must stop: false when it must.
  bool watch_phase(size_t pi, run_wiring& wiring, memory_watcher& memory, crash_watcher& crashes,
                   death_watcher& death, progress_meter& progress);
  void end_phase(size_t pi, run_wiring& wiring);

  run_plan& plan_;
  run_report& rep_;
  phase_store& store_;
  timeseries_stream& timeseries_;
  const run_recording& rec_;
  const run_console& con_;
  int64_t run_start_ns_, total_ns_;
  int interrupted_by_ = 0;
  std::string target_death_;  // how the target died mid-run, if it did
  host_cpu_sample host_at_start_;  // the host's CPU counters as the open phase began
  size_t applied_phase_ = 0;  // the phase (index into the report's) whose injectors are applied
  std::string revert_failures_;
  crash_watcher* crashes_ = nullptr;  // while run() runs
};

}  // namespace rig
