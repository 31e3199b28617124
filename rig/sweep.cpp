#include "rig/sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>

#include "core/units.hpp"
#include "reports/html.hpp"

namespace rig {

namespace {

using nlohmann::json;

json spread(std::vector<double> v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  if (v.empty()) return nullptr;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {{"median", median}, {"min", v.front()}, {"max", v.back()}, {"n", n}};
}

double get(const json& j, std::initializer_list<const char*> path) {
  const json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return NAN;
    p = &(*p)[k];
  }
  return p->is_number() ? p->get<double>() : NAN;
}

const json* phase_of(const json& report, const std::string& name) {
  if (!report.contains("phases")) return nullptr;
  for (const auto& p : report["phases"])
    if (p.value("name", "") == name) return &p;
  return nullptr;
}

// One workload's figures in one phase of a run; latencies NaN when nothing was answered.
struct figures {
  double p50_us, p99_us, p999_us, ops_per_s, errors;
};
std::string latency_text(double us) { return std::isnan(us) ? std::string("-") : format_duration_us(us); }

figures figures_of(const json& f) {
  const bool any = get(f, {"latency_us", "count"}) > 0;
  double errors = 0;
  for (const auto& [k, v] : f["errors"].items()) errors += v.get<double>();
  return {any ? get(f, {"latency_us", "p50"}) : NAN, any ? get(f, {"latency_us", "p99"}) : NAN,
          any ? get(f, {"latency_us", "p999"}) : NAN, get(f, {"throughput_ops_s"}), errors};
}

}  // namespace

json summarize_sweep(const scenario& sc, const std::vector<std::string>& labels,
                     const std::vector<std::vector<json>>& reports) {
  const auto& sw = sc.sweep;
  json levels = json::array();
  for (size_t li = 0; li < labels.size(); ++li) {
    json level = {{"label", labels[li]}, {"baseline", sw.baseline && li == 0}, {"runs", json::array()},
                  {"workloads", json::object()}};
    std::map<std::string, std::map<std::string, std::vector<double>>> per;  // workload -> metric -> runs
    std::vector<double> cpu, rss;
    int failed = 0;
    for (const auto& r : reports[li]) {
      level["runs"].push_back(r.value("_dir", ""));
      if (r.value("status", "") != "ok") ++failed;
      const json* ph = phase_of(r, sw.phase);
      if (!ph) continue;
      const double secs = get(*ph, {"end_s"}) - get(*ph, {"start_s"});
      for (const auto& w : sc.workloads) {
        if (!(*ph)["workloads"].contains(w.name)) continue;
        const figures f = figures_of((*ph)["workloads"][w.name]);
        auto& m = per[w.name];
        m["p50_us"].push_back(f.p50_us);
        m["p99_us"].push_back(f.p99_us);
        m["p999_us"].push_back(f.p999_us);
        m["throughput_ops_s"].push_back(f.ops_per_s);
        m["errors_per_s"].push_back(secs > 0 ? f.errors / secs : NAN);
      }
      cpu.push_back(get(*ph, {"resources", "target", "cpu_pct"}));
      rss.push_back(get(*ph, {"resources", "target", "rss_max_bytes"}));
    }
    for (const auto& [w, metrics] : per)
      for (const auto& [metric, values] : metrics) level["workloads"][w][metric] = spread(values);
    level["target"] = {{"cpu_pct", spread(cpu)}, {"rss_max_bytes", spread(rss)}};
    level["failed_runs"] = failed;
    levels.push_back(std::move(level));
  }
  // The knee, per workload: against the first level (the baseline when there is one), and
  // only where every run of the level agrees: the level's lowest p99 exceeds knee_factor x the
  // first level's median. A single run that caught one stall cannot move the knee (measured in
  // CI: two of three runs at 1,000/s of rate-sweep saw a 10 ms p99, the third 4.4 ms).
  json knee = json::object();
  for (const auto& w : sc.workloads) {
    if (levels.empty()) break;
    const double base = get(levels[0], {"workloads", w.name.c_str(), "p99_us", "median"});
    if (std::isnan(base) || base <= 0) continue;
    for (size_t i = 1; i < levels.size(); ++i) {
      const double p99 = get(levels[i], {"workloads", w.name.c_str(), "p99_us", "median"});
      const double lowest = get(levels[i], {"workloads", w.name.c_str(), "p99_us", "min"});
      const double errors = get(levels[i], {"workloads", w.name.c_str(), "errors_per_s", "median"});
      // A level where nothing was answered is past any knee too.
      if ((!std::isnan(lowest) && lowest > sw.knee_factor * base) || (std::isnan(p99) && errors > 0)) {
        knee[w.name] = {{"index", i},
                        {"level", levels[i]["label"]},
                        {"p99_us", std::isnan(p99) ? json() : json(p99)},
                        {"lowest_p99_us", std::isnan(lowest) ? json() : json(lowest)},
                        {"first_p99_us", base}};
        break;
      }
    }
  }
  return {{"scenario", sc.name},
          {"param", sw.section + "." + sw.name + "." + sw.param},
          {"phase", sw.phase},
          {"repeats", sw.repeats},
          {"knee_factor", sw.knee_factor},
          {"levels", levels},
          {"knee", knee}};
}

int run_sweep(const scenario& sc, const std::vector<std::string>& sets, const run_options& opts) {
  const auto& sw = sc.sweep;
  std::ostream& out = opts.out ? *opts.out : std::cout;
  const bool named_sweep = sc.name.size() >= 5 && sc.name.compare(sc.name.size() - 5, 5, "sweep") == 0;
  const directory sweep_dir = make_run_dir(opts.out_base, named_sweep ? sc.name : sc.name + "-sweep");
  const std::string& dir = sweep_dir.path();
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
  std::vector<std::vector<json>> reports(labels.size());
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
      const int code = run_scenario(level, ro);
      ++done;
      json report;
      if (!ran_in.empty()) {
        std::ifstream in(ran_in + "/report.json");
        if (in) report = json::parse(in, nullptr, false);
      }
      if (report.is_object()) {
        report["_dir"] = ran_in;
        reports[li].push_back(report);
      }
      std::string line;
      if (const json* ph = report.is_object() ? phase_of(report, sw.phase) : nullptr)
        for (const auto& w : sc.workloads)
          if ((*ph)["workloads"].contains(w.name)) {
            const figures f = figures_of((*ph)["workloads"][w.name]);
            line += fmt::format("  {}: {} ops/s p50 {} p99 {} errors {}", w.name, format_count(f.ops_per_s),
                                latency_text(f.p50_us), latency_text(f.p99_us), format_count(f.errors));
          }
      out << fmt::format("  [{}/{}] {} = {}{}: {}{}\n", done, total_runs, sw.param, labels[li],
                         sw.repeats > 1 ? fmt::format(" (run {}/{})", rep + 1, sw.repeats) : "",
                         code == exit_ok || code == exit_expectations ? "ok" : fmt::format("exit {}", code), line);
      out.flush();
      if (code == 130 || code == 143) interrupted = code;
      else if (code == exit_usage || code == exit_capability) return code;  // no level can run
      else if (code == exit_runtime) worst = exit_runtime;
    }
  const json summary = summarize_sweep(sc, labels, reports);
  sweep_dir.write_file("sweep.json", summary.dump(2) + "\n");
  sweep_dir.write_file("sweep.html", render_sweep_html(summary));
  // The response curve as a table: medians, the p99 spread, the knee.
  out << fmt::format("\n{:<24} {:<10} {:>10} {:>10} {:>10} {:>21} {:>10}\n", sw.param, "workload", "ops/s", "p50", "p99",
                     "p99 min–max", "errors/s");
  for (size_t li = 0; li < summary["levels"].size(); ++li) {
    const json& l = summary["levels"][li];
    for (const auto& w : sc.workloads) {
      auto m = [&](const char* metric, const char* which) { return get(l, {"workloads", w.name.c_str(), metric, which}); };
      const bool knee = summary["knee"].contains(w.name) && summary["knee"][w.name]["index"] == li;
      out << fmt::format("{:<24} {:<10} {:>10} {:>10} {:>10} {:>21} {:>10}{}\n", l["label"].get<std::string>(), w.name,
                         format_count(std::isnan(m("throughput_ops_s", "median")) ? 0 : m("throughput_ops_s", "median")),
                         latency_text(m("p50_us", "median")), latency_text(m("p99_us", "median")),
                         latency_text(m("p99_us", "min")) + " – " + latency_text(m("p99_us", "max")),
                         fmt::format("{:.1f}", std::isnan(m("errors_per_s", "median")) ? 0.0 : m("errors_per_s", "median")),
                         knee ? fmt::format("  ← knee (every run's p99 > {:g}× the first level's)", sw.knee_factor) : "");
    }
  }
  for (const auto& w : sc.workloads)
    if (!summary["knee"].contains(w.name))
      out << fmt::format("no knee for {}: p99 stayed within {:g}× the first level's\n", w.name, sw.knee_factor);
  out << fmt::format("\nsweep: {}/sweep.json\n  open {}/sweep.html\n", dir, dir);
  if (interrupted) return interrupted;
  return worst;
}

}  // namespace rig
