#pragma once
// `rig export RUN --format hdr-log|openmetrics`: a run's figures in forms other tools read.
#include <string>
#include <vector>

#include "reports/report.hpp"

namespace rig {

// HdrHistogram interval logs, one per workload, into `out_dir` (empty: the run directory's
// export/) as SCENARIO-WORKLOAD.latency.hlog:
// the run's per-second log (WORKLOAD.latency.hlog in the run directory), each line checked to
// decode; for a run that has none, one interval per phase from report.json's histograms.
// Returns the files written; throws naming what is missing.
std::vector<std::string> export_hdr_logs(const std::string& run_dir, const run_report& r, const std::string& out_dir);

// The phase figures as OpenMetrics text (a Prometheus textfile collector or Pushgateway reads
// it): latency quantiles in seconds, throughput, ops and errors by kind, error share, the
// magnification, the run's status; labelled scenario, phase, workload. Figures with no value
// are left out.
std::string openmetrics_text(const run_report& r);

}  // namespace rig
