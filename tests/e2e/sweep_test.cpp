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
    // The proxy adds the delay to each reply: p50 is the delay plus the loopback round trip.
    CHECK(p50["median"].get<double>() >= delays_ms[i] * 1000);
    CHECK(p50["median"].get<double>() < delays_ms[i] * 1000 * 1.15 + 1000);
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
  CHECK(median(sw["levels"][0], "p50_us") < 1000);
  CHECK(median(sw["levels"][1], "p50_us") > 5000);
  const auto first = nlohmann::json::parse(slurp(sw["levels"][0]["runs"][0].get<std::string>() + "/report.json"));
  CHECK(first["phases"][0]["injections"].empty());  // the proxy toxic was not applied
}
