#pragma once
#include <sys/resource.h>

#include <cstdint>
#include <string>

namespace rig {

// "v2" (unified), "v1" (legacy hierarchies; a cgroup2 mount without controllers may sit
// beside them), or "none".
std::string cgroup_version();
std::string kernel_release();
int online_cpus();

// The host's CPU time as /proc/stat counts it (all CPUs, in clock ticks), and the 1-minute load
// average: what else ran beside a phase. Zeros when /proc cannot be read.
struct host_cpu_sample {
  uint64_t total = 0, idle = 0, steal = 0;  // idle includes iowait
  double load1 = 0;
};
host_cpu_sample read_host_cpu();

// rig's own descriptors (a workload of thousands of connections): the soft RLIMIT_NOFILE is
// raised to the hard limit at start. What rig was given is kept: the processes it starts get
// that back, so a target runs under its user's limit, not rig's.
void raise_fd_limit();
int64_t fd_limit_hard();                  // what rig can have (RLIMIT_NOFILE hard; INT64_MAX if unlimited)
const rlimit& fd_limit_given();           // the limit rig was started with

}  // namespace rig
