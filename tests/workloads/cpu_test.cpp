// The cpu workload: calibrated units of work, closed loop and at a rate, and the work rate
// falling when a neighbour takes the CPU its thread is on.
#include <doctest/doctest.h>
#include <sched.h>

#include <thread>

#include "../helpers.hpp"
#include "phase_run.hpp"
#include "core/clock.hpp"
#include "workloads/cpu.hpp"

using namespace rig;
using rig::testing::bind_text;

namespace {
phase_stats run_cpu(const std::string& toml, int64_t ms) {
  return rig::testing::phase_run<cpu_workload>(bind_text(cpu_workload_options(), toml), {"cpu"}).phase(ms);
}
}  // namespace

TEST_CASE("cpu workload, closed loop: a unit of 1 ms takes about 1 ms on an idle CPU, one after another") {
  const auto s = run_cpu("unit = \"1ms\"\n", 1000);
  const double p50_ms = double(s.latency.percentile(50)) / 1e6;
  const double busy_s = double(s.ops) * s.latency.mean() / 1e9;
  MESSAGE("1 ms units: " << s.ops << " in 1 s, p50 " << p50_ms << " ms, units back to back for " << busy_s << " s");
  // One after another: the units fill the phase, however many a loaded CPU lets through (a
  // unit that waits for the CPU takes longer, the loop never idles). Short by at most the unit
  // in progress at each edge. (A count, >= 700, was this check before: a test beside it on the
  // same CPU can take half of it.)
  CHECK(busy_s >= 0.9);
  // Calibrated while another test loads the other CPU, a unit can come out short (1067 units of
  // 0.90 ms at p50 in a parallel ctest run here): as far as the p50 bound below allows.
  CHECK(s.ops <= 1250);
  // doctest's Approx is relative to 1 + the value: this is 0.5 ms to 1.67 ms. A scheduler's slice
  // is longer than a unit, so most units run whole even on a shared CPU.
  CHECK(p50_ms == doctest::Approx(1.0).epsilon(0.25));
  CHECK(s.error_total() == 0);
}

TEST_CASE("cpu workload at a rate: the asked units per second, each about its calibrated length") {
  const auto s = run_cpu("unit = \"200us\"\nrate = \"500/s\"\nthreads = 2\n", 2000);
  MESSAGE("200 us units at 500/s: " << s.ops << " in 2 s");
  CHECK(double(s.ops) == doctest::Approx(1000).epsilon(0.1));
  CHECK(double(s.service.percentile(50)) / 1e3 == doctest::Approx(200).epsilon(0.3));
}

TEST_CASE("cpu workload: a spinning neighbour on the same CPU halves the work rate") {
  if (std::thread::hardware_concurrency() < 2) {
    MESSAGE("skipped: needs 2 CPUs");
    return;
  }
  // Both on CPU 1: this thread's workload and a spinner started beside it.
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(1, &one);
  cpu_set_t prior;
  REQUIRE(::sched_getaffinity(0, sizeof prior, &prior) == 0);
  REQUIRE(::sched_setaffinity(0, sizeof one, &one) == 0);  // threads started now inherit it
  const auto alone = run_cpu("unit = \"1ms\"\n", 1000);
  std::atomic<bool> stop{false};
  std::thread spinner([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  const auto shared = run_cpu("unit = \"1ms\"\n", 1000);
  stop = true;
  spinner.join();
  ::sched_setaffinity(0, sizeof prior, &prior);
  const double ratio = double(shared.ops) / double(alone.ops);
  MESSAGE("work rate beside a spinner on the same CPU: " << ratio * 100 << "% of alone");
  CHECK(ratio == doctest::Approx(0.5).epsilon(0.3));
  // The scheduler hands out slices longer than a unit: most units still run whole (p50 as
  // alone) and the wait falls between them, which the work rate shows.
  MESSAGE("unit p50 alone " << double(alone.latency.percentile(50)) / 1e3 << " us, shared "
                            << double(shared.latency.percentile(50)) / 1e3 << " us; p99 shared "
                            << double(shared.latency.percentile(99)) / 1e3 << " us");
}
