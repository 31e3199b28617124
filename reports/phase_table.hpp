#pragma once
// The phase table, one row per phase and workload, as the terminal and report.html show it:
// the cells are worked out here once, from the typed report; each renderer only lays them out.
#include <string>
#include <vector>

#include "reports/report.hpp"

namespace rig {

struct latency_cell {
  std::string text;  // "1.20ms"; empty where there is no figure (no successful reply)
  bool low = false;  // from fewer replies than the percentile needs: low confidence
};

struct phase_row {
  const phase_result* phase = nullptr;
  const workload_phase_result* workload = nullptr;
  std::string throughput;          // ops/s
  latency_cell p50, p99, p999;
  std::string errors;              // their count
  std::string errors_by_kind;      // "3 timeout, 1 reset", or "0"
  std::string failed;              // the share of requests that failed, "2.5%"; empty: none tried
  std::string p50_x, p99_x, throughput_x;  // against the first phase; "–" where there is no ratio
  bool loud = false;               // magnified at least 2x (or failing where the baseline answered): the row to look at
};

std::vector<phase_row> phase_rows(const run_report& r);

}  // namespace rig
