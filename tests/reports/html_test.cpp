// report.html: what it holds (series, tables, escaping, size for a one-hour run), and the
// page of a real run opened in headless Chromium: loaded, and its plots drawn.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "../helpers.hpp"
#include "png.hpp"
#include "reports/html.hpp"

using namespace rig;
using namespace rig::testing;
namespace fs = std::filesystem;

namespace {

// A synthetic run: `seconds` rows, `workloads` workloads, two phases (the second injected).
std::pair<nlohmann::json, timeseries_table> synthetic(int seconds, int workloads) {
  nlohmann::json r = {{"status", "ok"},
                      {"rig_version", "test"},
                      {"scenario", {{"name", "synthetic <&>"}, {"description", "a \"quoted\" <b>run</b>"}}},
                      {"host", {{"kernel", "Linux"}, {"cpus", 2}}},
                      {"workloads", nlohmann::json::object()},
                      {"phases",
                       {{{"name", "baseline"}, {"start_s", 0}, {"end_s", seconds / 2}, {"injections", nlohmann::json::array()},
                         {"workloads", nlohmann::json::object()}},
                        {{"name", "injected"},
                         {"start_s", seconds / 2},
                         {"end_s", seconds},
                         {"injections",
                          {{{"name", "slow"}, {"kind", "proxy"}, {"mechanism", "m"}, {"verified", true},
                            {"verification", "read back"}, {"measured", {{"summary", "added 5 ms"}}}}}},
                         {"workloads", nlohmann::json::object()}}}},
                      {"magnification", nlohmann::json::array()},
                      {"events", nlohmann::json::array()},
                      {"expectations", {{{"expr", "injected.w0.latency.p50 > 1ms"}, {"ok", true}, {"actual", "5ms"}}}}};
  timeseries_table t;
  t.columns = {"t_s", "phase"};
  for (int w = 0; w < workloads; ++w) {
    const std::string n = "w" + std::to_string(w);
    r["workloads"][n] = {{"kind", "tcp"}};
    for (auto& p : r["phases"])
      p["workloads"][n] = {{"ops", 100}, {"throughput_ops_s", 100.0},
                           {"latency_us", {{"count", 100}, {"p50", 100.0}, {"p99", 900.0}, {"p999", 2000.0}}},
                           {"errors", {{"timeout", 0}}}};
    for (const char* c : {".ops", ".p50_us", ".p99_us", ".p999_us", ".errors"}) t.columns.push_back(n + c);
  }
  for (const char* c : {"target.cpu_pct", "target.rss_bytes", "target.threads", "target.live_workers",
                        "target.queue_depth", "rig.cpu_pct", "cgroup.memory_bytes", "cgroup.memory_cap_bytes",
                        "cgroup.cpu_pct", "cgroup.cpu_cap_pct"})
    t.columns.push_back(c);
  for (int s = 0; s < seconds; ++s) {
    std::vector<std::string> row = {std::to_string(s), s < seconds / 2 ? "baseline" : "injected"};
    for (int w = 0; w < workloads; ++w)
      for (double v : {1000.0 + s % 7, 100.0 + s % 13, 900.0 + 10 * (s % 17), 2000.0 + s, double(s % 3)})
        row.push_back(fmt::format("{:.1f}", v));
    for (double v : {45.5, 1e8 + s * 1000.0, 12.0, 8.0, 0.0, 3.2, 9e7, 2e8, 40.0, 50.0}) row.push_back(fmt::format("{:.1f}", v));
    t.rows.push_back(std::move(row));
  }
  return {r, t};
}

std::map<std::string, int> series_points(const std::string& html) {
  std::map<std::string, int> out;
  const std::regex re("class=\"series\" data-name=\"([^\"]+)\" data-points=\"([0-9]+)\"");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator(); ++it)
    out[(*it)[1].str() + " @" + std::to_string(it->position())] = std::stoi((*it)[2].str());
  return out;
}

int count_of(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("report.html holds the charts, tables and scenario, every text escaped, no script and no network") {
  const auto [r, t] = synthetic(60, 1);
  const std::string html = render_html(r, t, "name = \"x\" # <script>alert(1)</script>");
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  for (const char* id : {"id=\"latency\"", "id=\"throughput\"", "id=\"memory\"", "id=\"cpu\"", "id=\"workers\"",
                         "id=\"queue\""})
    CHECK_MESSAGE(html.find(id) != std::string::npos, id);
  const auto pts = series_points(html);
  int latency_series = 0;
  for (const auto& [name, n] : pts) {
    CHECK_MESSAGE(n == 60, name);
    latency_series += name.rfind("w0 p", 0) == 0;
  }
  CHECK(latency_series == 3);  // p50, p99, p99.9
  CHECK(html.find("data-name=\"cgroup cap\"") != std::string::npos);
  CHECK(html.find("data-name=\"quota\"") != std::string::npos);
  // Phases shaded and named on the plots, the injected one tinted.
  CHECK(count_of(html, "class=\"phase-label\"") == 2 * 6);
  CHECK(count_of(html, "class=\"phase injected\"") == 6);
  CHECK(html.find(">100 µs<") != std::string::npos);  // decade ticks with units
  CHECK(html.find("log)") != std::string::npos);  // latency on a log axis
  CHECK(html.find(">added 5 ms<") != std::string::npos);
  CHECK(html.find("synthetic &lt;&amp;&gt;") != std::string::npos);
  CHECK(html.find("&lt;b&gt;run&lt;/b&gt;") != std::string::npos);
  CHECK(html.find("<script") == std::string::npos);  // the scenario's text is escaped, and rig writes none
  CHECK(html.find("http://") == html.find("http://www.w3.org/2000/svg"));  // the SVG namespace, nothing fetched
  CHECK(html.find("https://") == std::string::npos);
}

TEST_CASE("report.html of a one-hour run with three workloads stays under 5 MB, each series at most 1200 points") {
  const auto [r, t] = synthetic(3600, 3);
  const std::string html = render_html(r, t, "");
  MESSAGE("one hour, 3 workloads: report.html " << html.size() / 1024 << " KiB");
  CHECK(html.size() < 5u * 1024 * 1024);
  const auto pts = series_points(html);
  CHECK(pts.size() >= 9 + 6 + 4);
  for (const auto& [name, n] : pts) {
    CHECK_MESSAGE(n <= int(html_max_points), name);
    CHECK_MESSAGE(n >= 1000, name);
  }
  // The tail is kept: a bucket's maximum, so the last p99.9 (2000 + 3599 us) is still drawn.
  CHECK(html.find("data-name=\"w0 p99.9\"") != std::string::npos);
}

TEST_CASE("rig report RUN_DIR rewrites report.html from the run's files, and names what is missing") {
  temp_dir tmp;
  const auto run = run_rig(run_args(RIG_SOURCE_DIR "/scenarios/quickstart.toml", tmp.path,
                                    {{"baseline", "1s"}, {"nagle", "1s"}, {"recovery", "1s"}}),
                           tmp.path);
  REQUIRE(run.code == 0);
  const std::string dir = run.run_dir();
  REQUIRE(fs::exists(dir + "/report.html"));  // written with every run
  CHECK(run.stdout_text().find(dir + "/report.html") != std::string::npos);
  const std::string first = slurp(dir + "/report.html");
  fs::remove(dir + "/report.html");
  const auto again = run_rig({"report", dir}, tmp.path);
  CHECK(again.code == 0);
  CHECK(slurp(dir + "/report.html") == first);
  const auto missing = run_rig({"report", tmp.path + "/nothing"}, tmp.path);
  CHECK(missing.code == 2);
  CHECK(missing.err.find("no report.json in " + tmp.path + "/nothing") != std::string::npos);
}

TEST_CASE("report.html of a real run in headless Chromium: the page loads and its plots are drawn") {
  const std::string chromium = which("chromium");
  if (chromium.empty()) {
    MESSAGE("skipped: chromium is not installed (scripts/install-deps.sh installs it)");
    return;
  }
  temp_dir tmp;
  const auto run = run_rig(run_args(RIG_SOURCE_DIR "/scenarios/quickstart.toml", tmp.path,
                                    {{"baseline", "2s"}, {"nagle", "2s"}, {"recovery", "2s"}}),
                           tmp.path);
  REQUIRE(run.code == 0);
  const std::string page = "file://" + run.run_dir() + "/report.html";
  // No network: every host name resolves to nothing, and nothing runs in the background.
  const std::vector<std::string> flags = {
      chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
      "--host-resolver-rules=MAP * ~NOTFOUND", "--user-data-dir=" + tmp.path + "/profile", "--window-size=1280,3600"};
  auto with = [&](std::vector<std::string> extra) {
    auto argv = flags;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  };
  // The DOM as loaded: our page, not an error page, with its series.
  auto dom = child_process::spawn({.argv = with({"--dump-dom", page}), .capture_stdout = true,
                                   .stderr_path = tmp.path + "/dom.err"});
  std::string text;
  while (auto line = dom.read_line(60'000)) text += *line + "\n";
  REQUIRE(dom.wait(60'000));
  CHECK_MESSAGE(dom.exit_code() == 0, slurp(tmp.path + "/dom.err"));
  CHECK(text.find("<figure class=\"chart\" id=\"latency\">") != std::string::npos);
  CHECK(text.find("chrome-error") == std::string::npos);
  const auto pts = series_points(text);
  REQUIRE(!pts.empty());
  for (const auto& [name, n] : pts)
    if (name.rfind("rr ", 0) == 0) CHECK_MESSAGE(n >= 5, name);  // 6 s of per-second points
  // The screenshot: the plots are drawn (the series' blue and the injected phase's tint).
  auto shot = child_process::spawn({.argv = with({"--screenshot=" + tmp.path + "/shot.png", page}),
                                    .output_path = tmp.path + "/shot.log"});
  REQUIRE(shot.wait(60'000));
  CHECK(shot.exit_code() == 0);
  const auto img = read_png(tmp.path + "/shot.png");
  CHECK(img.width == 1280);
  int blue = 0, tint = 0;
  double sum = 0, sum2 = 0;
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) {
      const uint8_t* p = img.at(x, y);
      blue += std::abs(p[0] - 0x25) < 30 && std::abs(p[1] - 0x63) < 30 && std::abs(p[2] - 0xeb) < 30;
      tint += p[0] == 0xff && p[1] == 0xf1 && p[2] == 0xdb;
      const double v = (p[0] + p[1] + p[2]) / 3.0;
      sum += v;
      sum2 += v * v;
    }
  const double n = double(img.width) * img.height, variance = sum2 / n - (sum / n) * (sum / n);
  MESSAGE("screenshot " << img.width << "x" << img.height << ": " << blue << " series-blue pixels, " << tint
                        << " injected-phase pixels, variance " << variance);
  CHECK(blue > 300);
  CHECK(tint > 10'000);
  CHECK(variance > 100);
}

TEST_CASE("rig compare: before and after a fix, side by side with ratios, in the terminal and compare.html") {
  temp_dir tmp;
  const std::vector<std::pair<std::string, std::string>> short_phases = {{"baseline", "1s"}, {"nagle", "1s"}, {"recovery", "1s"}};
  const auto before = run_rig(run_args(RIG_SOURCE_DIR "/scenarios/quickstart.toml", tmp.path + "/a", short_phases), tmp.path);
  auto after_args = run_args(RIG_SOURCE_DIR "/scenarios/quickstart.toml", tmp.path + "/b", short_phases);
  after_args.insert(after_args.end(), {"--set", "target.reply_writes=1"});  // the fix: one write per reply
  const auto after = run_rig(after_args, tmp.path);
  REQUIRE(before.code == 0);
  REQUIRE(after.code == 1);  // its check that nagle stalls no longer holds: the fix worked
  const std::string a = before.run_dir();
  const std::string b = after.run_dir();
  const auto cmp = run_rig({"compare", a, b, "--out", tmp.path + "/compare.html"}, tmp.path);
  INFO(cmp.stdout_text() << cmp.err);
  REQUIRE(cmp.code == 0);
  std::string nagle_line;
  for (const auto& l : cmp.out)
    if (l.rfind("nagle", 0) == 0) nagle_line = l;
  REQUIRE(!nagle_line.empty());
  // ops/s A, B, B/A, p50 A, B, B/A: the fixed p50 is a small fraction of the stalled one.
  std::istringstream cells(nagle_line);
  std::vector<std::string> c;
  for (std::string x; cells >> x;) c.push_back(x);
  REQUIRE(c.size() >= 8);
  CHECK(std::stod(c[4]) > 10);      // ops/s B/A: many times more
  CHECK(std::stod(c[7]) < 0.1);     // p50 B/A
  const std::string html = slurp(tmp.path + "/compare.html");
  CHECK(html.find("data-name=\"A rr p99\"") != std::string::npos);
  CHECK(html.find("data-name=\"B rr p99\"") != std::string::npos);
  CHECK(html.find("<th>B/A</th>") != std::string::npos);

  // A phase only one run has is listed as such; a directory that is not a run is named.
  auto j = nlohmann::json::parse(slurp(b + "/report.json"));
  j["phases"][2]["name"] = "after_fix";
  std::ofstream(b + "/report.json") << j.dump();
  const auto renamed = run_rig({"compare", a, b, "--out", tmp.path + "/compare2.html"}, tmp.path);
  CHECK(renamed.stdout_text().find("(only in A)") != std::string::npos);
  CHECK(renamed.stdout_text().find("(only in B)") != std::string::npos);
  const auto bad = run_rig({"compare", a, tmp.path + "/none"}, tmp.path);
  CHECK(bad.code == 2);
  CHECK(bad.err.find(tmp.path + "/none: no report.json, repeat.json or sweep.json") != std::string::npos);
}
