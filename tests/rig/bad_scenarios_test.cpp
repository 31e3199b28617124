// tests/bad_scenarios/: every malformed scenario is refused with exit 2 and a message that
// names the file, the line and the key (each file's first line says which line and what).
// The same for bad --set flags. Never a crash, never a silent default.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "../helpers.hpp"

using namespace rig::testing;
namespace fs = std::filesystem;

TEST_CASE("tests/bad_scenarios: each of at least 40 malformed scenarios is refused with exit 2, its line and key named") {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(RIG_SOURCE_DIR "/tests/bad_scenarios"))
    if (e.path().extension() == ".toml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 40);
  temp_dir tmp;
  for (const auto& f : files) {
    std::ifstream in(f);
    std::string header;
    std::getline(in, header);
    // "# expect: line N: TEXT"
    unsigned line = 0;
    const auto colon = header.find(": ", 15);
    REQUIRE_MESSAGE((std::sscanf(header.c_str(), "# expect: line %u:", &line) == 1 && colon != std::string::npos),
                    f.string() << ": no '# expect: line N: TEXT' header");
    const std::string expect = header.substr(colon + 2);
    const auto run = run_rig({"validate", f.string()}, tmp.path);
    INFO(f.filename().string() << "\n" << run.err);
    CHECK(run.code == 2);
    CHECK(run.err.find(f.string() + ":" + std::to_string(line) + ":") != std::string::npos);
    CHECK(run.err.find(expect) != std::string::npos);
    CHECK(run.err.find("terminate called") == std::string::npos);  // no crash text
  }
  // `rig run` refuses the same way, before anything touches the host.
  const auto run = run_rig({"run", files.front().string(), "--out", tmp.path}, tmp.path);
  CHECK(run.code == 2);
  CHECK(!fs::exists(tmp.path + "/runs"));
}

TEST_CASE("bad --set flags: unknown keys, bad values and unknown phases are refused with exit 2, naming the flag") {
  temp_dir tmp;
  const std::string good = RIG_SOURCE_DIR "/scenarios/quickstart.toml";
  struct bad_flag {
    std::string set, expect;
  };
  const std::vector<bad_flag> flags = {
      {"workloads.rr.conections=4", "--set workloads.rr.conections=4: unknown key 'conections' in [workloads.rr]; did "
                                    "you mean 'connections'?"},
      {"workloads.rr.connections=zero", "--set workloads.rr.connections=zero: 'connections' in [workloads.rr] must be an integer"},
      {"workloads.rr.connections=0", "out of range"},
      {"phases.nagel.duration=2s", "no phase 'nagel'; did you mean 'nagle'?"},
      {"workload.rr.connections=4", "no table [workload] in the scenario; did you mean 'workloads'?"},
      {"phases.nagle.duration=2", "needs a unit"},
      {"noequals", "expected key=value"},
      {"target.kind=teleport", "unknown target kind 'teleport'"},
  };
  for (const auto& f : flags) {
    const auto run = run_rig({"validate", good, "--set", f.set}, tmp.path);
    INFO(f.set << "\n" << run.err);
    CHECK(run.code == 2);
    CHECK(run.err.find(f.expect) != std::string::npos);
  }
  const auto bad_option = run_rig({"run", good, "--progress", "0"}, tmp.path);
  CHECK(bad_option.code == 2);
  CHECK(bad_option.err.find("--progress") != std::string::npos);
}
