// `rig compare RUN_A RUN_B`: the terminal table and compare.html.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include "core/files.hpp"
#include <tuple>

#include "core/units.hpp"
#include "reports/html.hpp"
#include "reports/html_common.hpp"
#include "reports/svg_chart.hpp"

namespace rig {

using namespace html;

namespace {

// One row of the comparison: a phase and workload present in both runs, or in one.
struct compare_row {
  std::string phase, workload;
  const workload_phase_result* a = nullptr;  // the workload's figures in the phase, per run
  const workload_phase_result* b = nullptr;
};

const workload_phase_result* find_in(const run_report& r, const std::string& phase, const std::string& w) {
  const phase_result* p = r.phase(phase);
  return p ? p->workload(w) : nullptr;
}

std::vector<compare_row> compare_rows(const run_report& a, const run_report& b) {
  std::vector<compare_row> rows;
  for (const run_report* r : {&a, &b})
    for (const auto& p : r->phases)
      for (const auto& w : p.workloads) {
        bool seen = false;
        for (const auto& row : rows) seen = seen || (row.phase == p.name && row.workload == w.name);
        if (!seen) rows.push_back({p.name, w.name, find_in(a, p.name, w.name), find_in(b, p.name, w.name)});
      }
  return rows;
}

double lat(const workload_phase_result* w, double latency_summary::*k) {
  return !w || w->latency.count == 0 ? nan_v : w->latency.*k;
}
double thr(const workload_phase_result* w) { return w ? w->throughput_ops_s : nan_v; }
double err_pct(const workload_phase_result* w) { return w ? w->errors_pct : nan_v; }
// B's error share rose by a percentage point or more: worth a flag beside any latency change.
bool err_rise(const workload_phase_result* a, const workload_phase_result* b) {
  const double x = err_pct(a), y = err_pct(b);
  return !std::isnan(y) && y >= (std::isnan(x) ? 0 : x) + 1;
}
std::string ratio(double a, double b) {
  if (std::isnan(a) || std::isnan(b) || a <= 0) return "–";
  return fmt::format("{:.2f}×", b / a);
}

}  // namespace

std::string compare_runs(const std::string& dir_a, const std::string& dir_b, const std::string& html_path,
                         const std::string& extra_html) {
  const run_report a = read_run_report(dir_a), b = read_run_report(dir_b);
  const auto rows = compare_rows(a, b);
  // The terminal: one line per phase x workload, A then B then B/A.
  size_t pw = 5, ww = 8;
  for (const auto& r : rows) {
    pw = std::max(pw, r.phase.size());
    ww = std::max(ww, r.workload.size());
  }
  std::string t = fmt::format("A: {}\nB: {}\n\n", dir_a, dir_b);
  t += fmt::format("{:<{}}  {:<{}}  {:>9} {:>9} {:>7}  {:>9} {:>9} {:>7}  {:>9} {:>9} {:>7}  {:>7} {:>9}\n", "phase", pw,
                   "workload", ww, "ops/s A", "B", "B/A", "p50 A", "B", "B/A", "p99 A", "B", "B/A", "err% A", "B");
  // Each row's cells, formatted once for both the terminal and compare.html.
  struct cells {
    std::string ops_a, ops_b, ops_x, p50_a, p50_b, p50_x, p99_a, p99_b, p99_x, p999_a, p999_b, err_a, err_b;
  };
  std::vector<cells> rc;
  constexpr auto p50 = &latency_summary::p50, p99 = &latency_summary::p99, p999 = &latency_summary::p999;
  for (const auto& r : rows)
    rc.push_back({thr_text(thr(r.a)), thr_text(thr(r.b)), ratio(thr(r.a), thr(r.b)), lat_text(lat(r.a, p50)),
                  lat_text(lat(r.b, p50)), ratio(lat(r.a, p50), lat(r.b, p50)), lat_text(lat(r.a, p99)),
                  lat_text(lat(r.b, p99)), ratio(lat(r.a, p99), lat(r.b, p99)), lat_text(lat(r.a, p999)),
                  lat_text(lat(r.b, p999)), pct_text(err_pct(r.a)),
                  pct_text(err_pct(r.b)) + (err_rise(r.a, r.b) ? " ▲" : "")});
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const auto& c = rc[i];
    t += fmt::format("{:<{}}  {:<{}}  {:>9} {:>9} {:>7}  {:>9} {:>9} {:>7}  {:>9} {:>9} {:>7}  {:>7} {:>9}{}{}\n", r.phase,
                     pw, r.workload, ww, c.ops_a, c.ops_b, c.ops_x, c.p50_a, c.p50_b, c.p50_x, c.p99_a, c.p99_b, c.p99_x,
                     c.err_a, c.err_b, !r.a ? "  (only in B)" : !r.b ? "  (only in A)" : "",
                     err_rise(r.a, r.b) ? "  ← more requests fail in B" : "");
  }
  // compare.html: the same table, and A's and B's per-second latency on one time axis.
  const timeseries_table ta = read_run_csv(dir_a), tb = read_run_csv(dir_b);
  const columns ca{ta}, cb{tb};
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rig compare</title><style>" +
                  std::string(css) + "</style></head><body>\n<h1>rig compare</h1>\n<dl class=\"facts\">";
  for (const auto& [label, dir, r] : {std::tuple{"A", dir_a, &a}, std::tuple{"B", dir_b, &b}})
    o += fmt::format("<dt>{}</dt><dd>{} — {} <span class=\"badge {}\">{}</span></dd>", label, esc(dir),
                     esc(r->scenario_name), r->status == "ok" ? "ok" : "bad", esc(r->status));
  o += "</dl>\n<h2>Phases, B against A</h2><table><tr><th>phase</th><th>workload</th><th>ops/s A</th><th>ops/s B</th>"
       "<th>B/A</th><th>p50 A</th><th>p50 B</th><th>B/A</th><th>p99 A</th><th>p99 B</th><th>B/A</th><th>p99.9 A</th>"
       "<th>p99.9 B</th><th>failed A</th><th>failed B</th></tr>";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& c = rc[i];
    o += "<tr><td>" + esc(rows[i].phase) + "</td><td>" + esc(rows[i].workload) + "</td>";
    for (const std::string* v : {&c.ops_a, &c.ops_b, &c.ops_x, &c.p50_a, &c.p50_b, &c.p50_x, &c.p99_a, &c.p99_b,
                                 &c.p99_x, &c.p999_a, &c.p999_b, &c.err_a, &c.err_b})
      o += "<td class=\"n\">" + *v + "</td>";
    o += "</tr>";
  }
  o += "</table>\n" + extra_html + "<h2>Over time</h2>\n";
  double x_max = 1;
  for (const auto* x : {&ca, &cb})
    for (double v : x->x())
      if (!std::isnan(v)) x_max = std::max(x_max, v + 1);
  std::vector<band> bands;  // A's phases
  for (const auto& p : a.phases) bands.push_back({p.start_s, p.end_s, "A: " + p.name, !p.injections.empty()});
  std::vector<std::string> workloads;
  for (const run_report* r : {&a, &b})
    for (const auto& [w, _] : r->workloads.items())
      if (std::find(workloads.begin(), workloads.end(), w) == workloads.end()) workloads.push_back(w);
  chart lat_chart{"latency", "p99 per second, A (solid) and B (dashed), phases of A shaded", "latency", true, x_max, bands};
  lat_chart.format_y = &fmt_latency;
  chart thr_chart{"throughput", "Throughput per second, A (solid) and B (dashed)", "per second", false, x_max, bands};
  for (size_t wi = 0; wi < workloads.size(); ++wi) {
    const std::string& w = workloads[wi];
    for (const auto& [label, cols, dash] : {std::tuple{"A", &ca, ""}, std::tuple{"B", &cb, "6 3"}}) {
      if (cols->has(w + ".p99_us")) {
        series s{std::string(label) + " " + w + " p99", palette[wi % 8], cols->x(), cols->get(w + ".p99_us"), dash};
        s.peak = true;
        lat_chart.lines.push_back(std::move(s));
      }
      if (cols->has(w + ".ops"))
        thr_chart.lines.push_back({std::string(label) + " " + w + " ops/s", palette[wi % 8], cols->x(), cols->get(w + ".ops"), dash});
    }
  }
  o += svg_chart(lat_chart) + svg_chart(thr_chart);
  o += "<p class=\"small\">Ratios are B/A: below 1× B is faster (latency) or slower (throughput).</p></body></html>\n";
  write_user_file(html_path, o);
  return t + "\nB/A below 1×: B's latency is lower, or its throughput is. Charts: " + html_path + "\n";
}

std::string compare_groups_html(const std::string& section, const std::string& html_path) {
  const std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rig compare</title><style>" +
                        std::string(css) + "</style></head><body>\n<h1>rig compare</h1>\n" + section +
                        "<p class=\"small\">Ratios are B/A: below 1× B is faster (latency) or slower (throughput). Each "
                        "run's own report.html is in its directory.</p></body></html>\n";
  write_user_file(html_path, o);
  return html_path;
}

}  // namespace rig
