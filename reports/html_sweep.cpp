// sweep.html: a sweep's response curve.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/units.hpp"
#include "reports/html.hpp"
#include "reports/html_common.hpp"
#include "reports/svg_chart.hpp"

namespace rig {

using namespace html;

std::string render_sweep_html(const json& sw) {
  const json& levels = member(sw, "levels", true);
  std::vector<std::string> labels;
  for (const auto& l : levels) labels.push_back(l.value("label", ""));
  std::vector<std::string> workloads;
  for (const auto& l : levels)
    for (const auto& [w, _] : member(l, "workloads").items())
      if (std::find(workloads.begin(), workloads.end(), w) == workloads.end()) workloads.push_back(w);
  const std::string title = sw.value("scenario", "") + ": " + sw.value("param", "") + " swept";
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rig sweep: " + esc(title) +
                  "</title><style>" + std::string(css) + "</style></head><body>\n<h1>" + esc(title) + "</h1>\n";
  o += fmt::format("<p class=\"sub\">{} level{}, {} run{} each; figures of phase <b>{}</b>: the median of the runs, "
                   "the bars their spread (min to max). The knee: the first level where every run's p99 exceeds {:g}× the "
                   "first level's median.</p>\n",
                   levels.size(), levels.size() == 1 ? "" : "s", sw.value("repeats", 1), sw.value("repeats", 1) == 1 ? "" : "s",
                   esc(sw.value("phase", "")), num(sw, "knee_factor", 2));
  auto stat = [](const json& l, const std::string& w, const char* metric, const char* which) {
    return num(member(member(member(l, "workloads"), w.c_str()), metric), which);
  };
  for (const auto& w : workloads) {
    const json& knee = member(member(sw, "knee"), w.c_str());
    std::vector<std::pair<double, std::string>> markers;
    if (knee.contains("index")) markers.push_back({knee["index"].get<double>(), "knee"});
    chart lat{"latency-" + w, "Workload " + w + ": latency against " + sw.value("param", ""), "latency", true, 1, {}};
    lat.format_y = &fmt_latency;
    lat.x_labels = labels;
    lat.x_title = sw.value("param", "");
    lat.markers = markers;
    const char* pcts[] = {"p50_us", "p99_us", "p999_us"};
    const char* names[] = {"p50", "p99", "p99.9"};
    const char* dashes[] = {"", "6 3", "2 3"};
    for (int k = 0; k < 3; ++k) {
      series s{w + " " + names[k], palette[k], {}, {}, dashes[k]};
      for (size_t i = 0; i < levels.size(); ++i) {
        s.xs.push_back(double(i));
        s.ys.push_back(stat(levels[i], w, pcts[k], "median"));
        s.lo.push_back(stat(levels[i], w, pcts[k], "min"));
        s.hi.push_back(stat(levels[i], w, pcts[k], "max"));
      }
      lat.lines.push_back(std::move(s));
    }
    o += svg_chart(lat);
    chart thr{"throughput-" + w, "Workload " + w + ": throughput and errors against " + sw.value("param", ""), "per second",
              false, 1, {}};
    thr.x_labels = labels;
    thr.x_title = sw.value("param", "");
    thr.markers = markers;
    series t{w + " ops/s", palette[0]}, e{w + " errors/s", palette[1], {}, {}, "4 3"};
    for (size_t i = 0; i < levels.size(); ++i) {
      t.xs.push_back(double(i));
      t.ys.push_back(stat(levels[i], w, "throughput_ops_s", "median"));
      t.lo.push_back(stat(levels[i], w, "throughput_ops_s", "min"));
      t.hi.push_back(stat(levels[i], w, "throughput_ops_s", "max"));
      e.xs.push_back(double(i));
      e.ys.push_back(stat(levels[i], w, "errors_per_s", "median"));
    }
    thr.lines.push_back(std::move(t));
    thr.lines.push_back(std::move(e));
    o += svg_chart(thr);
  }
  chart cpu{"cpu", "Target CPU against " + sw.value("param", "") + " (100% = one CPU)", "CPU", false, 1, {}};
  cpu.format_y = &fmt_pct;
  cpu.x_labels = labels;
  cpu.x_title = sw.value("param", "");
  series c{"target CPU", palette[3]};
  for (size_t i = 0; i < levels.size(); ++i) {
    c.xs.push_back(double(i));
    c.ys.push_back(num(member(member(levels[i], "target"), "cpu_pct"), "median"));
  }
  cpu.lines.push_back(std::move(c));
  o += svg_chart(cpu);
  o += "<h2>Levels</h2><table><tr><th>level</th><th>workload</th><th>ops/s</th><th>p50</th><th>p99</th><th>p99 spread</th>"
       "<th>p99.9</th><th>errors/s</th><th>target CPU</th><th>runs</th></tr>";
  for (size_t i = 0; i < levels.size(); ++i)
    for (const auto& w : workloads) {
      const bool is_knee = member(member(sw, "knee"), w.c_str()).value("index", -1) == int(i);
      o += fmt::format("<tr><td>{}{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                       "<td class=\"n\">{} – {}</td><td class=\"n\">{}</td><td class=\"n\">{:.1f}</td><td class=\"n\">{}</td>"
                       "<td class=\"small\">{}</td></tr>",
                       esc(labels[i]), is_knee ? " <span class=\"badge bad\">knee</span>" : "", esc(w),
                       thr_text(stat(levels[i], w, "throughput_ops_s", "median")), lat_text(stat(levels[i], w, "p50_us", "median")),
                       lat_text(stat(levels[i], w, "p99_us", "median")), lat_text(stat(levels[i], w, "p99_us", "min")),
                       lat_text(stat(levels[i], w, "p99_us", "max")), lat_text(stat(levels[i], w, "p999_us", "median")),
                       std::isnan(stat(levels[i], w, "errors_per_s", "median")) ? 0.0 : stat(levels[i], w, "errors_per_s", "median"),
                       std::isnan(num(member(member(levels[i], "target"), "cpu_pct"), "median"))
                           ? std::string("–")
                           : fmt::format("{:.1f}%", num(member(member(levels[i], "target"), "cpu_pct"), "median")),
                       esc(std::to_string(member(levels[i], "runs", true).size()) + " run(s)"));
    }
  o += "</table>\n<p class=\"small\">Each run's own report.html is in its directory beside sweep.json.</p></body></html>\n";
  return o;
}

}  // namespace rig
