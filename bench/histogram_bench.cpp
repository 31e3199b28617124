// Nanoseconds per histogram record (goal <= 10 ns), and per percentile query.
// A benchmark, not a test: run it by hand (build/bench/histogram_bench) on a quiet machine.
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "core/clock.hpp"
#include "core/histogram.hpp"

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? size_t(std::atoll(argv[1])) : 20'000'000;
  const int repeats = 7;
  std::mt19937_64 rng(1);
  std::lognormal_distribution<double> d(11.5, 1.2);  // ~100 us median, long tail: like real latencies
  std::vector<int64_t> values(1 << 20);
  for (auto& v : values) v = int64_t(d(rng));
  std::vector<double> per_record;
  uint64_t sink = 0;
  for (int r = 0; r < repeats; ++r) {
    rig::histogram h;
    const int64_t t0 = rig::mono_ns();
    for (size_t i = 0; i < n; ++i) h.record(values[i & (values.size() - 1)]);
    const int64_t t1 = rig::mono_ns();
    sink += h.count();
    per_record.push_back(double(t1 - t0) / double(n));
  }
  std::sort(per_record.begin(), per_record.end());
  rig::histogram h;
  for (auto v : values) h.record(v);
  const int64_t q0 = rig::mono_ns();
  for (int i = 0; i < 1000; ++i) sink += uint64_t(h.percentile(99.9));
  const int64_t q1 = rig::mono_ns();
  std::printf("histogram record: median %.2f ns/record (min %.2f, max %.2f) over %d runs of %zu; goal <= 10 ns: %s\n",
              per_record[repeats / 2], per_record.front(), per_record.back(), repeats, n,
              per_record[repeats / 2] <= 10 ? "met" : "MISSED");
  std::printf("histogram percentile: %.1f us/query; memory %zu KiB per histogram\n", double(q1 - q0) / 1000 / 1e3,
              size_t(rig::histogram::counts_length()) * 8 / 1024);
  return sink == 0;  // keeps the loops from being optimized away
}
