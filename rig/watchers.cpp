#include "rig/watchers.hpp"

#include <signal.h>

#include <algorithm>
#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/process.hpp"
#include "core/units.hpp"

namespace rig {

void memory_watcher::poll(const std::string& phase, double t_s, std::vector<event_row>& events, std::ostream& out) {
  if (!cg_) return;
  const auto m = cg_->memory();
  // The cap reached: once per phase, when the kernel first refuses a charge, or (cgroup v1,
  // whose count recent kernels do not keep) when the peak since the cap was set meets it.
  const auto cap = cg_->memory_limit();
  const std::string cap_text = cap ? format_bytes(double(*cap)) : "none";
  const bool at_cap =
      m.limit_hits > limit_hits_seen_ || (cap && cg_->version("memory") == cg_version::v1 && m.peak_bytes >= *cap);
  if (at_cap && !event_this_phase_) {
    events.push_back({t_s, "memory_limit",
                      fmt::format("the target reached its memory cap ({}) during phase {}{}; the kernel "
                                  "reclaims, then OOM-kills",
                                  cap_text, phase,
                                  m.limit_hits ? fmt::format(": {} limit hits so far", m.limit_hits) : "")});
    event_this_phase_ = true;
  }
  limit_hits_seen_ = m.limit_hits;
  if (m.oom_kills > oom_kills_seen_) {
    const int64_t n = m.oom_kills - oom_kills_seen_;
    events.push_back({t_s, "oom_kill",
                      fmt::format("the kernel's OOM killer killed {} process{} in the target's cgroup during phase {} "
                                  "(memory cap {}{})",
                                  n, n == 1 ? "" : "es", phase, cap_text,
                                  m.limit_hits ? fmt::format(", {} limit hits so far", m.limit_hits) : "")});
    out << fmt::format("    ! OOM kill in the target's cgroup (cap {})\n", cap_text);
    oom_kills_seen_ = m.oom_kills;
  }
}

std::optional<std::string> death_watcher::poll(const std::string& phase, double t_s, run_report& rep,
                                               std::ostream& out) {
  const auto how = target_.died();
  if (!how) return std::nullopt;
  const int64_t oom_kills = cg_ ? cg_->memory().oom_kills : 0;
  const bool oom = oom_kills > 0 && how->signal == SIGKILL;
  std::string death =
      "the target " + how->how + (oom ? " (the OOM killer, under the memory cap)" : "") + " during phase " + phase;
  rep.events.push_back({t_s, "target_exit", death});
  nlohmann::json j = {{"t_s", t_s},
                      {"phase", phase},
                      {"cause", oom ? "oom_kill" : how->signal ? "signal" : "exit"},
                      {"description", how->how}};
  if (how->signal) j["signal"] = signal_name(*how->signal);
  if (how->code) j["exit_code"] = *how->code;
  if (oom) j["oom_kills"] = oom_kills;
  rep.target["death"] = j;
  out << "    ! " << death << "\n";
  return death;
}

progress_meter::progress_meter(std::ostream& out, bool tty, bool quiet, int every_s, size_t phases,
                               int64_t run_start_ns, int64_t total_ns)
    : out_(out),
      tty_(tty),
      quiet_(quiet),
      every_ns_(tty ? ns_per_s : int64_t(std::max(1, every_s)) * ns_per_s),
      phases_(phases),
      run_start_ns_(run_start_ns),
      total_ns_(total_ns) {}

void progress_meter::phase_begins(size_t index, const std::string& name, int64_t start_ns, int64_t duration_ns) {
  index_ = index;
  name_ = name;
  start_ns_ = start_ns;
  duration_ns_ = duration_ns;
  next_ns_ = start_ns + every_ns_;
}

void progress_meter::poll(int64_t now_ns, const window_sink& windows) {
  if (quiet_ || now_ns < next_ns_) return;
  next_ns_ += every_ns_;
  std::string line = fmt::format("  [{}/{}] {} {:.0f}/{:.0f}s (run {:.0f}/{:.0f}s)", index_ + 1, phases_, name_,
                                 double(now_ns - start_ns_) / 1e9, double(duration_ns_) / 1e9,
                                 double(now_ns - run_start_ns_) / 1e9, double(total_ns_) / 1e9);
  for (const auto& r : windows.latest())
    line += fmt::format("  {}: {} ops/s p99 {} errors {}", r.workload, format_count(double(r.ops)),
                        r.ops ? format_duration_us(r.p99_us) : "-", format_count(double(r.errors)));
  if (tty_)
    out_ << "\r" << line << "\033[K" << std::flush;
  else
    out_ << line << "\n" << std::flush;
}

void progress_meter::phase_ends() {
  if (tty_ && !quiet_) out_ << "\r\033[K";
}

}  // namespace rig
