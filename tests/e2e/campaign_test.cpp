// rig run --repeat and rig compare --fail-if end to end: repeat.json's medians and spreads, a
// real regression flagged with its interval, a comparison of like with like only.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "../helpers.hpp"

using namespace rig;
using namespace rig::testing;
namespace fs = std::filesystem;

namespace {

// Closed loop against workers that wait `io_wait` per request: latency is io_wait plus loopback.
std::string waiting_scenario(const std::string& io_wait) {
  return "name = \"waits\"\n[target]\nkind = \"builtin\"\nworkers = 4\nio_wait = \"" + io_wait +
         "\"\n[workloads.rr]\nkind = \"tcp\"\nconnections = 2\n[[phases]]\nname = \"steady\"\nduration = \"1s\"\n";
}

std::string repeat_dir(const rig_result& r) {
  for (const auto& l : r.out)
    if (l.rfind("repeat: ", 0) == 0) return fs::path(l.substr(8)).parent_path().string();
  return "";
}

}  // namespace

TEST_CASE("rig run --repeat N, then rig compare --fail-if: a 3x slower target is flagged, the same one is not") {
  temp_dir tmp;
  std::ofstream(tmp.path + "/fast.toml") << waiting_scenario("1ms");
  std::ofstream(tmp.path + "/slow.toml") << waiting_scenario("3ms");
  auto repeat = [&](const std::string& file) {
    const auto r = run_rig({"run", tmp.path + "/" + file, "--repeat", "3", "--out", tmp.path + "/" + file + ".d"}, tmp.path,
                           60'000);
    INFO(r.stdout_text() << r.err);
    REQUIRE(r.code == 0);
    CHECK(r.stdout_text().find("[3/3] ok") != std::string::npos);
    return repeat_dir(r);
  };
  const std::string fast = repeat(std::string("fast.toml")), fast2 = repeat("fast.toml"), slow = repeat("slow.toml");
  REQUIRE(!fast.empty());
  const auto j = nlohmann::json::parse(slurp(fast + "/repeat.json"));
  CHECK(j["repeats"] == 3);
  CHECK(j["runs"].size() == 3);
  const auto& p50 = j["phases"][0]["figures"]["p50"];
  CHECK(p50["n"] == 3);
  CHECK(p50["min"].get<double>() <= p50["median"].get<double>());
  CHECK(p50["median"].get<double>() <= p50["max"].get<double>());
  CHECK(p50["median"].get<double>() >= 1000);  // io_wait 1 ms a request

  const auto reg = run_rig({"compare", fast, slow, "--fail-if", "p50 > 1.50x", "--fail-if", "throughput < 0.70x", "--out",
                            tmp.path + "/c.html"},
                           tmp.path);
  const std::string out = reg.stdout_text();
  INFO(out << reg.err);
  CHECK(reg.code == 1);
  CHECK(out.find("FAIL p50 > 1.50x: steady.rr.p50") != std::string::npos);
  CHECK(out.find("FAIL throughput < 0.70x: steady.rr.throughput") != std::string::npos);
  CHECK(out.find("bootstrap over the repeats") != std::string::npos);
  CHECK(out.find("rig compare: 2 regressions past the thresholds (exit 1)") != std::string::npos);
  CHECK(slurp(tmp.path + "/c.html").find("95% interval") != std::string::npos);

  const auto same = run_rig({"compare", fast, fast2, "--fail-if", "p50 > 1.50x", "--out", tmp.path + "/c2.html"}, tmp.path);
  INFO(same.stdout_text());
  CHECK(same.code == 0);
  CHECK(same.stdout_text().find("no regression past the thresholds") != std::string::npos);

  // A run against a repeat is fine (the run is one sample); a bad threshold is refused.
  const std::string one = fs::path(j["runs"][0].get<std::string>()).string();
  CHECK(run_rig({"compare", one, slow, "--fail-if", "p50 > 1.5x", "--out", tmp.path + "/c3.html"}, tmp.path).code == 1);
  const auto bad = run_rig({"compare", fast, slow, "--fail-if", "p50 > 150%"}, tmp.path);
  CHECK(bad.code == 2);
  CHECK(bad.err.find("written with an x") != std::string::npos);
}
