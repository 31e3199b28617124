#include "reports/suite_report.hpp"

#include <fmt/format.h>

#include "core/units.hpp"
#include "reports/sweep_report.hpp"

namespace rig {

namespace {

using nlohmann::json;

json num_or_null(double v) { return std::isnan(v) ? json() : json(v); }

}  // namespace

std::map<std::string, double> suite_row::figure_values() const {
  std::map<std::string, double> out;
  for (const auto& [k, v] : {std::pair{"throughput_ops_s", throughput_ops_s}, std::pair{"p50_us", p50_us},
                             std::pair{"p99_us", p99_us}, std::pair{"errors_pct", errors_pct}, std::pair{"p99_x", p99_x}})
    if (!std::isnan(v)) out[k] = v;
  return out;
}

void suite_row::set_figures_from_spread() {
  const auto median = [&](const char* k) { return spread.count(k) ? spread.at(k).median : NAN; };
  throughput_ops_s = median("throughput_ops_s");
  p50_us = median("p50_us");
  p99_us = median("p99_us");
  errors_pct = median("errors_pct");
  p99_x = median("p99_x");
}

std::vector<const suite_row*> suite_summary::failed() const {
  std::vector<const suite_row*> out;
  for (const auto& r : rows)
    if (!r.passed()) out.push_back(&r);
  return out;
}

void fill_row(suite_row& row, const run_report& r) {
  row.status = r.status;
  row.why = r.failure;
  for (const auto& e : r.expectations)
    if (!e.ok) row.failed_checks.push_back(e);
  for (const auto& p : r.phases)
    for (const auto& i : p.injections)
      if (!i.verified)
        row.why += fmt::format("{}{}: {} not verified: {}", row.why.empty() ? "" : "; ", p.name, i.name, i.verification);
  if (r.phases.empty() || r.phases.back().workloads.empty()) return;
  const phase_result& last = r.phases.back();
  const workload_phase_result& w = last.workloads.front();
  row.phase = last.name;
  row.workload = w.name;
  row.throughput_ops_s = w.throughput_ops_s;
  if (w.latency.count > 0) {
    row.p50_us = w.latency.p50;
    row.p99_us = w.latency.p99;
  }
  row.errors_pct = w.errors_pct;
  for (const auto& m : r.magnification)
    if (m.phase == last.name && m.workload == w.name) row.p99_x = m.p99_x;
}

void fill_row(suite_row& row, const sweep_summary& s) {
  row.status = s.status;
  for (const auto& e : s.expectations)
    if (!e.ok) row.failed_checks.push_back(e);
  for (const auto& l : s.levels)
    for (const auto& f : l.check_failures)
      row.why += fmt::format("{}{} = {}: {}", row.why.empty() ? "" : "; ", s.param, l.label, f);
  const auto names = s.workload_names();
  if (s.levels.empty() || names.empty()) return;
  const sweep_level& last = s.levels.back();
  row.phase = s.phase + " at " + last.label;
  row.workload = names.front();
  row.throughput_ops_s = last.at(row.workload, "throughput_ops_s").median;
  row.p50_us = last.at(row.workload, "p50_us").median;
  row.p99_us = last.at(row.workload, "p99_us").median;
}

json to_json(const suite_summary& s) {
  json rows = json::array();
  for (const auto& r : s.rows) {
    json checks = json::array();
    for (const auto& c : r.failed_checks) checks.push_back({{"expr", c.expr}, {"actual", c.actual}});
    json spread = json::object();  // --repeat: each key figure's median and range over the runs
    for (const auto& [k, v] : r.spread)
      spread[k] = {{"median", num_or_null(v.median)}, {"min", num_or_null(v.min)}, {"max", num_or_null(v.max)}, {"n", v.n}};
    rows.push_back({{"label", r.label},
                    {"file", r.file},
                    {"tags", r.tags},
                    {"sets", r.sets},
                    {"phase_duration", r.phase_duration},
                    {"sweep", r.sweep},
                    {"status", r.status},
                    {"exit_code", r.exit_code},
                    {"passed", r.passed()},
                    {"run_dir", r.run_dir},
                    {"duration_s", r.duration_s},
                    {"repeats", r.repeats},
                    {"spread", spread},
                    {"failed_checks", checks},
                    {"why", r.why},
                    {"figures",
                     {{"phase", r.phase},
                      {"workload", r.workload},
                      {"throughput_ops_s", num_or_null(r.throughput_ops_s)},
                      {"p50_us", num_or_null(r.p50_us)},
                      {"p99_us", num_or_null(r.p99_us)},
                      {"errors_pct", num_or_null(r.errors_pct)},
                      {"p99_x", num_or_null(r.p99_x)}}}});
  }
  json failed = json::array();
  for (const auto* r : s.failed()) failed.push_back(r->label);
  return {{"suite_version", 1},     {"rig_version", s.rig_version}, {"name", s.name},
          {"description", s.description}, {"started_utc", s.started_utc}, {"wall_s", s.wall_s},
          {"filters", s.filters},   {"skips", s.skips}, {"filtered_out", s.filtered_out},  {"scenarios", rows},
          {"passed", s.rows.size() - failed.size()}, {"failed", failed}, {"exit_code", s.exit_code}};
}

std::string suite_table(const suite_summary& s) {
  std::string o = fmt::format("{:<28} {:<14} {:>6} {:>10} {:>9} {:>9} {:>8} {:>9}\n", "scenario", "status", "failed",
                              "ops/s", "p50", "p99", "p99 ×", "duration");
  for (const auto& r : s.rows) {
    o += fmt::format("{:<28} {:<14} {:>6} {:>10} {:>9} {:>9} {:>8} {:>8.1f}s\n", r.label, r.status,
                     r.failed_checks.size(), format_count(r.throughput_ops_s), format_duration_us(r.p50_us),
                     format_duration_us(r.p99_us), std::isnan(r.p99_x) ? "-" : format_ratio(r.p99_x), r.duration_s);
    for (const auto& c : r.failed_checks) o += fmt::format("    FAIL {} (actual {})\n", c.expr, c.actual);
    if (!r.why.empty() && !r.passed()) o += fmt::format("    {}\n", r.why);
  }
  const bool repeated = std::any_of(s.rows.begin(), s.rows.end(), [](const suite_row& r) { return r.repeats > 1; });
  o += fmt::format("(figures: the last phase's first workload{}; p99 × against the first phase)\n",
                   repeated ? ", the median of each scenario's runs (checks judged on medians too)" : "");
  return o;
}

}  // namespace rig
