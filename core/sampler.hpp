#pragma once
#include <sys/types.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/cgroup.hpp"
#include "core/proc.hpp"

namespace rig {

// The target's cgroup: usage beside the caps in force when sampled.
struct cgroup_sample {
  std::optional<memory_figures> memory;
  std::optional<int64_t> memory_limit;  // bytes; nullopt: none
  std::optional<cpu_figures> cpu;
  std::optional<int64_t> cpu_quota_us;  // nullopt: none
  int64_t cpu_period_us = 0;
  std::optional<io_figures> io;         // summed over the devices it used
  std::optional<io_limits> io_cap;      // the caps on the capped device, if any
};

struct resource_sample {
  int64_t t_ns = 0;
  std::optional<proc_sample> target;  // every process of the target, summed; nullopt: none, or gone
  std::optional<proc_sample> target_main;  // the one that serves (a master, the process rig started)
  std::optional<proc_sample> self;    // the rig itself, so its overhead is visible
  std::map<std::string, int64_t> counters;  // the target's own (live workers, queue depth, ...)
  std::optional<cgroup_sample> cgroup;       // when the target runs in a cgroup of the run's
};

// Reads the target process and the rig from /proc at an interval, plus on demand at
// phase boundaries so per-phase deltas are exact.
class sampler {
 public:
  // The target's counters, waiting at most the given milliseconds for them.
  using counter_source = std::function<std::map<std::string, int64_t>(int)>;
  using process_source = std::function<std::vector<pid_t>()>;
  // `processes`: the target's processes (its tree), read as one; absent: `target` alone.
  sampler(std::optional<pid_t> target, counter_source counters, int64_t interval_ns, const cgroup* cg = nullptr,
          process_source processes = {});
  ~sampler();
  void start();
  void stop();
  // A sample now: on the sampler's thread, or at a phase boundary, where it must not hold the
  // phase up: the target's counters are waited for at most boundary_counters_ms there, and not
  // asked of a stopped target (SIGSTOP) at all; the samples around it carry them then.
  resource_sample sample_now(bool at_boundary = true);
  static constexpr int boundary_counters_ms = 100, background_counters_ms = 1000;
  // In time order, from the last one before t_ns on (all of them from before the first).
  std::vector<resource_sample> samples_from(int64_t t_ns) const;
  // Drops the samples before t_ns but the last one (what samples_from(t_ns) reads), so a long
  // run keeps only the samples it still needs.
  void forget_before(int64_t t_ns);

 private:
  std::optional<pid_t> target_;
  counter_source counters_;
  process_source processes_;
  std::mutex meter_mu_;  // sample_now runs on the sampler's thread and at phase boundaries
  process_group_meter meter_;
  int64_t interval_ns_;
  const cgroup* cg_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<resource_sample> samples_;
  std::thread thread_;
};

}  // namespace rig
