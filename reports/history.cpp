#include "reports/history.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/units.hpp"
#include "reports/html_common.hpp"
#include "reports/svg_chart.hpp"

namespace rig {

namespace fs = std::filesystem;

namespace {

const char* const trend_figures[] = {"p50", "p99", "throughput", "errors_pct"};
bool charted(const char* f) { return f != std::string("errors_pct"); }  // a share: in the table, not the charts

bool is_group(const fs::path& p) {
  return fs::exists(p / "report.json") || fs::exists(p / "repeat.json");
}

// "p50 1.20× (rose in 3 of 4 steps); ..." for the figures that have a first and a last point.
std::string drift_text(const history_row& row) {
  std::string drift;
  for (const char* f : trend_figures) {
    const double x = row.last_over_first.at(f);
    const auto [up, steps] = row.rises.at(f);
    if (!std::isnan(x) && steps)
      drift += fmt::format("{}{} {:.2f}× (rose in {} of {} steps)", drift.empty() ? "" : "; ", f, x, up, steps);
  }
  return drift;
}

}  // namespace

history_summary read_history(const std::string& dir, const std::string& scenario) {
  history_summary h;
  h.dir = dir;
  if (!fs::is_directory(dir)) throw input_error(dir + ": not a directory");
  std::vector<fs::path> subs;
  // At most max_runs_read directories, and runs in all (a history of 100,000 is refused, not read).
  const auto too_many = [&](const fs::path& where) {
    return input_error(fmt::format("{}: more than {} runs: rig reads at most {} in a history (move older ones out)",
                                   where.string(), max_runs_read, max_runs_read));
  };
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && !e.is_symlink()) {
      if (subs.size() >= max_runs_read) throw too_many(dir);
      subs.push_back(e.path());
    }
  size_t runs_read = 0;
  std::sort(subs.begin(), subs.end());
  for (const auto& s : subs) {
    history_point p{printable(s.filename().string()), s.string(), 0, {}};  // a name another user may have made
    if (is_group(s)) {
      p.runs = load_group(s.string());
    } else {  // a directory of runs or repeats (a release's): their spread
      std::vector<fs::path> runs;
      for (const auto& e : fs::directory_iterator(s))
        if (e.is_directory() && !e.is_symlink() && is_group(e.path())) {
          if (runs.size() >= max_runs_read) throw too_many(s);
          runs.push_back(e.path());
        }
      if (runs.empty()) continue;
      std::sort(runs.begin(), runs.end());
      p.runs = {s.string(), "repeat", {}};
      for (const auto& r : runs)
        for (auto& one : load_group(r.string()).runs) p.runs.runs.push_back(std::move(one));
    }
    if (p.runs.kind == "sweep" || p.runs.runs.empty()) continue;
    if ((runs_read += p.runs.runs.size()) > max_runs_read) throw too_many(dir);
    p.started = p.runs.runs.front().report.phases.empty() ? 0 : p.runs.runs.front().report.phases.front().start_wall;
    h.points.push_back(std::move(p));
  }
  // One scenario: the one asked for, or the only one there.
  std::vector<std::string> names;
  for (const auto& p : h.points)
    for (const auto& r : p.runs.runs)
      if (std::find(names.begin(), names.end(), r.report.scenario_name) == names.end())
        names.push_back(r.report.scenario_name);
  if (names.empty()) throw input_error(dir + ": no run in it (a history is a directory of run, --repeat or runs directories)");
  if (scenario.empty() && names.size() > 1)
    throw input_error(fmt::format("{}: runs of {} scenarios ({}): pick one with --scenario NAME", dir, names.size(),
                                  fmt::join(names, ", ")));
  h.scenario = scenario.empty() ? names.front() : scenario;
  if (std::find(names.begin(), names.end(), h.scenario) == names.end())
    throw input_error(fmt::format("{}: no run of scenario '{}'{} (there: {})", dir, h.scenario,
                                  did_you_mean(h.scenario, names), fmt::join(names, ", ")));
  for (auto& p : h.points)
    std::erase_if(p.runs.runs, [&](const group_run& r) { return r.report.scenario_name != h.scenario; });
  std::erase_if(h.points, [](const history_point& p) { return p.runs.runs.empty(); });
  std::stable_sort(h.points.begin(), h.points.end(),
                   [](const history_point& a, const history_point& b) { return a.started < b.started; });
  // The rows: every phase and workload any point has, in the first appearance's order.
  for (const auto& p : h.points)
    for (const auto& k : group_keys(p.runs))
      if (std::none_of(h.rows.begin(), h.rows.end(),
                       [&](const history_row& x) { return x.phase == k.phase && x.workload == k.workload; }))
        h.rows.push_back({k.phase, k.workload, {}, {}, {}});
  for (auto& row : h.rows)
    for (const char* f : trend_figures) {
      auto& series = row.figures[f];
      for (const auto& p : h.points) series.push_back(spread_stat::of(figure_values(p.runs, {"", row.phase, row.workload}, f)));
      double first = NAN, last = NAN, prev = NAN;
      int up = 0, steps = 0;
      for (const auto& s : series) {
        if (!s.n) continue;
        if (std::isnan(first)) first = s.median;
        if (!std::isnan(prev)) {
          ++steps;
          up += s.median > prev;
        }
        prev = last = s.median;
      }
      row.last_over_first[f] = first > 0 ? last / first : NAN;
      row.rises[f] = {up, steps};
    }
  return h;
}

std::string history_table(const history_summary& h) {
  std::string o = fmt::format("rig history: {} — {} point{} in {}, oldest first\n", h.scenario, h.points.size(),
                              h.points.size() == 1 ? "" : "s", h.dir);
  for (const auto& row : h.rows) {
    o += fmt::format("\n{}.{}\n{:<40} {:>5} {:>28} {:>28} {:>30} {:>28}\n", row.phase, row.workload, "point", "runs",
                     "p50 median (min–max)", "p99 median (min–max)", "throughput median (min–max)",
                     "errors median (min–max)");
    for (size_t i = 0; i < h.points.size(); ++i) {
      std::string cells;
      for (const char* f : trend_figures)
        cells += fmt::format(" {:>{}}", spread_text(f, row.figures.at(f)[i]), f == std::string("throughput") ? 30 : 28);
      o += fmt::format("{:<40} {:>5}{}\n", h.points[i].label, h.points[i].runs.runs.size(), cells);
    }
    if (const std::string drift = drift_text(row); !drift.empty()) o += "  last against first: " + drift + "\n";
  }
  return o;
}

nlohmann::json to_json(const history_summary& h) {
  using nlohmann::json;
  json points = json::array();
  for (const auto& p : h.points) points.push_back({{"label", p.label}, {"dir", p.dir}, {"started", p.started}, {"runs", p.runs.runs.size()}});
  json rows = json::array();
  for (const auto& r : h.rows) {
    json figs = json::object();
    for (const auto& [f, series] : r.figures) {
      json s = json::array();
      for (const auto& st : series)
        s.push_back(st.n ? json{{"median", st.median}, {"min", st.min}, {"max", st.max}, {"n", st.n}} : json());
      const double x = r.last_over_first.at(f);
      figs[f] = {{"points", s},
                 {"last_over_first", std::isnan(x) ? json() : json(x)},
                 {"rises", r.rises.at(f).first},
                 {"steps", r.rises.at(f).second}};
    }
    rows.push_back({{"phase", r.phase}, {"workload", r.workload}, {"figures", figs}});
  }
  return {{"history_version", 1}, {"scenario", h.scenario}, {"points", points}, {"phases", rows}};
}

std::string render_history_html(const history_summary& h) {
  using namespace html;
  std::vector<std::string> labels;
  for (const auto& p : h.points) labels.push_back(p.label);
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rig history: " + esc(h.scenario) +
                  "</title><style>" + std::string(css) + "</style></head><body>\n<h1>History of " + esc(h.scenario) +
                  "</h1>\n";
  o += fmt::format("<p class=\"sub\">{} points from {}, oldest first; each the median of its runs, the bars their "
                   "spread (min to max).</p>\n",
                   h.points.size(), esc(h.dir));
  for (const auto& row : h.rows) {
    const std::string id = row.phase + "-" + row.workload;
    chart lat{"lat-" + id, row.phase + " · " + row.workload + ": latency over the points", "latency", true, 1, {}};
    lat.x_labels = labels;
    lat.x_title = "point";
    lat.format_y = &fmt_latency;
    chart thr{"thr-" + id, row.phase + " · " + row.workload + ": throughput over the points", "per second", false, 1, {}};
    thr.x_labels = labels;
    thr.x_title = "point";
    int k = 0;
    for (const char* f : trend_figures) {
      if (!charted(f)) continue;
      series s{std::string(f), palette[k++], {}, {}, f == std::string("p99") ? "6 3" : ""};
      const auto& pts = row.figures.at(f);
      for (size_t i = 0; i < pts.size(); ++i) {
        s.xs.push_back(double(i));
        s.ys.push_back(pts[i].median);
        s.lo.push_back(pts[i].min);
        s.hi.push_back(pts[i].max);
      }
      (f == std::string("throughput") ? thr : lat).lines.push_back(std::move(s));
    }
    o += "<h2>" + esc(row.phase + " · " + row.workload) + "</h2>";
    if (const std::string drift = drift_text(row); !drift.empty())
      o += "<p class=\"sub\">Last against first: " + esc(drift) + "</p>";
    o += svg_chart(lat) + svg_chart(thr);
  }
  o += "<h2>Points</h2><table><tr><th>point</th><th>runs</th><th>directory</th></tr>";
  for (const auto& p : h.points)
    o += fmt::format("<tr><td>{}</td><td class=\"n\">{}</td><td class=\"small\">{}</td></tr>", esc(p.label),
                     p.runs.runs.size(), esc(p.dir));
  return o + "</table></body></html>\n";
}

}  // namespace rig
