#pragma once
// How a request workload offers load: closed loop (optional think time), or open loop at a
// constant or Poisson rate that may ramp or step within each phase. Latency is measured from
// the intended send time the pacer hands out, so a slow target cannot slow the clock that
// judges it (coordinated omission).
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/options.hpp"
#include "workloads/recorder.hpp"

namespace rig {

// A phase where more than this share of ops went late says the generator limited it.
constexpr double generator_limited_share = 0.01;

// Sent later than the op was allowed to go: after its intended time and after the stream
// was free (the previous reply in, the I/O slot back). Returns the generator's own lag.
inline int64_t generator_lag_ns(int64_t intended_ns, int64_t free_ns, int64_t sent_ns) {
  const int64_t allowed = intended_ns > free_ns ? intended_ns : free_ns;
  return sent_ns > allowed ? sent_ns - allowed : 0;
}

struct load_model {
  enum class arrivals { uniform, poisson };
  double rate = 0;  // ops/s in total; 0 with no steps: closed loop
  arrivals arrival = arrivals::uniform;
  double ramp_to = 0;          // > 0: linear from `rate` at a phase's start to this at its end
  std::vector<double> steps;   // rates, each held for step_ns from a phase's start; the last holds
  int64_t step_ns = 0;
  int64_t think_ns = 0;        // closed loop: pause between a reply and the next request

  bool open() const { return rate > 0 || !steps.empty(); }
  // Total rate `in_phase_ns` into a phase that lasts `phase_ns` (0: unknown, e.g. between phases).
  double rate_at(int64_t in_phase_ns, int64_t phase_ns) const;
  nlohmann::json describe() const;

  static load_model from(const option_values& v);
};

// The load-model keys, appended to a request workload's own table (think: closed-loop
// workloads that have a reply to wait for).
option_table with_load_options(option_table own, bool think);
void check_load_model(const option_values& v, const bind_context& ctx, diagnostics& diags);

// One stream's intended send times: a connection's (or an I/O slot's) share of the total
// rate. The phase (and how far into it) comes from the run clock, so ramps and steps
// restart with each phase.
class pacer {
 public:
  // streams: how many pacers share the rate; index: this one's place among them (its first
  // send is offset so the streams interleave evenly); seed: the workload's, from which this
  // pacer's Poisson arrivals draw (stream "arrivals", index), the same each run.
  pacer(const load_model& m, const run_clock& clock, int streams, int index, uint64_t seed);
  void start(int64_t t0_ns);
  int64_t next();  // the next intended send time; advances
  int64_t peek() const { return next_ns_; }  // the same without advancing

 private:
  double stream_rate(int64_t t_ns) const;
  double uniform01();

  const load_model& m_;
  const run_clock& clock_;
  double share_;
  int index_, streams_;
  uint64_t stream_, draws_ = 0;
  int64_t next_ns_ = 0;
};

// At the run's end: the schedule's requests due before the last phase ended that were never
// taken (the connection or thread was held up), each not_sent in the phase it was due in. At
// most 10 million a schedule (a schedule that far behind is said by its count either way).
void count_never_taken(thread_recorder& rec, pacer& plan, const run_clock& clock);
// The same after the one already taken from the schedule (`taken`: its intended time) was not done either.
inline void not_taken_at_end(thread_recorder& rec, pacer& plan, int64_t taken) {
  if (taken < rec.clock().last_end()) rec.not_done(taken, false);
  count_never_taken(rec, plan, rec.clock());
}

// "generator lag > 1 ms for 3.2% of requests ...": empty when the phase is not generator limited.
std::string generator_limited_warning(const phase_stats& s);

}  // namespace rig
