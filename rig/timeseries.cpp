#include "rig/timeseries.hpp"

#include <fmt/format.h>

#include "core/hdr_codec.hpp"
#include "core/clock.hpp"
#include "core/proc.hpp"

namespace rig {

timeseries_stream::timeseries_stream(const scenario& sc, const directory& dir, int64_t start_ns)
    : sc_(sc), start_ns_(start_ns), out_(dir.create("timeseries.csv"), dir.path() + "/timeseries.csv", columns(sc)) {}

void timeseries_stream::write_before(int64_t before_ns, const window_sink& windows,
                                     const std::vector<resource_sample>& samples,
                                     const std::vector<phase_window>& phases, bool open) {
  for (;; ++next_) {
    const int64_t w0 = start_ns_ + next_ * ns_per_s, w1 = w0 + ns_per_s;
    if (w1 > before_ns) break;
    std::string phase;
    int64_t most = 0;
    for (auto it = phases.begin(); it != phases.end(); ++it) {
      const int64_t end = open && it + 1 == phases.end() ? INT64_MAX : it->end_ns;
      const int64_t overlap = std::min(w1, end) - std::max(w0, it->start_ns);
      if (overlap > most) {
        most = overlap;
        phase = sc_.phases[size_t(it->index)].name;
      }
    }
    out_.row(row(windows, samples, w0, w1, phase));
  }
}

int64_t timeseries_stream::written_end_ns() const { return start_ns_ + next_ * ns_per_s; }

std::vector<std::string> timeseries_stream::columns(const scenario& sc) {
  std::vector<std::string> c = {"t_s", "phase"};
  for (const auto& w : sc.workloads)
    for (const char* k : {".ops", ".p50_us", ".p99_us", ".p999_us", ".errors"}) c.push_back(w.name + k);
  for (const char* k :
       {"target.cpu_pct", "target.rss_bytes", "target.threads", "target.live_workers", "target.queue_depth",
        "rig.cpu_pct", "cgroup.memory_bytes", "cgroup.memory_cap_bytes", "cgroup.cpu_pct", "cgroup.cpu_cap_pct",
        "cgroup.io_read_ops_s", "cgroup.io_write_ops_s", "cgroup.io_read_bytes_s", "cgroup.io_write_bytes_s",
        "cgroup.io_read_iops_cap", "cgroup.io_write_iops_cap", "cgroup.io_read_bps_cap", "cgroup.io_write_bps_cap"})
    c.push_back(k);
  return c;
}

std::vector<std::string> timeseries_stream::row(const window_sink& windows, const std::vector<resource_sample>& samples,
                                                int64_t w0, int64_t w1, const std::string& phase) const {
  std::vector<std::string> row = {std::to_string(next_), phase};
  for (const auto& w : sc_.workloads) {
    const auto from = windows.rows_from(w.name, next_);
    if (!from.empty() && from.front().index == next_) {
      const auto& r = from.front();
      for (const auto& v : {fmt::format("{}", r.ops), fmt::format("{:.1f}", r.p50_us),
                            fmt::format("{:.1f}", r.p99_us), fmt::format("{:.1f}", r.p999_us),
                            fmt::format("{}", r.errors)})
        row.push_back(v);
    } else {
      for (int k = 0; k < 5; ++k) row.push_back(k == 0 || k == 4 ? "0" : "");
    }
  }
  const resource_sample *first = nullptr, *last = nullptr;
  for (const auto& s : samples)
    if (s.t_ns >= w0 && s.t_ns < w1) {
      if (!first) first = &s;
      last = &s;
    }
  auto counter = [&](const char* k) -> std::string {
    if (!last) return "";
    auto it = last->counters.find(k);
    return it == last->counters.end() ? "" : std::to_string(it->second);
  };
  const bool target_ok = first && first->target && last->target;
  row.push_back(target_ok ? fmt::format("{:.1f}", cpu_pct_between(*first->target, *last->target)) : "");
  row.push_back(last && last->target ? std::to_string(last->target->rss_bytes) : "");
  row.push_back(last && last->target ? std::to_string(last->target->threads) : "");
  row.push_back(counter("live_workers"));
  row.push_back(counter("queue_depth"));
  row.push_back(first && first->self && last->self ? fmt::format("{:.1f}", cpu_pct_between(*first->self, *last->self))
                                                    : "");
  // The target's cgroup against its caps, when it has one.
  const cgroup_sample* cg = last && last->cgroup ? &*last->cgroup : nullptr;
  const cgroup_sample* cg0 = first && first->cgroup ? &*first->cgroup : nullptr;
  row.push_back(cg && cg->memory ? std::to_string(cg->memory->usage_bytes) : "");
  row.push_back(cg && cg->memory_limit ? std::to_string(*cg->memory_limit) : "");
  row.push_back(cg && cg0 && cg->cpu && cg0->cpu && last->t_ns > first->t_ns
                    ? fmt::format("{:.1f}", double(cg->cpu->usage_ns - cg0->cpu->usage_ns) * 100 /
                                                double(last->t_ns - first->t_ns))
                    : "");
  row.push_back(cg && cg->cpu_quota_us && cg->cpu_period_us > 0
                    ? fmt::format("{:.1f}", double(*cg->cpu_quota_us) * 100 / double(cg->cpu_period_us))
                    : "");
  // I/O per second over the window, beside the caps in force (0: none).
  const double secs = last && first ? double(last->t_ns - first->t_ns) / 1e9 : 0;
  const bool io = cg && cg0 && cg->io && cg0->io && secs > 0;
  for (auto f : {&io_figures::read_ops, &io_figures::write_ops, &io_figures::read_bytes, &io_figures::write_bytes})
    row.push_back(io ? fmt::format("{:.1f}", double(cg->io.value().*f - cg0->io.value().*f) / secs) : "");
  for (auto f : {&io_limits::read_iops, &io_limits::write_iops, &io_limits::read_bps, &io_limits::write_bps})
    row.push_back(cg && cg->io_cap && cg->io_cap.value().*f > 0 ? std::to_string(cg->io_cap.value().*f) : "");
  return row;
}

void write_hdr_logs(const directory& dir, const scenario& sc, const std::vector<window_row>& rows, double start_wall) {
  for (const auto& w : sc.workloads) {
    std::string log = hdr_log_header(start_wall, fmt::format("rig {}: scenario {}, workload {}: latency per second, ns",
                                                             RIG_VERSION, sc.name, w.name));
    for (const auto& r : rows)
      if (r.workload == w.name && !r.hdr.empty())
        log += hdr_log_line(double(r.index), 1, r.max_us, r.hdr);
    dir.write_file(w.name + ".latency.hlog", log);
  }
}

}  // namespace rig
