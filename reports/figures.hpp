#pragma once
// The names of the resource figures a phase can carry in report.json (resources.target and
// resources.cgroup): what the controller writes and what a check path may name.
#include <string>
#include <vector>

namespace rig {

// The built-in target's counters (its control channel's "stats"): totals become the phase's
// delta under their own name, the others are gauges, reported as NAME_min/_max/_start/_end.
inline const std::vector<std::string>& builtin_counter_totals() {
  static const std::vector<std::string> v = {"rejected", "requests", "exceptions_caught", "workers_died",
                                             "protocol_errors"};
  return v;
}
inline const std::vector<std::string>& builtin_counter_gauges() {
  static const std::vector<std::string> v = {"workers", "live_workers", "queue_depth", "queue_capacity",
                                             "retained_bytes", "connections"};
  return v;
}

// resources.target: the target's processes summed, the derived figures, the built-in's counters.
inline const std::vector<std::string>& target_figure_names() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> n = {"samples", "cpu_pct", "cpu_user_s", "cpu_sys_s", "rss_max_bytes", "rss_start_bytes",
                                  "rss_end_bytes", "threads_min", "threads_max", "fds_max", "processes_max",
                                  "voluntary_ctx_switches", "involuntary_ctx_switches", "ctx_switches",
                                  "run_queue_wait_s", "run_queue_wait_ms_per_s", "disk_read_bytes_per_s",
                                  "disk_write_bytes_per_s", "rss_growth_per_op_bytes", "rss_growth_bytes",
                                  "ops_per_cpu_s", "retained_per_request_bytes"};
    for (const auto& t : builtin_counter_totals()) n.push_back(t);
    for (const auto& g : builtin_counter_gauges())
      for (const char* s : {"_min", "_max", "_start", "_end"}) n.push_back(g + s);
    return n;
  }();
  return v;
}

// resources.cgroup: the target's cgroup against its caps.
inline const std::vector<std::string>& cgroup_figure_names() {
  static const std::vector<std::string> v = {
      "memory_used_max_bytes", "memory_peak_bytes",  "memory_used_end_bytes", "memory_cap_bytes",
      "memory_limit_hits",     "oom_kills",          "io_read_bytes_per_s",   "io_write_bytes_per_s",
      "io_read_ops_per_s",     "io_write_ops_per_s", "cpu_used_cpus",         "cpu_cap_cpus",
      "cpu_throttled_periods", "cpu_throttled_s"};
  return v;
}

}  // namespace rig
