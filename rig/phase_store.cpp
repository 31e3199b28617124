#include "rig/phase_store.hpp"

#include <fmt/format.h>

#include <iostream>
#include <sstream>

namespace rig {

phase_store::phase_store(const scenario& sc, const std::vector<std::unique_ptr<workload>>& workloads,
                         std::vector<phase_result>& phases, const directory& run_dir)
    : sc_(sc), workloads_(workloads), phases_(phases), run_dir_(run_dir), assemblers_(workloads.size()) {}

void phase_store::open(phase_result pr, const phase_window& w) {
  pr.workloads.resize(workloads_.size());  // each summarized when its threads are past the phase
  phases_.push_back(std::move(pr));
  windows_.push_back(w);
  open_ = phases_.size() - 1;
}

void phase_store::summarize_into(size_t wi, int pi, const phase_stats& s) {
  // Cannot happen (a phase is complete only after it closed, and only once), but if it did,
  // the figures are said to be missing rather than lost quietly.
  if (pi < 0 || size_t(pi) < spilled_ || size_t(pi) >= phases_.size() ||
      !phases_[size_t(pi)].workloads[wi].name.empty()) {
    std::cerr << fmt::format("rig: workload {}: figures for phase {} came after it was summarized; not counted\n",
                             sc_.workloads[wi].name, pi + 1);
    return;
  }
  auto& pr = phases_[size_t(pi)];
  pr.workloads[wi] = summarize(sc_.workloads[wi].name, s, pr.end_s - pr.start_s);
}

void phase_store::take_finished() {
  for (size_t wi = 0; wi < workloads_.size(); ++wi)
    for (const auto& [pi, s] : assemblers_[wi].add(workloads_[wi]->take_finished_phases())) summarize_into(wi, pi, s);
}

void phase_store::collect() {
  take_finished();
  spill_complete();
}

// A phase whose figures are all in (closed, each workload's summarized) goes to disk and its
// memory is let go; the report reads them back at the end. If the run dir cannot take them
// they stay in memory.
void phase_store::spill_complete() {
  for (; !spill_failed_ && spilled_ < phases_.size() && spilled_ != open_; ++spilled_) {
    auto& pr = phases_[spilled_];
    for (const auto& w : pr.workloads)
      if (w.name.empty()) return;  // not summarized yet
    add_growth_figures(pr);
    if (!spill_.is_open()) {
      try {
        spill_.open(run_dir_.create(spill_name));
      } catch (const std::exception&) {
        spill_.open(unique_fd());  // badbit: the phases stay in memory
      }
    }
    spill_ << to_json(pr).dump() << '\n' << std::flush;
    if (!spill_) {
      spill_failed_ = true;
      std::cerr << fmt::format("rig: cannot write {}/{}; the phases stay in memory\n", run_dir_.path(), spill_name);
      return;
    }
    pr = phase_result{.name = pr.name};
  }
}

void phase_store::read_back() {
  if (!spilled_) return;
  spill_.close();
  std::vector<std::string> order;
  for (const auto& w : sc_.workloads) order.push_back(w.name);
  std::istringstream in(run_dir_.read_file(spill_name).value_or(""));
  std::string line;
  for (size_t pi = 0; pi < spilled_; ++pi) {
    if (!std::getline(in, line))
      throw std::runtime_error(fmt::format("{}/{}: {} phases written during the run, {} there now", run_dir_.path(),
                                           spill_name, spilled_, pi));
    phases_[pi] = phase_from_json(nlohmann::json::parse(line), order);
  }
}

void phase_store::finish() {
  take_finished();
  read_back();
  for (size_t wi = 0; wi < workloads_.size(); ++wi)
    for (const auto& [pi, s] : assemblers_[wi].finish(workloads_[wi]->results(), int(phases_.size())))
      summarize_into(wi, pi, s);
  for (size_t pi = spilled_; pi < phases_.size(); ++pi) add_growth_figures(phases_[pi]);
}

}  // namespace rig
