#pragma once
// Several runs of one scenario read as one result: a repeat (rig run --repeat N) or a sweep's
// levels. What repeat.json holds, and what `rig compare` reads from either side.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/report.hpp"
#include "reports/sweep_report.hpp"

namespace rig {

// The figures a repeat summarizes and a comparison gates on, by the name --fail-if uses.
const std::vector<std::string>& group_figures();  // p50, p90, p99, p999, mean, max, throughput
// A workload's figure in a phase; NaN where there is none (no successful reply).
double figure_of(const workload_phase_result& w, const std::string& figure);
// A figure's value with its unit ("1.20ms", "27,987/s"); "-" for no value.
std::string figure_text(const std::string& figure, double v);
// "median (min–max)" of a figure over runs; "-" when no run had it.
std::string spread_text(const std::string& figure, const spread_stat& s);
// A workload's figures in a phase that ran its whole length with every injection verified; null
// when the phase is not in the run, was cut short (interrupted, the target died) or an injection
// of it was not verified: such figures are no sample of that phase.
const workload_phase_result* whole_phase(const run_report& r, const std::string& phase, const std::string& workload);

struct group_run {
  std::string level;  // a sweep's level label; "" for a run or a repeat
  run_report report;
};

struct run_group {
  std::string dir;
  std::string kind;  // run | repeat | sweep
  std::vector<group_run> runs;
};

struct group_key {
  std::string level, phase, workload;
};
// Every (level, phase, workload) a run of the group has, first seen first.
std::vector<group_key> group_keys(const run_group& g);
// A figure of each run of the group at `k` that has one (whole_phase; NaN left out).
std::vector<double> figure_values(const run_group& g, const group_key& k, const std::string& figure);

// A run directory (report.json), a repeat's (repeat.json) or a sweep's (sweep.json); throws
// naming the directory and what is missing.
run_group load_group(const std::string& dir);

// repeat.json: each phase's workloads, each figure's median and spread over the runs.
struct repeat_summary {
  std::string scenario;
  int repeats = 0;
  std::vector<std::string> runs, statuses;
  struct row {
    std::string phase, workload;
    std::map<std::string, spread_stat> figures;  // by group_figures() name, and errors_pct
  };
  std::vector<row> rows;
};
repeat_summary summarize_repeat(const std::string& scenario, const run_group& runs);
nlohmann::json to_json(const repeat_summary& s);
std::string repeat_table(const repeat_summary& s);  // the terminal's

}  // namespace rig
