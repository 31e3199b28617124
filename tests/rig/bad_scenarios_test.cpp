// tests/bad_scenarios/: every malformed scenario is refused with exit 2 and a message that
// names the file, the line and the key (each file's first line says which line and what).
// The same for bad --set flags. Never a crash, never a silent default.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
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
  // One key twice on one command line: which holds is easy to misread, so neither does.
  for (const auto& args : std::vector<std::vector<std::string>>{{"validate", good}, {"run", good, "--out", tmp.path}}) {
    auto with_sets = args;
    for (const char* s : {"--set", "seed=1", "--set", "seed=2"}) with_sets.push_back(s);
    const auto twice = run_rig(with_sets, tmp.path);
    INFO(twice.err);
    CHECK(twice.code == 2);
    CHECK(twice.err.find("--set seed is given twice (--set seed=1, then --set seed=2)") != std::string::npos);
  }
  const auto bad_option = run_rig({"run", good, "--progress", "0"}, tmp.path);
  CHECK(bad_option.code == 2);
  CHECK(bad_option.err.find("--progress") != std::string::npos);
}

TEST_CASE("what is not a scenario file or not a report is refused at once: a device, a FIFO, a directory, past a cap, JSON nested 200,000 deep") {
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
  // A FIFO where a report, a repeat's summary and a suite entry are read: nothing writes to them,
  // so a read that opened one would block for ever (it did: suite, report and compare hung).
  fs::create_directory(tmp.path + "/fifo-run");
  REQUIRE(::mkfifo((tmp.path + "/fifo-run/report.json").c_str(), 0600) == 0);
  fs::create_directory(tmp.path + "/fifo-repeat");
  REQUIRE(::mkfifo((tmp.path + "/fifo-repeat/repeat.json").c_str(), 0600) == 0);
  REQUIRE(::mkfifo((tmp.path + "/entry.toml").c_str(), 0600) == 0);
  std::ofstream(tmp.path + "/fifo-suite.toml") << "name = \"s\"\n[[scenarios]]\nfile = \"entry.toml\"\n";
  std::ofstream(tmp.path + "/zero-suite.toml") << "name = \"s\"\n[[scenarios]]\nfile = \"/dev/zero\"\n";
  // A report.json past its 64 MiB cap: a sparse file, refused by its size before a byte is read.
  fs::create_directory(tmp.path + "/huge");
  { std::ofstream(tmp.path + "/huge/report.json") << "{"; }
  fs::resize_file(tmp.path + "/huge/report.json", (size_t(64) << 20) + 1);
  // 1,001 entries in a suite: past the 1,000 a suite runs (100,000 used to run without end).
  {
    std::ofstream many(tmp.path + "/many.toml");
    many << "name = \"many\"\n";
    for (int i = 0; i < 1001; ++i) many << "[[scenarios]]\nfile = \"" RIG_SOURCE_DIR "/scenarios/quickstart.toml\"\n";
  }
  const std::vector<refused> cases = {
      {{"validate", "/dev/zero"}, "/dev/zero is a device, not a scenario or suite file"},  // it used to be read without end
      {{"run", "/dev/zero", "--out", tmp.path}, "/dev/zero is a device"},
      {{"validate", tmp.path}, "is a directory, not a scenario or suite file"},  // it used to say "missing key 'name'"
      {{"validate", tmp.path + "/big.toml"}, "big.toml is 2.0MiB: a scenario or suite file may be at most 1.0MiB"},
      {{"validate", tmp.path + "/entry.toml"}, "entry.toml is a FIFO"},
      {{"suite", "/dev/zero", "--out", tmp.path}, "/dev/zero is a device"},  // it grew to 8 GiB in 30 s
      {{"suite", tmp.path + "/zero-suite.toml", "--out", tmp.path}, "/dev/zero is a device"},
      {{"suite", tmp.path + "/fifo-suite.toml", "--out", tmp.path}, "entry.toml is a FIFO"},
      {{"suite", tmp.path + "/many.toml", "--out", tmp.path}, "more than 1000 scenarios in the suite"},
      {{"report", tmp.path + "/deep"}, "nested more than 64 levels deep"},  // it used to overflow the stack
      {{"compare", tmp.path + "/deep", tmp.path + "/deep"}, "nested more than 64 levels deep"},
      {{"report", tmp.path + "/fifo-run"}, "report.json is a FIFO"},
      {{"compare", tmp.path + "/fifo-run", tmp.path + "/fifo-run"}, "report.json is a FIFO"},
      {{"export", tmp.path + "/fifo-run", "--format", "openmetrics"}, "report.json is a FIFO"},
      {{"compare", tmp.path + "/fifo-repeat", tmp.path + "/fifo-repeat"}, "repeat.json is a FIFO"},
      {{"report", tmp.path + "/huge"}, "report.json is 64.0MiB: a report.json may be at most 64.0MiB (67108864 bytes)"},
  };
  for (const auto& c : cases) {
    const auto r = run_rig(c.args, tmp.path, 20'000);
    INFO(c.args[0] << " " << c.args[1] << ": exit " << r.code << "\n" << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find(c.expect) != std::string::npos);
  }
}

TEST_CASE("every command that reads refuses a device, a FIFO, a directory, a file past its cap and a deep file, at once with exit 2") {
  temp_dir tmp;
  // Scenario inputs: validate, run and suite read them.
  const std::string t = tmp.path;
  REQUIRE(::mkfifo((t + "/fifo.toml").c_str(), 0600) == 0);
  std::ofstream(t + "/big.toml") << std::string(2 << 20, '#');
  std::ofstream(t + "/deep.toml") << "name = " << std::string(100'000, '[') << std::string(100'000, ']') << "\n";
  // A dotted table name of 50,000 parts (100 KB): toml++ recursed once per part and rig died of SIGSEGV.
  {
    std::ofstream dk(t + "/deepkey.toml");
    dk << "name = \"x\"\n[a";
    for (int i = 0; i < 50'000; ++i) dk << ".a";
    dk << "]\nb = 1\n";
  }
  fs::create_directory(t + "/empty-dir");
  const std::vector<std::pair<std::string, std::string>> scenario_inputs = {
      {"/dev/zero", "is a device"},
      {t + "/fifo.toml", "is a FIFO"},
      {t + "/empty-dir", "directory"},
      {t + "/big.toml", "may be at most 1.0MiB"},
      {t + "/deep.toml", "deep.toml"},
      {t + "/deepkey.toml", "deepkey.toml:2: a key nested 50001 levels deep: rig reads keys of at most 129 parts"},
  };
  for (const auto& [input, expect] : scenario_inputs)
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"validate", input}, {"run", input, "--out", t + "/runs"}, {"suite", input, "--out", t + "/runs"}}) {
      const auto r = run_rig(args, t, 20'000);
      INFO(args[0] << " " << input << ": exit " << r.code << "\n" << r.err);
      CHECK(r.code == 2);
      CHECK(r.err.find(expect) != std::string::npos);
    }
  // Run directories whose report.json is each of those: report, compare, export and history read it.
  auto run_dir = [&](const std::string& name) {
    fs::create_directories(t + "/h/" + name);
    return t + "/h/" + name;
  };
  std::vector<std::pair<std::string, std::string>> report_inputs;
  if (::mknod((run_dir("device") + "/report.json").c_str(), S_IFCHR | 0600, makedev(1, 5)) == 0)  // /dev/zero's numbers
    report_inputs.push_back({t + "/h/device", "report.json is a device"});
  REQUIRE(::mkfifo((run_dir("fifo") + "/report.json").c_str(), 0600) == 0);
  report_inputs.push_back({t + "/h/fifo", "report.json is a FIFO"});
  fs::create_directory(run_dir("dir") + "/report.json");
  report_inputs.push_back({t + "/h/dir", "report.json is a directory"});
  { std::ofstream(run_dir("huge") + "/report.json") << "{"; }
  fs::resize_file(t + "/h/huge/report.json", (size_t(64) << 20) + 1);
  report_inputs.push_back({t + "/h/huge", "a report.json may be at most 64.0MiB"});
  std::ofstream(run_dir("deep") + "/report.json")
      << R"({"rig_version": "x", "phases": )" << std::string(200'000, '[') << std::string(200'000, ']') << "}";
  report_inputs.push_back({t + "/h/deep", "nested more than 64 levels deep"});
  for (const auto& [dir, expect] : report_inputs)
    for (const auto& args : std::vector<std::vector<std::string>>{{"report", dir},
                                                                  {"compare", dir, dir, "--out", t + "/c.html"},
                                                                  {"export", dir, "--format", "openmetrics"},
                                                                  {"export", dir, "--format", "hdr-log", "--out", t}}) {
      const auto r = run_rig(args, t, 20'000);
      INFO(args[0] << " " << dir << ": exit " << r.code << "\n" << r.err);
      CHECK(r.code == 2);
      CHECK(r.err.find(expect) != std::string::npos);
    }
  // A history of those run directories: the first it reads stops it, named.
  const auto h = run_rig({"history", t + "/h", "--out", t}, t, 20'000);
  INFO(h.err);
  CHECK(h.code == 2);
  CHECK(h.err.find("report.json") != std::string::npos);
}

TEST_CASE("suites nested past 8 deep are refused as too deep, not as a suite that lists itself") {
  temp_dir tmp;
  for (int i = 0; i < 11; ++i)
    std::ofstream(fmt::format("{}/n{}.toml", tmp.path, i))
        << fmt::format("name = \"n{}\"\n[[scenarios]]\nfile = \"n{}.toml\"\n", i, i + 1);
  fs::copy_file(RIG_SOURCE_DIR "/scenarios/quickstart.toml", tmp.path + "/n11.toml");
  const auto r = run_rig({"suite", tmp.path + "/n0.toml", "--dry-run"}, tmp.path);
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK(r.err.find("n9.toml is a suite nested 10 deep: suites may be nested at most 8 deep") != std::string::npos);
  CHECK(r.err.find("lists itself") == std::string::npos);
}
