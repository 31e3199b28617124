// report.html: one run's page.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <tuple>

#include "core/proc.hpp"
#include "core/units.hpp"
#include "reports/html.hpp"
#include "reports/html_common.hpp"
#include "reports/phase_table.hpp"
#include "reports/svg_chart.hpp"

namespace rig {

using namespace html;

timeseries_table read_run_csv(const std::string& run_dir) {
  return parse_csv(directory::open(run_dir).read_input_if_present("timeseries.csv", run_file_input).value_or(""));
}

timeseries_table parse_csv(const std::string& text) {
  timeseries_table t;
  std::istringstream in(text);
  std::string line;
  auto split = [](const std::string& l) {
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream s(l);
    while (std::getline(s, cell, ',')) cells.push_back(cell);
    if (!l.empty() && l.back() == ',') cells.emplace_back();
    return cells;
  };
  if (std::getline(in, line)) t.columns = split(line);
  while (std::getline(in, line))
    if (!line.empty()) t.rows.push_back(split(line));
  return t;
}

namespace {

// The page's head, the status and what failed.
std::string page_head(const run_report& r) {
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  o += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  o += "<title>rig: " + esc(r.scenario_name) + "</title><style>" + std::string(css) + "</style></head><body>\n";
  o += fmt::format("<h1>{} <span class=\"badge {}\">{}</span></h1>\n", esc(r.scenario_name),
                   r.status == "ok" ? "ok" : "bad", esc(r.status));
  if (!r.description.empty()) o += "<p class=\"sub\">" + esc(r.description) + "</p>\n";
  if (!r.failure.empty()) o += "<p><span class=\"badge bad\">failure</span> " + esc(r.failure) + "</p>\n";
  return o;
}

// What ran, where: enough for someone else to rerun it.
std::string facts(const run_report& r, const std::vector<std::string>& workloads) {
  std::string o = "<dl class=\"facts\">";
  auto fact = [&](const std::string& k, const std::string& v) {
    if (!v.empty()) o += "<dt>" + esc(k) + "</dt><dd>" + esc(v) + "</dd>";
  };
  fact("scenario file", r.scenario_file);
  fact("rig", r.rig_version);
  for (const auto& [k, v] : r.host.items()) fact("host " + k, v.is_string() ? v.get<std::string>() : v.dump());
  if (!r.target.empty())
    fact("target", r.target.value("kind", "") + (r.target.contains("params") ? " — " + params_text(r.target["params"]) : ""));
  for (const auto& w : workloads)
    fact("workload " + w, r.workloads[w].value("kind", "") + " — " + params_text(r.workloads[w].value("params", json::object())));
  return o + "</dl>\n";
}

std::string html_cell(const latency_cell& c, uint64_t count) {
  if (c.text.empty()) return "–";
  if (!c.low) return c.text;
  return fmt::format("{}<span class=\"low\" title=\"from {} replies: too few for this percentile, low "
                     "confidence\">*</span>",
                     c.text, format_count(double(count)));
}

// The phases at a glance, each against the first: the rows the terminal shows.
std::string phase_table(const run_report& r) {
  std::string o = "<h2>Phases</h2><table><tr><th>phase</th><th>workload</th><th>ops/s</th><th>p50</th><th>p99</th>"
                  "<th>p99.9</th><th>errors</th><th>failed</th><th>p50 ×</th><th>p99 ×</th><th>throughput ×</th></tr>";
  for (const auto& row : phase_rows(r)) {
    const auto& w = *row.workload;
    o += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                     "<td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                     "<td class=\"n\">{}</td></tr>",
                     esc(row.phase->name), esc(w.name), row.throughput, html_cell(row.p50, w.latency.count),
                     html_cell(row.p99, w.latency.count), html_cell(row.p999, w.latency.count), esc(row.errors_by_kind),
                     row.failed.empty() ? "–" : row.failed, row.p50_x, row.p99_x, row.throughput_x);
    if (!w.generator_warning.empty())
      o += "<tr><td></td><td colspan=\"9\"><span class=\"badge warn\">generator</span> " + esc(w.generator_warning) +
           "</td></tr>";
  }
  return o + "</table>\n";
}

// Charts on one time axis, phases shaded and named.
std::string charts(const std::vector<phase_result>& phases, const columns& cols, const std::vector<std::string>& workloads) {
  std::string o;
  double x_max = 1;
  for (const auto& p : phases) x_max = std::max(x_max, p.end_s);
  for (double x : cols.x())
    if (!std::isnan(x)) x_max = std::max(x_max, x + 1);
  std::vector<band> bands;
  for (const auto& p : phases) bands.push_back({p.start_s, p.end_s, p.name, !p.injections.empty()});
  const auto xs = cols.x();
  o += "<h2>Over time</h2>\n";
  {
    chart lat{"latency", "Latency per second: p50, p99, p99.9 (from the intended send time)", "latency", true, x_max, bands};
    lat.format_y = &fmt_latency;
    const char* dashes[] = {"", "6 3", "2 3"};
    const char* pcts[] = {"p50", "p99", "p999"};
    const char* labels[] = {"p50", "p99", "p99.9"};
    for (size_t wi = 0; wi < workloads.size(); ++wi)
      for (int k = 0; k < 3; ++k) {
        const std::string col = workloads[wi] + "." + pcts[k] + "_us";
        if (!cols.has(col)) continue;
        series s{workloads[wi] + " " + labels[k], workloads.size() == 1 ? palette[k] : palette[wi % 8], xs, cols.get(col)};
        s.dash = dashes[k];  // p99 dashed, p99.9 dotted: visible where the two coincide
        s.peak = k > 0;
        lat.lines.push_back(std::move(s));
      }
    o += svg_chart(lat);
    chart thr{"throughput", "Throughput and errors per second", "per second", false, x_max, bands};
    for (size_t wi = 0; wi < workloads.size(); ++wi) {
      if (cols.has(workloads[wi] + ".ops"))
        thr.lines.push_back({workloads[wi] + " ops/s", palette[(2 * wi) % 8], xs, cols.get(workloads[wi] + ".ops")});
      if (cols.has(workloads[wi] + ".errors")) {
        series e{workloads[wi] + " errors/s", palette[(2 * wi + 1) % 8], xs, cols.get(workloads[wi] + ".errors"), "4 3"};
        thr.lines.push_back(std::move(e));
      }
    }
    o += svg_chart(thr);
    chart mem{"memory", "Target memory against its cap", "bytes", false, x_max, bands};
    mem.format_y = &fmt_mib;
    if (cols.any("target.rss_bytes")) mem.lines.push_back({"target RSS", palette[0], xs, cols.get("target.rss_bytes")});
    if (cols.any("cgroup.memory_bytes"))
      mem.lines.push_back({"cgroup used", palette[2], xs, cols.get("cgroup.memory_bytes")});
    if (cols.any("cgroup.memory_cap_bytes"))
      mem.lines.push_back({"cgroup cap", palette[1], xs, cols.get("cgroup.memory_cap_bytes"), "6 3"});
    if (!mem.lines.empty()) o += svg_chart(mem);
    chart cpu{"cpu", "CPU: target and rig against the target's quota (100% = one CPU)", "CPU", false, x_max, bands};
    cpu.format_y = &fmt_pct;
    if (cols.any("target.cpu_pct")) cpu.lines.push_back({"target", palette[0], xs, cols.get("target.cpu_pct")});
    if (cols.any("rig.cpu_pct")) cpu.lines.push_back({"rig", palette[7], xs, cols.get("rig.cpu_pct"), "2 3"});
    if (cols.any("cgroup.cpu_cap_pct"))
      cpu.lines.push_back({"quota", palette[1], xs, cols.get("cgroup.cpu_cap_pct"), "6 3"});
    if (!cpu.lines.empty()) o += svg_chart(cpu);
    chart iops{"io", "Target disk operations per second against the caps (its cgroup)", "operations/s", false, x_max, bands};
    for (const auto& [col, label, color, dash] :
         {std::tuple{"cgroup.io_read_ops_s", "reads/s", 0, ""}, std::tuple{"cgroup.io_write_ops_s", "writes/s", 2, ""},
          std::tuple{"cgroup.io_read_iops_cap", "read cap", 1, "6 3"}, std::tuple{"cgroup.io_write_iops_cap", "write cap", 4, "6 3"}})
      if (cols.any(col)) iops.lines.push_back({label, palette[color], xs, cols.get(col), dash});
    if (!iops.lines.empty()) o += svg_chart(iops);
    chart bps{"io-bytes", "Target disk bytes per second against the caps (its cgroup)", "bytes/s", false, x_max, bands};
    bps.format_y = &fmt_mib;
    for (const auto& [col, label, color, dash] :
         {std::tuple{"cgroup.io_read_bytes_s", "read", 0, ""}, std::tuple{"cgroup.io_write_bytes_s", "written", 2, ""},
          std::tuple{"cgroup.io_read_bps_cap", "read cap", 1, "6 3"}, std::tuple{"cgroup.io_write_bps_cap", "write cap", 4, "6 3"}})
      if (cols.any(col)) bps.lines.push_back({label, palette[color], xs, cols.get(col), dash});
    if (!bps.lines.empty()) o += svg_chart(bps);
    chart th{"workers", "Target OS threads (/proc/PID/task) and live workers", "count", false, x_max, bands};
    if (cols.any("target.threads")) th.lines.push_back({"OS threads", palette[3], xs, cols.get("target.threads")});
    if (cols.any("target.live_workers"))
      th.lines.push_back({"live workers", palette[2], xs, cols.get("target.live_workers")});
    if (!th.lines.empty()) o += svg_chart(th);
    chart q{"queue", "Target queue depth", "requests waiting", false, x_max, bands};
    if (cols.any("target.queue_depth")) q.lines.push_back({"queue depth", palette[4], xs, cols.get("target.queue_depth")});
    if (!q.lines.empty()) o += svg_chart(q);
  }
  return o;
}

// Injections: what was asked, how, what was read back and what it did.
std::string injections(const std::vector<phase_result>& phases) {
  bool any_injection = false;
  for (const auto& p : phases) any_injection = any_injection || !p.injections.empty();
  if (!any_injection) return "";
  std::string o = "<h2>Injections</h2><table><tr><th>phase</th><th>injector</th><th>mechanism</th><th>params</th>"
                  "<th>verified (read back)</th><th>measured</th><th>reverted (read back)</th></tr>";
  for (const auto& p : phases)
    for (const auto& i : p.injections) {
      const json& m = i.measured;
      o += fmt::format("<tr><td>{}</td><td>{} <span class=\"small\">({})</span></td><td>{}</td><td class=\"small\">{}</td>"
                       "<td><span class=\"badge {}\">{}</span> {}</td><td>{}</td><td>{}</td></tr>",
                       esc(p.name), esc(i.name), esc(i.kind), esc(i.mechanism), esc(params_text(i.params)),
                       i.verified ? "ok" : "bad", i.verified ? "✓" : "✗", esc(i.verification),
                       esc(m.contains("summary") && m["summary"].is_string() ? m["summary"].get<std::string>() : ""),
                       !i.reverted ? std::string("–")
                                   : fmt::format("<span class=\"badge {}\">{}</span> {}", *i.reverted ? "ok" : "bad",
                                                 *i.reverted ? "✓" : "✗", esc(i.revert)));
    }
  return o + "</table>\n";
}

// Resources per phase, usage beside caps.
std::string resources(const std::vector<phase_result>& phases) {
  std::string o;
  o += "<h2>Resources by phase</h2><table><tr><th>phase</th><th>target CPU</th><th>RSS max</th><th>threads</th>"
       "<th>run-queue wait</th><th>live workers</th><th>queue max</th><th>cgroup memory (max / cap)</th>"
       "<th>cgroup CPUs (used / cap)</th><th>OOM kills</th><th>rig CPU</th></tr>";
  for (const auto& p : phases) {
    const json& res = p.resources;
    const json& t = res.value("target", json::object());
    const json& cg = res.value("cgroup", json::object());
    const json& self = res.value("rig", json::object());
    auto opt = [](double v, auto f) { return std::isnan(v) ? std::string("–") : f(v); };
    const std::string live = std::isnan(num(t, "live_workers_start"))
                                 ? "–"
                                 : fmt::format("{:g} → {:g}", num(t, "live_workers_start"), num(t, "live_workers_end"));
    const std::string threads = std::isnan(num(t, "threads_min"))
                                    ? "–"
                                    : fmt::format("{:g}–{:g}", num(t, "threads_min"), num(t, "threads_max"));
    const double cap = num(cg, "memory_cap_bytes");
    const std::string memcg = std::isnan(num(cg, "memory_used_max_bytes"))
                                  ? "–"
                                  : format_bytes(num(cg, "memory_used_max_bytes")) + " / " +
                                        (std::isnan(cap) ? "none" : format_bytes(cap));
    const double cpucap = num(cg, "cpu_cap_cpus");
    const std::string cpucg = std::isnan(num(cg, "cpu_used_cpus"))
                                  ? "–"
                                  : fmt::format("{:.2f} / {}", num(cg, "cpu_used_cpus"),
                                                std::isnan(cpucap) ? "none" : fmt::format("{:.2f}", cpucap));
    o += fmt::format(
        "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td></tr>",
        esc(p.name), opt(num(t, "cpu_pct"), [](double v) { return fmt::format("{:.1f}%", v); }),
        opt(num(t, "rss_max_bytes"), [](double v) { return format_bytes(v); }), threads,
        opt(num(t, "run_queue_wait_ms_per_s"), [](double v) { return fmt::format("{:.1f} ms/s", v); }), live,
        opt(num(t, "queue_depth_max"), [](double v) { return fmt::format("{:g}", v); }), memcg, cpucg,
        opt(num(cg, "oom_kills"), [](double v) { return fmt::format("{:g}", v); }),
        opt(num(self, "cpu_pct"), [](double v) { return fmt::format("{:.1f}%", v); }));
  }
  o += "</table>\n";
  return o;
}

}  // namespace

std::string render_html(const run_report& r, const timeseries_table& ts, const std::string& scenario_text) {
  const columns cols{ts};
  std::vector<std::string> workloads;
  for (const auto& [w, _] : r.workloads.items()) workloads.push_back(w);
  std::string o = page_head(r) + facts(r, workloads) + expectations_table(r.expectations);
  if (!r.warnings.empty()) {
    o += "<h2>Warnings</h2><ul>";
    for (const auto& w : r.warnings) o += "<li><span class=\"badge warn\">warning</span> " + esc(w) + "</li>";
    o += "</ul>\n";
  }
  o += phase_table(r);
  o += charts(r.phases, cols, workloads) + injections(r.phases) + resources(r.phases);
  if (!r.events.empty()) {
    o += "<h2>Events</h2><table><tr><th>at</th><th>kind</th><th>detail</th></tr>";
    for (const auto& e : r.events)
      o += fmt::format("<tr><td class=\"n\">{:.2f} s</td><td>{}</td><td>{}</td></tr>", e.t_s, esc(e.kind), esc(e.detail));
    o += "</table>\n";
  }
  if (!scenario_text.empty()) o += "<h2>Scenario as run</h2><pre>" + esc(scenario_text) + "</pre>\n";
  o += "<p class=\"small\">Written by rig " + esc(r.rig_version) +
       ". The figures are in report.json and timeseries.csv beside this file; charts show at most " +
       std::to_string(html_max_points) + " points per series (a bucket's maximum for p99 and p99.9, its mean otherwise).</p>\n";
  return o + "</body></html>\n";
}

std::string render_html(const json& r, const timeseries_table& ts, const std::string& scenario_text) {
  return render_html(report_from_json(r), ts, scenario_text);
}

std::string write_html_report(const directory& run_dir) {
  const run_report r = read_run_report(run_dir);
  run_dir.write_file("report.html",
                     render_html(r, parse_csv(run_dir.read_input_if_present("timeseries.csv", run_file_input).value_or("")),
                                 run_dir.read_input_if_present("scenario.toml", run_file_input).value_or("")));
  return run_dir.path() + "/report.html";
}

std::string write_html_report(const std::string& run_dir) { return write_html_report(open_run_dir(run_dir)); }

}  // namespace rig
