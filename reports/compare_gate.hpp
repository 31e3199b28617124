#pragma once
// `rig compare A B --fail-if "p99 > 1.20x"`: B/A ratios of a figure per phase and workload (per
// level for sweeps), and whether B regressed past a threshold. With repeats on both sides the
// decision is noise-aware: the ratio of medians with a 95% bootstrap interval over the repeats,
// and a regression only when the whole interval clears the threshold.
#include <string>
#include <vector>

#include "reports/run_group.hpp"

namespace rig {

struct gate_condition {
  std::string text;             // as given
  std::string phase, workload;  // "" or "*": every one
  std::string figure;           // group_figures()
  std::string op;               // > >= < <=
  double ratio = 1;             // B/A past which B regressed
  // errors_pct: B's own share against a percentage ("errors_pct > 1" fails when more than 1% of
  // B's requests failed), not a ratio (a share A did not have has no ratio).
  bool absolute = false;
  double limit = 0;
};

// "p99 > 1.20x", "nagle.rr.p99 > 1.2x", "*.rr.throughput < 0.90x", "errors_pct > 1" (percent); throws input_error naming
// the flag, where in it the problem is, and the nearest valid figure.
gate_condition parse_fail_if(const std::string& text);

struct ratio_row {
  std::string level, phase, workload, figure;
  size_t n_a = 0, n_b = 0;  // runs with a value
  double a = NAN, b = NAN;  // medians over the runs
  double ratio = NAN;       // b / a
  double lo = NAN, hi = NAN;  // the 95% bootstrap interval of the ratio; NaN: a side has one run
  std::string note;         // why there is no ratio
  std::vector<std::string> failed;  // the conditions this row fails
};

struct compare_verdict {
  std::string a_desc, b_desc, method;
  std::vector<ratio_row> rows;
  size_t regressions() const;
};

// Each condition's figure for every level, phase and workload both sides have (the default
// figures p50, p99 and throughput when there is no condition). Throws when the sides cannot be
// matched (a sweep against a run) or a condition names a phase or workload neither has.
compare_verdict compare_groups(const run_group& a, const run_group& b, const std::vector<gate_condition>& conditions,
                               int resamples = 2000);
std::string verdict_text(const compare_verdict& v, bool rows_too);
// The gate as checks for JUnit: one per row a condition applied to, failed with its figures.
std::vector<expectation_row> verdict_checks(const compare_verdict& v, const std::vector<gate_condition>& conditions);
std::string verdict_html(const compare_verdict& v);  // a section for compare.html

}  // namespace rig
