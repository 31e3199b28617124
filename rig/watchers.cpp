#include "rig/watchers.hpp"

#include <signal.h>
#include <unistd.h>

#include <sys/wait.h>

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

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

crash_watcher::crash_watcher(target& t, const cgroup* cg, tree_guard* tree)
    : target_(t),
      cg_(cg && cg->exists() && cg->has("memory") ? cg : nullptr),
      tree_cg_(cg && cg->exists() ? cg : nullptr),
      tree_(tree) {
  if (tree_ && tree_->events()) {
    events_ = tree_->events();
  } else {
    own_events_ = proc_events::open(&why_not_);
    events_ = own_events_.get();
  }
  if (!events_) return;
  events_->follow(target_.processes());
  if (const auto p = target_.pid()) events_->follow({*p});
  if (cg_) oom_kills_seen_ = cg_->memory().oom_kills;
}

nlohmann::json crash_watcher::describe() const {
  if (!events_) return {{"watched", false}, {"why_not", why_not_}};
  return {{"watched", true}, {"lost", events_->lost()}};
}

void crash_watcher::poll(const std::string& phase, double t_s, run_report& rep, std::ostream& out) {
  if (!events_) return;
  if (tree_ && tree_cg_)
    for (const auto& who : tree_->newly_escaped(*tree_cg_)) {
      const std::string text = fmt::format("{} of the target's processes is outside the run's cgroup during phase {} "
                                           "(it, or a process it was forked from, wrote itself into another cgroup): it "
                                           "is ended with the run",
                                           who, phase);
      rep.events.push_back({t_s, "escaped", text});
      out << "    ! escaped: " << text << "\n";
    }
  const auto main = target_.pid();
  for (const auto& e : events_->take_exits()) {
    if (main && e.pid == *main) {  // the target's own death: the death watcher says it
      target_exit_ = e;
      continue;
    }
    if (!WIFSIGNALED(e.status)) continue;  // an exit
    const int sig = WTERMSIG(e.status);
    const std::string who = fmt::format("{} (pid {})", e.comm, e.pid);
    if (sig == SIGKILL && cg_) {
      const int64_t kills = cg_->memory().oom_kills;
      if (kills > oom_kills_seen_) {  // the OOM killer's: the memory watcher's oom_kill event counts it
        ++oom_kills_seen_;
        oom_victims_.push_back(who);
        continue;
      }
    }
    ++phase_crashes_;
    const std::string text = fmt::format("{} of the target's processes was killed by {}{} during phase {}", who,
                                         signal_name(sig), WCOREDUMP(e.status) ? " (core dumped)" : "", phase);
    rep.events.push_back({t_s, "crash", text});
    out << "    ! crash: " << text << "\n";
  }
}

void crash_watcher::await_target_exit(int timeout_ms) {
  const auto main = target_.pid();
  if (!events_ || target_exit_ || !main) return;
  const int64_t deadline = mono_ns() + int64_t(timeout_ms) * ns_per_ms;
  do {
    if ((target_exit_ = events_->take_exit_of(*main))) return;
    ::usleep(5'000);
  } while (mono_ns() < deadline);
}

std::string crash_watcher::oom_victims() const { return fmt::format("{}", fmt::join(oom_victims_, ", ")); }

std::optional<std::string> death_watcher::poll(const std::string& phase, double t_s, run_report& rep,
                                               std::ostream& out) {
  auto how = target_.died();
  if (!how) return std::nullopt;
  // A serving process rig did not start (a wrapper's child): how it ended, from the kernel's events.
  if (!how->signal && !how->code && crashes_) crashes_->await_target_exit(1000);
  if (!how->signal && !how->code && crashes_ && crashes_->target_exit()) {
    const int st = crashes_->target_exit()->status;
    if (WIFSIGNALED(st)) {
      how->signal = WTERMSIG(st);
      how->how += fmt::format(": it was killed by {}", signal_name(WTERMSIG(st)));
    } else {
      how->code = WEXITSTATUS(st);
      how->how += fmt::format(": it exited with status {}", WEXITSTATUS(st));
    }
  }
  const int64_t oom_kills = cg_ ? cg_->memory().oom_kills : 0;
  // Killed by SIGKILL itself, or a wrapper (su, sh) that exited 137 for the child it lost.
  const bool wrapper_137 = how->code && *how->code == 128 + SIGKILL;
  const bool oom = oom_kills > 0 && (how->signal == SIGKILL || wrapper_137);
  const std::string victims = crashes_ ? crashes_->oom_victims() : "";
  std::string death = "the target " + how->how +
                      (!oom              ? ""
                       : wrapper_137     ? fmt::format(" after the OOM killer, under the memory cap, killed {}",
                                                       victims.empty() ? "a process of its tree" : victims)
                                         : " (the OOM killer, under the memory cap)") +
                      " during phase " + phase;
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
