#pragma once
// `rig history DIR`: many runs of one scenario over time (one a release, say), each phase's
// p50, p99 and throughput as a trend with its spread, so a slow drift shows that no pairwise
// compare would.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/run_group.hpp"

namespace rig {

struct history_point {
  std::string label;  // the directory's name
  std::string dir;
  double started = 0;  // the first run's start, seconds since the epoch: the points' order
  run_group runs;
};

struct history_row {  // one phase and workload across the points
  std::string phase, workload;
  // by figure (p50, p99, throughput): one spread a point (n = 0 where the point has no value)
  std::map<std::string, std::vector<spread_stat>> figures;
  // The drift of each figure's median from the first point with a value to the last: their
  // ratio, and in how many of the steps between neighbouring points it rose.
  std::map<std::string, double> last_over_first;
  std::map<std::string, std::pair<int, int>> rises;  // (steps up, steps)
};

struct history_summary {
  std::string scenario, dir;
  std::vector<history_point> points;
  std::vector<history_row> rows;
};

// The points in DIR: each subdirectory that is a run, a --repeat directory, or a directory of
// runs and --repeat directories (their spread), in the order they started. Throws naming what is wrong: no run found,
// runs of different scenarios (`scenario` picks one), a report that cannot be read.
history_summary read_history(const std::string& dir, const std::string& scenario = "");

std::string history_table(const history_summary& h);
nlohmann::json to_json(const history_summary& h);
std::string render_history_html(const history_summary& h);

}  // namespace rig
