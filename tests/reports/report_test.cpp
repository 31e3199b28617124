#include <doctest/doctest.h>

#include <cmath>

#include "reports/html.hpp"
#include "reports/junit.hpp"
#include "reports/report.hpp"
#include "reports/sweep_report.hpp"

using namespace rig;

TEST_CASE("a phase goes to its report.json form and back whole, its workloads in the scenario's order") {
  phase_result p;
  p.name = "nagle";
  p.start_s = 1.000000001;
  p.end_s = 11.123456789012;
  p.start_wall = 1796406978.248343;
  p.end_wall = 1796406988.3718;
  p.completed = true;
  p.injections.push_back({"x", "nodelay", "setsockopt TCP_NODELAY=0", {{"where", "both"}}, true, "4 of 4 sockets",
                          {{"sockets_matching", 4}}});
  for (const char* name : {"zz", "aa"}) {  // not in alphabetical order
    workload_phase_result w;
    w.name = name;
    w.ops = 12345;
    w.errors = {{"timeout", 3}, {"reset", 0}};
    w.throughput_ops_s = 1234.5678901234;
    w.latency = {12345, 18.026, 132.15477514479562, 123.519, 181.375, 319.743, 1601.535, 5898.203};
    w.service = w.latency;
    w.send_lag = {};
    w.status = {{"2xx", 12000}, {"5xx", 345}};
    w.counts = {{"page_faults", 7}};
    w.late_sends = 9;
    w.generator_warning = std::string(name) == "aa" ? "the generator fell behind" : "";
    p.workloads.push_back(w);
  }
  p.resources = {{"target", {{"cpu_pct", 85.98348781698311}, {"rss_end_bytes", 6561792}}}};

  const auto j = to_json(p);
  const auto back = phase_from_json(nlohmann::json::parse(j.dump()), {"zz", "aa"});
  CHECK(to_json(back) == j);
  REQUIRE(back.workloads.size() == 2);
  CHECK(back.workloads[0].name == "zz");
  CHECK(back.workloads[1].generator_warning == "the generator fell behind");
  CHECK(back.end_s == p.end_s);  // doubles exactly
  CHECK(back.workloads[0].latency.mean == p.workloads[0].latency.mean);
  CHECK_THROWS(phase_from_json(j, {"zz", "missing"}));  // a workload it does not hold
}

TEST_CASE("no value is no value: an empty phase's latency is null and its magnification absent, not 0") {
  auto phase = [](const char* name, uint64_t replies, double p99) {
    phase_result p;
    p.name = name;
    workload_phase_result w;
    w.name = "rr";
    w.ops = replies;
    w.throughput_ops_s = double(replies);
    w.latency.count = replies;
    w.latency.p50 = w.latency.p99 = w.latency.p999 = p99;
    p.workloads.push_back(w);
    return p;
  };
  const std::vector<phase_result> phases = {phase("base", 2000, 100), phase("dead", 0, 0), phase("slow", 2000, 400)};
  const auto m = compute_magnification(phases);
  REQUIRE(m.size() == 2);
  CHECK(std::isnan(m[0].p99_x));
  CHECK(std::isnan(m[0].p50_x));
  CHECK(m[0].throughput_x == 0);
  CHECK(m[1].p99_x == doctest::Approx(4));
  const auto j = to_json(phases[1]);
  CHECK(j["workloads"]["rr"]["latency_us"]["p99"].is_null());
  CHECK(j["workloads"]["rr"]["latency_us"]["count"] == 0);
  // And back: the figures stay absent (count 0), nothing throws.
  CHECK(phase_from_json(j, {"rr"}).workloads[0].latency.count == 0);

  // Against a baseline with no replies there is nothing to magnify from.
  CHECK(compute_magnification({phase("base", 0, 0), phase("slow", 2000, 400)}).empty());
}

TEST_CASE("a percentile from fewer samples than it needs is marked low-confidence") {
  CHECK(latency_summary::samples_for(50) == 20);
  CHECK(latency_summary::samples_for(90) == 100);
  CHECK(latency_summary::samples_for(99) == 1000);
  CHECK(latency_summary::samples_for(99.9) == 10000);
  latency_summary l;
  CHECK(l.low_confidence().empty());  // no samples: no value, nothing to qualify
  l.count = 999;
  CHECK(l.low_confidence() == std::vector<std::string>{"p99", "p999"});
  l.count = 1000;
  CHECK(l.low_confidence() == std::vector<std::string>{"p999"});
  l.count = 19;
  CHECK(l.low_confidence() == std::vector<std::string>{"p50", "p90", "p99", "p999"});
  l.count = 10000;
  CHECK(l.low_confidence().empty());
}

TEST_CASE("JUnit XML: counts, a failed check's message, a refused run as an error, text escaped") {
  run_report r;
  r.scenario_name = "s<1>";
  r.status = "unverified";
  phase_result p;
  p.name = "inject";
  p.end_s = 2.5;
  p.injections.push_back({"slow", "proxy", "m", nlohmann::json::object(), false, "not in the \"chain\"",
                          nlohmann::json::object()});
  r.phases.push_back(p);
  r.expectations = {{"a.b.latency.p50 < 5ms", true, "1ms"}, {"x > 'y' & \x01", false, "0"}};
  const std::string x = junit_xml({{&r, "", 1, ""}, {nullptr, "bad.toml", 2, "missing [target]"}});
  INFO(x);
  CHECK(x.find("<testsuites name=\"rig\" tests=\"4\" failures=\"2\" errors=\"1\">") != std::string::npos);
  CHECK(x.find("<testsuite name=\"s&lt;1&gt;\" tests=\"3\" failures=\"2\" errors=\"0\" time=\"2.500\">") != std::string::npos);
  CHECK(x.find("<failure type=\"unverified\" message=\"status unverified (exit 1)\">inject: slow (proxy) not verified: "
               "not in the &quot;chain&quot;\n</failure>") != std::string::npos);
  CHECK(x.find("message=\"expected x &gt; &apos;y&apos; &amp;  , actual 0\"") != std::string::npos);  // \x01: a space
  CHECK(x.find("<testsuite name=\"bad.toml\" tests=\"1\" failures=\"0\" errors=\"1\"") != std::string::npos);
  CHECK(x.find("<error type=\"error\" message=\"exit 2: missing [target]\">missing [target]</error>") != std::string::npos);
}

TEST_CASE("a sweep level no run measured reads as no value, not as 0 ops/s and 0 errors/s") {
  sweep_summary s;
  s.param = "workloads.rr.rate";
  sweep_level measured, dead;
  measured.label = "100/s";
  measured.runs = {"r1"};
  measured.workloads["rr"] = {{"throughput_ops_s", spread_stat::of({99.6})}, {"p50_us", spread_stat::of({800})},
                              {"p99_us", spread_stat::of({1500})}, {"errors_per_s", spread_stat::of({0.5})}};
  dead.label = "400/s";  // its one run cut short, or its injection not verified: no whole phase
  dead.runs = {"r2"};
  s.levels = {measured, dead};
  const std::string t = sweep_table(s, {"rr"});
  INFO(t);
  CHECK(t.rfind("rate ", 0) == 0);
  CHECK(t.find("100/s                    rr                100    800.0us     1.50ms       1.50ms – 1.50ms        0.5\n") !=
        std::string::npos);
  CHECK(t.find("400/s                    rr                  -          -          -                 - – -          -\n") !=
        std::string::npos);
  CHECK(t.find("no knee for rr") != std::string::npos);
  const std::string html = render_sweep_html(s);
  CHECK(html.find("<td class=\"n\">0.5</td>") != std::string::npos);
  CHECK(html.find("<td class=\"n\">–</td><td class=\"n\">–</td><td class=\"small\">1 run(s)") != std::string::npos);
  CHECK(html.find("<td class=\"n\">0.0</td>") == std::string::npos);
}

TEST_CASE("a report's figures are numbers or null: a string, a null beside samples or a negative figure is refused, not read as 0") {
  run_report r;
  phase_result p;
  p.name = "p";
  p.completed = true;
  workload_phase_result w;
  w.name = "rr";
  w.latency.count = 5;
  w.latency.p50 = 100;
  w.latency.p99 = 200;
  w.throughput_ops_s = 10;
  w.errors_pct = 0;
  p.workloads.push_back(w);
  r.phases.push_back(p);
  const nlohmann::json good = to_json(r);
  CHECK(report_from_json(good).phases[0].workloads[0].latency.p99 == 200);
  const auto refused = [&](const char* key, const nlohmann::json& v, const char* group = "latency_us") {
    nlohmann::json j = good;
    auto& wl = j["phases"][0]["workloads"]["rr"];
    (group[0] ? wl[group][key] : wl[key]) = v;
    try {
      report_from_json(j);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("read");
  };
  CHECK(refused("p99", nullptr) == "'p99' is null beside 5 samples");
  CHECK(refused("p99", "fast") == "'p99' is string, not a number or null");
  CHECK(refused("p99", -3.0) == "'p99' is -3: it cannot be negative");
  CHECK(refused("throughput_ops_s", -1.0, "") == "'throughput_ops_s' is -1: it cannot be negative");
  CHECK(refused("errors_pct", "0%", "") == "'errors_pct' is string, not a number or null");
  // Without samples a latency group has no figure: null is what it holds.
  nlohmann::json none = good;
  none["phases"][0]["workloads"]["rr"]["latency_us"] = {{"count", 0}, {"p50", nullptr}, {"p99", nullptr}};
  CHECK(report_from_json(none).phases[0].workloads[0].latency.count == 0);
}
