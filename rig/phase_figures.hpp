#pragma once
#include "core/host.hpp"
// The figures of a phase made from what the run recorded: the workloads' summaries, the
// resources from the sampler's samples, growth per operation, and when errors began.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/sampler.hpp"
#include "reports/report.hpp"
#include "targets/target.hpp"
#include "workloads/recorder.hpp"

namespace rig {

// A phase on the run's monotonic clock.
struct phase_window {
  int index;
  int64_t start_ns, end_ns;
  int64_t applied_ns;  // when its injectors began to be applied (before start_ns)
};

// What else the host ran during a phase, from /proc/stat at its start and end: the load average
// at its end, the CPUs busy, the share stolen by a hypervisor, and the CPUs busy with neither the
// target nor rig (`resources` holds their cpu_pct): a noisy runner, said beside the figures.
nlohmann::json host_figures(const host_cpu_sample& a, const host_cpu_sample& b, const nlohmann::json& resources);

// One workload's figures of one phase.
workload_phase_result summarize(const std::string& name, const phase_stats& s, double seconds);

// Resource figures of one phase from the samples between its boundaries (the target's process
// tree, its own counters, its cgroup, rig itself). counts_from: when the phase's injectors
// began to be applied; what they caused from then on (an OOM kill when a cap lands below the
// usage) counts for the phase. `counters`: the target kind's own counters, totals and gauges
// (one it does not list is taken as a gauge).
nlohmann::json phase_resources(const std::vector<resource_sample>& all, int64_t from, int64_t to, int64_t counts_from,
                               const std::vector<target_counter>& counters);

// The names a phase's figures can carry in report.json, which a check path may name:
// resources.target (the target's processes summed, the derived figures, every target kind's
// counters) and resources.cgroup (the target's cgroup against its caps).
const std::vector<std::string>& target_figure_names();
const std::vector<std::string>& cgroup_figure_names();

// Growth per operation (accumulation): RSS, and the built-in target's own retained bytes; and
// work done per CPU-second. From a phase's figures once they are all in.
void add_growth_figures(phase_result& ph);

// Where each workload's errors began, by kind: the first phase that had any, and the first
// second of it with errors (a bug report says when a failure started, not only that it did).
std::vector<event_row> errors_began(const std::vector<phase_result>& phases, const std::vector<window_row>& rows);

}  // namespace rig
