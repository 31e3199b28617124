#include "rig/controller.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <fmt/format.h>
#include <fstream>
#include <iostream>

#include "core/cgroup.hpp"
#include "core/clock.hpp"
#include "core/directory.hpp"
#include "core/host.hpp"
#include "core/journal.hpp"
#include "core/listener.hpp"
#include "reports/figures.hpp"
#include "core/netns.hpp"
#include "core/veth_network.hpp"
#include "core/sampler.hpp"
#include "core/signals.hpp"
#include "core/units.hpp"
#include "injectors/injector.hpp"
#include "injectors/preload/shim_control.h"
#include "injectors/proxy.hpp"
#include "injectors/shim.hpp"
#include "core/failpoint_channel.hpp"
#include "reports/html.hpp"
#include "reports/report.hpp"
#include "targets/target.hpp"
#include "workloads/load_model.hpp"
#include "workloads/workload.hpp"

#ifndef RIG_VERSION
#define RIG_VERSION "0.0.0"
#endif

namespace rig {

namespace {

std::string utc_stamp() {
  const time_t t = time(nullptr);
  tm u{};
  gmtime_r(&t, &u);
  char buf[32];
  strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &u);
  return buf;
}


nlohmann::json host_facts() {
  std::string os;
  std::ifstream rel("/etc/os-release");
  for (std::string line; std::getline(rel, line);)
    if (line.rfind("PRETTY_NAME=", 0) == 0) os = line.substr(13, line.size() - 14);
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return {{"kernel", kernel_release()}, {"cpus", online_cpus()}, {"cgroup", cgroup_version()},
          {"os", os},                   {"hostname", name}};
}

// Where each workload's errors began, by kind: the first phase that had any, and the first
// second of it with errors (a bug report says when a failure started, not only that it did).
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

// Resource figures of one phase from the samples between its boundaries.
// counts_from: when the phase's injectors began to be applied; what they caused from then
// on (an OOM kill when a cap lands below the usage) counts for the phase.
nlohmann::json phase_resources(const std::vector<resource_sample>& all, int64_t from, int64_t to, int64_t counts_from) {
  using nlohmann::json;
  std::vector<const resource_sample*> in;
  for (const auto& s : all)
    if (s.t_ns >= from && s.t_ns <= to) in.push_back(&s);
  json res = json::object();
  auto proc_summary = [&](auto get) -> json {
    const proc_sample *first = nullptr, *last = nullptr;
    json j = json::object();
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
  };
  json target = proc_summary([](const resource_sample& s) -> const std::optional<proc_sample>& { return s.target; });
  // Several processes (a master and its workers): the one rig watches beside the sum.
  if (target.is_object() && target.value("processes_max", 1) > 1) {
    const json main =
        proc_summary([](const resource_sample& s) -> const std::optional<proc_sample>& { return s.target_main; });
    if (main.is_object())
      target["main_process"] = {{"cpu_pct", main["cpu_pct"]},
                                {"rss_max_bytes", main["rss_max_bytes"]},
                                {"threads_max", main["threads_max"]},
                                {"run_queue_wait_ms_per_s", main["run_queue_wait_ms_per_s"]}};
  }
  // The built-in target's own counters: gauges as min/max, totals as the phase's delta.
  struct gauge_range {
    int64_t min, max, start, end;
  };
  std::map<std::string, gauge_range> gauge;
  std::map<std::string, std::pair<int64_t, int64_t>> total;  // first, last
  static const std::set<std::string> totals(builtin_counter_totals().begin(), builtin_counter_totals().end());
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
  if (!gauge.empty() || !total.empty()) {
    if (target.is_null()) target = json::object();
    for (const auto& [k, g] : gauge) {
      target[k + "_min"] = g.min;
      target[k + "_max"] = g.max;
      target[k + "_start"] = g.start;  // the first and last samples of the phase: which way it went
      target[k + "_end"] = g.end;
    }
    for (const auto& [k, fl] : total) target[k] = fl.second - fl.first;
  }
  if (!target.is_null()) res["target"] = target;
  // The target's cgroup: usage against the caps in force (the zonestat view). Counts (OOM
  // kills, limit hits, throttling) run from the last sample before its injectors were applied,
  // so what they caused while being applied (a cap below the usage: an OOM kill at once) counts.
  const cgroup_sample *cfirst = nullptr, *clast = nullptr;
  int64_t t_first = 0, t_last = 0, mem_max = 0;
  for (const auto& s : all)
    if (s.t_ns < counts_from && s.cgroup) {
      cfirst = &*s.cgroup;
      t_first = s.t_ns;
    }
  std::optional<int64_t> mem_cap, cpu_quota;
  int64_t cpu_period = 0;
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
  }
  if (cfirst && clast) {
    json cg = json::object();
    if (clast->memory && cfirst->memory) {
      cg["memory_used_max_bytes"] = mem_max;  // the most seen at a sample
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
      const double wall_s = double(t_last - t_first) / 1e9;
      auto rate = [&](int64_t io_figures::*f) {
        return wall_s > 0 ? double((*clast->io).*f - (*cfirst->io).*f) / wall_s : 0.0;
      };
      cg["io_read_bytes_per_s"] = rate(&io_figures::read_bytes);
      cg["io_write_bytes_per_s"] = rate(&io_figures::write_bytes);
      cg["io_read_ops_per_s"] = rate(&io_figures::read_ops);
      cg["io_write_ops_per_s"] = rate(&io_figures::write_ops);
      json caps = json();
      for (const auto* s : in)
        if (s->cgroup && s->cgroup->io_cap)
          caps = {{"read_bps", s->cgroup->io_cap->read_bps},
                  {"write_bps", s->cgroup->io_cap->write_bps},
                  {"read_iops", s->cgroup->io_cap->read_iops},
                  {"write_iops", s->cgroup->io_cap->write_iops}};
      cg["io_cap"] = caps;
    }
    if (clast->cpu && cfirst->cpu) {
      const double wall_s = double(t_last - t_first) / 1e9;
      cg["cpu_used_cpus"] = wall_s > 0 ? double(clast->cpu->usage_ns - cfirst->cpu->usage_ns) / 1e9 / wall_s : 0.0;
      cg["cpu_cap_cpus"] = cpu_quota ? json(double(*cpu_quota) / double(cpu_period)) : json();
      cg["cpu_throttled_periods"] = clast->cpu->throttled_periods - cfirst->cpu->throttled_periods;
      cg["cpu_throttled_s"] = double(clast->cpu->throttled_ns - cfirst->cpu->throttled_ns) / 1e9;
    }
    if (!cg.empty()) res["cgroup"] = cg;
  }
  json self = proc_summary([](const resource_sample& s) -> const std::optional<proc_sample>& { return s.self; });
  if (!self.is_null()) res["rig"] = self;
  return res;
}

struct phase_window {
  int index;
  int64_t start_ns, end_ns;
  int64_t applied_ns;  // when its injectors began to be applied (before start_ns)
};

// timeseries.csv: one row per second of the run, written as the run goes.
class timeseries_stream {
 public:
  timeseries_stream(const scenario& sc, const directory& dir, int64_t start_ns)
      : sc_(sc), start_ns_(start_ns), out_(dir.create("timeseries.csv"), dir.path() + "/timeseries.csv", columns(sc)) {}

  // Writes the rows of the seconds that ended before `before_ns`, from the window rows and the
  // samples in each second; `phases` names each second by the phase that has most of it (the
  // last one still open when `open` is set): the run's last, partial second and a second
  // across the pause between two phases are named too. Empty only where no phase ran.
  void write_before(int64_t before_ns, const window_sink& windows, const std::vector<resource_sample>& samples,
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
  // Where the rows written so far end: the samples before it are needed no more.
  int64_t written_end_ns() const { return start_ns_ + next_ * ns_per_s; }

 private:
  static std::vector<std::string> columns(const scenario& sc) {
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

  std::vector<std::string> row(const window_sink& windows, const std::vector<resource_sample>& samples, int64_t w0,
                               int64_t w1, const std::string& phase) const {
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

  const scenario& sc_;
  int64_t start_ns_;
  int64_t next_ = 0;  // the next second to write
  csv_writer out_;
};

// Growth per operation (accumulation): RSS, and the built-in target's own retained bytes; and
// work done per CPU-second. From a phase's figures once they are all in.
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

workload_phase_result summarize(const std::string& name, const phase_stats& s, double seconds) {
  workload_phase_result r;
  r.name = name;
  r.ops = s.ops;
  for (size_t k = 0; k < error_kind_count; ++k) r.errors[error_kind_name(error_kind(k))] = s.errors[k];
  r.throughput_ops_s = seconds > 0 ? double(s.ops) / seconds : 0;
  r.latency = latency_summary::of(s.latency);
  r.service = latency_summary::of(s.service);
  r.send_lag = latency_summary::of(s.send_lag);
  r.late_sends = s.late_sends;
  r.counts = s.counts;
  uint64_t replies = 0;
  for (auto n : s.status_classes) replies += n;
  if (replies)
    for (size_t c = 1; c < s.status_classes.size(); ++c) r.status[fmt::format("{}xx", c)] = s.status_classes[c];
  r.generator_warning = generator_limited_warning(s);
  return r;
}

}  // namespace

bool cleanup_stale_journals(std::ostream& out) {
  bool all = true;
  for (const auto& j : stale_journals()) {
    if (j.problem.empty())
      out << fmt::format("rig cleanup: rig pid {} ({}), {} change{} left:\n", j.pid, j.path, j.pending.size(),
                         j.pending.size() == 1 ? "" : "s");
    const auto undone = replay(j);
    for (const auto& line : undone.lines) out << "  " << line << "\n";
    all = all && undone.complete;
    if (!undone.complete)
      out << "  not everything was undone; the journal stays (" << j.path
          << "): `rig cleanup` tries again, and a record it refused needs a person to look at it\n";
  }
  return all;
}

directory make_run_dir(const std::string& base, const std::string& name) {
  std::filesystem::create_directories(base);
  const directory parent = directory::open(base);
  const std::string stem = utc_stamp() + "-" + name;
  for (int i = 0;; ++i)
    if (auto d = parent.make_subdir(i ? fmt::format("{}.{}", stem, i) : stem)) return std::move(*d);
}

std::string pinned_path(const directory& d) { return fmt::format("/proc/{}/fd/{}", ::getpid(), d.fd()); }

int run_scenario(const scenario& sc, const run_options& opts) {
  std::ostream& out = opts.out ? *opts.out : std::cout;
  const bool tty = opts.out == nullptr && isatty(STDOUT_FILENO);
  std::ostream null_out(nullptr);  // --quiet: what only a person watching wants goes nowhere
  std::ostream& chatty = opts.quiet ? null_out : out;

  // A rig killed mid-run left changes on this host: they are undone first, or the run refuses.
  try {
    if (const auto stale = stale_journals(); !stale.empty()) {
      if (!opts.cleanup_first) {
        const auto& j = stale[0];
        std::cerr << fmt::format(
            "rig: a previous rig (pid {}) was killed before it undid its changes to this host ({}: {}); run `rig "
            "cleanup` first, or `rig run --cleanup-first` (exit {})\n",
            j.pid, j.path, j.problem.empty() ? j.pending.back().text : j.problem, int(exit_stale_state));
        return exit_stale_state;
      }
      if (!cleanup_stale_journals(std::cerr)) {
        std::cerr << "rig: not every change of a killed rig could be undone (above); nothing was run\n";
        return exit_stale_state;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "rig: " << e.what() << "\n";
    return exit_runtime;
  }

  // Build everything first: a probe failure exits 3 before the host is touched.
  const target_kind* tk = find_target_kind(sc.target.kind);
  std::unique_ptr<target> tgt = tk->make(sc.target.opts);
  std::vector<std::unique_ptr<workload>> workloads;
  for (const auto& w : sc.workloads) workloads.push_back(find_workload_kind(w.kind)->make(w.opts));
  std::map<std::string, std::unique_ptr<injector>> injectors;
  for (const auto& i : sc.injectors) injectors[i.name] = find_injector_kind(i.kind)->make(i.name, i.opts);

  run_context ctx;
  ctx.target_kind = sc.target.kind;
  const cgroup_layout cgroups = cgroup_layout::detect();
  ctx.cgroups = &cgroups;
  std::set<std::string> controllers;  // the target starts in a cgroup of its own with these
  for (const auto& [name, inj] : injectors)
    for (const auto& c : inj->cgroup_controllers(cgroups)) controllers.insert(c);
  for (const auto& w : workloads)
    for (const auto& c : w->cgroup_controllers()) controllers.insert(c);
  for (size_t i = 0; i < workloads.size(); ++i)
    ctx.workloads.push_back({"workload " + sc.workloads[i].name, workloads[i]->sockets(), "the rig's own sockets (workload " + sc.workloads[i].name + ")"});
  // The way into the target's sockets: its control channel, or the preload shim for a
  // program rig starts (loaded only when an injector needs it).
  bool want_target_sockets = false, want_namespaces = false, want_preload = false, want_failpoints = false;
  for (const auto& [name, inj] : injectors) {
    want_failpoints = want_failpoints || inj->needs_failpoints();
    want_target_sockets = want_target_sockets || inj->needs_target_sockets();
    want_namespaces = want_namespaces || inj->needs_namespaces();
    want_preload = want_preload || inj->needs_preload();
  }
  // What this host holds that the target needs (its fixed port): refused like a probe, before
  // anything is made, exit 3: the host's state, not rig's failure and not the target's result.
  if (const auto why = tgt->cannot_start_here(want_namespaces); !why.empty()) {
    std::cerr << "rig: the target cannot start on this host: " << why << "\nrig: nothing was changed on this host\n";
    return exit_capability;
  }
  std::unique_ptr<preload_shim> shim;
  std::unique_ptr<toxic_proxy> proxy;
  bool resets = false;  // a reset_peer toxic: the workloads reach the proxy over TCP
  for (const auto& i : sc.injectors)
    if (i.kind == "proxy") {
      if (!proxy) proxy = std::make_unique<toxic_proxy>(uint64_t(sc.seed));
      resets = resets || i.opts.str("toxic") == "reset_peer";
    }
  // With a proxy, the rig's sockets the target sees are the proxy's; the workloads' own may
  // all be socket pairs to the proxy, with no TCP options to set.
  if (proxy) {
    for (auto& w : ctx.workloads) w.may_be_empty = true;
    ctx.workloads.push_back({"proxy", proxy->upstream_sockets(), "the sockets of rig's proxy to the target"});
  }
  target_env tenv;
  // The preload shim goes into a target rig starts when an injector reaches in through it:
  // its sockets (where the target has no control channel of its own) or its file I/O.
  const bool sockets_via_shim = want_target_sockets && !tgt->sockets();
  if (auto exe = tgt->preload_executable()) {
    std::string why;
    if (auto unreachable = preload_unreachable(*exe)) {
      ctx.shim_missing = *unreachable;
    } else if (auto lib = preload_library(opts.rig_exe, &why)) {
      if (sockets_via_shim || want_preload) {
        shim = std::make_unique<preload_shim>();
        tenv.env = shim->environment(*lib);
        tenv.inherit_fds.push_back({shim->control_fd(), RIG_SHIM_FD_NUMBER});
        ctx.shim = shim.get();
      }
    } else {
      ctx.shim_missing = why;
    }
  } else {
    ctx.shim_missing = "the " + sc.target.kind + " target is a process rig did not start";
  }
  if (tgt->sockets())
    ctx.target_sockets = {"target", tgt->sockets(), "the built-in target's control channel"};
  else if (shim && sockets_via_shim)
    ctx.target_sockets = {"target", shim.get(), "the LD_PRELOAD shim in the target"};
  else
    ctx.target_sockets_missing = ctx.shim_missing;
  // Failpoints: rig listens, and each process of the target that links the library connects.
  std::unique_ptr<failpoint_channel> failpoints;
  if (want_failpoints && sc.target.kind != "endpoint") {
    failpoints = std::make_unique<failpoint_channel>();
    tenv.env.push_back(failpoints->environment());
    ctx.failpoints = failpoints.get();
  }
  bool probes_ok = true;
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& [name, inj] : injectors) {
    const auto pr = inj->probe(ctx);
    if (!pr.ok) {
      std::cerr << "rig: injector '" << name << "' cannot run on this host: " << pr.reason
                << (sc.require_all ? "\n" : "\n     skipped: the scenario says require_all = false\n");
      probes_ok = false;
      skipped.push_back({{"name", name}, {"kind", sc.injector(name)->kind}, {"reason", pr.reason}});
    }
  }
  if (!probes_ok && !sc.require_all) {
    // Everything built so far goes; the run starts again without those injectors.
    scenario rest = sc;
    std::erase_if(rest.injectors, [&](const kind_decl& k) {
      return std::any_of(skipped.begin(), skipped.end(), [&](const auto& s) { return s["name"] == k.name; });
    });
    for (auto& ph : rest.phases)
      std::erase_if(ph.inject, [&](const std::string& n) { return rest.injector(n) == nullptr; });
    run_options again = opts;
    for (auto& s : skipped) again.skipped_injectors.push_back(s);
    return run_scenario(rest, again);
  }
  if (!probes_ok) {
    // Root is the remedy only where rig is not root (a missing kernel module is not).
    std::cerr << "rig: nothing was changed on this host. "
              << (::geteuid() == 0 ? "Give the host what is named above" : "Run as root")
              << ", or set require_all = false in the scenario to run without the injectors above\n";
    return exit_capability;
  }

  run_report rep;
  rep.rig_version = RIG_VERSION;
  rep.skipped_injectors = opts.skipped_injectors;
  for (const auto& s : opts.skipped_injectors)
    rep.events.push_back({0, "injector_skipped",
                          fmt::format("{} ({}) left out, require_all = false: {}", s["name"].get<std::string>(),
                                      s["kind"].get<std::string>(), s["reason"].get<std::string>())});
  rep.scenario_name = sc.name;
  rep.scenario_file = sc.file;
  rep.description = sc.description;
  rep.host = host_facts();
  // Every file of the run is made through the directory's descriptor, and what other
  // processes open there goes through its /proc path, so a directory swapped for a link
  // mid-run redirects nothing.
  const directory run_dir = make_run_dir(opts.out_base, sc.name);
  const std::string run_files = pinned_path(run_dir);
  rep.run_dir = run_dir.path();
  if (opts.ran_in) *opts.ran_in = rep.run_dir;
  ctx.run_dir = rep.run_dir;  // what the shim reads back from a descriptor's link: the real path
  {
    std::string copy = sc.source_text;
    for (const auto& o : sc.overrides) copy += "# --set " + o + "\n";
    run_dir.write_file("scenario.toml", copy);
  }

  int64_t total_ns = 0;
  for (const auto& p : sc.phases) total_ns += p.duration_ns;
  chatty << fmt::format("rig {}: {} — {} phase{}, {:.1f}s\n", RIG_VERSION, sc.name, sc.phases.size(),
                        sc.phases.size() == 1 ? "" : "s", double(total_ns) / 1e9);
  if (!sc.description.empty()) chatty << "  " << sc.description << "\n";
  chatty.flush();

  // In a memfd, so a workload run by a helper process in the target's cgroup sees the phases change.
  shared_clock_cell clock_cell = shared_clock_cell::create();
  run_clock clock(clock_cell.cell());
  window_sink windows;
  std::unique_ptr<sampler> smp;
  std::vector<phase_window> phase_windows;
  std::vector<injector*> applied;  // the current phase's, in apply order
  int interrupted_by = 0;
  const int64_t run_start = mono_ns();
  clock.start_ns = run_start;
  for (const auto& p : sc.phases) clock.phase_ns.push_back(p.duration_ns);
  auto t_s = [&](int64_t ns) { return double(ns - run_start) / 1e9; };
  std::optional<size_t> open_phase;  // index into rep.phases while a phase runs
  auto close_phase = [&](bool completed) {
    if (!open_phase) return;
    clock.phase.store(-1);
    int64_t p1 = mono_ns();
    if (smp) p1 = smp->sample_now().t_ns;  // the closing sample belongs to the phase
    auto& pr = rep.phases[*open_phase];
    pr.end_s = t_s(p1);
    pr.end_wall = wall_s();
    pr.completed = completed;
    auto& win = phase_windows.back();
    win.end_ns = p1;
    open_phase.reset();
    if (smp) pr.resources = phase_resources(smp->samples_from(win.applied_ns), win.start_ns, win.end_ns, win.applied_ns);
  };
  // timeseries.csv as the run goes, each second's row a few seconds after it ended (a helper
  // process's rows come later than the rig's own); of the samples, only those the open phase's
  // figures and the rows still to write read are kept, so a long run's do not pile up.
  timeseries_stream timeseries(sc, run_dir, run_start);
  auto write_timeseries = [&](int64_t before_ns, bool phase_open) {
    const int64_t from = timeseries.written_end_ns();
    if (before_ns < from + ns_per_s) return;
    timeseries.write_before(before_ns, windows, smp ? smp->samples_from(from) : std::vector<resource_sample>{},
                            phase_windows, phase_open);
    if (smp && phase_open) smp->forget_before(std::min(timeseries.written_end_ns(), phase_windows.back().applied_ns));
  };
  // Each workload's figures of a phase, summarized once every thread of it is past the phase:
  // its histograms go then, so memory does not grow with the number of phases.
  std::vector<phase_assembler> assemblers(workloads.size());
  // A phase whose figures are all in (closed, each workload's summarized) goes to disk and its
  // memory is let go, so a long run's memory does not grow with its phases; the report reads
  // them back at the end. If the run dir cannot take them they stay in memory.
  const std::string spill_name = "phases.partial.jsonl", spill_path = rep.run_dir + "/" + spill_name;
  fd_ostream spill;
  size_t spilled = 0;  // the phases below it are on disk
  bool spill_failed = false;
  auto spill_final_phases = [&] {
    for (; !spill_failed && spilled < rep.phases.size() && spilled != open_phase; ++spilled) {
      auto& pr = rep.phases[spilled];
      for (const auto& w : pr.workloads)
        if (w.name.empty()) return;  // not summarized yet
      add_growth_figures(pr);
      if (!spill.is_open()) {
        try {
          spill.open(run_dir.create(spill_name));
        } catch (const std::exception&) {
          spill.open(unique_fd());  // badbit: the phases stay in memory
        }
      }
      spill << to_json(pr).dump() << '\n' << std::flush;
      if (!spill) {
        spill_failed = true;
        std::cerr << fmt::format("rig: cannot write {}; the phases stay in memory\n", spill_path);
        return;
      }
      pr = phase_result{.name = pr.name};
    }
  };
  auto read_back_spilled_phases = [&] {
    if (!spilled) return;
    spill.close();
    std::vector<std::string> order;
    for (const auto& w : sc.workloads) order.push_back(w.name);
    std::istringstream in(run_dir.read_file(spill_name).value_or(""));
    std::string line;
    for (size_t pi = 0; pi < spilled; ++pi) {
      if (!std::getline(in, line))
        throw std::runtime_error(fmt::format("{}: {} phases written during the run, {} there now", spill_path, spilled, pi));
      rep.phases[pi] = phase_from_json(nlohmann::json::parse(line), order);
    }
  };
  auto summarize_into = [&](size_t wi, int pi, const phase_stats& s) {
    // Cannot happen (a phase is complete only after it closed, and only once), but if it did,
    // the figures are said to be missing rather than lost quietly.
    if (pi < 0 || size_t(pi) < spilled || size_t(pi) >= rep.phases.size() ||
        !rep.phases[size_t(pi)].workloads[wi].name.empty()) {
      std::cerr << fmt::format("rig: workload {}: figures for phase {} came after it was summarized; not counted\n",
                               sc.workloads[wi].name, pi + 1);
      return;
    }
    auto& pr = rep.phases[size_t(pi)];
    pr.workloads[wi] = summarize(sc.workloads[wi].name, s, pr.end_s - pr.start_s);
  };
  auto collect_finished_phases = [&] {
    for (size_t wi = 0; wi < workloads.size(); ++wi)
      for (const auto& [pi, s] : assemblers[wi].add(workloads[wi]->take_finished_phases())) summarize_into(wi, pi, s);
  };
  auto revert_applied = [&]() noexcept {
    for (auto it = applied.rbegin(); it != applied.rend(); ++it) (*it)->revert(ctx);
    applied.clear();
  };

  // netem and rate act on a veth of the run's own: the target runs in one namespace, and
  // this thread (so every thread it starts from here on: workloads, proxy, sampler) in the other.
  std::optional<veth_network> net;
  std::optional<netns_scope> on_rig_side;  // declared after net: leaves the namespace before it goes
  cgroup target_cgroup;
  int64_t oom_kills_seen = 0, limit_hits_seen = 0;
  bool limit_event_this_phase = false;
  std::string target_death;  // how the target died mid-run, if it did
  try {
    // A target rig starts always runs in a cgroup of the run, so that everything it starts
    // (a daemon, a setsid child) is found, measured and ended with it.
    if (!controllers.empty() || tgt->started_by_rig()) {
      static int runs = 0;
      try {
        target_cgroup = cgroup::create(cgroups, run_cgroup_name(++runs), {controllers.begin(), controllers.end()});
      } catch (const std::exception& e) {
        if (!controllers.empty() || ::geteuid() == 0) throw;
        // Without root and without a cap to apply, the run goes on, saying what it cannot promise.
        rep.events.push_back({0, "target_not_contained",
                              std::string("the target runs outside a cgroup of the run (") + e.what() +
                                  "): what it starts outside its process group may outlive the run"});
      }
      if (target_cgroup.exists()) {
        ctx.target_cgroup = &target_cgroup;
        tenv.cgroup_procs = target_cgroup.procs_files();
        tenv.tree = &target_cgroup;
      }
    }
    if (want_namespaces) {
      net.emplace(veth_network::create());
      ctx.net = &*net;
      tenv.host = veth_network::target_addr;
      tenv.netns_fd = net->ns(veth_network::side::target).fd();
      on_rig_side.emplace(net->ns(veth_network::side::client).fd());
    }
    tenv.run_dir = run_files;
    tenv.rig_exe = opts.rig_exe;
    tgt->start(tenv);
    ctx.target_pid = tgt->pid();
    if (shim)
      shim->watch_target([&] { return tgt->serving_pids(); }, [&] { return tgt->processes(); });
    rep.target = tgt->describe();
    if (failpoints) rep.target["failpoint_channel"] = failpoints->path();
    if (net)
      rep.target["network"] = {{"description", net->describe()},
                               {"namespaces", {net->ns(veth_network::side::client).inode(),
                                               net->ns(veth_network::side::target).inode()}}};
    if (target_cgroup.exists()) {
      nlohmann::json cg = nlohmann::json::object();
      for (const auto& c : controllers)
        cg[c] = {{"path", target_cgroup.path(c)},
                 {"version", target_cgroup.version(c) == cg_version::v2 ? "v2" : "v1"}};
      // The directory that follows the target's whole process tree, and ends it with the run.
      cg["tree"] = {{"path", target_cgroup.path("tree")},
                    {"version", target_cgroup.version("tree") == cg_version::v2 ? "v2" : "v1"}};
      rep.target["cgroup"] = cg;
    }
    smp = std::make_unique<sampler>(
        tgt->pid(), [&] { return tgt->counters(); }, 200 * ns_per_ms,
        target_cgroup.exists() ? &target_cgroup : nullptr, [&] { return tgt->processes(); });
    smp->start();
    // With a proxy injector in the scenario, every workload goes through rig's proxy for the
    // whole run, so toxics come and go between phases on the same connections. The proxy
    // runs on the first workload's event loop that can host it (no cross-thread wake-up per
    // message), else on a thread of its own.
    const std::string host = proxy ? "127.0.0.1" : tgt->host();
    std::optional<size_t> host_of_proxy;
    if (proxy) {
      ctx.proxy = proxy.get();
      for (size_t i = 0; i < workloads.size() && !host_of_proxy; ++i)
        if (workloads[i]->can_host_on_loop()) host_of_proxy = i;
      if (!host_of_proxy) proxy->start_for(tgt->host(), tgt->port());
    }
    for (size_t i = 0; i < workloads.size(); ++i) {
      workload_env env{sc.workloads[i].name, host, proxy ? proxy->port() : tgt->port(), &clock, &windows};
      env.run_dir = run_files;
      env.seed = uint64_t(sc.seed);
      env.target_cgroup_procs = tenv.cgroup_procs;
      env.clock_fd = clock_cell.fd();
      env.rig_exe = opts.rig_exe;
      if (host_of_proxy == i)
        env.host_on_loop = [&](asio::io_context& loop) {
          proxy->start_on(loop, tgt->host(), tgt->port());
          // The hosting loop's connections reach the proxy through socket pairs (no TCP stack
          // in between), except where a reset_peer toxic needs TCP to deliver a real reset.
          hosted h{proxy->port(), nullptr};
          if (!resets) h.connect_local = [&] { return proxy->connect_local(); };
          return h;
        };
      workloads[i]->start(env);
      rep.workloads[sc.workloads[i].name] = workloads[i]->describe();
    }
    if (proxy) {
      rep.target["proxy_port"] = proxy->port();
      rep.target["proxy_hop"] = host_of_proxy && !resets
                                    ? "unix socket pairs from workload " + sc.workloads[*host_of_proxy].name +
                                          "'s first thread, loopback TCP from any other"
                                    : std::string("loopback TCP") + (resets ? " (a reset_peer toxic needs TCP)" : "");
    }

    for (size_t pi = 0; pi < sc.phases.size() && !interrupted_by; ++pi) {
      const auto& ph = sc.phases[pi];
      phase_result pr;
      pr.name = ph.name;
      pr.workloads.resize(workloads.size());  // each summarized when its threads are past the phase
      // Before this phase's injectors (a cap may kill a workload's helper process), each
      // workload hands in the phase that ended.
      if (pi > 0)
        for (auto& w : workloads) w->phase_over(int(pi) - 1);
      const int64_t applied_at = mono_ns();
      ctx.phase_duration_ns = ph.duration_ns;
      for (const auto& name : ph.inject) {
        injector* inj = injectors.at(name).get();
        applied.push_back(inj);  // before apply: a half-applied injector is reverted too
        inj->apply(ctx);
      }
      for (const auto& name : ph.inject) {
        injector* inj = injectors.at(name).get();
        const auto v = inj->verify(ctx);
        pr.injections.push_back({name, sc.injector(name)->kind, inj->mechanism(), inj->params(), v.ok, v.text,
                                 v.measured});
      }
      const int64_t p0 = mono_ns();
      smp->sample_now();
      clock.phase_start_ns.store(p0);
      clock.phase.store(int(pi), std::memory_order_release);
      pr.start_s = t_s(p0);
      pr.start_wall = wall_s();
      chatty << fmt::format("▶ {} ({:.1f}s){}\n", ph.name, double(ph.duration_ns) / 1e9,
                            ph.inject.empty() ? "" : ": injecting");
      for (const auto& i : pr.injections)
        if (!i.verified || !opts.quiet)  // an injection that did not take is said even when quiet
          out << fmt::format("    {} {} — {}\n", i.verified ? "✓" : "✗", i.name, i.verification);
      out.flush();
      rep.phases.push_back(std::move(pr));
      phase_windows.push_back({int(pi), p0, p0, applied_at});
      open_phase = rep.phases.size() - 1;

      const int64_t p_end = p0 + ph.duration_ns;
      limit_event_this_phase = false;
      const int64_t progress_every = tty ? ns_per_s : int64_t(std::max(1, opts.progress_every_s)) * ns_per_s;
      int64_t next_progress = p0 + progress_every;
      for (;;) {
        const int64_t now = mono_ns();
        if (now >= p_end) break;
        // Woken early by a child's exit: a dead target is seen (and timed) at once.
        if ((interrupted_by = wait_stop_signal(std::min<int64_t>(p_end - now, 200 * ns_per_ms), true))) break;
        if (target_cgroup.exists() && target_cgroup.has("memory")) {
          const auto m = target_cgroup.memory();
          // The cap reached: once per phase, when the kernel first refuses a charge, or (cgroup v1,
          // whose count recent kernels do not keep) when the peak since the cap was set meets it.
          const auto cap = target_cgroup.memory_limit();
          const bool at_cap = m.limit_hits > limit_hits_seen ||
                              (cap && target_cgroup.version("memory") == cg_version::v1 && m.peak_bytes >= *cap);
          if (at_cap && !limit_event_this_phase) {
            rep.events.push_back({t_s(mono_ns()), "memory_limit",
                                  fmt::format("the target reached its memory cap ({}) during phase {}{}; the kernel "
                                              "reclaims, then OOM-kills",
                                              cap ? format_bytes(double(*cap)) : "none", ph.name,
                                              m.limit_hits ? fmt::format(": {} limit hits so far", m.limit_hits) : "")});
            limit_event_this_phase = true;
          }
          limit_hits_seen = m.limit_hits;
          if (m.oom_kills > oom_kills_seen) {
            rep.events.push_back(
                {t_s(mono_ns()), "oom_kill",
                 fmt::format("the kernel's OOM killer killed {} process{} in the target's cgroup during phase {} "
                             "(memory cap {}{})",
                             m.oom_kills - oom_kills_seen, m.oom_kills - oom_kills_seen == 1 ? "" : "es", ph.name,
                             cap ? format_bytes(double(*cap)) : "none",
                             m.limit_hits ? fmt::format(", {} limit hits so far", m.limit_hits) : "")});
            out << fmt::format("    ! OOM kill in the target's cgroup (cap {})\n",
                               cap ? format_bytes(double(*cap)) : "none");
            oom_kills_seen = m.oom_kills;
          }
        }
        if (auto how = tgt->died()) {
          const double at_s = t_s(mono_ns());
          // The cause: the OOM killer when the cgroup's counter says it killed (the target
          // dies of SIGKILL then), else the signal, else its own exit.
          const int64_t oom_kills = target_cgroup.exists() && target_cgroup.has("memory")
                                        ? target_cgroup.memory().oom_kills
                                        : 0;
          const bool oom = oom_kills > 0 && how->signal == SIGKILL;
          target_death = "the target " + how->how + (oom ? " (the OOM killer, under the memory cap)" : "") +
                         " during phase " + ph.name;
          rep.events.push_back({at_s, "target_exit", target_death});
          nlohmann::json death = {{"t_s", at_s},
                                  {"phase", ph.name},
                                  {"cause", oom ? "oom_kill" : how->signal ? "signal" : "exit"},
                                  {"description", how->how}};
          if (how->signal) death["signal"] = signal_name(*how->signal);
          if (how->code) death["exit_code"] = *how->code;
          if (oom) death["oom_kills"] = oom_kills;
          rep.target["death"] = death;
          out << "    ! " << target_death << "\n";
          break;
        }
        windows.finalize((mono_ns() - run_start) / ns_per_s - 1);  // a second of grace for late threads
        collect_finished_phases();
        spill_final_phases();
        write_timeseries(mono_ns() - 3 * ns_per_s, true);
        if (!opts.quiet && mono_ns() >= next_progress) {
          next_progress += progress_every;
          // Phase i/n, elapsed of the phase and of the run, and each workload's last second.
          std::string line = fmt::format("  [{}/{}] {} {:.0f}/{:.0f}s (run {:.0f}/{:.0f}s)", pi + 1, sc.phases.size(),
                                         ph.name, double(mono_ns() - p0) / 1e9, double(ph.duration_ns) / 1e9,
                                         double(mono_ns() - run_start) / 1e9, double(total_ns) / 1e9);
          for (const auto& r : windows.latest())
            line += fmt::format("  {}: {} ops/s p99 {} errors {}", r.workload, format_count(double(r.ops)),
                                r.ops ? format_duration_us(r.p99_us) : "-", format_count(double(r.errors)));
          if (tty)
            out << "\r" << line << "\033[K" << std::flush;
          else
            out << line << "\n" << std::flush;
        }
      }
      if (tty && !opts.quiet) out << "\r\033[K";
      for (size_t k = 0; k < ph.inject.size(); ++k)
        rep.phases[*open_phase].injections[k].measured.update(injectors.at(ph.inject[k])->measure(ctx));
      close_phase(!interrupted_by && target_death.empty());
      revert_applied();
      if (!target_death.empty()) {
        // Nothing left to measure: the phases after this one do not run.
        std::string skipped;
        for (size_t k = pi + 1; k < sc.phases.size(); ++k) skipped += (skipped.empty() ? "" : ", ") + sc.phases[k].name;
        if (!skipped.empty()) rep.events.push_back({t_s(mono_ns()), "phases_skipped", "not run: " + skipped});
        break;
      }
    }
    if (interrupted_by) {
      rep.status = "interrupted";
      rep.events.push_back({t_s(mono_ns()), "interrupted",
                            std::string("received ") + (interrupted_by == SIGINT ? "SIGINT" : "SIGTERM") +
                                "; injectors reverted, target stopped"});
    }
  } catch (const std::exception& e) {
    close_phase(false);
    revert_applied();
    rep.status = "failed";
    rep.failure = e.what();
    std::cerr << "rig: run failed: " << e.what() << "\n";
  }
  revert_applied();  // no-op unless the last phase left something applied
  if (proxy) proxy->stop();  // first: it may be running on a workload's event loop
  for (auto& w : workloads) w->stop();
  if (smp) smp->stop();
  tgt->stop();
  if (target_cgroup.exists()) {
    const std::string left = target_cgroup.destroy();
    if (!left.empty()) {
      rep.events.push_back({t_s(mono_ns()), "cleanup_failed", "cgroup not removed: " + left});
      std::cerr << "rig: could not remove the target's cgroup: " << left << "\n";
    }
  }
  on_rig_side.reset();
  net.reset();  // frees both namespaces and the veth
  const int64_t run_end = mono_ns();
  windows.finalize(INT64_MAX);

  // The workloads' figures of the phases not summarized yet, now that every worker thread has
  // joined; a phase in which a workload recorded nothing gets its zeros.
  collect_finished_phases();
  read_back_spilled_phases();
  for (size_t wi = 0; wi < workloads.size(); ++wi)
    for (const auto& [pi, s] : assemblers[wi].finish(workloads[wi]->results(), int(rep.phases.size())))
      summarize_into(wi, pi, s);
  for (size_t pi = spilled; pi < rep.phases.size(); ++pi) add_growth_figures(rep.phases[pi]);
  rep.magnification = compute_magnification(rep.phases);
  for (auto& e : errors_began(rep.phases, windows.rows())) rep.events.push_back(std::move(e));
  std::stable_sort(rep.events.begin(), rep.events.end(),
                   [](const event_row& a, const event_row& b) { return a.t_s < b.t_s; });
  write_timeseries(run_start + (run_end - run_start + ns_per_s - 1) / ns_per_s * ns_per_s, false);  // the last second too

  // The outcome, said the same way by report.json, the terminal and the exit code. A target that
  // died mid-run is a result, not rig's failure: a failed check (exit 1), unless the scenario's
  // checks expect its death (events.target_exit, events.oom_kill). An injection that was not
  // verified fails the run (exit 1) unless its injector says it may go unverified.
  bool death_expected = false;
  for (const auto& c : sc.checks) death_expected = death_expected || expects_target_death(c);
  bool expectations_ok = true;
  std::vector<std::string> unverified;
  if (rep.status == "ok") {
    const auto j = to_json(rep);
    for (const auto& c : sc.checks) {
      const auto o = evaluate_check(c, j);
      rep.expectations.push_back({c.text, o.ok, o.actual});
      expectations_ok = expectations_ok && o.ok;
    }
    if (!target_death.empty() && !death_expected) {
      rep.expectations.push_back({"the target runs until the run ends", false, target_death});
      expectations_ok = false;
    }
    for (const auto& ph : rep.phases)
      for (const auto& i : ph.injections)
        if (!i.verified && !sc.injector(i.name)->may_be_unverified)
          unverified.push_back(fmt::format("{} in phase {}", i.name, ph.name));
    if (!unverified.empty()) {
      rep.status = "unverified";
      std::string names;
      for (const auto& u : unverified) names += (names.empty() ? "" : ", ") + u;
      rep.failure = "not verified in the target: " + names +
                    " (the figures of those phases do not show that fault; may_be_unverified = true on an injector "
                    "accepts it)";
    } else if (!expectations_ok) {
      rep.status = "checks_failed";
    }
  }

  // A report that cannot be written is rig's failure: never a silent ok.
  std::string not_written;
  try {
    run_dir.write_file("report.json", to_json(rep).dump(2) + "\n");
    if (spilled) run_dir.remove(spill_name);  // all in report.json now
  } catch (const std::exception& e) {
    not_written = e.what();
    rep.status = "failed";
  }
  std::string html;
  if (not_written.empty()) {
    try {
      html = write_html_report(run_dir);
    } catch (const std::exception& e) {
      std::cerr << "rig: report.html not written: " << e.what() << "\n";
    }
  }
  chatty << "\n" << terminal_summary(rep, tty);
  if (opts.quiet) {  // quiet keeps what a person must see: warnings and failed checks
    for (const auto& ph : rep.phases)
      for (const auto& w : ph.workloads)
        if (!w.generator_warning.empty()) out << fmt::format("! {} {}: {}\n", ph.name, w.name, w.generator_warning);
    for (const auto& e : rep.expectations)
      if (!e.ok) out << fmt::format("FAIL {}  (actual {})\n", e.expr, e.actual);
  }
  if (rep.status == "unverified") out << "UNVERIFIED " << rep.failure << "\n";
  if (!not_written.empty())
    out << fmt::format("\nstatus: failed   report.json not written: {}\n", not_written);
  else
    out << fmt::format("\nstatus: {}   report: {}/report.json{}\n", rep.status, rep.run_dir,
                       html.empty() ? "" : "\n  open " + html);
  out.flush();

  if (interrupted_by) return 128 + interrupted_by;
  if (rep.status == "failed") return exit_runtime;
  if (rep.status == "unverified" || rep.status == "checks_failed") return exit_expectations;
  return exit_ok;
}

}  // namespace rig
