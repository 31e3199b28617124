#include <doctest/doctest.h>

#include "core/clock.hpp"
#include "workloads/recorder.hpp"

using namespace rig;

TEST_CASE("samples go to the running phase and between phases they are counted apart") {
  run_clock clock;
  clock.start_ns = 0;
  window_sink sink;
  thread_recorder rec(clock, sink, "rr");
  rec.record(0, 0, 100'000);  // between phases
  clock.phase = 0;
  rec.record(0, 0, 200'000);
  rec.record(0, 10'000, 300'000);
  clock.phase = 2;
  rec.error(error_kind::timeout, 400'000);
  REQUIRE(rec.phases().size() == 3);
  CHECK(rec.between_phases() == 1);
  CHECK(rec.phases()[0] == nullptr);  // left: handed in
  CHECK(rec.phases()[1] == nullptr);
  CHECK(rec.phases()[2]->errors[size_t(error_kind::timeout)] == 1);
  auto handed = rec.take_handed_in();
  REQUIRE(handed.size() == 1);
  CHECK(handed[0].first == 0);
  CHECK(handed[0].second->ops == 2);
  CHECK(handed[0].second->send_lag.count() == 1);  // the closed-loop sample has no lag
}

TEST_CASE("a reply's status class is counted with its op, in the same phase or not at all") {
  run_clock clock;
  clock.start_ns = 0;
  window_sink sink;
  thread_recorder rec(clock, sink, "http");
  clock.phase = 0;
  rec.record(0, 0, 100'000, 0, 200);
  rec.error(error_kind::status_5xx, 200'000, 503);
  clock.phase = -1;  // the phase ended: the op and its status both go uncounted
  rec.record(0, 0, 300'000, 0, 200);
  auto handed = rec.take_handed_in();
  REQUIRE(handed.size() == 1);
  const auto& p = *handed[0].second;
  CHECK(p.ops == 1);
  CHECK(p.status_classes[2] == p.ops);
  CHECK(p.status_classes[5] == 1);
  CHECK(rec.between_phases() == 1);
}

TEST_CASE("one-second windows merge across threads and summarize once") {
  run_clock clock;
  clock.start_ns = 0;
  clock.phase = 0;
  window_sink sink;
  thread_recorder a(clock, sink, "rr"), b(clock, sink, "rr");
  for (int i = 0; i < 100; ++i) a.record(0, 0, 1'000'000 + i);          // second 0, 1 ms
  for (int i = 0; i < 100; ++i) b.record(0, 0, 3'000'000 + i);          // second 0, 3 ms
  a.record(ns_per_s, ns_per_s, ns_per_s + 5'000'000);                   // second 1 hands in second 0
  b.tick(ns_per_s + 1);
  sink.finalize(1);
  auto rows = sink.rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].index == 0);
  CHECK(rows[0].ops == 200);
  CHECK(rows[0].p50_us == doctest::Approx(1000).epsilon(0.01));
  CHECK(rows[0].p99_us == doctest::Approx(3000).epsilon(0.01));
  a.flush();
  sink.finalize(INT64_MAX);
  CHECK(sink.rows().size() == 2);
  // From a second on, one workload's only (the helper process forwards rows this way).
  const auto later = sink.rows_from("rr", 1);
  REQUIRE(later.size() == 1);
  CHECK(later[0].index == 1);
  CHECK(later[0].ops == 1);
  CHECK(sink.rows_from("rr", 0).size() == 2);
  CHECK(sink.rows_from("other", 0).empty());
}

TEST_CASE("a phase the thread has left moves out once, whole, to be taken from another thread") {
  run_clock clock;
  clock.start_ns = 0;
  window_sink sink;
  thread_recorder rec(clock, sink, "mem");
  clock.phase = 0;
  rec.record(0, 0, 100'000);
  rec.record(0, 0, 200'000);
  CHECK(rec.take_handed_in().empty());  // phase 0 still running
  CHECK(rec.past_below() == 0);
  clock.phase = -1;
  CHECK(rec.past_below() == 0);  // not yet seen by the thread
  rec.tick(300'000);  // no sample: the tick notices the phase has ended
  CHECK(rec.past_below() == 1);
  auto got = rec.take_handed_in();
  REQUIRE(got.size() == 1);
  CHECK(got[0].first == 0);
  CHECK(got[0].second->ops == 2);
  CHECK(rec.phases()[0] == nullptr);  // not in results() any more: nothing is counted twice
  clock.phase = 1;
  rec.record(0, 0, 400'000);
  CHECK(rec.take_handed_in().empty());  // between phases nothing was recorded: nothing to hand in
  REQUIRE(rec.phases().size() == 2);
  CHECK(rec.phases()[1]->ops == 1);  // the running phase stays until the thread leaves it
  CHECK(rec.past_below() == 1);
  clock.phase = 3;  // straight on (an idle thread may miss the gap between phases): past 1 and 2
  rec.tick(500'000);
  CHECK(rec.past_below() == 3);
  got = rec.take_handed_in();
  REQUIRE(got.size() == 1);
  CHECK(got[0].first == 1);
}

TEST_CASE("a workload's phase is handed over whole once every thread is past it, the rest at the end") {
  run_clock clock;
  clock.start_ns = 0;
  window_sink sink;
  thread_recorder a(clock, sink, "rr"), b(clock, sink, "rr");
  const std::vector<thread_recorder*> both = {&a, &b};
  phase_assembler assembler;
  clock.phase = 0;
  for (int i = 0; i < 10; ++i) a.record(0, 0, 1'000'000);
  for (int i = 0; i < 30; ++i) b.record(0, 0, 3'000'000);
  CHECK(assembler.add(take_finished(both)).empty());  // still running
  clock.phase = -1;
  a.tick(2'000'000);  // a is past phase 0; b has not looked yet
  auto f = take_finished(both);
  CHECK(f.complete_below == 0);
  CHECK(f.pieces.size() == 1);
  CHECK(assembler.add(std::move(f)).empty());  // a's piece is held, not handed over short
  b.tick(2'000'000);
  auto done = assembler.add(take_finished(both));
  REQUIRE(done.size() == 1);
  CHECK(done[0].first == 0);
  CHECK(done[0].second.ops == 40);
  CHECK(done[0].second.latency.count() == 40);
  CHECK(done[0].second.latency.percentile(50) == doctest::Approx(3'000'000).epsilon(0.001));  // 30 of 40 at 3 ms
  // Phase 1: both record, the threads stop before they see it end; a recorded in 2 as well.
  clock.phase = 1;
  a.record(0, 0, 1'000'000);
  b.record(0, 0, 1'000'000);
  CHECK(assembler.add(take_finished(both)).empty());
  clock.phase = 2;
  a.record(0, 0, 1'000'000);
  CHECK(assembler.add(take_finished(both)).empty());  // a's piece of 1 held: b has not seen 2
  const auto rest = assembler.finish(merge_phases({&a, &b}));
  REQUIRE(rest.size() == 2);
  CHECK(rest[0].first == 1);
  CHECK(rest[0].second.ops == 2);
  CHECK(rest[1].first == 2);
  CHECK(rest[1].second.ops == 1);
}

TEST_CASE("a phase no thread recorded in comes over as zeros once every thread is past it, and only once") {
  run_clock clock;
  clock.start_ns = 0;
  window_sink sink;
  thread_recorder a(clock, sink, "rr");
  phase_assembler assembler;
  clock.phase = 0;
  a.record(0, 0, 1'000'000);
  clock.phase = 1;  // the target stalled: nothing recorded in phase 1
  a.tick(1'000'000);
  clock.phase = 2;
  a.tick(2'000'000);
  const auto done = assembler.add(take_finished({&a}));
  REQUIRE(done.size() == 2);
  CHECK(done[0].first == 0);
  CHECK(done[0].second.ops == 1);
  CHECK(done[1].first == 1);
  CHECK(done[1].second.empty());
  CHECK(assembler.add(take_finished({&a})).empty());
  CHECK(assembler.finish(merge_phases({&a})).empty());  // nothing in phase 2 either
}

TEST_CASE("recorder: a request counts in the phase it was due in, and that phase waits for it") {
  run_clock clock;
  window_sink sink;
  thread_recorder rec(clock, sink, "w");
  clock.begin_phase(0, 1'000);
  rec.hold_from(1'500);  // a request due at 1,500 is open (sent, waiting)
  clock.end_phase(2'000);
  clock.begin_phase(1, 2'000);
  rec.tick(2'100);
  CHECK(rec.past_below() == 0);  // phase 0 is over, but not for this thread: its request is open
  CHECK(take_finished({&rec}).pieces.empty());
  rec.record(1'500, 1'500, 2'500);  // answered in phase 1
  rec.hold_from(INT64_MAX);
  rec.tick(2'600);
  CHECK(rec.past_below() == 1);
  const auto f = take_finished({&rec});
  REQUIRE(f.pieces.size() == 1);
  CHECK(f.pieces[0].first == 0);
  CHECK(f.pieces[0].second.ops == 1);  // the reply is phase 0's
  CHECK(f.pieces[0].second.due == 1);
  CHECK(f.pieces[0].second.replies_in_phase == 0);
  REQUIRE(rec.phases().size() == 2);
  CHECK(rec.phases()[1]->replies_in_phase == 1);  // the rate delivered while phase 1 ran includes it
  CHECK(rec.phases()[1]->ops == 0);
  // Due between the phases: counted in none; at the run's end, what was due and never ended is said.
  rec.hold_from(2'700);  // two requests of phase 1 still open when it ends
  clock.end_phase(3'000);
  rec.record(3'100, 3'100, 3'200);
  CHECK(rec.between_phases() == 1);
  rec.not_done(2'700, false);
  rec.not_done(2'800, true);
  CHECK(rec.phases()[1]->not_sent == 1);
  CHECK(rec.phases()[1]->unfinished == 1);
  CHECK(rec.phases()[1]->due == 2);
  CHECK(rec.late_for_phase() == 0);
}
