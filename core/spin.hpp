#pragma once
// A fixed amount of CPU work: a loop of instructions, not a span of time, so a slower,
// capped or shared CPU makes it take longer, as it would real work.
#include <cstdint>

namespace rig {

// Runs `iterations` of a multiply-add chain the compiler cannot drop.
uint64_t spin(uint64_t iterations);
// Iterations per nanosecond on this CPU now: the best of a few 10 ms samples, so a
// preemption during one does not shrink the figure.
double spin_per_ns();

}  // namespace rig
