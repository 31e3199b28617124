// A scenario whose check is the generator's own lag: on a 2-CPU host with the target using one
// CPU, any test beside it takes the other CPU from the generator, so it runs alone (SERIAL).
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../helpers.hpp"

using namespace rig::testing;
namespace fs = std::filesystem;

TEST_CASE("http-ramp.toml: the offered rate climbs through the phase, status classes and generator lag reported") {
  temp_dir tmp;
  const auto f = run_rig({"run", RIG_SOURCE_DIR "/scenarios/http-ramp.toml", "--out", tmp.path, "--set",
                          "phases.ramp.duration=4s"},
                         tmp.path);
  INFO("stdout: " << f.stdout_text());
  CHECK(f.code == 0);
  const auto r = nlohmann::json::parse(slurp(report_path(f.out)));
  const auto& web = r["phases"][0]["workloads"]["web"];
  CHECK(web["status"]["2xx"].get<uint64_t>() == web["ops"].get<uint64_t>());
  CHECK(web["generator"]["limited"] == false);
  // 500/s rising to 4000/s over 4 s: 9,000 requests due (Poisson: sigma 95; 5 sigma is 474),
  // whatever the target answered: the schedule is the generator's, and every request it holds
  // has an outcome (on a loaded machine the 1-worker target falls behind near 4000/s: fewer ops).
  const double due = web["due"].get<double>();
  CHECK(std::abs(due - 9000) <= 5 * std::sqrt(9000.0) + 40);  // + 40: one phase edge's worth at 4000/s
  CHECK(web["ops"].get<double>() + web["not_sent"].get<double>() + web["unfinished"].get<double>() <= due);
  CHECK(web["ops"].get<double>() > 1000);
  std::vector<uint64_t> per_second;
  std::istringstream csv(slurp(f.run_dir() + "/timeseries.csv"));
  std::string line;
  std::getline(csv, line);
  while (std::getline(csv, line))
    if (line.find(",ramp,") != std::string::npos) per_second.push_back(std::stoull(line.substr(line.find(",ramp,") + 6)));
  REQUIRE(per_second.size() >= 4);
  // Replies per second climb while the target keeps up: 500-1,375/s in the first second, ~1,800/s
  // in the second (a loaded machine's 1-worker target has kept up with 1,700/s). Past that the
  // target's capacity, not the ramp, sets them.
  CHECK(per_second[1] > per_second[0]);
  CHECK(r["workloads"]["web"]["load_model"]["ramp_to_per_s"] == 4000);
}

TEST_CASE("rate-sweep.toml: latency turns up as the offered rate nears one worker's capacity") {
  temp_dir tmp;
  const auto run = run_rig({"run", RIG_SOURCE_DIR "/scenarios/rate-sweep.toml", "--out", tmp.path, "--set",
                            "sweep.phase_duration=2s"},
                           tmp.path, 180'000);
  INFO(run.stdout_text() << run.err);
  REQUIRE(run.code == 0);
  const std::string dir = run.sweep_dir();
  const auto sw = nlohmann::json::parse(slurp(dir + "/sweep.json"));
  const auto& l = sw["levels"];
  REQUIRE(l.size() == 6);
  auto m = [&](size_t i, const char* k) { return l[i]["workloads"]["rr"][k]["median"].get<double>(); };
  const char* offered[] = {"500/s", "1000/s", "2000/s", "3000/s", "3500/s", "3800/s"};
  const double rate[] = {500, 1000, 2000, 3000, 3500, 3800};
  for (size_t i = 0; i < 6; ++i) {
    CHECK(l[i]["label"] == offered[i]);
    // Far below the 1-worker target's ~4,000/s (250 us of CPU each) it keeps up within 10%. Near
    // it, its capacity is the CPU it gets: on a loaded machine 2,500/s was seen at 3,000/s offered,
    // so there it must only deliver most of what was asked, never more.
    if (rate[i] <= 1000)
      CHECK(m(i, "throughput_ops_s") == doctest::Approx(rate[i]).epsilon(0.1));
    else
      CHECK(m(i, "throughput_ops_s") > 0.5 * rate[i]);
    CHECK(m(i, "throughput_ops_s") < 1.1 * rate[i]);
  }
  CHECK(m(5, "p99_us") > 5 * m(0, "p99_us"));  // near capacity the tail is queueing
  REQUIRE(sw["knee"].contains("rr"));
  // Median of 3 runs a level: in CI a single run's p99 at 1000/s once caught a 9 ms stall and put the knee there.
  CHECK(sw["knee"]["rr"]["index"].get<int>() >= 2);
}

// Throughput at the workers' capacity needs both CPUs: alone, like the tests above.
TEST_CASE("size-sweep.toml: throughput stops at the workers' capacity and latency grows with the clients from there") {
  temp_dir tmp;
  // Three runs a level, the median compared: one run of the 2-client level here reached only
  // 1.77x the 1-client throughput (a single 1 s run's noise), close to the bound below.
  const std::string dir = run_sweep_ok(tmp, "size-sweep.toml", {"sweep.phase_duration=1s", "sweep.repeats=3"});
  const auto sw = nlohmann::json::parse(slurp(dir + "/sweep.json"));
  INFO(sweep_curve(sw));
  const auto& l = sw["levels"];
  REQUIRE(l.size() == 7);  // 1, 2, 4, ... 64 clients
  CHECK(median(l[1], "throughput_ops_s") > 1.6 * median(l[0], "throughput_ops_s"));  // 2 clients: both workers busy
  for (size_t i = 3; i < l.size(); ++i) {
    CHECK(median(l[i], "throughput_ops_s") == doctest::Approx(median(l[2], "throughput_ops_s")).epsilon(0.15));
    CHECK(median(l[i], "p50_us") == doctest::Approx(2 * median(l[i - 1], "p50_us")).epsilon(0.25));  // twice the queue
  }
  const int knee = sw["knee"]["rr"]["index"].get<int>();
  CHECK(knee >= 2);
  // 4 or 8 clients; 16 once in a parallel ctest run here, where the 1-client level's p99 is noisy.
  if (!rig::testing::sanitized_skip("how soon the knee comes: instrumented code stretches the 1-client level's p99"))
    CHECK(knee <= 4);
}
