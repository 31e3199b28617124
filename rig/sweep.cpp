#include "rig/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <optional>

#include "core/files.hpp"
#include "core/units.hpp"
#include "reports/html.hpp"
#include "reports/run_group.hpp"

namespace rig {

namespace {

using nlohmann::json;

// The levels' own failed checks, then the curve's checks, as a run says its checks.
void say_sweep_checks(const sweep_summary& s, std::ostream& out) {
  bool any_level = false;
  for (const auto& l : s.levels)
    for (const auto& f : l.check_failures) {
      if (!any_level)
        out << (s.levels_may_fail ? "\nlevels whose own checks failed (levels_may_fail = true: the sweep does not "
                                    "fail for a check):\n"
                                  : "\nlevels whose own checks failed (each fails the sweep):\n");
      any_level = true;
      out << fmt::format("  {} = {}: {}\n", s.param, l.label, f);
    }
  if (s.expectations.empty()) return;
  out << "\nchecks on the curve (each level's median):\n";
  for (const auto& e : s.expectations) out << fmt::format("  {}  {}  (actual {})\n", e.ok ? "pass" : "FAIL", e.expr, e.actual);
}

}  // namespace

sweep_summary summarize_sweep(const scenario& sc, const std::vector<std::string>& labels,
                              const std::vector<std::vector<run_report>>& reports) {
  const auto& sw = sc.sweep;
  sweep_summary out{sc.name, sw.section + "." + sw.name + "." + sw.param, sw.phase, sw.repeats, sw.knee_factor, {}, {}};
  for (size_t li = 0; li < labels.size(); ++li) {
    sweep_level level;
    level.label = labels[li];
    level.baseline = sw.baseline && li == 0;
    std::map<std::string, std::map<std::string, std::vector<double>>> per;  // workload -> metric -> runs
    std::vector<double> cpu, rss;
    for (size_t ri = 0; ri < reports[li].size(); ++ri) {
      const run_report& r = reports[li][ri];
      level.runs.push_back(r.run_dir);
      if (r.status != "ok") ++level.failed_runs;
      if (r.status == "unverified") level.unverified = true;
      for (const auto& e : r.expectations)
        if (!e.ok) level.check_failures.push_back(fmt::format("run {}: FAIL {} (actual {})", ri + 1, e.expr, e.actual));
      for (const auto& p : r.phases)
        for (const auto& i : p.injections)
          if (!i.verified)
            level.check_failures.push_back(
                fmt::format("run {}: UNVERIFIED {} in phase {}: {}", ri + 1, i.name, p.name, i.verification));
      const phase_result* ph = r.phase(sw.phase);
      if (!ph || !ph->completed) continue;  // a phase cut short (the target died) is no sample of it
      const double secs = ph->end_s - ph->start_s;
      for (const auto& wl : sc.workloads) {
        const workload_phase_result* w = ph->workload(wl.name);
        if (!w) continue;
        auto& m = per[wl.name];
        m["p50_us"].push_back(figure_of(*w, "p50"));
        m["p99_us"].push_back(figure_of(*w, "p99"));
        m["p999_us"].push_back(figure_of(*w, "p999"));
        m["throughput_ops_s"].push_back(w->throughput_ops_s);
        m["errors_per_s"].push_back(secs > 0 ? double(w->error_total()) / secs : NAN);
      }
      const auto& t = ph->resources.value("target", nlohmann::json::object());
      for (auto [key, into] : {std::pair{"cpu_pct", &cpu}, std::pair{"rss_max_bytes", &rss}})
        into->push_back(t.contains(key) && t[key].is_number() ? t[key].get<double>() : NAN);
    }
    for (const auto& [w, metrics] : per)
      for (const auto& [metric, values] : metrics) level.workloads[w][metric] = spread_stat::of(values);
    level.target_cpu_pct = spread_stat::of(cpu);
    level.target_rss_max_bytes = spread_stat::of(rss);
    out.levels.push_back(std::move(level));
  }
  // The knee, per workload: against the first level (the baseline when there is one), and
  // only where every run of the level agrees: the level's lowest p99 exceeds knee_factor x the
  // first level's median. A single run that caught one stall cannot move the knee (measured in
  // CI: two of three runs at 1,000/s of rate-sweep saw a 10 ms p99, the third 4.4 ms).
  for (const auto& w : sc.workloads) {
    if (out.levels.empty()) break;
    const double base = out.levels[0].at(w.name, "p99_us").median;
    if (std::isnan(base) || base <= 0) continue;
    for (size_t i = 1; i < out.levels.size(); ++i) {
      const spread_stat p99 = out.levels[i].at(w.name, "p99_us");
      const double errors = out.levels[i].at(w.name, "errors_per_s").median;
      // A level where nothing was answered is past any knee too.
      if ((!std::isnan(p99.min) && p99.min > sw.knee_factor * base) || (std::isnan(p99.median) && errors > 0)) {
        out.knee[w.name] = {i, out.levels[i].label, p99.median, p99.min, base};
        break;
      }
    }
  }
  // The curve's checks, on the medians; then the sweep's status.
  for (const auto& c : sw.checks) {
    const check_outcome o = evaluate_sweep_check(c, out, sw.param_type);
    out.expectations.push_back({c.text, o.ok, o.actual});
  }
  out.levels_may_fail = sw.levels_may_fail;
  const bool curve_ok = std::all_of(out.expectations.begin(), out.expectations.end(),
                                    [](const expectation_row& e) { return e.ok; });
  if (!curve_ok || out.levels_fail()) out.status = "checks_failed";
  return out;
}

int run_sweep(const scenario& sc, const std::vector<std::string>& sets, const run_options& opts,
              sweep_summary* summary_out) {
  const auto& sw = sc.sweep;
  std::ostream& out = opts.out ? *opts.out : std::cout;
  const directory sweep_dir = make_run_dir(opts.out_base, name_with_kind(sc.name, "sweep"));
  const std::string& dir = sweep_dir.path();
  if (opts.ran_in) *opts.ran_in = dir;
  std::vector<std::string> labels;
  std::vector<int> level_index;
  if (sw.baseline) {
    labels.push_back("baseline (no " + sw.name + ")");
    level_index.push_back(-1);
  }
  for (size_t i = 0; i < sw.labels.size(); ++i) {
    labels.push_back(sw.labels[i]);
    level_index.push_back(int(i));
  }
  const size_t total_runs = labels.size() * size_t(sw.repeats);
  out << fmt::format("rig sweep: {} — {} = {} level{}, {} run{} each ({} runs), figures of phase {}\n", sc.name,
                     sw.section + "." + sw.name + "." + sw.param, labels.size(), labels.size() == 1 ? "" : "s",
                     sw.repeats, sw.repeats == 1 ? "" : "s", total_runs, sw.phase);
  out.flush();
  std::vector<std::vector<run_report>> reports(labels.size());
  int worst = exit_ok, interrupted = 0;
  size_t done = 0;
  for (size_t li = 0; li < labels.size() && !interrupted; ++li)
    for (int rep = 0; rep < sw.repeats && !interrupted; ++rep) {
      auto o = sets;
      const auto extra = sw.overrides_for(level_index[li], sc.phases);
      o.insert(o.end(), extra.begin(), extra.end());
      const scenario level = parse_scenario(sc.source_text, sc.file, o, false, sc.allow_remote);  // checked at load: cannot fail here
      std::ostringstream sink;
      run_options ro = opts;
      ro.out_base = dir;
      ro.out = &sink;
      ro.quiet = true;
      std::string ran_in;
      ro.ran_in = &ran_in;
      ro.cleanup_first = opts.cleanup_first && done == 0;
      const int code = run_scenario(level, ro);
      ++done;
      std::optional<run_report> report;
      if (!ran_in.empty()) {
        try {
          const json j = json::parse(read_input_file(ran_in + "/report.json", report_input), nullptr, false);
          if (j.is_object()) report = report_from_json(j);
        } catch (const std::exception&) {  // a report rig cannot read is a run with no figures
        }
      }
      std::string line;
      if (report) {
        report->run_dir = ran_in;
        if (const phase_result* ph = report->phase(sw.phase))
          for (const auto& wl : sc.workloads)
            if (const workload_phase_result* w = ph->workload(wl.name))
              line += fmt::format("  {}: {} ops/s p50 {} p99 {} errors {}", wl.name, format_count(w->throughput_ops_s),
                                  format_duration_us(figure_of(*w, "p50")),
                                  format_duration_us(figure_of(*w, "p99")),
                                  format_count(double(w->error_total())));
        reports[li].push_back(std::move(*report));
      }
      out << fmt::format("  [{}/{}] {} = {}{}: {}{}\n", done, total_runs, sw.param, labels[li],
                         sw.repeats > 1 ? fmt::format(" (run {}/{})", rep + 1, sw.repeats) : "",
                         code == exit_ok ? "ok" : code == exit_expectations ? "checks failed" : fmt::format("exit {}", code), line);
      out.flush();
      if (code == 130 || code == 143) interrupted = code;
      else if (code == exit_usage || code == exit_capability) return code;  // no level can run
      else if (code == exit_runtime) worst = exit_runtime;
    }
  sweep_summary summary = summarize_sweep(sc, labels, reports);
  if (worst == exit_runtime) summary.status = "failed";
  if (interrupted) summary.status = "interrupted";
  sweep_dir.write_file("sweep.json", to_json(summary).dump(2) + "\n");
  sweep_dir.write_file("sweep.html", render_sweep_html(summary));
  std::vector<std::string> workloads;
  for (const auto& w : sc.workloads) workloads.push_back(w.name);
  out << "\n" << sweep_table(summary, workloads);
  say_sweep_checks(summary, out);
  out << fmt::format("\nsweep: {}/sweep.json\n  open {}/sweep.html\n", dir, dir);
  if (summary_out) *summary_out = summary;
  out << "status: " << summary.status << "\n";
  if (interrupted) return interrupted;
  if (worst != exit_ok) return worst;
  return summary.status == "ok" ? exit_ok : exit_expectations;
}

}  // namespace rig
