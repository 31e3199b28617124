// The compare gate's decisions on known figures: thresholds, intervals over repeats, no value.
#include <doctest/doctest.h>

#include "core/error.hpp"
#include "reports/compare_gate.hpp"

using namespace rig;

namespace {

// A run with one phase "p" and workload "rr": its p50 and p99 (us) and throughput.
run_report run_with(double p50, double p99, double thr, uint64_t replies = 1000) {
  run_report r;
  phase_result p;
  p.name = "p";
  p.completed = true;
  workload_phase_result w;
  w.name = "rr";
  w.latency.count = replies;
  w.latency.p50 = p50;
  w.latency.p99 = p99;
  w.throughput_ops_s = thr;
  p.workloads.push_back(w);
  r.phases.push_back(p);
  return r;
}

run_group group(const std::string& kind, const std::vector<double>& p99s, double scale = 1) {
  run_group g{kind == "run" ? "a-run" : "a-repeat", kind, {}};
  for (double v : p99s) g.runs.push_back({"", run_with(v / 2 * scale, v * scale, 1000 / scale)});
  return g;
}

}  // namespace

TEST_CASE("--fail-if parses a figure, a comparison and a ratio, and says where a bad one is wrong") {
  const gate_condition c = parse_fail_if("p99 > 1.20x");
  CHECK(c.figure == "p99");
  CHECK(c.op == ">");
  CHECK(c.ratio == doctest::Approx(1.2));
  const gate_condition d = parse_fail_if("nagle.rr.throughput <= 0.9x");
  CHECK(d.phase == "nagle");
  CHECK(d.workload == "rr");
  CHECK(d.op == "<=");
  const auto error = [](const std::string& t) {
    try {
      parse_fail_if(t);
    } catch (const input_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(error("p99 > 1.2") == "--fail-if \"p99 > 1.2\": at character 7: the threshold is a ratio of B to A written with an x, e.g. 1.20x");
  CHECK(error("p98 > 1.2x").find("no figure 'p98'") != std::string::npos);
  CHECK(error("p98 > 1.2x").find("did you mean") != std::string::npos);
  CHECK(error("p99 == 1.2x").find("at character 5: a gate compares with") != std::string::npos);
  CHECK(error("p99 > -1x").find("positive number") != std::string::npos);
  CHECK(error("rr.p99 > 1.2x").find("PHASE.WORKLOAD.FIGURE") != std::string::npos);
  CHECK(error("p99 1.2x").find("expected FIGURE > RATIOx") != std::string::npos);
}

TEST_CASE("with repeats a regression is called only when the whole interval clears the threshold") {
  const std::vector<gate_condition> gate = {parse_fail_if("p99 > 1.20x"), parse_fail_if("throughput < 0.83x")};
  const std::vector<double> a = {1000, 1100, 950, 1300, 1020};
  // The same spread again (A/A): the ratio of medians is near 1 and the interval holds 1.
  const auto same = compare_groups(group("repeat", a), group("repeat", {1050, 980, 1250, 1000, 1120}), gate);
  REQUIRE(same.rows.size() == 2);
  CHECK(same.regressions() == 0);
  CHECK(same.rows[0].lo < 1);
  CHECK(same.rows[0].hi > 1);
  CHECK(same.method.find("bootstrap") != std::string::npos);
  // Every figure doubled: p99 and throughput both regress, the interval well past 1.2x.
  const auto doubled = compare_groups(group("repeat", a), group("repeat", a, 2), gate);
  CHECK(doubled.regressions() == 2);
  CHECK(doubled.rows[0].ratio == doctest::Approx(2));
  CHECK(doubled.rows[0].lo > 1.2);
  // A noisy B whose median is 1.3x but whose interval reaches below 1.2x: not called.
  const auto noisy = compare_groups(group("repeat", a), group("repeat", {900, 1400, 1330, 2600, 1000}), gate);
  CHECK(noisy.rows[0].ratio > 1.2);
  CHECK(noisy.rows[0].lo < 1.2);
  CHECK(noisy.regressions() == 0);
}

TEST_CASE("one run a side: the ratio alone decides, and the method says so") {
  const std::vector<gate_condition> gate = {parse_fail_if("p99 > 1.20x")};
  const auto v = compare_groups(group("run", {1000}), group("run", {1300}), gate);
  REQUIRE(v.rows.size() == 1);
  CHECK(std::isnan(v.rows[0].lo));
  CHECK(v.regressions() == 1);
  CHECK(v.method.find("no interval") != std::string::npos);
  CHECK(verdict_text(v, false).find("FAIL p99 > 1.20x: p.rr.p99 1.30×") != std::string::npos);
}

TEST_CASE("a phase where B answered nothing and A did is a regression, not a missing row") {
  run_group a = group("run", {1000}), b = group("run", {1000});
  b.runs[0].report.phases[0].workloads[0].latency.count = 0;
  const auto v = compare_groups(a, b, {parse_fail_if("p99 > 1.5x")});
  REQUIRE(v.rows.size() == 1);
  CHECK(v.regressions() == 1);
  CHECK(v.rows[0].note.find("B has no value") == 0);
  // A sweep against a run cannot be matched; a condition on a phase neither has is refused.
  run_group sweep = group("repeat", {1000});
  sweep.kind = "sweep";
  CHECK_THROWS_AS(compare_groups(sweep, b, {}), input_error);
  CHECK_THROWS_WITH_AS(compare_groups(a, b, {parse_fail_if("q.rr.p99 > 1.5x")}),
                       "--fail-if \"q.rr.p99 > 1.5x\": no phase 'q' in a-run; did you mean 'p'?", input_error);
}

TEST_CASE("a phase cut short (interrupted, the target died) is no sample: left out of the comparison") {
  run_group a = group("repeat", {1000, 1010, 990}), b = group("repeat", {1000, 1020, 980});
  b.runs[1].report.phases[0].completed = false;
  b.runs[1].report.phases[0].workloads[0].latency.p99 = 90000;  // its partial figure: not counted
  const auto v = compare_groups(a, b, {parse_fail_if("p99 > 1.2x")});
  REQUIRE(v.rows.size() == 1);
  CHECK(v.rows[0].n_a == 3);
  CHECK(v.rows[0].n_b == 2);
  CHECK(v.regressions() == 0);
}

TEST_CASE("B without the phase, or with its injection not verified, never passes a gate: every condition fails") {
  const std::vector<gate_condition> gate = {parse_fail_if("p99 > 1.2x"), parse_fail_if("throughput < 0.8x")};
  run_group a = group("run", {1000}), missing = group("run", {1000}), unverified = group("run", {1000});
  missing.runs[0].report.phases[0].name = "renamed";  // B's run never ran phase p
  injection_result i;
  i.name = "slow";
  i.verified = false;  // the fault did not take: B's figures are not of the injected phase
  unverified.runs[0].report.phases[0].injections.push_back(i);
  for (const run_group* b : {&missing, &unverified}) {
    const auto v = compare_groups(a, *b, gate);
    REQUIRE(v.rows.size() == 2);
    CHECK(v.regressions() == 2);  // throughput too: nothing was measured where A measured
    CHECK(v.rows[1].note.find("B has no value") == 0);
  }
}

TEST_CASE("A whose phase was cut short or not verified is no baseline: the gate cannot pass on it") {
  const std::vector<gate_condition> gate = {parse_fail_if("p99 > 1.2x")};
  run_group a = group("run", {1000}), b = group("run", {1000});
  injection_result i;
  i.name = "slow";
  i.verified = false;
  a.runs[0].report.phases[0].injections.push_back(i);
  const auto v = compare_groups(a, b, gate);
  REQUIRE(v.rows.size() == 1);
  CHECK(v.regressions() == 1);
  CHECK(v.rows[0].note.find("A has no whole phase") == 0);
  run_group cut = group("run", {1000});
  cut.runs[0].report.phases[0].completed = false;  // interrupted, or the target died
  const auto short_a = compare_groups(cut, b, gate);
  CHECK(short_a.regressions() == 1);
  CHECK(short_a.rows[0].note.find("A has no whole phase") == 0);
  // A whole phase of A where nothing answered is a value-less row, not a failure.
  run_group silent = group("run", {1000});
  silent.runs[0].report.phases[0].workloads[0].latency.count = 0;
  const auto quiet = compare_groups(silent, b, gate);
  CHECK(quiet.regressions() == 0);
  CHECK(quiet.rows[0].note.find("A has no value") == 0);
}

TEST_CASE("errors_pct is held to B's own share: absolute, A's share not needed, a B that tried nothing fails") {
  const gate_condition c = parse_fail_if("errors_pct > 1");
  CHECK(c.absolute);
  CHECK(c.limit == 1);
  CHECK(parse_fail_if("p.rr.errors_pct >= 2.5%").limit == 2.5);
  CHECK_THROWS_WITH_AS(parse_fail_if("errors_pct > 1.2x"), doctest::Contains("in percent, 0 to 100"), input_error);
  CHECK_THROWS_AS(parse_fail_if("errors_pct > 101"), input_error);
  auto with_errors = [](double pct) {
    run_report r = run_with(100, 200, 1000);
    r.phases[0].workloads[0].errors_pct = pct;
    return run_group{"x", "run", {{"", r}}};
  };
  const run_group a = with_errors(0), clean = with_errors(0.5), failing = with_errors(12), silent = with_errors(NAN);
  CHECK(compare_groups(a, clean, {c}).regressions() == 0);
  const auto v = compare_groups(a, failing, {c});
  REQUIRE(v.regressions() == 1);
  CHECK(verdict_text(v, false).find("(A 0.00%, B 12.00%)") != std::string::npos);
  CHECK(compare_groups(a, silent, {c}).regressions() == 1);  // nothing tried: no share to hold, never a pass
}
