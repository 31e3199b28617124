#include <doctest/doctest.h>

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
       "service_us": {"count": 50, "p50": 44000.0}, "send_lag_us": {"count": 0}}},
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
