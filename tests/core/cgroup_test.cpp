// Cgroups: for real on this host's hierarchies (v1 here, v2 where the host has it), and the
// v2 file formats against a fake cgroupfs tree in a temporary directory.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "../helpers.hpp"
#include "core/cgroup.hpp"
#include "core/cpufreq.hpp"
#include "core/journal.hpp"
#include "core/process.hpp"

using namespace rig;
using rig::testing::slurp;
using rig::testing::temp_dir;
namespace fs = std::filesystem;

namespace {

void put(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST_CASE("the mount table gives each controller its hierarchy: v1, v2, or both") {
  temp_dir tmp;
  fs::create_directories(tmp.path + "/unified");
  put(tmp.path + "/unified/cgroup.controllers", "cpuset cpu io memory hugetlb pids\n");
  put(tmp.path + "/mounts",
      "tmpfs /sys/fs/cgroup tmpfs rw 0 0\n"
      "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,cpu,cpuacct 0 0\n"
      "cgroup /sys/fs/cgroup/blkio cgroup rw,blkio 0 0\n"
      "cgroup /sys/fs/cgroup/systemd cgroup rw,name=systemd 0 0\n"
      "cgroup2 " + tmp.path + "/unified cgroup2 rw 0 0\n");
  const auto l = cgroup_layout::detect(tmp.path + "/mounts");
  REQUIRE(l.find("cpu"));
  CHECK(l.find("cpu")->version == cg_version::v1);
  CHECK(l.find("cpu")->mount == "/sys/fs/cgroup/cpu,cpuacct");
  CHECK(l.find("io")->mount == "/sys/fs/cgroup/blkio");  // v1 blkio is io
  CHECK(l.find("memory")->version == cg_version::v2);     // not bound in v1: the unified tree has it
  CHECK(l.find("memory")->mount == tmp.path + "/unified");
  CHECK(l.describe() == "v1 (cpu, io) + v2 (cpuset, hugetlb, memory, pids)");
  CHECK(cgroup_layout::detect(tmp.path + "/no-such-file").describe() == "none");
}

TEST_CASE("cgroup v2 files, against a fake tree: limits written and read back, figures parsed, all removed") {
  temp_dir tmp;
  const std::string top = tmp.path;
  put(top + "/cgroup.subtree_control", "memory\n");  // memory handed down already; cpu and io not
  const auto layout = cgroup_layout::v2_at(top, {"memory", "cpu", "io", "cpuset"});
  auto g = cgroup::create(layout, "run-1", {"memory", "cpu", "io"});
  const std::string dir = top + "/rig/run-1";
  CHECK(g.path("memory") == dir);
  CHECK(g.path("io") == dir);
  CHECK(g.procs_files() == std::vector<std::string>{dir + "/cgroup.procs"});
  CHECK(g.version("cpu") == cg_version::v2);
  CHECK(slurp(top + "/rig/cgroup.subtree_control") == "+memory +cpu +io");

  g.set_memory_limit(64 << 20, 0);
  CHECK(slurp(dir + "/memory.max") == "67108864");
  CHECK(slurp(dir + "/memory.swap.max") == "0");
  CHECK(g.memory_limit() == (64 << 20));
  CHECK(g.swap_limit() == 0);
  g.set_memory_limit(std::nullopt);
  CHECK(slurp(dir + "/memory.max") == "max");
  CHECK_FALSE(g.memory_limit().has_value());

  put(dir + "/memory.current", "1048576\n");
  put(dir + "/memory.peak", "2097152\n");
  put(dir + "/memory.events", "low 0\nhigh 0\nmax 17\noom 2\noom_kill 1\noom_group_kill 0\n");
  const auto m = g.memory();
  CHECK(m.usage_bytes == 1048576);
  CHECK(m.peak_bytes == 2097152);
  CHECK(m.limit_hits == 17);
  CHECK(m.oom_kills == 1);

  g.set_cpu_quota(25'000, 100'000);
  CHECK(slurp(dir + "/cpu.max") == "25000 100000");
  CHECK(g.cpu_quota_us() == 25'000);
  CHECK(g.cpu_period_us() == 100'000);
  g.set_cpu_quota(std::nullopt, 10'000);
  CHECK(slurp(dir + "/cpu.max") == "max 10000");
  CHECK_FALSE(g.cpu_quota_us().has_value());
  put(dir + "/cpu.stat", "usage_usec 5000\nuser_usec 4000\nsystem_usec 1000\nnr_periods 10\nnr_throttled 4\n"
                         "throttled_usec 700\n");
  const auto c = g.cpu();
  CHECK(c.usage_ns == 5'000'000);
  CHECK(c.periods == 10);
  CHECK(c.throttled_periods == 4);
  CHECK(c.throttled_ns == 700'000);

  const dev_t disk = makedev(254, 0);
  g.set_io_limits(disk, {.read_bps = 1'000'000, .write_iops = 50});
  CHECK(slurp(dir + "/io.max") == "254:0 rbps=1000000 wbps=max riops=max wiops=50");
  put(dir + "/io.max", "8:0 rbps=5 wbps=max riops=max wiops=max\n254:0 rbps=1000000 wbps=max riops=max wiops=50\n");
  const auto l = g.io_limits_of(disk);
  CHECK(l.read_bps == 1'000'000);
  CHECK(l.write_bps == 0);
  CHECK(l.write_iops == 50);
  put(dir + "/io.stat", "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0\n"
                        "254:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n");
  const auto io = g.io(disk);
  CHECK(io.read_bytes == 4096);
  CHECK(io.write_bytes == 8192);
  CHECK(io.read_ops == 1);
  CHECK(io.write_ops == 2);

  CHECK(g.destroy().empty());
  CHECK_FALSE(fs::exists(top + "/rig"));
  CHECK(slurp(top + "/cgroup.subtree_control") == "-io");  // the last controller rig had turned on, taken back
  CHECK(g.destroy().empty());  // idempotent
}

TEST_CASE("cgroup v1 memory+swap: the swap cap sits on top of the memory cap") {
  temp_dir tmp;
  const auto layout = cgroup_layout::v1_at({{"memory", tmp.path}});
  auto g = cgroup::create(layout, "run-2", {"memory"});
  const std::string dir = tmp.path + "/rig/run-2";
  put(dir + "/memory.memsw.limit_in_bytes", "9223372036854771712\n");  // the kernel's files, as a fake
  g.set_memory_limit(100 << 20, 20 << 20);
  CHECK(slurp(dir + "/memory.limit_in_bytes") == "104857600");
  CHECK(slurp(dir + "/memory.memsw.limit_in_bytes") == "125829120");
  CHECK(g.swap_limit() == (20 << 20));
  put(dir + "/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
  put(dir + "/memory.usage_in_bytes", "4096\n");
  put(dir + "/memory.max_usage_in_bytes", "8192\n");
  put(dir + "/memory.failcnt", "12\n");
  const auto m = g.memory();
  CHECK(m.oom_kills == 3);
  CHECK(m.limit_hits == 12);
  CHECK(m.peak_bytes == 8192);
}

TEST_CASE("real cgroups on this host: a child joins before exec, caps read back from the kernel, nothing left") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: making cgroups needs root");
    return;
  }
  const auto layout = cgroup_layout::detect();
  for (const char* c : {"memory", "cpu", "cpuset"})
    if (!layout.find(c)) {
      MESSAGE("skipped: no " << c << " controller here (" << layout.describe() << ")");
      return;
    }
  MESSAGE("host cgroups: " << layout.describe());
  std::vector<std::string> controllers = {"memory", "cpu", "cpuset"};
  const bool io = layout.find("io") != nullptr;
  if (io) controllers.push_back("io");
  const std::string name = "test-" + std::to_string(::getpid());
  auto g = cgroup::create(layout, name, controllers);
  std::vector<std::string> dirs;
  for (const auto& c : controllers) dirs.push_back(g.path(c));

  auto child = child_process::spawn({.argv = {"/bin/sleep", "30"}, .cgroup_procs = g.procs_files()});
  CHECK(g.pids() == std::vector<pid_t>{child.pid()});
  const std::string own = slurp("/proc/" + std::to_string(child.pid()) + "/cgroup");
  CHECK(own.find("/rig/" + name) != std::string::npos);

  g.set_memory_limit(64 << 20);
  CHECK(g.memory_limit() == (64 << 20));
  CHECK(g.memory().usage_bytes > 0);
  g.set_cpu_quota(25'000, 100'000);
  CHECK(g.cpu_quota_us() == 25'000);
  CHECK(g.cpu_period_us() == 100'000);
  g.set_cpus("0");
  CHECK(g.cpus() == "0");
  if (io) {
    const dev_t disk = block_device_of("/");
    g.set_io_limits(disk, {.read_bps = 10'000'000, .write_bps = 5'000'000, .write_iops = 100});
    const auto l = g.io_limits_of(disk);
    CHECK(l.read_bps == 10'000'000);
    CHECK(l.write_bps == 5'000'000);
    CHECK(l.write_iops == 100);
    CHECK(l.read_iops == 0);
    g.set_io_limits(disk, {});
    CHECK_FALSE(g.io_limits_of(disk).any());
  }
  g.set_memory_limit(std::nullopt);
  CHECK_FALSE(g.memory_limit().has_value());

  // Destroy with the child still inside: it was the run's, so it is killed, then every directory goes.
  CHECK(g.destroy().empty());
  for (const auto& d : dirs) CHECK_MESSAGE(!fs::exists(d), d);
  CHECK_FALSE(child.running());
  CHECK(child.exit_signal() == SIGKILL);
}

namespace {

// A shell that leaves a session of its own behind and a double-forked daemon, then exits:
// both escaped its process group, not the cgroup, and destroy() kills them.
void tree_dies_with_cgroup(const cgroup_layout& layout, const std::string& label) {
  temp_dir tmp;
  auto g = cgroup::create(layout, "test-tree-" + std::to_string(::getpid()), {});
  REQUIRE(g.has("tree"));
  MESSAGE(label << ": " << g.path("tree"));
  const std::string pids = tmp.path + "/pids";
  auto c = child_process::spawn(
      {.argv = {"/bin/sh", "-c", "setsid sleep 300 & echo $! > " + pids + "; (sleep 301 &) ; exit 0"},
       .cgroup_procs = g.procs_files()});
  REQUIRE(c.wait(5000));
  for (int i = 0; i < 100 && g.pids().size() < 2; ++i) ::usleep(10'000);
  const auto left = g.pids();
  REQUIRE(left.size() == 2);
  pid_t setsid_child = 0;
  std::istringstream(slurp(pids)) >> setsid_child;
  CHECK(std::count(left.begin(), left.end(), setsid_child) == 1);
  std::vector<unsigned long long> starts;
  for (pid_t p : left) starts.push_back(process_start_time(p));
  const std::string tree_dir = g.path("tree");
  CHECK(g.destroy().empty());
  for (size_t i = 0; i < left.size(); ++i) CHECK(process_start_time(left[i]) != starts[i]);
  CHECK_FALSE(fs::exists(tree_dir));
}

}  // namespace

TEST_CASE("a run's cgroup follows the whole process tree: a setsid grandchild and a daemon die with it (v2, v1 freezer, v1 pids)") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: making cgroups needs root");
    return;
  }
  const auto layout = cgroup_layout::detect();
  if (!layout.find("tree")) {
    MESSAGE("skipped: no cgroup hierarchy here (" << layout.describe() << ")");
    return;
  }
  tree_dies_with_cgroup(layout, "this host's choice");
  // Each way of following the tree that this host has: v2's cgroup.kill, v1's freezer, v1's pids.
  for (const char* c : {"freezer", "pids"})
    if (const auto* h = layout.find(c); h && h->version == cg_version::v1)
      tree_dies_with_cgroup(cgroup_layout::v1_at({{c, h->mount}}), std::string("v1 ") + c);
}

TEST_CASE("a path's block device: the disk behind it, or a clear refusal for tmpfs") {
  struct stat st {};
  REQUIRE(::stat("/", &st) == 0);
  if (major(st.st_dev) != 0) {
    const dev_t d = block_device_of("/");
    CHECK(fs::exists("/sys/dev/block/" + device_name(d)));
    CHECK_FALSE(fs::exists("/sys/dev/block/" + device_name(d) + "/partition"));
  }
  if (fs::exists("/dev/shm")) {
    try {
      block_device_of("/dev/shm");
      FAIL("tmpfs has no block device");
    } catch (const std::exception& e) {
      CHECK(std::string(e.what()).find("no block device") != std::string::npos);
    }
  }
}

TEST_CASE("cpufreq pinning, against a fake sysfs tree: min lowered under the cap, every file restored exactly") {
  temp_dir tmp;
  for (int c : {0, 1}) {
    const std::string d = tmp.path + "/cpu" + std::to_string(c) + "/cpufreq";
    fs::create_directories(d);
    put(d + "/cpuinfo_max_freq", "3000000\n");
    put(d + "/cpuinfo_min_freq", "800000\n");
    put(d + "/scaling_max_freq", "3000000\n");
    put(d + "/scaling_min_freq", "2000000\n");
    put(d + "/scaling_governor", c == 0 ? "performance\n" : "userspace\n");
  }
  put(tmp.path + "/cpu1/cpufreq/scaling_setspeed", "2400000\n");
  cpufreq_pin pin(tmp.path);
  CHECK(pin.available({0, 1}));
  CHECK_FALSE(pin.available({0, 2}));
  CHECK(pin.max_khz(1) == 3'000'000);
  CHECK(pin.pin({0, 1}, 1'200'000) == 1'200'000);
  for (int c : {0, 1}) {
    const std::string d = tmp.path + "/cpu" + std::to_string(c) + "/cpufreq";
    CHECK(slurp(d + "/scaling_max_freq") == "1200000");
    CHECK(slurp(d + "/scaling_min_freq") == "800000");  // min may not sit above the cap
  }
  CHECK(slurp(tmp.path + "/cpu1/cpufreq/scaling_setspeed") == "1200000");  // userspace governor follows
  CHECK(pin.read_back() == std::vector<int64_t>{1'200'000, 1'200'000});
  CHECK(pin.pin({0}, 100) == 800'000);  // clamped to what the CPU can do
  CHECK(pin.restore().empty());  // every file read back as saved
  for (int c : {0, 1}) {
    const std::string d = tmp.path + "/cpu" + std::to_string(c) + "/cpufreq";
    CHECK(slurp(d + "/scaling_max_freq") == "3000000");
    CHECK(slurp(d + "/scaling_min_freq") == "2000000");
    CHECK(slurp(d + "/scaling_governor") == (c == 0 ? "performance\n" : "userspace\n"));  // never written
  }
  CHECK(slurp(tmp.path + "/cpu1/cpufreq/scaling_setspeed") == "2400000");  // the speed it was held at
  CHECK(pin.read_back().empty());
}

TEST_CASE("cpufreq restore says what did not read back as saved") {
  temp_dir tmp;
  const std::string d = tmp.path + "/cpu0/cpufreq";
  fs::create_directories(d);
  put(d + "/cpuinfo_max_freq", "3000000\n");
  put(d + "/cpuinfo_min_freq", "800000\n");
  put(d + "/scaling_max_freq", "3000000\n");
  put(d + "/scaling_min_freq", "2000000\n");
  cpufreq_pin pin(tmp.path);
  REQUIRE(pin.pin({0}, 1'200'000) == 1'200'000);
  // Something replaced the min file with what cannot take a write: the restore cannot put it back.
  fs::remove(d + "/scaling_min_freq");
  fs::create_directory(d + "/scaling_min_freq");
  const std::string differs = pin.restore();
  INFO(differs);
  CHECK(differs.find("cpu0 scaling_min_freq reads") != std::string::npos);
  CHECK(differs.find("not 2000000") != std::string::npos);
  CHECK(differs.find("scaling_max_freq") == std::string::npos);  // that one did go back
  CHECK(slurp(d + "/scaling_max_freq") == "3000000");
}
