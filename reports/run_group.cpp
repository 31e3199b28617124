#include "reports/run_group.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

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

const workload_phase_result* whole_phase(const run_report& r, const std::string& phase, const std::string& workload) {
  const phase_result* p = r.phase(phase);
  return p && p->completed ? p->workload(workload) : nullptr;
}

size_t run_group::runs_at(const std::string& level) const {
  return size_t(std::count_if(runs.begin(), runs.end(), [&](const group_run& r) { return r.level == level; }));
}

namespace {

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  // rig writes these at most a few levels deep; a hand-made one nested thousands deep is refused.
  const auto depth_limit = [](int depth, json::parse_event_t, json&) {
    if (depth > 64) throw std::runtime_error("nested deeper than rig writes");
    return true;
  };
  try {
    return json::parse(in, depth_limit);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

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
  const json j = read_json(dir + (repeat ? "/repeat.json" : "/sweep.json"));
  g.kind = repeat ? "repeat" : "sweep";
  auto add = [&](const std::string& level, const json& runs) {
    if (!runs.is_array()) throw std::runtime_error(dir + ": 'runs' is not a list");
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

repeat_summary summarize_repeat(const std::string& scenario, const std::vector<run_report>& runs) {
  repeat_summary s;
  s.scenario = scenario;
  s.repeats = int(runs.size());
  for (const auto& r : runs) {
    s.runs.push_back(r.run_dir);
    s.statuses.push_back(r.status);
  }
  std::vector<std::string> figures = group_figures();
  figures.push_back("errors_pct");
  for (const auto& r : runs)
    for (const auto& p : r.phases)
      for (const auto& w : p.workloads) {
        const bool seen = std::any_of(s.rows.begin(), s.rows.end(), [&](const repeat_summary::row& x) {
          return x.phase == p.name && x.workload == w.name;
        });
        if (seen) continue;
        repeat_summary::row row{p.name, w.name, {}};
        for (const auto& f : figures) {
          std::vector<double> v;
          for (const auto& other : runs)
            if (const workload_phase_result* ow = whole_phase(other, p.name, w.name)) v.push_back(figure_of(*ow, f));
          row.figures[f] = spread_stat::of(v);
        }
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
  const auto lat = [](const spread_stat& st) {
    return st.n ? fmt::format("{} ({}–{})", format_duration_us(st.median), format_duration_us(st.min),
                              format_duration_us(st.max))
                : std::string("-");
  };
  std::string o = fmt::format("{:<16} {:<10} {:>26} {:>28} {:>24}\n", "phase", "workload", "p50 median (min–max)",
                              "p99 median (min–max)", "ops/s median (min–max)");
  for (const auto& r : s.rows) {
    const spread_stat& t = r.figures.at("throughput");
    o += fmt::format("{:<16} {:<10} {:>26} {:>28} {:>24}\n", r.phase, r.workload, lat(r.figures.at("p50")),
                     lat(r.figures.at("p99")),
                     t.n ? fmt::format("{} ({}–{})", format_count(t.median), format_count(t.min), format_count(t.max))
                         : std::string("-"));
  }
  return o;
}

}  // namespace rig
