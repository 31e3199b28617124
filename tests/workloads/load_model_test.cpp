// The load models and coordinated-omission correction on a fake clock: every time here is
// made up, so the figures are exact, not timing-dependent.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include "core/clock.hpp"
#include "workloads/load_model.hpp"

using namespace rig;

namespace {

// A run clock in phase 0 since t = 0 for `phase_s` seconds.
struct fake_phase {
  run_clock clock;
  explicit fake_phase(double phase_s) {
    clock.start_ns = 0;
    clock.phase_ns = {int64_t(phase_s * 1e9)};
    clock.phase_start_ns = 0;
    clock.phase = 0;
  }
};

// Intended send times of `streams` pacers sharing the model, all below `until_ns`, merged in order.
std::vector<int64_t> schedule(const load_model& m, const run_clock& clock, int streams, int64_t until_ns,
                              uint64_t seed = 1) {
  std::vector<int64_t> all;
  for (int i = 0; i < streams; ++i) {
    pacer p(m, clock, streams, i, seed);
    p.start(0);
    for (int64_t t = p.next(); t < until_ns; t = p.next()) all.push_back(t);
  }
  std::sort(all.begin(), all.end());
  return all;
}

int64_t count_in(const std::vector<int64_t>& ts, double from_s, double to_s) {
  return std::count_if(ts.begin(), ts.end(), [&](int64_t t) { return t >= from_s * 1e9 && t < to_s * 1e9; });
}

}  // namespace

TEST_CASE("uniform arrivals: the rate exactly, streams interleaved evenly") {
  fake_phase f(10);
  load_model m;
  m.rate = 1000;
  const auto ts = schedule(m, f.clock, 4, ns_per_s);
  CHECK(ts.size() == 1000);
  // Four connections at 250/s each, offset by a quarter gap: one send every 1 ms overall.
  for (size_t i = 1; i < ts.size(); ++i) REQUIRE(ts[i] - ts[i - 1] == 1'000'000);
}

TEST_CASE("Poisson arrivals: the mean rate, exponential gaps") {
  fake_phase f(1000);
  load_model m;
  m.rate = 10'000;
  m.arrival = load_model::arrivals::poisson;
  const auto ts = schedule(m, f.clock, 1, 20 * ns_per_s, 7);
  // The draws are fixed by the seed (core/draw.h); the bounds hold for any seed. Arrivals in 20 s
  // at 10,000/s: Poisson(200,000), sigma 447; 5 sigma is 2,236 (the 1% this was, 4.5 sigma).
  CHECK(std::abs(double(ts.size()) - 200'000) <= 5 * 447.2);
  std::vector<double> gaps;
  for (size_t i = 1; i < ts.size(); ++i) gaps.push_back(double(ts[i] - ts[i - 1]));
  const double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / double(gaps.size());
  double var = 0;
  for (double g : gaps) var += (g - mean) * (g - mean);
  const double cv = std::sqrt(var / double(gaps.size())) / mean;
  // The mean gap is 20 s over the count: relative sigma 1/sqrt(200,000) = 0.224%; 5 sigma 1.12%.
  CHECK(std::abs(mean - 100'000) <= 5 * 0.002236 * 100'000);
  // An exponential's coefficient of variation is 1 (uniform gaps have 0); over 200,000 gaps its
  // sigma is 0.0023 (simulated); doctest's Approx here is +/-0.04, 17 sigma.
  CHECK(cv == doctest::Approx(1.0).epsilon(0.02));
  // P(gap > mean) = 1/e; Binomial(200,000, 0.368), sigma of the share 0.0011; Approx +/-0.027, 25 sigma.
  const double over_mean = double(std::count_if(gaps.begin(), gaps.end(), [&](double g) { return g > mean; }));
  CHECK(over_mean / double(gaps.size()) == doctest::Approx(std::exp(-1.0)).epsilon(0.02));
  // Several streams merge into one Poisson process of the total rate: Poisson(200,000) again.
  const auto merged = schedule(m, f.clock, 8, 20 * ns_per_s, 7);
  CHECK(std::abs(double(merged.size()) - 200'000) <= 5 * 447.2);
}

TEST_CASE("a ramp rises linearly over the phase, and restarts with the next") {
  fake_phase f(10);
  load_model m;
  m.rate = 1000;
  m.ramp_to = 3000;
  const auto ts = schedule(m, f.clock, 2, 10 * ns_per_s);
  CHECK(double(ts.size()) == doctest::Approx(20'000).epsilon(0.01));  // the mean of 1000 and 3000 for 10 s
  CHECK(double(count_in(ts, 0, 1)) == doctest::Approx(1100).epsilon(0.02));
  CHECK(double(count_in(ts, 4.5, 5.5)) == doctest::Approx(2000).epsilon(0.02));
  CHECK(double(count_in(ts, 9, 10)) == doctest::Approx(2900).epsilon(0.02));
  // Phase 1 starts at 10 s: the ramp begins again from 1000/s.
  f.clock.phase_ns.push_back(10 * ns_per_s);
  f.clock.phase_start_ns = 10 * ns_per_s;
  f.clock.phase = 1;
  CHECK(m.rate_at(0, 10 * ns_per_s) == 1000);
  pacer p(m, f.clock, 1, 0, 1);
  p.start(10 * ns_per_s);
  int n = 0;
  for (int64_t t = p.next(); t < 11 * ns_per_s; t = p.next()) ++n;
  CHECK(double(n) == doctest::Approx(1100).epsilon(0.02));
}

TEST_CASE("a schedule computed after its phase ended keeps that phase's ramp") {
  // The CI failure: a connection held by a slow reply computes its next sends after the phase
  // ended; at the rate of the running phase (none: the base 500/s) its last second's share of a
  // 500-4000/s ramp came out 8x too sparse, and the phase counted 8,260 requests due of 9,000.
  run_clock clock;
  clock.start_ns = 0;
  clock.phase_ns = {4 * ns_per_s, 4 * ns_per_s};
  clock.begin_phase(0, 0);
  clock.end_phase(4 * ns_per_s);
  clock.begin_phase(1, 5 * ns_per_s);  // the next phase runs, from 5 s
  load_model m;
  m.rate = 500;
  m.ramp_to = 4000;
  const auto ts = schedule(m, clock, 32, 4 * ns_per_s);
  // Uniform arrivals: the ramp's mean 2,250/s for 4 s. Each gap is sized by the rate at its
  // midpoint, so the count is the rate's integral (from the rate at each gap's start: 33 short).
  CHECK(std::abs(double(ts.size()) - 9000) <= 2);
  CHECK(std::abs(double(count_in(ts, 3, 4)) - 3562) <= 2);  // 3,562.5 due in the last second
  // Between the phases, the base rate; in phase 1, its own ramp from its own start.
  CHECK(m.rate_at(clock.in_phase(4'500'000'000).first, clock.in_phase(4'500'000'000).second) == 500);
  CHECK(clock.in_phase(7 * ns_per_s) == std::pair<int64_t, int64_t>{2 * ns_per_s, 4 * ns_per_s});
}

TEST_CASE("steps hold each rate for a step, the last until the phase ends") {
  fake_phase f(4);
  load_model m;
  m.steps = {100, 500};
  m.step_ns = ns_per_s;
  const auto ts = schedule(m, f.clock, 1, 4 * ns_per_s);
  CHECK(count_in(ts, 0, 1) == 100);
  CHECK(std::abs(count_in(ts, 1, 2) - 500) <= 1);
  CHECK(std::abs(count_in(ts, 2, 4) - 1000) <= 1);
  // Between phases the schedule runs at the first step's rate.
  f.clock.phase = -1;
  CHECK(m.rate_at(f.clock.in_phase(3 * ns_per_s).first, 0) == 100);
}

namespace {

// One connection's requests against a server that answers in 100 us, except while it is
// paused (from 2 s to 3 s), when every request waits for the pause to end. Open loop sends
// from the pacer's schedule, closed loop as soon as the previous reply is in.
phase_stats simulate(bool open_loop, int connections) {
  fake_phase f(5);
  window_sink sink;
  thread_recorder rec(f.clock, sink, "rr");
  load_model m;
  m.rate = 1000;
  auto serve = [](int64_t sent) {
    const int64_t resume = 3 * ns_per_s;
    if (sent >= 2 * ns_per_s && sent < resume) return resume + 100'000;
    return sent + 100'000;
  };
  for (int c = 0; c < connections; ++c) {
    pacer p(m, f.clock, connections, c, 1);
    p.start(0);
    int64_t free = 0;
    for (;;) {
      const int64_t intended = open_loop ? p.next() : free;
      const int64_t sent = std::max(intended, free);  // one request in flight per connection
      if (sent >= 5 * ns_per_s) break;
      const int64_t done = serve(sent);
      rec.record(intended, sent, done, generator_lag_ns(intended, free, sent));
      free = done;
    }
  }
  return *rec.phases().at(0);
}

}  // namespace

TEST_CASE("coordinated omission: a 1 s stall delays every request meant for it in open loop, one in closed loop") {
  const phase_stats open = simulate(true, 1);
  // 5,000 requests meant for 5 s; the 1,000 meant for the stall wait 0..1 s for it, and the
  // ~110 meant for the 0.1 s the connection then needs to work off its backlog wait a little.
  CHECK(open.ops == 5000);
  const uint64_t delayed = open.latency.count() - open.latency.count_below(1'000'000);
  CHECK(delayed >= 1000);
  CHECK(delayed <= 1120);
  CHECK(open.latency.count() - open.latency.count_below(100'000'000) >= 900);
  CHECK(open.latency.percentile(99) >= 900'000'000);
  CHECK(open.latency.max() >= 990'000'000);
  // Sends held back by the stalled connection are the target's doing, not the generator's.
  CHECK(open.late_sends == 0);
  CHECK(generator_limited_warning(open).empty());
  const phase_stats closed = simulate(false, 4);
  // Closed loop: each of 4 connections has exactly one slow request; the percentiles hide it.
  CHECK(closed.latency.count() - closed.latency.count_below(1'000'000) == 4);
  CHECK(closed.latency.percentile(99) < 1'000'000);
}

TEST_CASE("generator lag: counted only past the moment an op was free to go, warned above 1% of ops") {
  CHECK(generator_lag_ns(100, 50, 120) == 20);    // late after its intended time
  CHECK(generator_lag_ns(100, 500, 520) == 20);   // late after the connection was free
  CHECK(generator_lag_ns(100, 500, 500) == 0);    // waited for the target only
  run_clock clock;
  clock.phase = 0;
  window_sink sink;
  thread_recorder rec(clock, sink, "rr");
  for (int i = 0; i < 99; ++i) rec.record(0, 0, 1000, 0);
  rec.record(0, 0, 1000, 2 * generator_late_ns);
  CHECK(generator_limited_warning(*rec.phases()[0]).empty());  // 1 of 100: not over 1%
  rec.record(0, 0, 1000, 2 * generator_late_ns);
  const std::string w = generator_limited_warning(*rec.phases()[0]);
  CHECK(w.find("for 2.0% of ops") != std::string::npos);
  CHECK(w.find("the generator, not the target, limited this phase") != std::string::npos);
}

TEST_CASE("histograms merged across threads equal the single-thread result") {
  run_clock clock;
  clock.phase = 0;
  window_sink sink;
  thread_recorder one(clock, sink, "rr");
  std::vector<std::unique_ptr<thread_recorder>> four;
  for (int i = 0; i < 4; ++i) four.push_back(std::make_unique<thread_recorder>(clock, sink, "rr"));
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 100'000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const int64_t intended = int64_t(x % 1'000'000'000), sent = intended + int64_t(x % 5000);
    const int64_t done = sent + 1000 + int64_t((x >> 20) % 100'000'000);
    one.record(intended, sent, done, sent - intended);
    four[size_t(i % 4)]->record(intended, sent, done, sent - intended);
  }
  struct holder {
    std::unique_ptr<thread_recorder> rec;
  };
  std::vector<std::unique_ptr<holder>> hs;
  for (auto& r : four) hs.push_back(std::make_unique<holder>(holder{std::move(r)}));
  const auto merged = merge_phases_of(hs).at(0);
  const auto& single = *one.phases().at(0);
  CHECK(merged.ops == single.ops);
  CHECK(merged.late_sends == single.late_sends);
  for (double q : {0.0, 50.0, 90.0, 99.0, 99.9, 100.0}) {
    CHECK(merged.latency.percentile(q) == single.latency.percentile(q));
    CHECK(merged.service.percentile(q) == single.service.percentile(q));
    CHECK(merged.send_lag.percentile(q) == single.send_lag.percentile(q));
  }
  CHECK(merged.latency.mean() == doctest::Approx(single.latency.mean()));
}

TEST_CASE("Poisson arrivals repeat with the seed: the same seed the same send times, another seed and another stream others") {
  fake_phase f(10);
  load_model m;
  m.rate = 1000;
  m.arrival = load_model::arrivals::poisson;
  const auto a = schedule(m, f.clock, 4, ns_per_s, 42);
  CHECK(schedule(m, f.clock, 4, ns_per_s, 42) == a);  // to the nanosecond
  CHECK(schedule(m, f.clock, 4, ns_per_s, 43) != a);
  // Two connections of one workload draw from streams of their own.
  pacer p0(m, f.clock, 2, 0, 42), p1(m, f.clock, 2, 1, 42);
  p0.start(0);
  p1.start(0);
  std::vector<int64_t> g0, g1;
  for (int i = 0; i < 100; ++i) g0.push_back(p0.next()), g1.push_back(p1.next());
  CHECK(g0 != g1);
}
