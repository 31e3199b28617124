#pragma once
// The store of a run's phases: each workload's figures of a phase summarized once every
// thread of it is past the phase (its histograms go then), and each phase whose figures are
// all in written to disk and let go, so a long run's memory does not grow with its phases.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/directory.hpp"
#include "core/fd.hpp"
#include "reports/report.hpp"
#include "rig/phase_figures.hpp"
#include "rig/scenario.hpp"
#include "workloads/workload.hpp"

namespace rig {

class phase_store {
 public:
  phase_store(const scenario& sc, const std::vector<std::unique_ptr<workload>>& workloads,
              std::vector<phase_result>& phases, const directory& run_dir);

  // A phase begins (its injections verified): its result and its window on the run's clock.
  void open(phase_result pr, const phase_window& w);
  bool is_open() const { return open_.has_value(); }
  phase_result& current() { return phases_[*open_]; }
  phase_window& current_window() { return windows_.back(); }
  void close() { open_.reset(); }
  const std::vector<phase_window>& windows() const { return windows_; }

  // While the run goes: the phases each workload finished, summarized; the complete ones to disk.
  void collect();
  // After every worker joined: the rest summarized (a phase in which a workload recorded
  // nothing gets its zeros), the phases on disk read back, growth figures added.
  void finish();
  // How many phases went to disk (the file is removed once report.json holds them).
  size_t spilled() const { return spilled_; }
  static constexpr const char* spill_name = "phases.partial.jsonl";

 private:
  void take_finished();
  void summarize_into(size_t wi, int pi, const phase_stats& s);
  void spill_complete();
  void read_back();

  const scenario& sc_;
  const std::vector<std::unique_ptr<workload>>& workloads_;
  std::vector<phase_result>& phases_;
  const directory& run_dir_;
  std::vector<phase_window> windows_;
  std::optional<size_t> open_;  // index into phases_ while a phase runs
  std::vector<phase_assembler> assemblers_;
  fd_ostream spill_;
  size_t spilled_ = 0;  // the phases below it are on disk
  bool spill_failed_ = false;
};

}  // namespace rig
