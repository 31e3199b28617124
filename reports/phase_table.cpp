#include "reports/phase_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/units.hpp"

namespace rig {

namespace {

latency_cell cell(const latency_summary& l, const char* k, double v) {
  if (!l.count || std::isnan(v)) return {};
  const auto low = l.low_confidence();
  return {format_duration_us(v), std::find(low.begin(), low.end(), k) != low.end()};
}

std::string by_kind(const std::map<std::string, uint64_t>& errors) {
  std::string s;
  for (const auto& [k, n] : errors)
    if (n) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", format_count(double(n)), k);
  return s.empty() ? "0" : s;
}

}  // namespace

std::vector<phase_row> phase_rows(const run_report& r) {
  std::vector<phase_row> rows;
  for (const auto& p : r.phases)
    for (const auto& w : p.workloads) {
      phase_row row{&p, &w};
      row.throughput = std::isnan(w.throughput_ops_s) ? "–" : format_count(w.throughput_ops_s);
      row.p50 = cell(w.latency, "p50", w.latency.p50);
      row.p99 = cell(w.latency, "p99", w.latency.p99);
      row.p999 = cell(w.latency, "p999", w.latency.p999);
      row.errors = format_count(double(w.error_total()));
      row.errors_by_kind = by_kind(w.errors);
      row.failed = std::isnan(w.errors_pct) ? "" : fmt::format("{:.1f}%", w.errors_pct);
      for (const auto& m : r.magnification)
        if (m.phase == p.name && m.workload == w.name) {
          row.p50_x = format_ratio(m.p50_x);
          row.p99_x = format_ratio(m.p99_x);
          row.throughput_x = format_ratio(m.throughput_x, 2);
          row.loud = m.p50_x >= 2 || m.p99_x >= 2 || (std::isnan(m.p50_x) && w.error_total() > 0);
        }
      rows.push_back(std::move(row));
    }
  return rows;
}

}  // namespace rig
