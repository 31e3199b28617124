#pragma once
// A sweep's summary (sweep.json), typed: what the sweep's terminal table and sweep.html read.
#include <cmath>
#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/report.hpp"

namespace rig {

// One figure across a level's runs; n = 0 where no run had it (null in sweep.json).
struct spread_stat {
  double median = NAN, min = NAN, max = NAN;
  size_t n = 0;
  static spread_stat of(std::vector<double> values);  // NaNs left out
};

struct sweep_level {
  std::string label;
  bool baseline = false;  // the level without the swept injector
  std::vector<std::string> runs;  // each run's directory
  int failed_runs = 0;  // runs whose status is not ok
  // Each run's failed [expect] checks and unverified injections: "run 2: FAIL <expr> (actual ...)".
  std::vector<std::string> check_failures;
  bool unverified = false;  // a run of the level had an injection not verified in the target
  // workload -> metric (p50_us, p99_us, p999_us, throughput_ops_s, errors_per_s) -> across the runs
  std::map<std::string, std::map<std::string, spread_stat>> workloads;
  spread_stat target_cpu_pct, target_rss_max_bytes;
  // A workload's metric here, or no figure.
  spread_stat at(const std::string& workload, const std::string& metric) const;
};

struct sweep_knee {  // the first level where every run's p99 exceeds knee_factor x the first level's median
  size_t index = 0;
  std::string level;
  double p99_us = NAN, lowest_p99_us = NAN, first_p99_us = NAN;
};

struct sweep_summary {
  std::string scenario, param, phase;
  int repeats = 1;
  double knee_factor = 2;
  std::vector<sweep_level> levels;
  std::map<std::string, sweep_knee> knee;  // by workload; none where p99 stayed within the factor
  std::vector<expectation_row> expectations;  // [sweep] expect, on the medians
  bool levels_may_fail = false;
  // ok | checks_failed (a curve check failed, a level failed its own checks, or a level's
  // injection was not verified) | failed (a run's rig failure) | interrupted
  std::string status = "ok";
  std::vector<std::string> workload_names() const;  // every workload any level has, first seen first
  // A level fails the sweep: an injection of it not verified, or its own checks failed (unless
  // levels_may_fail).
  bool levels_fail() const;
};

nlohmann::json to_json(const sweep_summary& s);  // sweep.json
// The response curve for the terminal: each level's medians per workload, the p99 spread, the
// knee; "-" where no run of the level had a whole phase to measure.
std::string sweep_table(const sweep_summary& s, const std::vector<std::string>& workloads);

}  // namespace rig
