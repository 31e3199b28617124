// rig suite end to end: scenarios found through a suite file and a directory, their overrides
// and tags, the gate's exit code, suite.json, suite.html and JUnit XML; bad input refused
// before anything runs.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "../helpers.hpp"

using namespace rig;
using namespace rig::testing;
namespace fs = std::filesystem;

namespace {

// A one-phase scenario against the built-in target with one check.
std::string small_scenario(const std::string& name, const std::string& check, const std::string& tags = "[]") {
  return "name = \"" + name + "\"\ntags = " + tags +
         "\n[target]\nkind = \"builtin\"\n[workloads.rr]\nkind = \"tcp\"\nconnections = 2\nrate = \"200/s\"\n"
         "[[phases]]\nname = \"base\"\nduration = \"5s\"\n[expect]\nchecks = [\"" + check + "\"]\n";
}

// The suite's directory, from its "suite: DIR/suite.json" line.
std::string suite_dir(const rig_result& r) {
  for (const auto& l : r.out)
    if (l.rfind("suite: ", 0) == 0) return fs::path(l.substr(7)).parent_path().string();
  return "";
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("rig suite: a suite file's scenarios run in turn with their overrides, exit 1 names the failed one") {
  temp_dir tmp;
  fs::create_directories(tmp.path + "/s");
  std::ofstream(tmp.path + "/s/fast.toml") << small_scenario("fast", "base.rr.errors == 0", "[\"net\"]");
  // Passes as written; its entry in the suite sets a rate its check refuses.
  std::ofstream(tmp.path + "/s/slow.toml") << small_scenario("slow", "base.rr.throughput < 300/s");
  std::ofstream(tmp.path + "/gate.toml") << "name = \"gate\"\ndescription = \"two small ones\"\nphase_duration = \"1s\"\n"
                                            "[[scenarios]]\nfile = \"s/fast.toml\"\ntags = [\"release\"]\n"
                                            "[[scenarios]]\nfile = \"s/slow.toml\"\nname = \"slow-500\"\n"
                                            "set = [\"workloads.rr.rate=500/s\"]\n";
  const std::string junit = tmp.path + "/junit.xml";
  const auto r = run_rig({"suite", tmp.path + "/gate.toml", "--out", tmp.path, "--junit", junit, "-q"}, tmp.path, 120'000);
  const std::string out = r.stdout_text();
  INFO(out << r.err);
  CHECK(r.code == 1);
  CHECK(out.find("[1/2] fast") != std::string::npos);
  CHECK(out.find("[2/2] slow-500") != std::string::npos);
  CHECK(out.find("rig suite: 1 of 2 failed: slow-500 (checks_failed)") != std::string::npos);
  CHECK(out.find("FAIL base.rr.throughput < 300/s") != std::string::npos);
  // Its phases were shortened (the suite's phase_duration): said, as a count check may need their length.
  CHECK(out.find("1 of them failed checks with every phase shortened (phase_duration)") != std::string::npos);
  const std::string dir = suite_dir(r);
  REQUIRE(!dir.empty());
  CHECK(fs::path(dir).filename().string().find("-gate-suite") != std::string::npos);
  const auto s = nlohmann::json::parse(slurp(dir + "/suite.json"));
  CHECK(s["name"] == "gate");
  REQUIRE(s["scenarios"].size() == 2);
  const auto& fast = s["scenarios"][0];
  const auto& slow = s["scenarios"][1];
  CHECK(fast["label"] == "fast");
  CHECK(fast["status"] == "ok");
  CHECK(fast["tags"] == nlohmann::json({"net", "release"}));  // the scenario's and the entry's
  CHECK(fast["phase_duration"] == "1s");
  CHECK(slow["status"] == "checks_failed");
  CHECK(slow["exit_code"] == 1);
  CHECK(slow["sets"] == nlohmann::json({"workloads.rr.rate=500/s"}));
  REQUIRE(slow["failed_checks"].size() == 1);
  // The override reached the run: about 500/s offered for its 1 s phase.
  const double thr = slow["figures"]["throughput_ops_s"].get<double>();
  CHECK(thr > 400);
  CHECK(thr < 600);
  CHECK(s["failed"] == nlohmann::json({"slow-500"}));
  // Each run's directory is inside the suite's; its phase took the suite's 1 s.
  for (const auto& row : s["scenarios"]) {
    const std::string run = dir + "/" + row["run_dir"].get<std::string>();
    const auto rep = nlohmann::json::parse(slurp(run + "/report.json"));
    const auto& ph = rep["phases"][0];
    CHECK(ph["end_s"].get<double>() - ph["start_s"].get<double>() == doctest::Approx(1.0).epsilon(0.2));
  }
  const std::string html = slurp(dir + "/suite.html");
  CHECK(html.find("1 of 2 failed") != std::string::npos);
  CHECK(html.find("href=\"" + slow["run_dir"].get<std::string>() + "/report.html\"") != std::string::npos);
  const std::string xml = slurp(junit);
  CHECK(xml.find("<testsuites name=\"rig\" tests=\"4\" failures=\"1\" errors=\"0\">") != std::string::npos);
  CHECK(xml.find("<testsuite name=\"slow-500\"") != std::string::npos);
  CHECK(xml.find("message=\"expected base.rr.throughput &lt; 300/s, actual") != std::string::npos);
  CHECK(count(xml, "<testsuite ") == 2);
}

TEST_CASE("rig suite --repeat: each scenario run N times, its checks judged on the medians, their spread in suite.json") {
  temp_dir tmp;
  std::ofstream(tmp.path + "/holds.toml") << small_scenario("holds", "base.rr.errors == 0");
  std::ofstream(tmp.path + "/fails.toml") << small_scenario("fails", "base.rr.latency.p50 < 1us");
  // The suite file asks for 3; --repeat on the command line overrides it.
  std::ofstream(tmp.path + "/gate.toml") << "name = \"gate\"\nrepeat = 3\nphase_duration = \"500ms\"\n"
                                            "[[scenarios]]\nfile = \"holds.toml\"\n[[scenarios]]\nfile = \"fails.toml\"\n";
  const std::string junit = tmp.path + "/junit.xml";
  const auto r = run_rig({"suite", tmp.path + "/gate.toml", "--repeat", "2", "--out", tmp.path, "--junit", junit, "-q"},
                         tmp.path, 120'000);
  const std::string out = r.stdout_text();
  INFO(out << r.err);
  CHECK(r.code == 1);
  CHECK(out.find("2 scenarios, each 2 times (checks on the medians)") != std::string::npos);
  CHECK(out.find("[2/2] ok") != std::string::npos);  // run_repeat's line per run
  CHECK(out.find("rig suite: 1 of 2 failed: fails (checks_failed)") != std::string::npos);
  CHECK(out.find("the median of each scenario's runs") != std::string::npos);
  const std::string dir = suite_dir(r);
  const auto s = nlohmann::json::parse(slurp(dir + "/suite.json"));
  REQUIRE(s["scenarios"].size() == 2);
  for (const auto& row : s["scenarios"]) {
    CAPTURE(row.dump());
    CHECK(row["repeats"] == 2);
    CHECK(row["run_dir"].get<std::string>().ends_with("-repeat"));
    // Its runs, each a run directory with its report, and the repeat's summary beside them.
    const std::string rep = dir + "/" + row["run_dir"].get<std::string>();
    CHECK(fs::exists(rep + "/repeat.json"));
    size_t runs = 0;
    for (const auto& e : fs::directory_iterator(rep)) runs += fs::exists(e.path() / "report.json");
    CHECK(runs == 2);
    // Each key figure's median and range over the two runs; the row's figure is the median.
    const auto& p50 = row["spread"]["p50_us"];
    CHECK(p50["n"] == 2);
    CHECK(p50["min"].get<double>() <= p50["median"].get<double>());
    CHECK(p50["median"].get<double>() <= p50["max"].get<double>());
    CHECK(row["figures"]["p50_us"].get<double>() == p50["median"].get<double>());
  }
  CHECK(s["scenarios"][0]["status"] == "ok");
  const auto& failed = s["scenarios"][1];
  CHECK(failed["status"] == "checks_failed");
  CHECK(failed["exit_code"] == 1);
  REQUIRE(failed["failed_checks"].size() == 1);
  CHECK(failed["failed_checks"][0]["expr"] == "base.rr.latency.p50 < 1us");
  CHECK(failed["failed_checks"][0]["actual"].get<std::string>().find("(median of 2 runs: ") != std::string::npos);
  // JUnit: a testsuite per scenario, its check's failure with the median's text.
  const std::string xml = slurp(junit);
  CHECK(count(xml, "<testsuite ") == 2);
  CHECK(xml.find("median of 2 runs") != std::string::npos);
}

TEST_CASE("rig suite: a directory's scenarios, --filter and --skip by tag, an unknown tag refused with the tags there are") {
  temp_dir tmp;
  fs::create_directories(tmp.path + "/d");
  std::ofstream(tmp.path + "/d/a.toml") << small_scenario("a", "base.rr.errors == 0", "[\"smoke\"]");
  std::ofstream(tmp.path + "/d/b.toml") << small_scenario("b", "base.rr.errors == 0", "[\"slow\"]");
  const auto r = run_rig({"suite", tmp.path + "/d", "--filter", "smoke", "--phase-duration", "500ms", "--out", tmp.path, "-q"},
                         tmp.path, 60'000);
  const std::string out = r.stdout_text();
  INFO(out << r.err);
  CHECK(r.code == 0);
  CHECK(out.find("1 scenario (1 left out by --filter/--skip)") != std::string::npos);
  CHECK(out.find("rig suite: all 1 passed") != std::string::npos);
  const auto s = nlohmann::json::parse(slurp(suite_dir(r) + "/suite.json"));
  REQUIRE(s["scenarios"].size() == 1);
  CHECK(s["scenarios"][0]["label"] == "a");
  CHECK(s["filtered_out"] == nlohmann::json({"b"}));

  // --skip leaves out what --filter would keep; an unknown tag there is refused too.
  const auto skip = run_rig({"suite", tmp.path + "/d", "--skip", "slow", "--dry-run"}, tmp.path);
  CHECK(skip.code == 0);
  CHECK(skip.stdout_text().find("[1/1] a") != std::string::npos);
  CHECK(skip.stdout_text().find("1 left out by --filter/--skip") != std::string::npos);
  const auto bad_skip = run_rig({"suite", tmp.path + "/d", "--skip", "slo", "--dry-run"}, tmp.path);
  CHECK(bad_skip.code == 2);
  CHECK(bad_skip.err.find("--skip slo: no scenario of the suite has tag 'slo'; did you mean 'slow'?") != std::string::npos);
  const auto bad = run_rig({"suite", tmp.path + "/d", "--filter", "smok", "--out", tmp.path + "/none"}, tmp.path);
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--filter smok: no scenario of the suite has tag 'smok'; did you mean 'smoke'?") != std::string::npos);
  CHECK(!fs::exists(tmp.path + "/none"));
}

TEST_CASE("rig suite: every problem in every scenario said before anything runs (exit 2)") {
  temp_dir tmp;
  std::ofstream(tmp.path + "/ok.toml") << small_scenario("ok", "base.rr.errors == 0");
  std::ofstream(tmp.path + "/broken.toml") << "name = \"broken\"\n[target]\nkind = \"builtn\"\n";
  std::ofstream(tmp.path + "/suite.toml") << "name = \"s\"\ndescripton = \"typo\"\n"
                                             "[[scenarios]]\nfile = \"ok.toml\"\nset = [\"workloads.rr.rat=1/s\"]\n"
                                             "[[scenarios]]\nfile = \"missing.toml\"\n"
                                             "[[scenarios]]\nfile = \"broken.toml\"\n"
                                             "[[scenarios]]\nfile = \"suite.toml\"\n";
  const auto r = run_rig({"suite", tmp.path + "/suite.toml", "--out", tmp.path + "/runs"}, tmp.path);
  INFO(r.err);
  CHECK(r.code == 2);
  CHECK(r.err.find("suite.toml:2:1: unknown key 'descripton' in the suite; did you mean 'description'?") !=
        std::string::npos);
  CHECK(r.err.find("--set workloads.rr.rat=1/s: unknown key 'rat' in [workloads.rr]; did you mean 'rate'?") !=
        std::string::npos);
  CHECK(r.err.find("missing.toml: no such file or directory") != std::string::npos);
  CHECK(r.err.find("broken.toml:3:8: unknown target kind 'builtn'") != std::string::npos);
  CHECK(r.err.find("suite.toml lists itself") != std::string::npos);
  CHECK(r.err.find("nothing was run") != std::string::npos);
  CHECK(!fs::exists(tmp.path + "/runs"));
  const auto dur = run_rig({"suite", tmp.path + "/ok.toml", "--phase-duration", "10"}, tmp.path);
  CHECK(dur.code == 2);
  CHECK(dur.err.find("--phase-duration 10: missing unit") != std::string::npos);
}

TEST_CASE("rig suite --dry-run: the shipped suite and scenarios/ are valid, listed in order, nothing run") {
  temp_dir tmp;
  const auto gate = run_rig({"suite", RIG_SOURCE_DIR "/scenarios/suites/release-gate.toml", "--dry-run", "--out",
                             tmp.path + "/runs"},
                            tmp.path);
  const std::string out = gate.stdout_text();
  INFO(out << gate.err);
  CHECK(gate.code == 0);
  CHECK(out.find("[1/6] quickstart") != std::string::npos);
  CHECK(out.find("[6/6] proxy-toxics-seed7") != std::string::npos);
  CHECK(out.find("--set seed=7") != std::string::npos);
  CHECK(!fs::exists(tmp.path + "/runs"));
  size_t files = 0;
  for (const auto& f : fs::directory_iterator(RIG_SOURCE_DIR "/scenarios")) files += f.path().extension() == ".toml";
  const auto all = run_rig({"suite", RIG_SOURCE_DIR "/scenarios", "--dry-run"}, tmp.path);
  INFO(all.err);
  CHECK(all.code == 0);
  CHECK(all.stdout_text().find(fmt::format("{} scenarios valid", files)) != std::string::npos);
}

TEST_CASE("every report a suite writes validates against rig schema --report (report_version 1)") {
  const std::string py = python_with("jsonschema");
  if (py.empty()) {
    MESSAGE("skipped: needs python3 with jsonschema (scripts/install-deps.sh installs python3-jsonschema)");
    exit(77);
  }
  temp_dir tmp;
  const std::string dir = RIG_SOURCE_DIR "/scenarios/";
  // Different shapes: injections verified and reverted, http status classes, rejections and
  // failed checks, the target's own counters and a cgroup, a proxy's toxics.
  const auto r = run_rig({"suite", dir + "quickstart.toml", dir + "silent-limit.toml", dir + "overflow.toml",
                          dir + "memory-accumulation-fixed.toml", dir + "proxy-toxics.toml", "--phase-duration", "500ms",
                          "--out", tmp.path, "-q"},
                         tmp.path, 120'000);
  INFO(r.stdout_text() << r.err);
  const std::string sdir = suite_dir(r);
  REQUIRE(!sdir.empty());
  const auto s = nlohmann::json::parse(slurp(sdir + "/suite.json"));
  std::vector<std::string> reports;
  for (const auto& row : s["scenarios"]) reports.push_back(sdir + "/" + row["run_dir"].get<std::string>() + "/report.json");
  REQUIRE(reports.size() == 5);
  const auto schema = run_rig({"schema", "--report"}, tmp.path);
  REQUIRE(schema.code == 0);
  std::ofstream(tmp.path + "/report.schema.json") << schema.stdout_text();
  std::ofstream(tmp.path + "/v.py") << R"(import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft7Validator.check_schema(schema)
v = jsonschema.Draft7Validator(schema)
for path in sys.argv[2:]:
    doc = json.load(open(path))
    errs = list(v.iter_errors(doc))
    for e in errs[:5]:
        print(f"{path}: /{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}")
    print(f"{path}: {'valid' if not errs else 'INVALID'} status={doc.get('status')}")
)";
  std::vector<std::string> argv = {py, tmp.path + "/v.py", tmp.path + "/report.schema.json"};
  argv.insert(argv.end(), reports.begin(), reports.end());
  const auto v = run_program(argv, tmp.path);
  const std::string out = v.stdout_text();
  INFO(out << v.err);
  REQUIRE(v.code == 0);
  CHECK(count(out, ": valid") == 5);
  CHECK(out.find("status=checks_failed") != std::string::npos);  // overflow fails its checks: still a valid report
  // The schema is strict: a key it does not know is refused.
  auto doc = nlohmann::json::parse(slurp(reports[0]));
  doc["phases"][0]["unknown_key"] = 1;
  doc.erase("report_version");
  std::ofstream(tmp.path + "/bad.json") << doc.dump();
  const auto bad = run_program({py, tmp.path + "/v.py", tmp.path + "/report.schema.json", tmp.path + "/bad.json"}, tmp.path);
  CHECK(bad.stdout_text().find("'report_version' is a required property") != std::string::npos);
  CHECK(bad.stdout_text().find("'unknown_key' was unexpected") != std::string::npos);
}
