#include "core/spin.hpp"

#include <algorithm>

#include "core/clock.hpp"

namespace rig {

uint64_t spin(uint64_t iterations) {
  volatile uint64_t x = 88172645463325252ull;
  for (uint64_t i = 0; i < iterations; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

double spin_per_ns() {
  double best = 0;
  for (int k = 0; k < 5; ++k) {
    const uint64_t n = 2'000'000;
    const int64_t t0 = mono_ns();
    spin(n);
    best = std::max(best, double(n) / double(std::max<int64_t>(1, mono_ns() - t0)));
  }
  return best;
}

}  // namespace rig
