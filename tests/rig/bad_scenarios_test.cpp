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

TEST_CASE("what is not a scenario file or not a report is refused at once: a device, a directory, 2 MiB, JSON nested 200,000 deep") {
  temp_dir tmp;
  struct refused {
    std::vector<std::string> args;
    std::string expect;
  };
  std::ofstream(tmp.path + "/big.toml") << std::string(2 << 20, '#');
  fs::create_directory(tmp.path + "/deep");
  // A report whose phases nest 200,000 deep: its walk overflowed the stack (SIGSEGV) before.
  std::ofstream(tmp.path + "/deep/report.json")
      << R"({"rig_version": "x", "phases": )" << std::string(200'000, '[') << std::string(200'000, ']') << "}";
  const std::vector<refused> cases = {
      {{"validate", "/dev/zero"}, "/dev/zero: is not a regular file"},  // it used to be read without end
      {{"run", "/dev/zero", "--out", tmp.path}, "/dev/zero: is not a regular file"},
      {{"validate", tmp.path}, "is a directory, not a scenario file"},  // it used to say "missing key 'name'"
      {{"validate", tmp.path + "/big.toml"}, "big.toml"},
      {{"report", tmp.path + "/deep"}, "nested more than 64 levels deep"},  // it used to overflow the stack
      {{"compare", tmp.path + "/deep", tmp.path + "/deep"}, "nested more than 64 levels deep"},
  };
  for (const auto& c : cases) {
    const auto r = run_rig(c.args, tmp.path, 20'000);
    INFO(c.args[0] << " " << c.args[1] << ": exit " << r.code << "\n" << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find(c.expect) != std::string::npos);
  }
}
