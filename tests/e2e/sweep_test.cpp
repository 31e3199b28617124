// Sweeps end to end: each level a real run, the response curve in sweep.json and
// sweep.html, the knee where it belongs.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "../helpers.hpp"

using namespace rig;
using namespace rig::testing;
namespace fs = std::filesystem;

namespace {

// Runs a sweep scenario; its sweep directory (from the last line "sweep: DIR/sweep.json").
std::string run_sweep_ok(const temp_dir& tmp, const std::string& file, const std::vector<std::string>& sets) {
  std::vector<std::string> args = {"run", std::string(RIG_SOURCE_DIR "/scenarios/") + file, "--out", tmp.path};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  const auto run = run_rig(args, tmp.path, 180'000);
  INFO(run.stdout_text() << run.err);
  REQUIRE(run.code == 0);
  REQUIRE(!run.sweep_dir().empty());
  return run.sweep_dir();
}

double median(const nlohmann::json& level, const char* metric) {
  return level["workloads"]["rr"][metric]["median"].get<double>();
}

}  // namespace

TEST_CASE("delay-sweep.toml: p50 follows the added delay level by level, throughput falls, the knee is at 1ms") {
  temp_dir tmp;
  const std::string dir = run_sweep_ok(tmp, "delay-sweep.toml", {"sweep.phase_duration=1s", "sweep.repeats=2"});
  const auto sw = nlohmann::json::parse(slurp(dir + "/sweep.json"));
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
  // The knee: the first level whose p99 is over 2x the first's; the first level's p99 (no
  // delay) is the loopback round trip, which an instrumented build stretches.
  if (!rig::testing::sanitized_skip("where the knee falls: instrumented code stretches the 0 ms level's p99"))
    CHECK(sw["knee"]["rr"]["level"] == "1ms");
  const std::string html = slurp(dir + "/sweep.html");
  CHECK(html.find("data-name=\"rr p99\" data-points=\"7\"") != std::string::npos);
  CHECK(html.find("class=\"marker-label\"") != std::string::npos);
  CHECK(html.find(">50ms<") != std::string::npos);  // the levels label the x axis
}

TEST_CASE("size-sweep.toml: throughput stops at the workers' capacity and latency grows with the clients from there") {
  temp_dir tmp;
  const std::string dir = run_sweep_ok(tmp, "size-sweep.toml", {"sweep.phase_duration=1s"});
  const auto sw = nlohmann::json::parse(slurp(dir + "/sweep.json"));
  const auto& l = sw["levels"];
  REQUIRE(l.size() == 7);  // 1, 2, 4, ... 64 clients
  CHECK(median(l[1], "throughput_ops_s") > 1.6 * median(l[0], "throughput_ops_s"));  // 2 clients: both workers busy
  for (size_t i = 3; i < l.size(); ++i) {
    CHECK(median(l[i], "throughput_ops_s") == doctest::Approx(median(l[2], "throughput_ops_s")).epsilon(0.15));
    CHECK(median(l[i], "p50_us") == doctest::Approx(2 * median(l[i - 1], "p50_us")).epsilon(0.25));  // twice the queue
  }
  const int knee = sw["knee"]["rr"]["index"].get<int>();
  CHECK(knee >= 2);
  if (!rig::testing::sanitized_skip("how soon the knee comes: instrumented code stretches the 1-client level's p99"))
    CHECK(knee <= 3);
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
