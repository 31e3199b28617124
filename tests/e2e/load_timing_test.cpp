// A scenario whose check is the generator's own lag: on a 2-CPU host with the target using one
// CPU, any test beside it takes the other CPU from the generator, so it runs alone (SERIAL).
#include <doctest/doctest.h>

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
  // 500/s rising to 4000/s over 4 s: ~9,000 requests, more each second than the one before.
  CHECK(web["ops"].get<double>() == doctest::Approx(9000).epsilon(0.15));
  std::vector<uint64_t> per_second;
  std::istringstream csv(slurp(fs::path(report_path(f.out)).parent_path().string() + "/timeseries.csv"));
  std::string line;
  std::getline(csv, line);
  while (std::getline(csv, line))
    if (line.find(",ramp,") != std::string::npos) per_second.push_back(std::stoull(line.substr(line.find(",ramp,") + 6)));
  REQUIRE(per_second.size() >= 4);
  for (size_t i = 1; i < 4; ++i) CHECK(per_second[i] > per_second[i - 1]);
  CHECK(r["workloads"]["web"]["load_model"]["ramp_to_per_s"] == 4000);
}
