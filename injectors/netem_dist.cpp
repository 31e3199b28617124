#include "injectors/netem_dist.hpp"

#include <climits>
#include <cmath>
#include <stdexcept>

namespace rig {

namespace {

constexpr int fine_steps = 16384;  // the inverse CDF is sampled this finely, every 4th kept
constexpr double dist_scale = 8192;  // NETEM_DIST_SCALE
constexpr double pareto_shape = 3.0;

int16_t clamp16(double v) { return int16_t(v < SHRT_MIN ? SHRT_MIN : v > SHRT_MAX ? SHRT_MAX : v); }

// table[i] = x with P(X <= x) = i / fine_steps for the standard normal, by scanning x
// (the same step and rounding as iproute2's generator, so the tables agree exactly).
std::vector<double> normal_inverse_cdf() {
  std::vector<double> t(fine_steps + 1);
  for (double x = -10.0; x < 10.05; x += .00005) {
    const int i = int(std::rint(fine_steps * (.5 + .5 * std::erf(x / std::sqrt(2.0)))));
    t[size_t(i)] = x;
  }
  return t;
}

// The Pareto quantile at 1 - u/65536, shifted and scaled to netem's units.
int pareto_value(int u) {
  double d = 1.0 / std::pow(double(u) / 65536.0, 1.0 / pareto_shape);
  d = (d - 1.5) * (4.0 / 3.0) * dist_scale;
  return int(std::rint(std::min(d, 32767.0)));
}

}  // namespace

std::vector<int16_t> netem_distribution(const std::string& name) {
  std::vector<int16_t> out;
  if (name == "uniform") return out;
  if (name == "pareto") {
    for (int u = 65536; u > 0; u -= 16) out.push_back(int16_t(pareto_value(u)));
    return out;
  }
  const auto inv = normal_inverse_cdf();
  for (int i = 0; i < fine_steps; i += 4) {
    if (name == "normal") {
      out.push_back(clamp16(std::rint(inv[size_t(i)] * dist_scale)));
    } else if (name == "paretonormal") {
      const int normal = int(std::rint(inv[size_t(i)] * dist_scale));
      out.push_back(clamp16((normal + 3 * pareto_value(65536 - 4 * i)) / 4));
    } else {
      throw std::invalid_argument("unknown netem distribution '" + name + "'");
    }
  }
  return out;
}

}  // namespace rig
