// The disk workload on a real file through io_uring: counts, error-free operation, the
// asked rate in open loop, fsyncs, and its own file removed afterwards.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../helpers.hpp"
#include "core/bind.hpp"
#include "phase_run.hpp"
#include "core/clock.hpp"
#include "workloads/disk.hpp"

using namespace rig;
using rig::testing::bind_text;
using rig::testing::temp_dir;
namespace fs = std::filesystem;

namespace {

// Direct I/O needs a file system that has it: /tmp may be tmpfs on some machines.
std::string direct_io_dir() {
  for (const char* d : {"/var/tmp", "/tmp", "."}) {
    const std::string probe = std::string(d) + "/rig-direct-probe";
    const int fd = ::open(probe.c_str(), O_RDWR | O_CREAT | O_DIRECT, 0644);
    if (fd >= 0) {
      ::close(fd);
      ::unlink(probe.c_str());
      return d;
    }
  }
  return {};
}

// The disk workload with `run_dir` for its own file, for one phase.
struct disk_run : rig::testing::phase_run<disk_workload> {
  disk_run(const std::string& toml, const std::string& run_dir)
      : phase_run(bind_text(disk_workload_options(), toml), with_run_dir(run_dir)) {}
  static workload_env with_run_dir(const std::string& dir) {
    workload_env env{"io"};
    env.run_dir = dir;
    return env;
  }
};

}  // namespace

TEST_CASE("disk randread 4 KiB at iodepth 16, O_DIRECT: many operations, none failed, its own file removed") {
  const std::string dir = direct_io_dir();
  if (dir.empty()) {
    MESSAGE("skipped: no directory here supports O_DIRECT");
    return;
  }
  temp_dir tmp;
  const std::string run_dir = dir + "/rig-disk-test-" + std::to_string(::getpid());
  fs::create_directories(run_dir);
  std::string path;
  {
    disk_run run("mode = \"randread\"\niodepth = 16\nfile_size = \"16MiB\"\n", run_dir);
    path = run.w->path();
    CHECK(fs::file_size(path) == 16u << 20);
    const auto s = run.phase(1000);
    MESSAGE("randread 4 KiB, iodepth 16: " << s.ops << " IOPS, p50 " << double(s.latency.percentile(50)) / 1e3
                                           << " us");
    CHECK(s.ops > 1000);
    CHECK(s.error_total() == 0);
    CHECK(s.latency.count() == s.ops);
    CHECK(s.send_lag.count() == 0);  // closed loop
  }
  CHECK_FALSE(fs::exists(path));
  fs::remove_all(run_dir);
}

TEST_CASE("disk write in open loop holds the asked rate, with an fsync every 10 writes") {
  const std::string dir = direct_io_dir();
  if (dir.empty()) {
    MESSAGE("skipped: no directory here supports O_DIRECT");
    return;
  }
  const std::string run_dir = dir + "/rig-disk-test-w-" + std::to_string(::getpid());
  fs::create_directories(run_dir);
  {
    disk_run run("mode = \"randwrite\"\nrate = \"400/s\"\nfsync_every = 10\nfile_size = \"4MiB\"\n", run_dir);
    const auto s = run.phase(2000);
    MESSAGE("randwrite at 400/s: " << s.ops << " ops in " << run.window_s() << " s, send lag p99 "
                                   << double(s.send_lag.percentile(99)) / 1e3 << " us");
    // Uniform arrivals: exactly 400 a second of the phase, give or take 10% (a disk's own stalls,
    // an fsync every 10 writes) or open_loop_slack_s() of them at its edges, the larger.
    const double want = 400 * run.window_s();
    CHECK(std::abs(double(s.ops) - want) <= std::max(0.1 * want, 400 * rig::testing::open_loop_slack_s()));
    CHECK(s.error_total() == 0);
    CHECK(s.send_lag.count() == s.ops);
  }
  fs::remove_all(run_dir);
}

TEST_CASE("a given file too small and bad keys are refused clearly") {
  temp_dir tmp;
  {
    std::ofstream(tmp.path + "/small.dat") << std::string(4096, 'x');
    run_clock clock;
    window_sink windows;
    disk_workload w(bind_text(disk_workload_options(),
                              "path = \"" + tmp.path + "/small.dat\"\nfile_size = \"1MiB\"\ndirect = false\n"));
    try {
      w.start({"io", "", 0, &clock, &windows});
      FAIL("a 4 KiB file cannot hold 1 MiB of blocks");
    } catch (const std::exception& e) {
      CHECK(std::string(e.what()).find("fewer than file_size") != std::string::npos);
    }
  }
  const toml::table t = toml::parse(std::string_view("block_size = \"1000B\"\nread_share = \"30%\"\n"), std::string_view("d.toml"));
  bind_context ctx{"d.toml", "[workloads.io]", "workloads.io", nullptr, {}};
  diagnostics d;
  const auto v = bind_options(disk_workload_options(), t, ctx, d);
  check_disk_workload(v, ctx, d);
  CHECK(d.str().find("direct I/O needs a multiple of 512 bytes") != std::string::npos);
  CHECK(d.str().find("applies to mode = \"randrw\" only") != std::string::npos);
}
