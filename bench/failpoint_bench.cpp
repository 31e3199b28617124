// What a failpoint costs when it is not armed (goal: one relaxed atomic load, nothing more),
// beside the same loop without it, and what the slow path costs once any failpoint is armed.
// A benchmark, not a test: run it by hand (build/bench/failpoint_bench) on a quiet machine.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/clock.hpp"
#include "rig_failpoint.hpp"

namespace {

// A few instructions of real work per iteration (a xorshift step), so the loop is not empty.
__attribute__((noinline)) uint64_t plain(uint64_t n, uint64_t x) {
  for (uint64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

__attribute__((noinline)) uint64_t with_failpoint(uint64_t n, uint64_t x) {
  for (uint64_t i = 0; i < n; ++i) {
    x += uint64_t(RIG_FAILPOINT("bench.point"));
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

double median_ns_per_iter(uint64_t (*f)(uint64_t, uint64_t), uint64_t n, uint64_t* sink) {
  std::vector<double> runs;
  for (int r = 0; r < 9; ++r) {
    const int64_t t0 = rig::mono_ns();
    *sink += f(n, *sink | 1);
    runs.push_back(double(rig::mono_ns() - t0) / double(n));
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t n = argc > 1 ? uint64_t(std::atoll(argv[1])) : 200'000'000;
  uint64_t sink = 0;
  char err[128];
  rig_fp_disarm_all();
  const double base = median_ns_per_iter(plain, n, &sink);
  const double off = median_ns_per_iter(with_failpoint, n, &sink);
  std::printf("loop without a failpoint:         %.3f ns/iteration (median of 9 x %llu)\n", base,
              (unsigned long long)n);
  std::printf("loop with a disarmed failpoint:   %.3f ns/iteration: +%.3f ns per failpoint, ratio %.3f\n", off,
              off - base, off / base);
  // Another failpoint armed: this one takes the slow path (count the hit, find it off).
  rig_fp_set("bench.other", "error", err, sizeof err);
  const double other = median_ns_per_iter(with_failpoint, n / 20, &sink);
  std::printf("another failpoint armed:          %.3f ns/iteration (+%.3f ns: the hit is counted)\n", other,
              other - base);
  rig_fp_set("bench.point", "error p=0", err, sizeof err);
  const double p0 = median_ns_per_iter(with_failpoint, n / 20, &sink);
  std::printf("this failpoint armed at p=0:      %.3f ns/iteration (+%.3f ns: counted and a random draw)\n", p0,
              p0 - base);
  rig_fp_disarm_all();
  return sink == 42;  // keeps the loops from being optimized away
}
