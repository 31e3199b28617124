#include <doctest/doctest.h>

#include "reports/report.hpp"

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
