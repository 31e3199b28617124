#pragma once
// Cgroups for the target, on cgroup v2 (one unified tree: memory.max, cpu.max, io.max, ...)
// and on v1 (one hierarchy per controller: memory.limit_in_bytes, cpu.cfs_quota_us,
// blkio.throttle.*), detected at run time from the mount table. rig's cgroups live under a
// parent of its own, `rig/`, at the top of each hierarchy, one directory per run.
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rig {

enum class cg_version { v1, v2 };

// Where each controller is mounted. Controller names are v2's: memory, cpu, cpuset, io,
// pids (v1's blkio is "io"; v1's cpuacct is used beside cpu for usage figures).
class cgroup_layout {
 public:
  struct hierarchy {
    cg_version version;
    std::string mount;
  };
  // From /proc/self/mounts, and each cgroup2 mount's cgroup.controllers.
  static cgroup_layout detect(const std::string& mounts_file = "/proc/self/mounts");
  // A unified tree at `root` (the tests' fake cgroupfs, or a known mount).
  static cgroup_layout v2_at(const std::string& root, const std::vector<std::string>& controllers);
  static cgroup_layout v1_at(const std::map<std::string, std::string>& mounts);

  const hierarchy* find(const std::string& controller) const;
  // "v1 (memory, cpu, cpuset, io, pids)", "v2 (cpu, io, memory, pids)", "none".
  std::string describe() const;

 private:
  std::map<std::string, hierarchy> by_controller_;
};

struct memory_figures {
  int64_t usage_bytes = 0, peak_bytes = 0;  // peak: -1 where the kernel has no such file
  int64_t limit_hits = 0;                   // v1 memory(.memsw).failcnt; v2 memory.events "max"
  int64_t oom_kills = 0;                    // v1 memory.oom_control / v2 memory.events "oom_kill"
};

// The kernel's count of charges refused at a memory cap, `hits` between two readings, where it
// keeps one: nullopt when the cap was reached (`reached`: an OOM kill, a peak at the cap) and the
// count did not move (cgroup v1 on recent kernels leaves memory.failcnt at 0, OOM kill or not).
inline std::optional<int64_t> counted_limit_hits(int64_t hits, bool reached) {
  if (hits == 0 && reached) return std::nullopt;
  return hits;
}

struct cpu_figures {
  int64_t usage_ns = 0;  // v1 cpuacct.usage; v2 cpu.stat usage_usec
  int64_t periods = 0, throttled_periods = 0, throttled_ns = 0;
};

struct io_figures {
  int64_t read_bytes = 0, write_bytes = 0, read_ops = 0, write_ops = 0;
};

// Per-device I/O caps; 0 means no cap.
struct io_limits {
  int64_t read_bps = 0, write_bps = 0, read_iops = 0, write_iops = 0;
  bool any() const { return read_bps || write_bps || read_iops || write_iops; }
};

// One cgroup (a directory in each hierarchy it needs, and always one that follows the process
// tree: "tree", in v2, else v1's freezer or pids). Destruction kills every process still in it
// and removes the directories, and rig's parent directory when no other run uses it.
class cgroup {
 public:
  cgroup() = default;
  static cgroup create(const cgroup_layout& layout, const std::string& name,
                       const std::vector<std::string>& controllers);
  cgroup(cgroup&&) noexcept;
  cgroup& operator=(cgroup&&) noexcept;
  cgroup(const cgroup&) = delete;
  cgroup& operator=(const cgroup&) = delete;
  ~cgroup() { destroy(); }

  bool exists() const { return !dirs_.empty(); }
  bool has(const std::string& controller) const { return dirs_.count(controller) > 0; }
  cg_version version(const std::string& controller) const;
  std::string path(const std::string& controller) const;
  // Every directory, deduplicated: the cgroup.procs files a new process writes "0" to (between
  // fork and exec) to start inside the cgroup.
  std::vector<std::string> procs_files() const;
  void add(pid_t pid);
  std::vector<pid_t> pids() const;
  // Whether the process is inside the run's directory (or one below it) in every hierarchy the
  // run has one in, by /proc/PID/cgroup: false for one that wrote itself into another cgroup. A
  // process already gone is held (nothing of it is left outside).
  bool holds(pid_t pid) const;

  // memory: limit in bytes, or nullopt for none. swap: extra beyond the limit (v1 memsw =
  // limit + swap; v2 memory.swap.max = swap).
  void set_memory_limit(std::optional<int64_t> bytes, std::optional<int64_t> swap_bytes = std::nullopt);
  std::optional<int64_t> memory_limit() const;  // read back; nullopt: no limit
  // v1: the high-water mark starts again from the usage now (memory.max_usage_in_bytes), so a
  // peak read later is the one since a cap was set; v2's memory.peak runs from the cgroup's start.
  void reset_memory_peak();
  std::optional<int64_t> swap_limit() const;
  memory_figures memory() const;

  // cpu: quota per period, or nullopt for none; cpuset: the CPUs the cgroup may run on.
  void set_cpu_quota(std::optional<int64_t> quota_us, int64_t period_us = 100'000);
  std::optional<int64_t> cpu_quota_us() const;
  int64_t cpu_period_us() const;
  cpu_figures cpu() const;
  void set_cpus(const std::string& list);  // "0-1", "1"
  std::string cpus() const;

  // io: caps on one block device (major:minor).
  void set_io_limits(dev_t device, const io_limits& l);
  io_limits io_limits_of(dev_t device) const;
  io_figures io(dev_t device) const;
  std::map<std::string, io_limits> io_limits_all() const;  // by "major:minor", devices with a cap
  std::map<std::string, io_figures> io_all() const;        // by "major:minor", devices it used

  // Kills every process in the run's directories (what the target started, however it left
  // its process group); how many there were.
  size_t kill_all() noexcept;
  // Kills what is left in it and removes the directories. Idempotent; never throws.
  // Returns what could not be removed, empty when all went.
  std::string destroy() noexcept;

 private:
  struct dir {
    cg_version version;
    std::string path, top;  // the cgroup, and the top of its hierarchy
  };
  const dir& at(const std::string& controller) const;
  std::map<std::string, dir> dirs_;  // controller -> directory (v2: all the same)
  std::vector<std::string> created_;  // the run's directories
  std::vector<std::string> parents_;  // rig/ in each hierarchy: removed by whichever run ends last
  std::vector<std::pair<std::string, std::string>> enabled_at_top_;  // v2: {top, controller} rig turned on
};

// Kills every process in the cgroup directory `dir` (cgroup.kill on v2; else, frozen first where
// v1's freezer is, each by a pidfd while it is still in the cgroup) and waits up to 3 s for
// it to be empty; true once it is. killed: how many there were.
bool kill_cgroup_processes(const std::string& dir, size_t* killed = nullptr);
// Removes an emptied cgroup directory, retrying while the kernel lets go of its last
// process; false (errno set) when it stays.
bool remove_cgroup_dir(const std::string& dir);

// The block device (major:minor) that holds `path`: the whole disk for a partition, since
// blkio/io caps apply to disks.
dev_t block_device_of(const std::string& path);
std::string device_name(dev_t d);  // "254:0"

// Small file helpers for control files: read/write with errors that name the file.
std::string read_control(const std::string& path);
void write_control(const std::string& path, const std::string& value);

}  // namespace rig
