#include "reports/sweep_report.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/units.hpp"

namespace rig {

using nlohmann::json;

spread_stat spread_stat::of(std::vector<double> v) {
  std::erase_if(v, [](double x) { return std::isnan(x); });
  spread_stat s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.n = v.size();
  s.median = s.n % 2 ? v[s.n / 2] : (v[s.n / 2 - 1] + v[s.n / 2]) / 2;
  s.min = v.front();
  s.max = v.back();
  return s;
}

std::string sweep_table(const sweep_summary& s, const std::vector<std::string>& workloads) {
  const std::string param = s.param.substr(s.param.rfind('.') + 1);  // "rate" of workloads.rr.rate
  std::string o = fmt::format("{:<24} {:<10} {:>10} {:>10} {:>10} {:>21} {:>10}\n", param, "workload", "ops/s", "p50",
                              "p99", "p99 min–max", "errors/s");
  for (size_t li = 0; li < s.levels.size(); ++li) {
    const sweep_level& l = s.levels[li];
    for (const auto& w : workloads) {
      const spread_stat p99 = l.at(w, "p99_us");
      const double errors = l.at(w, "errors_per_s").median;
      const auto knee = s.knee.find(w);
      o += fmt::format("{:<24} {:<10} {:>10} {:>10} {:>10} {:>21} {:>10}{}\n", l.label, w,
                       format_count(l.at(w, "throughput_ops_s").median), format_duration_us(l.at(w, "p50_us").median),
                       format_duration_us(p99.median), format_duration_us(p99.min) + " – " + format_duration_us(p99.max),
                       std::isnan(errors) ? "-" : fmt::format("{:.1f}", errors),
                       knee != s.knee.end() && knee->second.index == li
                           ? fmt::format("  ← knee (every run's p99 > {:g}× the first level's)", s.knee_factor)
                           : "");
    }
  }
  for (const auto& w : workloads)
    if (!s.knee.count(w)) o += fmt::format("no knee for {}: p99 stayed within {:g}× the first level's\n", w, s.knee_factor);
  return o;
}

bool sweep_summary::levels_fail() const {
  return std::any_of(levels.begin(), levels.end(), [&](const sweep_level& l) {
    return l.unverified || (!levels_may_fail && !l.check_failures.empty());
  });
}

spread_stat sweep_level::at(const std::string& workload, const std::string& metric) const {
  const auto w = workloads.find(workload);
  if (w == workloads.end()) return {};
  const auto m = w->second.find(metric);
  return m == w->second.end() ? spread_stat{} : m->second;
}

std::vector<std::string> sweep_summary::workload_names() const {
  std::vector<std::string> out;
  for (const auto& l : levels)
    for (const auto& [w, _] : l.workloads)
      if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
  return out;
}

namespace {

json to_json(const spread_stat& s) {
  if (!s.n) return nullptr;
  return {{"median", s.median}, {"min", s.min}, {"max", s.max}, {"n", s.n}};
}

}  // namespace

json to_json(const sweep_summary& s) {
  json levels = json::array();
  for (const auto& l : s.levels) {
    json w = json::object();
    for (const auto& [name, metrics] : l.workloads)
      for (const auto& [metric, st] : metrics) w[name][metric] = to_json(st);
    levels.push_back({{"label", l.label},
                      {"baseline", l.baseline},
                      {"runs", l.runs},
                      {"workloads", w},
                      {"target", {{"cpu_pct", to_json(l.target_cpu_pct)}, {"rss_max_bytes", to_json(l.target_rss_max_bytes)}}},
                      {"failed_runs", l.failed_runs},
                      {"check_failures", l.check_failures},
                      {"unverified", l.unverified}});
  }
  json knee = json::object();
  for (const auto& [w, k] : s.knee)
    knee[w] = {{"index", k.index},
               {"level", k.level},
               {"p99_us", figure(k.p99_us)},
               {"lowest_p99_us", figure(k.lowest_p99_us)},
               {"first_p99_us", k.first_p99_us}};
  json checks = json::array();
  for (const auto& e : s.expectations) checks.push_back({{"expr", e.expr}, {"ok", e.ok}, {"actual", e.actual}});
  return {{"scenario", s.scenario},       {"param", s.param},   {"phase", s.phase},
          {"repeats", s.repeats},         {"knee_factor", s.knee_factor}, {"status", s.status},
          {"levels_may_fail", s.levels_may_fail}, {"expectations", checks}, {"levels", levels},
          {"knee", knee}};
}

}  // namespace rig
