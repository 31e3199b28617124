#include <doctest/doctest.h>

#include "reports/sweep_report.hpp"
#include "rig/expect.hpp"

using namespace rig;

namespace {

const nlohmann::json report = nlohmann::json::parse(R"({
  "phases": [
    {"name": "baseline", "workloads": {"rr": {"ops": 1000, "throughput_ops_s": 200.0,
       "errors": {"timeout": 0, "connect": 0},
       "latency_us": {"count": 1000, "p50": 90.0, "p99": 200.0},
       "service_us": {"count": 1000, "p50": 80.0}, "send_lag_us": {"count": 0}}},
     "resources": {"target": {"rss_max_bytes": 5000000, "live_workers_min": 4}}},
    {"name": "nagle", "workloads": {"rr": {"ops": 50, "throughput_ops_s": 5.0,
       "errors": {"timeout": 3, "connect": 1},
       "latency_us": {"count": 50, "p50": 44000.0, "p99": 48000.0},
       "service_us": {"count": 50, "p50": 44000.0}, "send_lag_us": {"count": 0},
       "generator": {"limited": true, "late_sends": 12}}},
     "resources": {}}
  ],
  "magnification": [{"phase": "nagle", "workload": "rr", "p50_x": 488.9, "p99_x": 240.0, "throughput_x": 0.025}]
})");

check_outcome eval(const std::string& text) {
  diagnostics d;
  auto c = parse_check(text, {}, {"baseline", "nagle"}, {"rr"}, d);
  REQUIRE_MESSAGE(c, d.str());
  return evaluate_check(*c, report);
}

}  // namespace

TEST_CASE("checks compare report values with units") {
  CHECK(eval("nagle.rr.latency.p50 > 10ms").ok);
  CHECK(eval("nagle.rr.latency.p50 > 10ms").actual == "44.00ms");
  CHECK_FALSE(eval("baseline.rr.latency.p99 > 1ms").ok);
  CHECK(eval("baseline.rr.latency.p99 <= 200us").ok);
  CHECK(eval("nagle.rr.errors == 4").ok);
  CHECK(eval("nagle.rr.errors.timeout == 3").ok);
  CHECK(eval("baseline.rr.errors == 0").ok);
  CHECK(eval("baseline.rr.throughput >= 200/s").ok);
  CHECK(eval("baseline.rr.ops != 0").ok);
  CHECK(eval("magnification.nagle.rr.p50_x >= 10").ok);
  CHECK(eval("baseline.target.live_workers_min == 4").ok);
  CHECK(eval("baseline.target.rss_max_bytes < 64MiB").ok);
}

TEST_CASE("a failed check in a phase where rig's generator lagged says so") {
  const auto o = eval("nagle.rr.latency.p50 < 1ms");
  CHECK_FALSE(o.ok);
  CHECK(o.actual == "44.00ms; rig's generator lagged in phase nagle (12 late sends): the figure may be rig's, not the target's");
  CHECK(eval("nagle.rr.latency.p50 > 1ms").actual == "44.00ms");  // a passing one is not qualified
  CHECK(eval("baseline.rr.latency.p50 > 1ms").actual == "90.0us");  // nor one in a phase where it kept up
}

TEST_CASE("a check with nothing to read fails and says why") {
  const auto o = eval("nagle.rr.send_lag.p99 < 1ms");
  CHECK_FALSE(o.ok);
  CHECK(o.actual.find("no value") == 0);
}

TEST_CASE("malformed checks are refused with the reason") {
  diagnostics d;
  CHECK_FALSE(parse_check("nagle.rr.latency.p50", {}, {"nagle"}, {"rr"}, d));
  CHECK_FALSE(parse_check("nagle.rr.latncy.p50 > 1ms", {}, {"nagle"}, {"rr"}, d));
  CHECK_FALSE(parse_check("nagle.rr.latency.p77 > 1ms", {}, {"nagle"}, {"rr"}, d));
  CHECK_FALSE(parse_check("nagle.rx.latency.p50 > 1ms", {}, {"nagle"}, {"rr"}, d));
  CHECK_FALSE(parse_check("nagle.rr.errors.boom > 1", {}, {"nagle"}, {"rr"}, d));
  REQUIRE(d.size() == 5);
  CHECK(d.items()[1].message == "check \"nagle.rr.latncy.p50 > 1ms\": unknown metric 'latncy'; did you mean 'latency'?");
  CHECK(d.items()[3].message == "check \"nagle.rx.latency.p50 > 1ms\": no workload 'rx'; did you mean 'rr'?");
}

namespace {

// Three levels of a rate sweep: p99 turns at 2000/s (the knee), errors only at the last.
sweep_summary three_levels() {
  sweep_summary s;
  s.param = "workloads.rr.rate";
  s.knee_factor = 2;
  const char* labels[] = {"1000/s", "2000/s", "3000/s"};
  const double p99[] = {1000, 4000, 20000}, thr[] = {990, 1980, 2500}, err[] = {0, 0, 12};
  for (int i = 0; i < 3; ++i) {
    sweep_level l;
    l.label = labels[i];
    l.workloads["rr"]["p99_us"] = spread_stat::of({p99[i]});
    l.workloads["rr"]["p50_us"] = spread_stat::of({p99[i] / 4});
    l.workloads["rr"]["throughput_ops_s"] = spread_stat::of({thr[i]});
    l.workloads["rr"]["errors_per_s"] = spread_stat::of({err[i]});
    l.target_cpu_pct = spread_stat::of({30.0 * (i + 1)});
    s.levels.push_back(l);
  }
  s.knee["rr"] = {1, "2000/s", 4000, 4000, 1000};
  return s;
}

check_outcome eval_sweep(const std::string& text, const sweep_summary& s) {
  diagnostics d;
  auto c = parse_sweep_check(text, {}, {"1000/s", "2000/s", "3000/s"}, {"rr"}, opt_type::op_rate, d);
  REQUIRE_MESSAGE(c, d.str());
  return evaluate_sweep_check(*c, s, opt_type::op_rate);
}

std::string sweep_error(const std::string& text) {
  diagnostics d;
  CHECK_FALSE(parse_sweep_check(text, {}, {"1000/s", "2000/s", "3000/s"}, {"rr"}, opt_type::op_rate, d));
  return d.str();
}

}  // namespace

TEST_CASE("sweep checks: the knee, one level, every level, the extremes, on the medians") {
  const sweep_summary s = three_levels();
  CHECK(eval_sweep("knee.rr.level >= 2000/s", s).ok);
  CHECK_FALSE(eval_sweep("knee.rr.level >= 3000/s", s).ok);
  CHECK(eval_sweep("knee.rr.level >= 3000/s", s).actual == "knee at 2000/s");
  CHECK(eval_sweep("level[2000/s].rr.p99 < 5ms", s).ok);
  CHECK(eval_sweep("level[\"2000/s\"].rr.p99 < 5ms", s).ok);  // quotes around the label are optional
  CHECK_FALSE(eval_sweep("level[3000/s].rr.p99 < 5ms", s).ok);
  CHECK(eval_sweep("level[3000/s].rr.p99 < 5ms", s).actual == "20.00ms");
  // all: the first level that fails is named.
  const auto errors = eval_sweep("all.rr.errors == 0", s);
  CHECK_FALSE(errors.ok);
  CHECK(errors.actual == "12.0/s at 3000/s");
  CHECK(eval_sweep("all.rr.p99 < 30ms", s).ok);
  CHECK(eval_sweep("all.rr.p99 < 30ms", s).actual.find("20.00ms at 3000/s") == 0);  // the nearest to failing
  CHECK(eval_sweep("max.rr.throughput >= 2500/s", s).ok);
  CHECK(eval_sweep("max.rr.throughput >= 2500/s", s).actual == "2500.0/s at 3000/s");
  CHECK_FALSE(eval_sweep("min.rr.throughput > 1000/s", s).ok);
  CHECK(eval_sweep("max.target.cpu_pct < 95", s).ok);
  // No knee: the curve never turned, so the knee lies beyond the last level.
  sweep_summary flat = s;
  flat.knee.clear();
  CHECK(eval_sweep("knee.rr.level >= 3000/s", flat).ok);
  CHECK_FALSE(eval_sweep("knee.rr.level < 3000/s", flat).ok);
  CHECK(eval_sweep("knee.rr.level < 3000/s", flat).actual.find("no knee") == 0);
  CHECK(eval_sweep("knee.rr.level > 2000/s", flat).ok);
  // Past the swept range the sweep shows nothing: a bound there is not held.
  const auto beyond = eval_sweep("knee.rr.level >= 1000000/s", flat);
  CHECK_FALSE(beyond.ok);
  CHECK(beyond.actual.find("the knee is above 3000/s, which does not show") != std::string::npos);
  // A level where nothing answered has no p99: a check on every level cannot pass on it.
  sweep_summary dead = s;
  dead.levels[2].workloads["rr"]["p99_us"] = spread_stat::of({});
  CHECK_FALSE(eval_sweep("all.rr.p99 < 1s", dead).ok);
  CHECK(eval_sweep("all.rr.p99 < 1s", dead).actual.find("no value at 3000/s") == 0);
  CHECK_FALSE(eval_sweep("level[3000/s].rr.p99 < 1s", dead).ok);
}

TEST_CASE("sweep checks: bad ones name what is wrong and the nearest valid name") {
  CHECK(sweep_error("kne.rr.level >= 1/s").find("did you mean 'knee'?") != std::string::npos);
  CHECK(sweep_error("level[2500/s].rr.p99 < 1ms").find("no level '2500/s'") != std::string::npos);
  CHECK(sweep_error("all.rq.p99 < 1ms").find("no workload 'rq'; did you mean 'rr'?") != std::string::npos);
  CHECK(sweep_error("all.rr.throughput < 5ms").find("value '5ms'") != std::string::npos);
  CHECK(sweep_error("knee.rr.level >= 5ms").find("value '5ms'") != std::string::npos);  // a rate sweep's levels are rates
  CHECK(sweep_error("knee.rr.p99 >= 1/s").find("expected knee.<workload>.level") != std::string::npos);
  CHECK(sweep_error("all.rr.p99").find("expected '<path> <op> <value>'") != std::string::npos);
  CHECK(sweep_error("all.target.p99 < 1ms").find("figures: cpu_pct, rss_max") != std::string::npos);
}

TEST_CASE("a check on repeats is judged on the median of its runs, each of which must have the figure") {
  // Three runs of one scenario: one slow outlier (a noisy host) does not decide the check.
  const auto with_p99 = [](double p99, double errors_pct) {
    nlohmann::json r = report;
    r["phases"][0]["workloads"]["rr"]["latency_us"]["p99"] = p99;
    r["phases"][0]["workloads"]["rr"]["errors_pct"] = errors_pct;
    return r;
  };
  const std::vector<nlohmann::json> runs = {with_p99(200, 0), with_p99(9000, 2.5), with_p99(210, 0)};
  diagnostics d;
  const auto p99 = parse_check("baseline.rr.latency.p99 < 1ms", {}, {"baseline", "nagle"}, {"rr"}, d);
  REQUIRE(p99);
  const auto o = evaluate_check_median(*p99, runs);
  CHECK(o.ok);
  CHECK(o.actual == "210.0us (median of 3 runs: 200.0us to 9.00ms)");
  CHECK_FALSE(evaluate_check(*p99, runs[1]).ok);  // the outlier alone fails it
  // The median decides both ways: two runs of three over the bound fail it.
  const std::vector<nlohmann::json> slow = {with_p99(200, 0), with_p99(9000, 0), with_p99(8000, 0)};
  const auto f = evaluate_check_median(*p99, slow);
  CHECK_FALSE(f.ok);
  CHECK(f.actual == "8.00ms (median of 3 runs: 200.0us to 9.00ms)");
  const auto pct = parse_check("baseline.rr.errors_pct < 1%", {}, {"baseline", "nagle"}, {"rr"}, d);
  REQUIRE(pct);
  CHECK(evaluate_check_median(*pct, runs).ok);  // 0, 0, 2.5: median 0
  // A run where the figure is missing (nothing answered) is not left out: the check fails, saying so.
  nlohmann::json silent = report;
  silent["phases"][0]["workloads"]["rr"]["latency_us"]["count"] = 0;
  const auto m = evaluate_check_median(*p99, {runs[0], silent, runs[2]});
  CHECK_FALSE(m.ok);
  CHECK(m.actual.rfind("no value in 1 of 3 runs: no value (phase baseline has no successful reply of rr)", 0) == 0);
  // A failing median in phases where the generator lagged says in how many runs.
  const auto lag = parse_check("nagle.rr.latency.p50 < 1ms", {}, {"baseline", "nagle"}, {"rr"}, d);
  REQUIRE(lag);
  const auto l = evaluate_check_median(*lag, {report, report});
  CHECK_FALSE(l.ok);
  CHECK(l.actual.find("rig's generator lagged in 2 of the 2 runs") != std::string::npos);
}
