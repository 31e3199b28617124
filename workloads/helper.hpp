#pragma once
// A workload run by a helper process (`rig __workload`) inside the target's cgroup, so the caps
// the injectors put on the target there (memory, CPU, disk) apply to the workload as well.
// A thread cannot do this: memory is charged per process, and cgroup v2 keeps a process's
// threads together for the io and memory controllers.
//
// The helper maps the run clock's cell (a memfd), so its samples change phase at the same
// instant as the rig's; it hands in one row per second while it runs and its per-phase
// figures, losslessly, when it stops.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/options.hpp"
#include "workloads/workload.hpp"

namespace rig {

// Adds in_target_cgroup to a workload kind's keys.
option_table with_cgroup_option(option_table t);

// A stand-in that runs workload `kind` with these options in a helper process inside the
// target's cgroup, which then needs `controllers`.
std::unique_ptr<workload> make_helper_workload(std::string kind, const option_values& v,
                                               std::vector<std::string> controllers);

template <typename W>
std::unique_ptr<workload> make_here(const option_values& v) {
  return std::make_unique<W>(v);
}

// The workload itself, or with in_target_cgroup = true its stand-in.
template <typename W>
std::unique_ptr<workload> here_or_in_target_cgroup(std::string_view kind, const option_values& v,
                                                   std::vector<std::string> controllers) {
  if (v.boolean("in_target_cgroup")) return make_helper_workload(std::string(kind), v, std::move(controllers));
  return make_here<W>(v);
}

// The helper's side (`rig __workload`): the channel to the rig on fd 3, the run clock's memfd
// on fd 4. Returns the process's exit code.
int run_workload_helper();

}  // namespace rig
