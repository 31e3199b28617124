#pragma once
// A suite's summary (suite.json): each scenario's outcome, its failed checks and key figures,
// what the terminal table and suite.html read.
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/report.hpp"
#include "reports/sweep_report.hpp"

namespace rig {

struct suite_row {
  std::string label;     // unique in the suite: the scenario's name, or the name its entry gives
  std::string file;      // the scenario file
  std::vector<std::string> tags, sets;
  std::string phase_duration;  // "" or every phase this long (the suite's --phase-duration)
  bool sweep = false;
  // ok | checks_failed | unverified | failed | interrupted (report.json's status), or, without a
  // report: refused (exit 3, the host cannot run it), stale_state (exit 5), not_run (the suite was
  // interrupted before it)
  std::string status = "not_run";
  int exit_code = -1;
  std::string run_dir;   // relative to the suite's directory; empty: none made
  double duration_s = 0;
  std::vector<expectation_row> failed_checks;
  std::string why;       // what went wrong beyond the checks (the failure, an unverified injection)
  // Key figures: the last phase (a sweep's measured phase at its last level), its first workload.
  std::string phase, workload;
  double throughput_ops_s = NAN, p50_us = NAN, p99_us = NAN, errors_pct = NAN, p99_x = NAN;
  // --repeat N: the runs, and each key figure's median and range over them (the figures above
  // are the medians).
  int repeats = 1;
  std::map<std::string, spread_stat> spread;
  bool passed() const { return exit_code == 0; }
  // The key figures that have a value, by their suite.json name.
  std::map<std::string, double> figure_values() const;
  void set_figures_from_spread();
};

struct suite_summary {
  std::string rig_version, name, description, dir, started_utc;
  double wall_s = 0;
  std::vector<suite_row> rows;
  std::vector<std::string> filters, skips, filtered_out;  // --filter and --skip tags, the scenarios they left out
  int exit_code = 0;
  std::vector<const suite_row*> failed() const;
};

// The key figures of a run's report into its row (status, failed checks, figures).
void fill_row(suite_row& row, const run_report& r);
// A sweep's: its status, failed curve checks and levels, the last level's medians.
void fill_row(suite_row& row, const sweep_summary& s);

nlohmann::json to_json(const suite_summary& s);  // suite.json
std::string suite_table(const suite_summary& s);  // the terminal's summary table
std::string render_suite_html(const suite_summary& s);

}  // namespace rig
