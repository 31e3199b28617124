#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"

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

// True when the check is about the target dying (events.target_exit, events.oom_kill): a
// scenario with such a check expects the death, and the run is not a failure for it.
inline bool expects_target_death(const check_expr& c) {
  return c.path.size() == 2 && c.path[0] == "events" && (c.path[1] == "target_exit" || c.path[1] == "oom_kill");
}

}  // namespace rig
