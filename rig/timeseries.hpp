#pragma once
// timeseries.csv: one row per second of the run, written as the run goes.
#include <cstdint>
#include <string>
#include <vector>

#include "core/directory.hpp"
#include "core/sampler.hpp"
#include "reports/report.hpp"
#include "rig/phase_figures.hpp"
#include "rig/scenario.hpp"
#include "workloads/recorder.hpp"

namespace rig {

class timeseries_stream {
 public:
  timeseries_stream(const scenario& sc, const directory& dir, int64_t start_ns);

  // Writes the rows of the seconds that ended before `before_ns`, from the window rows and the
  // samples in each second; `phases` names each second by the phase that has most of it (the
  // last one still open when `open` is set): the run's last, partial second and a second
  // across the pause between two phases are named too. Empty only where no phase ran.
  void write_before(int64_t before_ns, const window_sink& windows, const std::vector<resource_sample>& samples,
                    const std::vector<phase_window>& phases, bool open);
  // Where the rows written so far end: the samples before it are needed no more.
  int64_t written_end_ns() const;

 private:
  static std::vector<std::string> columns(const scenario& sc);
  std::vector<std::string> row(const window_sink& windows, const std::vector<resource_sample>& samples, int64_t w0,
                               int64_t w1, const std::string& phase) const;

  const scenario& sc_;
  int64_t start_ns_;
  int64_t next_ = 0;  // the next second to write
  csv_writer out_;
};

// WORKLOAD.latency.hlog: each workload's latency a second at a time as an HdrHistogram interval
// log (HistogramLogProcessor reads it), from the finalized window rows; `start_wall` is when
// second 0 began (seconds since the epoch).
void write_hdr_logs(const directory& dir, const scenario& sc, const std::vector<window_row>& rows, double start_wall);

}  // namespace rig
