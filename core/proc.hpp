#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <vector>
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
  int processes = 1;               // how many processes the sample sums
  // Cumulative, /proc/PID/io: bytes the process caused to be read from storage, and to be sent
  // to it (counted when written, whoever writes the pages back later: the kernel's flusher's
  // writeback, which a cgroup v1 io counter gives to the root, is the process's here).
  uint64_t disk_read_bytes = 0, disk_write_bytes = 0;
};

// The figures of several processes as one (a server's master and workers): gauges (RSS,
// threads, descriptors) summed over the live ones; cumulative figures (CPU, context switches,
// run-queue wait) as a running total of each process's growth, so a worker that exits takes
// nothing back and a new one adds what it used.
class process_group_meter {
 public:
  // nullopt when none of `pids` could be read.
  std::optional<proc_sample> read(const std::vector<pid_t>& pids);

 private:
  std::map<pid_t, proc_sample> last_;
  proc_sample total_{};
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
