// rig run --repeat and rig compare --fail-if end to end: repeat.json's medians and spreads, a
// real regression flagged with its interval, a comparison of like with like only.
#include <doctest/doctest.h>

#include <filesystem>
#include <ranges>
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

namespace {

// HdrHistogram's own Java library (libhdrhistogram-java), the reference decoder.
std::string hdr_jar() {
  for (const char* j : {"/usr/share/java/hdrhistogram.jar", "/usr/share/java/HdrHistogram.jar"})
    if (fs::exists(j) && !which("java").empty()) return j;
  return "";
}

// HistogramLogProcessor's percentile distribution of a log, in ns: (percentile, value, total count) rows.
struct dist_row {
  double value, percentile;
  uint64_t total;
};
std::vector<dist_row> log_processor(const std::string& jar, const std::string& log, const std::string& dir) {
  const auto r = run_program({which("java"), "-cp", jar, "org.HdrHistogram.HistogramLogProcessor", "-i", log, "-csv",
                              "-outputValueUnitRatio", "1"},
                             dir, 60'000);
  INFO(r.err);
  REQUIRE(r.code == 0);
  std::vector<dist_row> rows;
  for (const auto& l : r.out) {
    double v = 0, p = 0;
    unsigned long long n = 0;
    if (!l.empty() && std::isdigit(static_cast<unsigned char>(l[0])) && std::sscanf(l.c_str(), "%lf,%lf,%llu", &v, &p, &n) == 3)
      rows.push_back({v, p, n});
  }
  REQUIRE(!rows.empty());
  return rows;
}

// The value at a percentile the processor prints exactly (0.5, 0.9), and the bracket around another.
double at(const std::vector<dist_row>& rows, double p) {
  for (const auto& r : rows)
    if (std::abs(r.percentile - p) < 1e-12) return r.value;
  FAIL("no row at percentile " << p);
  return 0;
}
std::pair<double, double> around(const std::vector<dist_row>& rows, double p) {
  for (size_t i = 1; i < rows.size(); ++i)
    if (rows[i].percentile >= p) return {rows[i - 1].value, rows[i].value};
  return {rows.back().value, rows.back().value};
}

}  // namespace

TEST_CASE("HdrHistogram's own decoder reads report.json's histograms and rig export's interval log: the same percentiles") {
  const std::string jar = hdr_jar();
  if (jar.empty()) {
    MESSAGE("skipped: needs java and HdrHistogram's jar (scripts/install-deps.sh installs default-jre-headless and "
            "libhdrhistogram-java)");
    exit(77);
  }
  temp_dir tmp;
  std::ofstream(tmp.path + "/two.toml") << "name = \"two\"\n[target]\nkind = \"builtin\"\nio_wait = \"200us\"\n"
                                           "[workloads.rr]\nkind = \"tcp\"\nconnections = 4\n"
                                           "[[phases]]\nname = \"a\"\nduration = \"2s\"\n"
                                           "[[phases]]\nname = \"b\"\nduration = \"1s\"\n";
  const auto run = run_rig({"run", tmp.path + "/two.toml", "--out", tmp.path}, tmp.path);
  REQUIRE(run.code == 0);
  const auto rep = run.report();
  uint64_t phase_total = 0;
  for (const auto& ph : rep["phases"]) {
    const auto& w = ph["workloads"]["rr"];
    REQUIRE(w.contains("histograms"));
    CHECK(w["histograms"]["unit"] == "ns");
    // The phase's histogram alone as a one-interval log, read by HdrHistogram's Java library.
    const std::string log = tmp.path + "/" + ph["name"].get<std::string>() + ".hlog";
    std::ofstream(log) << "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
                       << "0.000,1.000,1.000," << w["histograms"]["latency"].get<std::string>() << "\n";
    const auto rows = log_processor(jar, log, tmp.path);
    const auto& lat = w["latency_us"];
    INFO("phase " << ph["name"]);
    CHECK(rows.back().total == lat["count"].get<uint64_t>());
    CHECK(at(rows, 0.5) == doctest::Approx(lat["p50"].get<double>() * 1e3));
    CHECK(at(rows, 0.9) == doctest::Approx(lat["p90"].get<double>() * 1e3));
    const auto [lo, hi] = around(rows, 0.99);
    CHECK(lat["p99"].get<double>() * 1e3 >= lo);
    CHECK(lat["p99"].get<double>() * 1e3 <= hi);
    phase_total += lat["count"].get<uint64_t>();
  }
  // rig export: the per-second log of the whole run, every line read by the processor.
  const auto ex = run_rig({"export", run.run_dir(), "--format", "hdr-log", "--out", tmp.path + "/x"}, tmp.path);
  INFO(ex.err);
  REQUIRE(ex.code == 0);
  REQUIRE(ex.out.size() == 1);
  CHECK(ex.out[0] == tmp.path + "/x/two-rr.latency.hlog");
  const auto rows = log_processor(jar, ex.out[0], tmp.path);
  // The seconds hold the phases' requests, and those that finished after the last phase ended,
  // before the workload stopped: at the last phase's pace, 300 ms of them at most (1% of the run,
  // 30 ms, was too little for a sanitized rig on a loaded machine to end the phase and stop).
  CHECK(rows.back().total >= phase_total);
  const double last_pace = rep["phases"][1]["workloads"]["rr"]["throughput_ops_s"].get<double>();
  CHECK(double(rows.back().total) <= double(phase_total) + 0.3 * last_pace);
  // A line per second of the 3 s run.
  size_t intervals = 0;
  for (const auto& l : slurp(ex.out[0]) | std::views::split('\n'))
    intervals += !std::string_view(l.begin(), l.end()).empty() && std::isdigit(static_cast<unsigned char>(*l.begin()));
  CHECK(intervals >= 3);
}

TEST_CASE("rig export --format openmetrics: a Prometheus OpenMetrics parser reads it, the figures as report.json has them") {
  const std::string py = python_with("prometheus_client.openmetrics.parser");
  if (py.empty()) {
    MESSAGE("skipped: needs python3 with prometheus_client (scripts/install-deps.sh installs python3-prometheus-client)");
    exit(77);
  }
  temp_dir tmp;
  std::ofstream(tmp.path + "/om.toml") << waiting_scenario("500us");
  const auto run = run_rig({"run", tmp.path + "/om.toml", "--out", tmp.path}, tmp.path);
  REQUIRE(run.code == 0);
  const auto ex = run_rig({"export", run.run_dir(), "--format", "openmetrics", "--out", tmp.path + "/m.txt"}, tmp.path);
  REQUIRE(ex.code == 0);
  std::ofstream(tmp.path + "/p.py") << R"(import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
for fam in text_string_to_metric_families(open(sys.argv[1]).read()):
    for s in fam.samples:
        labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
        print(f"{s.name}|{labels}|{s.value!r}")
)";
  const auto parsed = run_program({py, tmp.path + "/p.py", tmp.path + "/m.txt"}, tmp.path);
  INFO(parsed.err);
  REQUIRE(parsed.code == 0);
  const auto rep = run.report();
  const auto& w = rep["phases"][0]["workloads"]["rr"];
  const auto value = [&](const std::string& name, const std::string& labels) {
    for (const auto& l : parsed.out)
      if (l.rfind(name + "|" + labels + "|", 0) == 0) return std::stod(l.substr(name.size() + labels.size() + 2));
    FAIL("no sample " << name << "{" << labels << "}");
    return 0.0;
  };
  CHECK(value("rig_latency_seconds", "phase=steady,quantile=0.99,scenario=waits,workload=rr") ==
        doctest::Approx(w["latency_us"]["p99"].get<double>() / 1e6));
  CHECK(value("rig_ops_total", "phase=steady,scenario=waits,workload=rr") == w["ops"].get<double>());
  CHECK(value("rig_throughput_ops_per_second", "phase=steady,scenario=waits,workload=rr") ==
        doctest::Approx(w["throughput_ops_s"].get<double>()));
  CHECK(value("rig_run_ok", "scenario=waits,status=ok") == 1);
}

TEST_CASE("rig history: a slow drift over releases, each point's spread, one scenario at a time") {
  temp_dir tmp;
  // Three "releases", each a little slower: 2, 3, 4 ms of io_wait; two runs each. Steps of 1 ms,
  // so that the loopback round trip beside the wait, which a sanitizer and load beside the test
  // stretch from ~0.1 ms to ~0.5 ms and vary from run to run, cannot undo a step.
  int i = 0;
  for (const char* wait : {"2000us", "3000us", "4000us"}) {
    std::ofstream(tmp.path + "/w.toml") << waiting_scenario(wait);
    const std::string point = tmp.path + "/hist/release-" + std::to_string(++i);
    REQUIRE(run_rig({"run", tmp.path + "/w.toml", "--repeat", "2", "--out", point}, tmp.path, 60'000).code == 0);
  }
  const auto h = run_rig({"history", tmp.path + "/hist"}, tmp.path);
  const std::string out = h.stdout_text();
  INFO(out << h.err);
  REQUIRE(h.code == 0);
  CHECK(out.find("rig history: waits — 3 points") != std::string::npos);
  CHECK(out.find("p50 ") != std::string::npos);
  CHECK(out.find("(rose in 2 of 2 steps)") != std::string::npos);
  const auto j = nlohmann::json::parse(slurp(tmp.path + "/hist/history.json"));
  REQUIRE(j["points"].size() == 3);
  CHECK(j["points"][0]["label"] == "release-1");
  CHECK(j["points"][0]["runs"] == 2);
  const auto& p50 = j["phases"][0]["figures"]["p50"];
  CHECK(p50["rises"] == 2);
  // p50 is the io_wait (at least) plus the loopback round trip (r, up to ~0.5 ms under a
  // sanitizer on a loaded machine, 1 ms allowed): (4 + r4) / (2 + r2) is between 4 / 3 = 1.33 and
  // 5 / 2 = 2.5; about 1.95 when idle.
  CHECK(p50["last_over_first"].get<double>() >= 1.33);
  CHECK(p50["last_over_first"].get<double>() <= 2.5);
  for (const auto& pt : p50["points"]) CHECK(pt["n"] == 2);
  const std::string html = slurp(tmp.path + "/hist/history.html");
  CHECK(html.find("History of waits") != std::string::npos);
  CHECK(html.find("<svg") != std::string::npos);
  CHECK(html.find(">release-3<") != std::string::npos);

  // Runs of another scenario beside them: it must be named.
  std::ofstream(tmp.path + "/o.toml") << "name = \"other\"\n[target]\nkind = \"builtin\"\n[workloads.rr]\nkind = \"tcp\"\n"
                                         "connections = 1\n[[phases]]\nname = \"p\"\nduration = \"500ms\"\n";
  REQUIRE(run_rig({"run", tmp.path + "/o.toml", "--out", tmp.path + "/hist/other"}, tmp.path).code == 0);
  const auto mixed = run_rig({"history", tmp.path + "/hist"}, tmp.path);
  CHECK(mixed.code == 2);
  CHECK(mixed.err.find("runs of 2 scenarios") != std::string::npos);
  CHECK(run_rig({"history", tmp.path + "/hist", "--scenario", "waits", "--out", tmp.path + "/h2"}, tmp.path).code == 0);
  const auto typo = run_rig({"history", tmp.path + "/hist", "--scenario", "wait"}, tmp.path);
  CHECK(typo.code == 2);
  CHECK(typo.err.find("did you mean 'waits'?") != std::string::npos);
}

TEST_CASE("rig compare of two sweeps: each level against the same level, with intervals over the repeats") {
  temp_dir tmp;
  auto sweep = [&](const std::string& wait) {
    std::ofstream(tmp.path + "/s.toml") << waiting_scenario(wait)
                                        << "[sweep]\nworkload = \"rr\"\nparam = \"connections\"\nvalues = [1, 2]\n"
                                           "repeats = 2\nphase_duration = \"500ms\"\n";
    const auto r = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path + "/" + wait}, tmp.path, 60'000);
    INFO(r.stdout_text() << r.err);
    REQUIRE(r.code == 0);
    return r.sweep_dir();
  };
  const std::string before = sweep("1ms"), after = sweep("3ms");
  const auto c = run_rig({"compare", before, after, "--fail-if", "p50 > 1.5x", "--out", tmp.path + "/c.html"}, tmp.path);
  const std::string out = c.stdout_text();
  INFO(out << c.err);
  CHECK(c.code == 1);
  CHECK(out.find("(sweep, 4 runs)") != std::string::npos);
  CHECK(out.find("FAIL p50 > 1.5x: [1] steady.rr.p50") != std::string::npos);
  CHECK(out.find("FAIL p50 > 1.5x: [2] steady.rr.p50") != std::string::npos);
  CHECK(out.find("95% interval") != std::string::npos);
  // A sweep is compared with a sweep only.
  const auto one = run_rig({"run", tmp.path + "/s.toml", "--set", "sweep.values=[1]", "--out", tmp.path + "/x"}, tmp.path,
                           60'000);
  REQUIRE(one.code == 0);
  const std::string run_dir =
      nlohmann::json::parse(slurp(one.sweep_dir() + "/sweep.json"))["levels"][0]["runs"][0].get<std::string>();
  const auto mixed = run_rig({"compare", before, run_dir}, tmp.path);
  CHECK(mixed.code == 2);
  CHECK(mixed.err.find("compare a sweep with a sweep") != std::string::npos);
}
