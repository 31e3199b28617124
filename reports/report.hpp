#pragma once
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/directory.hpp"
#include "core/histogram.hpp"

namespace rig {

struct latency_summary {  // microseconds; with count 0 there is no value (null in report.json)
  uint64_t count = 0;
  double min = 0, mean = 0, p50 = 0, p90 = 0, p99 = 0, p999 = 0, max = 0;
  static latency_summary of(const histogram& h);
  // The samples a percentile needs before it means much: 10 beyond it (p50 20, p90 100, p99
  // 1,000, p99.9 10,000); from fewer it is marked low-confidence.
  static uint64_t samples_for(double percentile);
  // The percentiles ("p99", "p999", ...) this summary has too few samples for.
  std::vector<std::string> low_confidence() const;
};

// The share of requests tried that failed: errors / (replies + errors) x 100; NaN when nothing was tried.
inline double errors_pct_of(uint64_t errors, uint64_t replies) {
  const double tried = double(errors) + double(replies);
  return tried > 0 ? 100 * double(errors) / tried : NAN;
}

struct workload_phase_result {
  std::string name;
  uint64_t ops = 0;
  // Requests due in the phase (intended send time in it), whenever they ended; of them, at the
  // run's end, never sent and sent without an answer. 0 in a report older than them.
  uint64_t due = 0, not_sent = 0, unfinished = 0;
  std::map<std::string, uint64_t> errors;  // every kind, zeros included
  double throughput_ops_s = 0;
  latency_summary latency, service, send_lag;  // latency and service: successful replies only
  // By outcome, from the intended send time: error replies, rejections, every request sent.
  latency_summary error_latency, rejected_latency, all_latency;
  double errors_pct = NAN;  // errors / (replies + errors) x 100 (errors_pct_of); NaN when nothing was tried
  std::map<std::string, uint64_t> status;  // replies by status class ("2xx": n), protocols with status codes
  std::map<std::string, uint64_t> counts;  // the workload's own tallies (memory: page faults)
  uint64_t late_sends = 0;        // sent > 1 ms after the op was allowed to go
  std::string generator_warning;  // set when the generator, not the target, limited the phase
  // latency, service, send_lag: the phase's whole histograms, HdrHistogram's compressed V2 in
  // base64, values in ns (report.json "histograms"); empty in a report older than them
  std::map<std::string, std::string> hdr;
  uint64_t error_total() const;
};

struct injection_result {
  std::string name, kind, mechanism;
  nlohmann::json params = nlohmann::json::object();
  bool verified = false;
  std::string verification;
  nlohmann::json measured = nlohmann::json::object();
  // After revert(), read back: null until the injection was reverted.
  std::optional<bool> reverted;
  std::string revert;  // what was read back, or what could not be undone
};

struct phase_result {
  std::string name;
  double start_s = 0, end_s = 0;        // since the run started
  double start_wall = 0, end_wall = 0;  // seconds since the epoch, to line up several rigs
  bool completed = false;
  std::vector<injection_result> injections;
  std::vector<workload_phase_result> workloads;
  nlohmann::json resources = nlohmann::json::object();
  const workload_phase_result* workload(const std::string& name) const;  // null: not in this phase
};

struct magnification_row {  // NaN (null in report.json): no value, e.g. a phase with no successful replies
  std::string phase, baseline, workload;
  double p50_x = 0, p99_x = 0, throughput_x = 0;
};

struct event_row {
  double t_s = 0;
  std::string kind, detail;
};

struct expectation_row {
  std::string expr;
  bool ok = false;
  std::string actual;
};

struct timeseries_table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};

struct run_report {
  std::string rig_version, status = "ok";  // ok | failed | interrupted
  std::string scenario_name, scenario_file, description, run_dir, failure;
  int64_t seed = 0;                // the scenario's seed: every random choice of the run drew from it
  std::vector<std::string> sets;   // the --set overrides the run was given, in order
  nlohmann::json host = nlohmann::json::object();
  nlohmann::json target = nlohmann::json::object();
  nlohmann::json workloads = nlohmann::json::object();  // each workload's kind, load model and params
  std::vector<phase_result> phases;
  std::vector<magnification_row> magnification;
  std::vector<event_row> events;
  std::vector<expectation_row> expectations;
  // What a reader must not miss that is not a failure (a phase in which a workload got no reply,
  // connections too few for the offered rate): in report.json, the terminal and report.html.
  std::vector<std::string> warnings;
  // require_all = false: injectors this host could not run, left out: {name, kind, reason}.
  nlohmann::json skipped_injectors = nlohmann::json::array();
  const phase_result* phase(const std::string& name) const;  // null: no phase of that name
};

// Each phase's workloads against the same workload in the first phase.
std::vector<magnification_row> compute_magnification(const std::vector<phase_result>& phases);

nlohmann::json to_json(const run_report& r);
// A figure in report.json: the number, or null where there is none (NaN).
nlohmann::json figure(double v);
// One phase as report.json holds it, and back (its workloads in `workload_order`).
nlohmann::json to_json(const phase_result& p);
phase_result phase_from_json(const nlohmann::json& j, const std::vector<std::string>& workload_order);
// report.json back into the typed report every renderer reads (report.html, rig compare): a key
// the report lacks (an older rig's, a hand-made one) reads as empty or no figure (NaN); a value
// of the wrong type throws.
run_report report_from_json(const nlohmann::json& j);
// A CSV written a row at a time and flushed, so a long run's timeseries goes to disk as the run
// goes (and what a killed run wrote is there to read).
class csv_writer {
 public:
  csv_writer(unique_fd file, const std::string& path, const std::vector<std::string>& columns);
  void row(const std::vector<std::string>& cells);

 private:
  std::string path_;
  fd_ostream out_;
};
// One row per phase x workload, the injections and their verification, the expectations.
std::string terminal_summary(const run_report& r, bool color);

}  // namespace rig
