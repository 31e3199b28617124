// Sweeps end to end: each level a real run, the response curve in sweep.json and
// sweep.html, the knee where it belongs.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "../helpers.hpp"

using namespace rig;
using namespace rig::testing;
namespace fs = std::filesystem;


TEST_CASE("delay-sweep.toml: p50 follows the added delay level by level, throughput falls, the knee where p99 first doubles") {
  temp_dir tmp;
  const std::string dir = run_sweep_ok(tmp, "delay-sweep.toml", {"sweep.phase_duration=1s", "sweep.repeats=2"});
  const auto sw = nlohmann::json::parse(slurp(dir + "/sweep.json"));
  INFO(sweep_curve(sw));
  const auto& levels = sw["levels"];
  REQUIRE(levels.size() == 7);
  CHECK(sw["param"] == "injectors.slow.latency");
  const double delays_ms[] = {0, 1, 2, 5, 10, 25, 50};
  for (size_t i = 0; i < levels.size(); ++i) {
    const auto& l = levels[i];
    CHECK(l["runs"].size() == 2);
    for (const auto& r : l["runs"]) {
      CHECK(fs::exists(r.get<std::string>() + "/report.json"));
      CHECK(fs::exists(r.get<std::string>() + "/report.html"));
    }
    const auto& p50 = l["workloads"]["rr"]["p50_us"];
    CHECK(p50["min"].get<double>() <= p50["median"].get<double>());
    CHECK(p50["median"].get<double>() <= p50["max"].get<double>());
    // The proxy adds the delay to each reply: p50 is the delay plus the loopback round trip
    // through the proxy, 4 requests in flight: ~0.2 ms idle, up to 1 ms with a test beside it,
    // and a sanitizer stretches each hop (ASan: 1.1 ms more at 1 ms in
    // tests/injectors/proxy_test.cpp), so 3 ms there.
    CHECK(p50["median"].get<double>() >= delays_ms[i] * 1000);
    CHECK(p50["median"].get<double>() < delays_ms[i] * 1000 * 1.15 + (sanitized() ? 3000 : 1000));
    if (i > 0) {
      CHECK(median(l, "p50_us") > median(levels[i - 1], "p50_us"));
      CHECK(median(l, "throughput_ops_s") < median(levels[i - 1], "throughput_ops_s"));
    }
  }
  // The knee: the first level where every run's p99 is over 2x the first level's median p99.
  // It is where the data puts it...
  const double base_p99 = median(levels[0], "p99_us");
  size_t expected = levels.size();
  for (size_t i = 1; i < levels.size() && expected == levels.size(); ++i)
    if (levels[i]["workloads"]["rr"]["p99_us"]["min"].get<double>() > 2 * base_p99) expected = i;
  REQUIRE(expected < levels.size());
  CHECK(sw["knee"]["rr"]["index"].get<size_t>() == expected);
  // ...and, since a level's p99 is at least its delay, no later than the first delay over twice
  // the 0 ms level's p99 (the loopback round trip: 1 ms or 2 ms on an idle machine; where other
  // tests share the CPUs one run of two caught a 2.5 ms p99 at 0 ms and the knee was at 2 ms).
  size_t latest = 1;
  while (latest + 1 < levels.size() && delays_ms[latest] * 1000 <= 2 * base_p99) ++latest;
  CHECK(expected <= latest);
  const std::string html = slurp(dir + "/sweep.html");
  CHECK(html.find("data-name=\"rr p99\" data-points=\"7\"") != std::string::npos);
  CHECK(html.find("class=\"marker-label\"") != std::string::npos);
  CHECK(html.find(">50ms<") != std::string::npos);  // the levels label the x axis
}

TEST_CASE("an injector sweep with baseline = true runs a first level without the injector") {
  temp_dir tmp;
  const std::string dir =
      run_sweep_ok(tmp, "delay-sweep.toml", {"sweep.phase_duration=1s", "sweep.repeats=1", "sweep.baseline=true",
                                             "sweep.values=[\"5ms\"]"});
  const auto sw = nlohmann::json::parse(slurp(dir + "/sweep.json"));
  REQUIRE(sw["levels"].size() == 2);
  CHECK(sw["levels"][0]["label"] == "baseline (no slow)");
  CHECK(sw["levels"][0]["baseline"] == true);
  // Without the toxic, no 5 ms: under half of it (a loopback round trip, stretched by a
  // sanitizer and load, is ~0.2 ms to ~1 ms); with it, at least the 5 ms each reply is held.
  CHECK(median(sw["levels"][0], "p50_us") < 2500);
  CHECK(median(sw["levels"][1], "p50_us") > 5000);
  const auto first = nlohmann::json::parse(slurp(sw["levels"][0]["runs"][0].get<std::string>() + "/report.json"));
  CHECK(first["phases"][0]["injections"].empty());  // the proxy toxic was not applied
}

TEST_CASE("a sweep gates: checks on the curve and each level's own checks fail it (exit 1) unless levels_may_fail") {
  temp_dir tmp;
  std::ofstream(tmp.path + "/gate-sweep.toml") << R"(name = "gate-sweep"
[target]
kind = "builtin"
[workloads.rr]
kind = "tcp"
connections = 2
rate = "100/s"
[[phases]]
name = "load"
duration = "1s"
[expect]
checks = ["load.rr.throughput < 250/s"]
[sweep]
workload = "rr"
param = "rate"
values = ["100/s", "400/s"]
expect = ["max.rr.throughput >= 300/s", "all.rr.errors == 0", "level[100/s].rr.throughput < 50/s"]
)";
  const auto run = run_rig({"run", tmp.path + "/gate-sweep.toml", "--out", tmp.path, "--junit", tmp.path + "/j.xml"},
                           tmp.path, 60'000);
  const std::string out = run.stdout_text();
  INFO(out << run.err);
  CHECK(run.code == 1);
  CHECK(out.find("pass  max.rr.throughput >= 300/s") != std::string::npos);
  CHECK(out.find("pass  all.rr.errors == 0") != std::string::npos);
  CHECK(out.find("FAIL  level[100/s].rr.throughput < 50/s") != std::string::npos);
  CHECK(out.find("rate = 400/s: run 1: FAIL load.rr.throughput < 250/s") != std::string::npos);
  CHECK(out.find("status: checks_failed") != std::string::npos);
  const auto sw = nlohmann::json::parse(slurp(run.sweep_dir() + "/sweep.json"));
  CHECK(sw["status"] == "checks_failed");
  REQUIRE(sw["expectations"].size() == 3);
  CHECK(sw["expectations"][2]["ok"] == false);
  CHECK(sw["levels"][0]["check_failures"].empty());
  CHECK(sw["levels"][1]["check_failures"].size() == 1);
  const std::string html = slurp(run.sweep_dir() + "/sweep.html");
  CHECK(html.find("Checks on the curve") != std::string::npos);
  CHECK(html.find("Levels whose own checks failed") != std::string::npos);
  const std::string junit = slurp(tmp.path + "/j.xml");
  CHECK(junit.find("<testsuite name=\"gate-sweep\" tests=\"4\" failures=\"2\"") != std::string::npos);

  // The level's failed check accepted, the curve's checks holding: the sweep passes.
  const auto ok = run_rig({"run", tmp.path + "/gate-sweep.toml", "--out", tmp.path, "--set", "sweep.levels_may_fail=true",
                           "--set", "sweep.expect=[\"max.rr.throughput >= 300/s\", \"knee.rr.level >= 400/s\"]"},
                          tmp.path, 60'000);
  INFO(ok.stdout_text() << ok.err);
  CHECK(ok.code == 0);
  CHECK(ok.stdout_text().find("status: ok") != std::string::npos);
  const auto sw2 = nlohmann::json::parse(slurp(ok.sweep_dir() + "/sweep.json"));
  CHECK(sw2["levels"][1]["check_failures"].size() == 1);  // still recorded

  // In a suite, the sweep is one testsuite: its own testcase and one per check on the curve.
  const auto suite = run_rig({"suite", tmp.path + "/gate-sweep.toml", "--out", tmp.path, "--junit", tmp.path + "/s.xml",
                              "-q"},
                             tmp.path, 60'000);
  INFO(suite.stdout_text());
  CHECK(suite.code == 1);
  CHECK(suite.stdout_text().find("1 of 1 failed: gate-sweep (checks_failed)") != std::string::npos);
  const std::string xml = slurp(tmp.path + "/s.xml");
  CHECK(xml.find("<testsuites name=\"rig\" tests=\"4\" failures=\"2\" errors=\"0\">") != std::string::npos);
  CHECK(xml.find("name=\"check: level[100/s].rr.throughput &lt; 50/s\"") != std::string::npos);
  CHECK(xml.find("a level failed its own checks") != std::string::npos);
}
