#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace rig {

// netem's delay distribution tables, generated the way iproute2 generates normal.dist,
// pareto.dist and paretonormal.dist (4096 entries, NETEM_DIST_SCALE 8192), so rig needs
// no table files. "uniform" has no table: netem then spreads jitter evenly.
std::vector<int16_t> netem_distribution(const std::string& name);

}  // namespace rig
