#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rig/controller.hpp"
#include "rig/scenario.hpp"
#include "reports/report.hpp"
#include "reports/sweep_report.hpp"

namespace rig {

// Runs a scenario with a [sweep]: the whole scenario once per level and repeat (each a run
// directory of its own, with its own report), inside runs/<stamp>-<name>-sweep/, then
// sweep.json, sweep.html and a table of the response curve with the knee, then the checks.
// `sets` are the user's --set assignments, applied to every level. Exit: 0; 1 when a check on
// the curve failed, a level's run failed its own [expect] checks (unless levels_may_fail) or
// had an injection not verified; 4 when a level's run failed; 2 or 3 as a run would; 130/143
// when interrupted (what ran is still summarized). `summary_out`: the summary, when given.
int run_sweep(const scenario& sc, const std::vector<std::string>& sets, const run_options& opts,
              sweep_summary* summary_out = nullptr);

// The figures of the measured phase across the runs of each level: median, min, max; and
// the knee (the first level where every run's p99 exceeds knee_factor x the first level's median).
// reports[i] holds level i's runs' reports (each with its run_dir).
sweep_summary summarize_sweep(const scenario& sc, const std::vector<std::string>& labels,
                              const std::vector<std::vector<run_report>>& reports);

}  // namespace rig
