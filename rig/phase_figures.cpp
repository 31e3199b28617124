#include "rig/phase_figures.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

#include "core/hdr_codec.hpp"
#include "core/cgroup.hpp"
#include "core/proc.hpp"
#include "core/units.hpp"
#include "workloads/load_model.hpp"

namespace rig {

using nlohmann::json;

namespace {

using samples_in = std::vector<const resource_sample*>;
using proc_of = const std::optional<proc_sample>& (*)(const resource_sample&);

// A process tree's figures over the samples: CPU, memory, threads, descriptors, switches,
// run-queue wait and disk bytes. Null when no sample had it.
json proc_summary(const samples_in& in, proc_of get) {
  const proc_sample *first = nullptr, *last = nullptr;
  uint64_t rss_max = 0;
  int th_min = INT32_MAX, th_max = 0, fds_max = 0, procs_max = 0;
  for (const auto* s : in) {
    const auto& p = get(*s);
    if (!p) continue;
    if (!first) first = &*p;
    last = &*p;
    rss_max = std::max(rss_max, p->rss_bytes);
    th_min = std::min(th_min, p->threads);
    th_max = std::max(th_max, p->threads);
    fds_max = std::max(fds_max, p->fds);
    procs_max = std::max(procs_max, p->processes);
  }
  if (!first) return json();
  json j = json::object();
  j["samples"] = in.size();
  j["cpu_pct"] = cpu_pct_between(*first, *last);
  j["cpu_user_s"] = last->cpu_user_s - first->cpu_user_s;
  j["cpu_sys_s"] = last->cpu_sys_s - first->cpu_sys_s;
  j["rss_max_bytes"] = rss_max;
  j["rss_start_bytes"] = first->rss_bytes;
  j["rss_end_bytes"] = last->rss_bytes;
  j["threads_min"] = th_min;
  j["threads_max"] = th_max;
  j["fds_max"] = fds_max;
  j["processes_max"] = procs_max;
  j["voluntary_ctx_switches"] = last->voluntary_ctx - std::min(last->voluntary_ctx, first->voluntary_ctx);
  j["involuntary_ctx_switches"] = last->involuntary_ctx - std::min(last->involuntary_ctx, first->involuntary_ctx);
  j["ctx_switches"] = j["voluntary_ctx_switches"].get<uint64_t>() + j["involuntary_ctx_switches"].get<uint64_t>();
  // Run-queue wait: runnable but not running (the ready time of a VM's vCPU), per second of the phase.
  const double wall_s = double(last->t_ns - first->t_ns) / 1e9;
  const double wait_s = double(last->run_queue_wait_ns - std::min(last->run_queue_wait_ns, first->run_queue_wait_ns)) / 1e9;
  j["run_queue_wait_s"] = wait_s;
  j["run_queue_wait_ms_per_s"] = wall_s > 0 ? json(wait_s * 1e3 / wall_s) : json();
  // What the target wrote to and read from storage (its own view: writeback included).
  const auto per_s = [&](uint64_t a, uint64_t b) { return wall_s > 0 ? json(double(b - std::min(a, b)) / wall_s) : json(); };
  j["disk_read_bytes_per_s"] = per_s(first->disk_read_bytes, last->disk_read_bytes);
  j["disk_write_bytes_per_s"] = per_s(first->disk_write_bytes, last->disk_write_bytes);
  return j;
}

// The target's own counters (the built-in target's): gauges as min/max/start/end, totals as
// the phase's delta; added to `target`.
void add_target_counters(const samples_in& in, json& target, const std::vector<target_counter>& counters) {
  struct gauge_range {
    int64_t min, max, start, end;
  };
  std::map<std::string, gauge_range> gauge;
  std::map<std::string, std::pair<int64_t, int64_t>> total;  // first, last
  std::set<std::string_view> totals;
  for (const auto& c : counters)
    if (c.total) totals.insert(c.name);
  for (const auto* s : in)
    for (const auto& [k, v] : s->counters) {
      if (totals.count(k)) {
        auto [it, fresh] = total.try_emplace(k, v, v);
        it->second.second = v;
      } else {
        auto [it, fresh] = gauge.try_emplace(k, gauge_range{v, v, v, v});
        it->second.min = std::min(it->second.min, v);
        it->second.max = std::max(it->second.max, v);
        it->second.end = v;
      }
    }
  if (gauge.empty() && total.empty()) return;
  if (target.is_null()) target = json::object();
  for (const auto& [k, g] : gauge) {
    target[k + "_min"] = g.min;
    target[k + "_max"] = g.max;
    target[k + "_start"] = g.start;  // the first and last samples of the phase: which way it went
    target[k + "_end"] = g.end;
  }
  for (const auto& [k, fl] : total) target[k] = fl.second - fl.first;
}

// The target's cgroup: usage against the caps in force (the zonestat view). Counts (OOM
// kills, limit hits, throttling) run from the last sample before its injectors were applied,
// so what they caused while being applied (a cap below the usage: an OOM kill at once) counts.
json cgroup_figures(const std::vector<resource_sample>& all, const samples_in& in, int64_t counts_from) {
  const cgroup_sample *cfirst = nullptr, *clast = nullptr;
  int64_t t_first = 0, t_last = 0, mem_max = 0;
  for (const auto& s : all)
    if (s.t_ns < counts_from && s.cgroup) {
      cfirst = &*s.cgroup;
      t_first = s.t_ns;
    }
  std::optional<int64_t> mem_cap, cpu_quota;
  int64_t cpu_period = 0;
  json io_caps = json();
  for (const auto* s : in) {
    if (!s->cgroup) continue;
    if (!cfirst) {
      cfirst = &*s->cgroup;
      t_first = s->t_ns;
    }
    clast = &*s->cgroup;
    t_last = s->t_ns;
    if (clast->memory) mem_max = std::max(mem_max, clast->memory->usage_bytes);
    if (clast->memory_limit) mem_cap = std::max(mem_cap.value_or(0), *clast->memory_limit);
    if (clast->cpu_quota_us) {
      cpu_quota = clast->cpu_quota_us;
      cpu_period = clast->cpu_period_us;
    }
    if (clast->io_cap)
      io_caps = {{"read_bps", clast->io_cap->read_bps},
                 {"write_bps", clast->io_cap->write_bps},
                 {"read_iops", clast->io_cap->read_iops},
                 {"write_iops", clast->io_cap->write_iops}};
  }
  json cg = json::object();
  if (!cfirst || !clast) return cg;
  const double wall_s = double(t_last - t_first) / 1e9;
  if (clast->memory && cfirst->memory) {
    cg["memory_used_max_bytes"] = mem_max;                // the most seen at a sample
    cg["memory_peak_bytes"] = clast->memory->peak_bytes;  // the kernel's own high-water mark (-1: not kept)
    cg["memory_used_end_bytes"] = clast->memory->usage_bytes;
    cg["memory_cap_bytes"] = mem_cap ? json(*mem_cap) : json();
    const int64_t hits = clast->memory->limit_hits - cfirst->memory->limit_hits,
                  kills = clast->memory->oom_kills - cfirst->memory->oom_kills;
    const auto counted = counted_limit_hits(hits, kills > 0);
    cg["memory_limit_hits"] = counted ? json(*counted) : json();
    cg["oom_kills"] = kills;
  }
  if (clast->io && cfirst->io) {
    auto rate = [&](int64_t io_figures::*f) {
      return wall_s > 0 ? double((*clast->io).*f - (*cfirst->io).*f) / wall_s : 0.0;
    };
    cg["io_read_bytes_per_s"] = rate(&io_figures::read_bytes);
    cg["io_write_bytes_per_s"] = rate(&io_figures::write_bytes);
    cg["io_read_ops_per_s"] = rate(&io_figures::read_ops);
    cg["io_write_ops_per_s"] = rate(&io_figures::write_ops);
    cg["io_cap"] = io_caps;
  }
  if (clast->cpu && cfirst->cpu) {
    cg["cpu_used_cpus"] = wall_s > 0 ? double(clast->cpu->usage_ns - cfirst->cpu->usage_ns) / 1e9 / wall_s : 0.0;
    cg["cpu_cap_cpus"] = cpu_quota ? json(double(*cpu_quota) / double(cpu_period)) : json();
    cg["cpu_throttled_periods"] = clast->cpu->throttled_periods - cfirst->cpu->throttled_periods;
    cg["cpu_throttled_s"] = double(clast->cpu->throttled_ns - cfirst->cpu->throttled_ns) / 1e9;
  }
  return cg;
}

}  // namespace

json phase_resources(const std::vector<resource_sample>& all, int64_t from, int64_t to, int64_t counts_from,
                     const std::vector<target_counter>& counters) {
  samples_in in;
  for (const auto& s : all)
    if (s.t_ns >= from && s.t_ns <= to) in.push_back(&s);
  json res = json::object();
  json target = proc_summary(in, [](const resource_sample& s) -> const std::optional<proc_sample>& { return s.target; });
  // Several processes (a master and its workers): the one rig watches beside the sum.
  if (target.is_object() && target.value("processes_max", 1) > 1) {
    const json main =
        proc_summary(in, [](const resource_sample& s) -> const std::optional<proc_sample>& { return s.target_main; });
    if (main.is_object())
      target["main_process"] = {{"cpu_pct", main["cpu_pct"]},
                                {"rss_max_bytes", main["rss_max_bytes"]},
                                {"threads_max", main["threads_max"]},
                                {"run_queue_wait_ms_per_s", main["run_queue_wait_ms_per_s"]}};
  }
  add_target_counters(in, target, counters);
  if (!target.is_null()) res["target"] = target;
  if (json cg = cgroup_figures(all, in, counts_from); !cg.empty()) res["cgroup"] = cg;
  json self = proc_summary(in, [](const resource_sample& s) -> const std::optional<proc_sample>& { return s.self; });
  if (!self.is_null()) res["rig"] = self;
  return res;
}

json host_figures(const host_cpu_sample& a, const host_cpu_sample& b, const json& resources) {
  if (b.total <= a.total) return json();
  const double total = double(b.total - a.total), cpus = double(online_cpus());
  const double busy = cpus * (1 - double(b.idle - std::min(a.idle, b.idle)) / total);
  auto cpus_of = [&](const char* who) {
    const auto& r = resources.value(who, json());
    return r.is_object() && r.value("cpu_pct", json()).is_number() ? r["cpu_pct"].get<double>() / 100 : 0.0;
  };
  return {{"load1_end", b.load1},
          {"cpu_busy_cpus", busy},
          {"steal_pct", 100 * double(b.steal - std::min(a.steal, b.steal)) / total},
          {"other_cpus", std::max(0.0, busy - cpus_of("target") - cpus_of("rig"))}};
}

workload_phase_result summarize(const std::string& name, const phase_stats& s, double seconds) {
  workload_phase_result r;
  r.name = name;
  r.ops = s.ops;
  r.due = s.due;
  r.not_sent = s.not_sent;
  r.unfinished = s.unfinished;
  for (size_t k = 0; k < error_kind_count; ++k) r.errors[error_kind_name(error_kind(k))] = s.errors[k];
  // The rate the target delivered while the phase ran (ops: the phase's own requests answered, whenever).
  r.throughput_ops_s = seconds > 0 ? double(s.replies_in_phase) / seconds : 0;
  r.latency = latency_summary::of(s.latency);
  r.service = latency_summary::of(s.service);
  r.send_lag = latency_summary::of(s.send_lag);
  r.error_latency = latency_summary::of(s.error_latency);
  r.rejected_latency = latency_summary::of(s.rejected_latency);
  r.all_latency = latency_summary::of(s.all_latency);
  r.errors_pct = errors_pct_of(s.error_total(), s.ops);  // every request tried is a reply (ops) or an error
  r.hdr = {{"latency", hdr_encode(s.latency)}, {"service", hdr_encode(s.service)}, {"send_lag", hdr_encode(s.send_lag)}};
  r.late_sends = s.late_sends;
  r.counts = s.counts;
  uint64_t replies = 0;
  for (auto n : s.status_classes) replies += n;
  if (replies)
    for (size_t c = 1; c < s.status_classes.size(); ++c) r.status[fmt::format("{}xx", c)] = s.status_classes[c];
  r.generator_warning = generator_limited_warning(s);
  return r;
}

void add_growth_figures(phase_result& ph) {
  auto& t = ph.resources["target"];
  uint64_t ops = 0;
  for (const auto& w : ph.workloads) ops += w.ops;
  if (!t.is_object() || !t.contains("rss_end_bytes") || ops == 0) return;
  const double growth = t["rss_end_bytes"].get<double>() - t["rss_start_bytes"].get<double>();
  // Work done per CPU-second: a slower CPU shows here even while CPU use looks low.
  const double cpu_s = t.value("cpu_user_s", 0.0) + t.value("cpu_sys_s", 0.0);
  if (cpu_s > 0) t["ops_per_cpu_s"] = double(ops) / cpu_s;
  t["rss_growth_bytes"] = growth;
  t["rss_growth_per_op_bytes"] = growth / double(ops);
  if (t.contains("retained_bytes_max") && t.value("requests", 0) > 0)
    t["retained_per_request_bytes"] =
        (t["retained_bytes_max"].get<double>() - t["retained_bytes_min"].get<double>()) / t["requests"].get<double>();
}

std::vector<event_row> errors_began(const std::vector<phase_result>& phases, const std::vector<window_row>& rows) {
  std::vector<event_row> out;
  std::map<std::string, std::set<std::string>> seen;  // workload -> error kinds seen in earlier phases
  for (const auto& ph : phases)
    for (const auto& w : ph.workloads) {
      std::vector<std::string> fresh;
      uint64_t n = 0;
      for (const auto& [kind, count] : w.errors)
        if (count > 0 && seen[w.name].insert(kind).second) {
          fresh.push_back(kind);
          n += count;
        }
      if (fresh.empty()) continue;
      double t = ph.start_s;
      for (const auto& r : rows)
        if (r.workload == w.name && r.errors > 0 && double(r.index + 1) > ph.start_s && double(r.index) < ph.end_s) {
          t = std::max(ph.start_s, double(r.index));
          break;
        }
      std::string kinds;
      for (const auto& k : fresh) kinds += (kinds.empty() ? "" : ", ") + k;
      out.push_back({t, "errors_began",
                     fmt::format("{}: {} errors began in phase {} ({} in that phase{})", w.name, kinds, ph.name,
                                 format_count(double(n)),
                                 &ph == &phases.front() ? ", the first" : ", none of that kind before it")});
    }
  return out;
}


const std::vector<std::string>& target_figure_names() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> n = {"samples", "cpu_pct", "cpu_user_s", "cpu_sys_s", "rss_max_bytes", "rss_start_bytes",
                                  "rss_end_bytes", "threads_min", "threads_max", "fds_max", "processes_max",
                                  "voluntary_ctx_switches", "involuntary_ctx_switches", "ctx_switches",
                                  "run_queue_wait_s", "run_queue_wait_ms_per_s", "disk_read_bytes_per_s",
                                  "disk_write_bytes_per_s", "rss_growth_per_op_bytes", "rss_growth_bytes",
                                  "ops_per_cpu_s", "retained_per_request_bytes", "crashes"};
    for (const auto& k : target_kinds())
      for (const auto& c : k.counters) {
        if (c.total) n.emplace_back(c.name);
        else
          for (const char* s : {"_min", "_max", "_start", "_end"}) n.push_back(std::string(c.name) + s);
      }
    return n;
  }();
  return v;
}

const std::vector<std::string>& cgroup_figure_names() {
  static const std::vector<std::string> v = {
      "memory_used_max_bytes", "memory_peak_bytes",  "memory_used_end_bytes", "memory_cap_bytes",
      "memory_limit_hits",     "oom_kills",          "io_read_bytes_per_s",   "io_write_bytes_per_s",
      "io_read_ops_per_s",     "io_write_ops_per_s", "cpu_used_cpus",         "cpu_cap_cpus",
      "cpu_throttled_periods", "cpu_throttled_s"};
  return v;
}

}  // namespace rig
