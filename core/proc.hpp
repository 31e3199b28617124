#pragma once
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace rig {

// One reading of a process from /proc: cumulative CPU, memory and scheduling counters.
struct proc_sample {
  int64_t t_ns = 0;
  double cpu_user_s = 0, cpu_sys_s = 0;  // cumulative
  uint64_t rss_bytes = 0;
  int threads = 0;
  int fds = 0;
  uint64_t voluntary_ctx = 0, involuntary_ctx = 0;  // summed over live threads
  uint64_t run_queue_wait_ns = 0;  // time runnable but waiting for a CPU (schedstat), summed over live threads
};

// /proc/PID/stat from field 3 (the state letter) on, after the command name (which may hold
// spaces and parentheses); nullopt when the process is gone.
std::optional<std::string> stat_fields(pid_t pid);

// The head of /proc/PID/stat: state letter, parent and process group; nullopt when gone.
struct proc_stat_head {
  char state = 0;
  pid_t ppid = 0, pgrp = 0;
};
std::optional<proc_stat_head> stat_head(pid_t pid);

// A whole (small) file, by read(2); nullopt with errno set when it cannot be opened or read —
// a /proc file of a process that exits while it is read, a cgroup file whose cgroup goes.
// (An ifstream read through istreambuf_iterator throws from inside the iterator instead.)
std::optional<std::string> read_text_file(const std::string& path);

// nullopt when the process is gone.
std::optional<proc_sample> read_proc(pid_t pid);

// CPU busy percentage between two readings (100 = one core).
double cpu_pct_between(const proc_sample& a, const proc_sample& b);

}  // namespace rig
