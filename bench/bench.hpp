#pragma once
// Shared by the benchmarks.
#include <algorithm>
#include <vector>

namespace rig::bench {

// The median of the repeats (the upper middle one for an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace rig::bench
