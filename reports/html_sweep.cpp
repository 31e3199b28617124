// sweep.html: a sweep's response curve.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/units.hpp"
#include "reports/html.hpp"
#include "reports/html_common.hpp"
#include "reports/svg_chart.hpp"
#include "reports/sweep_report.hpp"

namespace rig {

using namespace html;

namespace {

// A chart of one workload's figure against the levels: the medians, with the runs' spread.
series across(const sweep_summary& sw, const std::string& w, const char* metric, std::string name, std::string color,
              const char* dash = "") {
  series s{std::move(name), std::move(color), {}, {}, dash};
  for (size_t i = 0; i < sw.levels.size(); ++i) {
    const spread_stat st = sw.levels[i].at(w, metric);
    s.xs.push_back(double(i));
    s.ys.push_back(st.median);
    s.lo.push_back(st.min);
    s.hi.push_back(st.max);
  }
  return s;
}

chart level_chart(const sweep_summary& sw, std::string id, std::string title, std::string unit, bool log_y,
                  const std::vector<std::string>& labels, std::vector<std::pair<double, std::string>> markers = {}) {
  chart c{std::move(id), std::move(title), std::move(unit), log_y, 1, {}};
  c.x_labels = labels;
  c.x_title = sw.param;
  c.markers = std::move(markers);
  return c;
}

std::string levels_table(const sweep_summary& sw, const std::vector<std::string>& workloads) {
  std::string o = "<h2>Levels</h2><table><tr><th>level</th><th>workload</th><th>ops/s</th><th>p50</th><th>p99</th>"
                  "<th>p99 spread</th><th>p99.9</th><th>errors/s</th><th>target CPU</th><th>runs</th></tr>";
  for (size_t i = 0; i < sw.levels.size(); ++i)
    for (const auto& w : workloads) {
      const sweep_level& l = sw.levels[i];
      const auto knee = sw.knee.find(w);
      const bool is_knee = knee != sw.knee.end() && knee->second.index == i;
      const double errors = l.at(w, "errors_per_s").median, cpu = l.target_cpu_pct.median;
      o += fmt::format("<tr><td>{}{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                       "<td class=\"n\">{} – {}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                       "<td class=\"small\">{}</td></tr>",
                       esc(l.label), is_knee ? " <span class=\"badge bad\">knee</span>" : "", esc(w),
                       thr_text(l.at(w, "throughput_ops_s").median), lat_text(l.at(w, "p50_us").median),
                       lat_text(l.at(w, "p99_us").median), lat_text(l.at(w, "p99_us").min), lat_text(l.at(w, "p99_us").max),
                       lat_text(l.at(w, "p999_us").median), std::isnan(errors) ? std::string("–") : fmt::format("{:.1f}", errors),
                       std::isnan(cpu) ? std::string("–") : fmt::format("{:.1f}%", cpu),
                       esc(std::to_string(l.runs.size()) + " run(s)"));
    }
  return o + "</table>\n";
}

}  // namespace

std::string render_sweep_html(const sweep_summary& sw) {
  std::vector<std::string> labels;
  for (const auto& l : sw.levels) labels.push_back(l.label);
  const std::vector<std::string> workloads = sw.workload_names();
  const std::string title = sw.scenario + ": " + sw.param + " swept";
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rig sweep: " + esc(title) +
                  "</title><style>" + std::string(css) + "</style></head><body>\n<h1>" + esc(title) + "</h1>\n";
  o += fmt::format("<p class=\"sub\">{} level{}, {} run{} each; figures of phase <b>{}</b>: the median of the runs, "
                   "the bars their spread (min to max). The knee: the first level where every run's p99 exceeds {:g}× the "
                   "first level's median.</p>\n",
                   sw.levels.size(), sw.levels.size() == 1 ? "" : "s", sw.repeats, sw.repeats == 1 ? "" : "s",
                   esc(sw.phase), sw.knee_factor);
  o += fmt::format("<p>Status <span class=\"badge {}\">{}</span></p>\n", sw.status == "ok" ? "ok" : "bad", esc(sw.status));
  o += expectations_table(sw.expectations, "Checks on the curve (each level's median)");
  std::string failures;
  for (const auto& l : sw.levels)
    for (const auto& f : l.check_failures) failures += "<li>" + esc(sw.param + " = " + l.label + ": " + f) + "</li>";
  if (!failures.empty())
    o += "<h2>Levels whose own checks failed</h2><p class=\"small\">" +
         std::string(sw.levels_may_fail ? "levels_may_fail = true: these do not fail the sweep (an unverified injection still does)."
                                        : "Each fails the sweep (levels_may_fail = true would accept a failed check).") +
         "</p><ul>" + failures + "</ul>\n";
  for (const auto& w : workloads) {
    std::vector<std::pair<double, std::string>> markers;
    if (const auto k = sw.knee.find(w); k != sw.knee.end()) markers.push_back({double(k->second.index), "knee"});
    chart lat = level_chart(sw, "latency-" + w, "Workload " + w + ": latency against " + sw.param, "latency", true,
                            labels, markers);
    lat.format_y = &fmt_latency;
    const char* metrics[] = {"p50_us", "p99_us", "p999_us"};
    const char* names[] = {"p50", "p99", "p99.9"};
    const char* dashes[] = {"", "6 3", "2 3"};
    for (int k = 0; k < 3; ++k) lat.lines.push_back(across(sw, w, metrics[k], w + " " + names[k], palette[k], dashes[k]));
    o += svg_chart(lat);
    chart thr = level_chart(sw, "throughput-" + w, "Workload " + w + ": throughput and errors against " + sw.param,
                            "per second", false, labels, markers);
    thr.lines.push_back(across(sw, w, "throughput_ops_s", w + " ops/s", palette[0]));
    series e = across(sw, w, "errors_per_s", w + " errors/s", palette[1], "4 3");
    e.lo.clear();  // errors: the medians alone
    e.hi.clear();
    thr.lines.push_back(std::move(e));
    o += svg_chart(thr);
  }
  chart cpu = level_chart(sw, "cpu", "Target CPU against " + sw.param + " (100% = one CPU)", "CPU", false, labels);
  cpu.format_y = &fmt_pct;
  series c{"target CPU", palette[3]};
  for (size_t i = 0; i < sw.levels.size(); ++i) {
    c.xs.push_back(double(i));
    c.ys.push_back(sw.levels[i].target_cpu_pct.median);
  }
  cpu.lines.push_back(std::move(c));
  o += svg_chart(cpu) + levels_table(sw, workloads);
  o += "<p class=\"small\">Each run's own report.html is in its directory beside sweep.json.</p></body></html>\n";
  return o;
}

}  // namespace rig
