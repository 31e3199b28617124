#pragma once
// `rig run FILE --repeat N`: the scenario N times, each a run directory of its own inside
// runs/<stamp>-NAME-repeat/, and repeat.json: each phase's figures, their median and spread.
// One run is not a result: this is what a noise-aware `rig compare` reads.
#include <string>
#include <vector>

#include "reports/run_group.hpp"
#include "rig/run_options.hpp"
#include "rig/scenario.hpp"

namespace rig {

// Exit: the worst of the runs' (4 before 1 before 0); 2, 3 or 5 as soon as a run refuses;
// 130/143 when interrupted (what ran is summarized). `reports_out`: each run's report.
int run_repeat(const scenario& sc, int repeats, const run_options& opts,
               std::vector<run_report>* reports_out = nullptr);

}  // namespace rig
