#include "workloads/load_model.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/draw.h"
#include "core/units.hpp"

namespace rig {

option_table with_load_options(option_table own, bool think) {
  const option_table load = {
      {.name = "rate", .type = opt_type::op_rate, .default_text = "",
       .help = "total ops per second, open loop (latency from the intended send time); absent: closed loop",
       .min = 0.001, .max = 1e7},
      {.name = "arrival", .type = opt_type::string, .default_text = "\"uniform\"",
       .help = "open loop: evenly spaced sends, or a Poisson process (exponential gaps) at the same mean rate",
       .allowed = {"uniform", "poisson"}},
      {.name = "ramp_to", .type = opt_type::op_rate, .default_text = "",
       .help = "open loop: the rate rises (or falls) linearly from 'rate' at each phase's start to this at its end",
       .min = 0.001, .max = 1e7},
      {.name = "steps", .type = opt_type::strings, .default_text = "",
       .help = "open loop: rates held in turn for 'step' each from each phase's start, the last until it ends "
               "(e.g. [\"1000/s\", \"2000/s\", \"4000/s\"]); instead of 'rate'"},
      {.name = "step", .type = opt_type::duration, .default_text = "\"1s\"",
       .help = "how long each of 'steps' holds", .min = 1e6, .max = 86400e9},
  };
  own.insert(own.end(), load.begin(), load.end());
  if (think)
    own.push_back({.name = "think", .type = opt_type::duration, .default_text = "\"0us\"",
                   .help = "closed loop: pause between a reply and the next request", .min = 0, .max = 3600e9});
  return own;
}

void check_load_model(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  const bool steps = v.has("steps");
  if (steps && v.has("rate"))
    diags.add(v.where("steps"), "'steps' and 'rate' in " + ctx.section + " conflict: steps set the rate themselves");
  if (steps && v.has("ramp_to"))
    diags.add(v.where("ramp_to"), "'ramp_to' and 'steps' in " + ctx.section + " conflict: ramp or step, not both");
  if (v.has("ramp_to") && !v.has("rate"))
    diags.add(v.where("ramp_to"), "'ramp_to' in " + ctx.section + " needs 'rate', the rate the ramp starts from");
  if (v.is_set("step") && !steps)
    diags.add(v.where("step"), "'step' in " + ctx.section + " applies to 'steps' only");
  if (steps) {
    if (v.strings("steps").empty()) diags.add(v.where("steps"), "'steps' in " + ctx.section + " is empty");
    for (const auto& s : v.strings("steps")) {
      std::string why;
      const auto r = parse_op_rate(s, &why);
      if (!r || *r < 0.001 || *r > 1e7)
        diags.add(v.where("steps"), fmt::format("'steps' in {}: \"{}\" is not a rate between 0.001/s and 1e7/s{}",
                                                ctx.section, s, why.empty() ? "" : " (" + why + ")"));
    }
  }
  const bool open = steps || v.has("rate");
  if (!open && v.is_set("arrival"))
    diags.add(v.where("arrival"), "'arrival' in " + ctx.section + " applies to an open loop; set 'rate' or 'steps'");
  if (open && v.has("think") && v.duration_ns("think") > 0)
    diags.add(v.where("think"), "'think' in " + ctx.section +
                                    " applies to a closed loop; an open loop sends at 'rate' whatever the replies do");
}

load_model load_model::from(const option_values& v) {
  load_model m;
  if (v.has("rate")) m.rate = v.per_second("rate");
  if (v.has("arrival") && v.str("arrival") == "poisson") m.arrival = arrivals::poisson;
  if (v.has("ramp_to")) m.ramp_to = v.per_second("ramp_to");
  if (v.has("steps"))
    for (const auto& s : v.strings("steps")) m.steps.push_back(parse_op_rate(s).value_or(1.0));
  if (v.has("step")) m.step_ns = v.duration_ns("step");
  if (v.has("think")) m.think_ns = v.duration_ns("think");
  return m;
}

double load_model::rate_at(int64_t in_phase_ns, int64_t phase_ns) const {
  if (!steps.empty()) {
    const int64_t i = step_ns > 0 ? in_phase_ns / step_ns : 0;
    return steps[size_t(std::min<int64_t>(i, int64_t(steps.size()) - 1))];
  }
  if (ramp_to > 0 && phase_ns > 0) {
    const double f = std::clamp(double(in_phase_ns) / double(phase_ns), 0.0, 1.0);
    return rate + (ramp_to - rate) * f;
  }
  return rate;
}

nlohmann::json load_model::describe() const {
  if (!open()) return {{"loop", "closed"}, {"think_us", double(think_ns) / 1e3}};
  nlohmann::json j = {{"loop", "open"}, {"arrival", arrival == arrivals::poisson ? "poisson" : "uniform"}};
  if (!steps.empty()) {
    j["steps_per_s"] = steps;
    j["step_s"] = double(step_ns) / 1e9;
  } else {
    j["rate_per_s"] = rate;
    if (ramp_to > 0) j["ramp_to_per_s"] = ramp_to;
  }
  return j;
}

pacer::pacer(const load_model& m, const run_clock& clock, int streams, int index, uint64_t seed)
    : m_(m), clock_(clock), share_(1.0 / std::max(1, streams)), index_(index), streams_(std::max(1, streams)),
      stream_(rig_stream_seed(seed, "arrivals", uint64_t(index))) {}

double pacer::stream_rate(int64_t t_ns) const {
  const auto [in, len] = clock_.in_phase(t_ns);
  return std::max(m_.rate_at(in, len) * share_, 1e-9);
}

double pacer::uniform01() { return rig_draw_unit(stream_, draws_++); }

void pacer::start(int64_t t0_ns) {
  const double gap = 1e9 / stream_rate(t0_ns);
  // Streams interleave: stream i of n starts i/n of a gap in (Poisson: a random gap in).
  next_ns_ = t0_ns + int64_t(m_.arrival == load_model::arrivals::poisson ? -std::log(uniform01()) * gap
                                                                          : gap * index_ / streams_);
}

int64_t pacer::next() {
  const int64_t at = next_ns_;
  // The gap holds `work` arrivals' worth of the rate (1; Poisson: an exponential draw). Under a
  // changing rate (a ramp) the rate at the gap's start alone lags it: the rate at the gap's
  // midpoint, found in two steps, makes the count the rate's integral (the lag was 33 of 9,000
  // over a 500-4000/s ramp; a year's gap at most, so a near-zero rate cannot overflow).
  const double work = m_.arrival == load_model::arrivals::poisson ? -std::log(uniform01()) : 1.0;
  constexpr double max_gap = 365.0 * 86400 * 1e9;
  double gap = std::min(max_gap, work * 1e9 / stream_rate(at));
  for (int i = 0; i < 2; ++i) gap = std::min(max_gap, work * 1e9 / stream_rate(at + int64_t(gap / 2)));
  next_ns_ += std::max<int64_t>(1, int64_t(gap));
  return at;
}

void count_never_taken(thread_recorder& rec, pacer& plan, const run_clock& clock) {
  const int64_t end = clock.last_end();
  for (int n = 0; n < 10'000'000 && plan.peek() < end; ++n) rec.not_done(plan.next(), false);
}

std::string generator_limited_warning(const phase_stats& s) {
  if (s.ops == 0) return "";
  const double share = double(s.late_sends) / double(s.ops);
  if (share <= generator_limited_share) return "";
  return fmt::format("generator lag > {} for {:.1f}% of ops (sent late though nothing held them back): the "
                     "generator, not the target, limited this phase",
                     format_duration_us(double(generator_late_ns) / 1e3), share * 100);
}

}  // namespace rig
