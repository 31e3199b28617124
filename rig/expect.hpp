#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/options.hpp"

namespace rig {

// One check of [expect]: "<phase>.<workload>.latency.p99 < 100ms",
// "<phase>.<workload>.errors.timeout > 0", "magnification.<phase>.<workload>.p50_x >= 10",
// "<phase>.target.live_workers_min == 4", "<phase>.cgroup.oom_kills >= 1", "events.oom_kill >= 1".
// Durations compare in microseconds.
struct check_expr {
  std::string text;
  source_pos where;
  std::vector<std::string> path;
  std::string op;
  double rhs = 0;
  std::string rhs_text;
};

// Parses and checks names against the scenario; problems go to diags.
std::optional<check_expr> parse_check(const std::string& text, const source_pos& where,
                                      const std::vector<std::string>& phases,
                                      const std::vector<std::string>& workloads, diagnostics& diags);

struct check_outcome {
  bool ok = false;
  std::string actual;  // the value found, with its unit, or why none was found
};

check_outcome evaluate_check(const check_expr& c, const nlohmann::json& report);
// The same on several runs of one scenario (`rig suite --repeat N`): the median of the check's
// figure over the runs, each of which must have it; the actual text gives the median and range.
check_outcome evaluate_check_median(const check_expr& c, const std::vector<nlohmann::json>& reports);

// A check on a sweep's curve ([sweep] expect), on the medians of each level's runs:
//   knee.<workload>.level >= 3000/s         where the knee is, in the swept key's unit (no knee:
//                                            beyond the last level L, so > X and >= X hold for X
//                                            up to L only, and <, <= fail)
//   level[2000/s].<workload>.p99 < 5ms      one level's figure (the label as written in values;
//                                            quotes around it optional; level[baseline] too)
//   all.<workload>.errors == 0              every level's (the worst is said)
//   max.<workload>.throughput >= 1700/s     the highest level median (min: the lowest)
// Figures: p50, p99, p999 (durations), throughput (ops/s), errors (errors/s); and
// target.cpu_pct, target.rss_max (bytes) in place of <workload>.<figure>.
struct sweep_check {
  std::string text;
  source_pos where;
  std::string selector;  // knee | level | all | max | min
  std::string level;     // selector level: the level's label
  std::string workload;  // or "target"
  std::string metric;    // level (knee), p50_us, p99_us, p999_us, throughput_ops_s, errors_per_s, cpu_pct, rss_max_bytes
  std::string op, rhs_text;
  double rhs = 0;
};

std::optional<sweep_check> parse_sweep_check(const std::string& text, const source_pos& where,
                                             const std::vector<std::string>& labels,
                                             const std::vector<std::string>& workloads, opt_type param_type,
                                             diagnostics& diags);

struct sweep_summary;
check_outcome evaluate_sweep_check(const sweep_check& c, const sweep_summary& s, opt_type param_type);

// True when the check is about the target dying (events.target_exit, events.oom_kill): a
// scenario with such a check expects the death, and the run is not a failure for it.
inline bool expects_target_death(const check_expr& c) {
  return c.path.size() == 2 && c.path[0] == "events" && (c.path[1] == "target_exit" || c.path[1] == "oom_kill");
}

}  // namespace rig
