#pragma once
#include <cstdint>
#include <ctime>

namespace rig {

// Monotonic nanoseconds; the one time base for every measurement in a run.
inline int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Wall-clock seconds since the epoch, for phase boundaries that other rigs can line up.
inline double wall_s() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

constexpr int64_t ns_per_us = 1'000;
constexpr int64_t ns_per_ms = 1'000'000;
constexpr int64_t ns_per_s = 1'000'000'000;

}  // namespace rig
