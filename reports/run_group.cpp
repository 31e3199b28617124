#include "reports/run_group.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/units.hpp"
#include "reports/html_common.hpp"

namespace rig {

using nlohmann::json;

const std::vector<std::string>& group_figures() {
  static const std::vector<std::string> f = {"p50", "p90", "p99", "p999", "mean", "max", "throughput"};
  return f;
}

double figure_of(const workload_phase_result& w, const std::string& figure) {
  if (figure == "throughput") return w.throughput_ops_s;
  if (figure == "errors_pct") return w.errors_pct;
  if (w.latency.count == 0) return NAN;
  const latency_summary& l = w.latency;
  if (figure == "p50") return l.p50;
  if (figure == "p90") return l.p90;
  if (figure == "p99") return l.p99;
  if (figure == "p999") return l.p999;
  if (figure == "mean") return l.mean;
  if (figure == "max") return l.max;
  return NAN;
}

std::string figure_text(const std::string& figure, double v) {
  if (figure == "errors_pct") return std::isnan(v) ? "-" : fmt::format("{:.2f}%", v);
  if (figure != "throughput") return format_duration_us(v);
  return std::isnan(v) ? "-" : format_count(v) + "/s";
}

std::string spread_text(const std::string& figure, const spread_stat& s) {
  return s.n ? fmt::format("{} ({}–{})", figure_text(figure, s.median), figure_text(figure, s.min),
                           figure_text(figure, s.max))
             : std::string("-");
}

const workload_phase_result* whole_phase(const run_report& r, const std::string& phase, const std::string& workload) {
  const phase_result* p = r.phase(phase);
  if (!p || !p->completed) return nullptr;
  for (const auto& i : p->injections)
    if (!i.verified) return nullptr;
  return p->workload(workload);
}

std::vector<group_key> group_keys(const run_group& g) {
  std::vector<group_key> keys;
  for (const auto& r : g.runs)
    for (const auto& p : r.report.phases)
      for (const auto& w : p.workloads)
        if (std::none_of(keys.begin(), keys.end(), [&](const group_key& k) {
              return k.level == r.level && k.phase == p.name && k.workload == w.name;
            }))
          keys.push_back({r.level, p.name, w.name});
  return keys;
}

std::vector<double> figure_values(const run_group& g, const group_key& k, const std::string& figure) {
  std::vector<double> out;
  for (const auto& r : g.runs) {
    if (r.level != k.level) continue;
    const workload_phase_result* w = whole_phase(r.report, k.phase, k.workload);
    const double v = w ? figure_of(*w, figure) : NAN;
    if (!std::isnan(v)) out.push_back(v);
  }
  return out;
}

namespace {

// A run directory named in repeat.json or sweep.json: as written, or beside the file.
std::string run_path(const std::string& dir, const std::string& run) {
  namespace fs = std::filesystem;
  if (fs::exists(fs::path(run) / "report.json")) return run;
  return (fs::path(dir) / fs::path(run).filename()).string();
}

}  // namespace

run_group load_group(const std::string& dir) {
  namespace fs = std::filesystem;
  run_group g;
  g.dir = dir;
  if (fs::exists(fs::path(dir) / "report.json")) {
    g.kind = "run";
    g.runs.push_back({"", html::read_run_report(dir)});
    return g;
  }
  const bool repeat = fs::exists(fs::path(dir) / "repeat.json"), sweep = fs::exists(fs::path(dir) / "sweep.json");
  if (!repeat && !sweep)
    throw std::runtime_error(dir + ": no report.json, repeat.json or sweep.json (a run, a rig run --repeat or a sweep "
                                   "directory)");
  const char* name = repeat ? "repeat.json" : "sweep.json";
  const json j = html::parse_json_limited(directory::open(dir).read_input(name, summary_input), dir + "/" + name);
  g.kind = repeat ? "repeat" : "sweep";
  auto add = [&](const std::string& level, const json& runs) {
    if (!runs.is_array()) throw std::runtime_error(dir + ": 'runs' is not a list");
    if (g.runs.size() + runs.size() > max_runs_read)
      throw input_error(fmt::format("{}/{}: more than {} runs: rig reads at most {} runs as one group", dir, name,
                                    max_runs_read, max_runs_read));
    for (const auto& r : runs) {
      if (!r.is_string()) throw std::runtime_error(dir + ": a run is not a directory name");
      g.runs.push_back({level, html::read_run_report(run_path(dir, r.get<std::string>()))});
    }
  };
  if (repeat) {
    add("", j.value("runs", json::array()));
  } else {
    for (const auto& l : j.value("levels", json::array())) add(l.value("label", ""), l.value("runs", json::array()));
  }
  if (g.runs.empty()) throw std::runtime_error(dir + ": no run in it");
  return g;
}

repeat_summary summarize_repeat(const std::string& scenario, const run_group& g) {
  repeat_summary s;
  s.scenario = scenario;
  s.repeats = int(g.runs.size());
  for (const auto& r : g.runs) {
    s.runs.push_back(r.report.run_dir);
    s.statuses.push_back(r.report.status);
  }
  std::vector<std::string> figures = group_figures();
  figures.push_back("errors_pct");
  for (const auto& k : group_keys(g)) {
    repeat_summary::row row{k.phase, k.workload, {}};
    for (const auto& f : figures) row.figures[f] = spread_stat::of(figure_values(g, k, f));
    s.rows.push_back(std::move(row));
  }
  return s;
}

json to_json(const repeat_summary& s) {
  json rows = json::array();
  for (const auto& r : s.rows) {
    json f = json::object();
    for (const auto& [name, st] : r.figures)
      f[name] = st.n ? json{{"median", st.median}, {"min", st.min}, {"max", st.max}, {"n", st.n}} : json();
    rows.push_back({{"phase", r.phase}, {"workload", r.workload}, {"figures", f}});
  }
  return {{"repeat_version", 1}, {"scenario", s.scenario}, {"repeats", s.repeats},
          {"runs", s.runs},      {"statuses", s.statuses}, {"phases", rows}};
}

std::string repeat_table(const repeat_summary& s) {
  std::string o = fmt::format("{:<16} {:<10} {:>26} {:>28} {:>30} {:>26}\n", "phase", "workload", "p50 median (min–max)",
                              "p99 median (min–max)", "throughput median (min–max)", "errors median (min–max)");
  for (const auto& r : s.rows)
    o += fmt::format("{:<16} {:<10} {:>26} {:>28} {:>30} {:>26}\n", r.phase, r.workload,
                     spread_text("p50", r.figures.at("p50")), spread_text("p99", r.figures.at("p99")),
                     spread_text("throughput", r.figures.at("throughput")),
                     spread_text("errors_pct", r.figures.at("errors_pct")));
  return o;
}

}  // namespace rig
