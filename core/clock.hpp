#pragma once
#include <cstdint>
#include <ctime>
#include <string>

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

// A wall-clock time in UTC, as strftime's `pattern` writes it.
inline std::string format_utc(std::time_t t, const char* pattern) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  return std::string(buf, std::strftime(buf, sizeof buf, pattern, &tm));
}

constexpr int64_t ns_per_us = 1'000;
constexpr int64_t ns_per_ms = 1'000'000;
constexpr int64_t ns_per_s = 1'000'000'000;

}  // namespace rig
