#include "rig/phase_loop.hpp"

#include <signal.h>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/signals.hpp"

namespace rig {

phase_loop::phase_loop(run_plan& plan, run_report& rep, phase_store& store, timeseries_stream& timeseries,
                       const run_recording& rec, const run_console& con, int64_t run_start_ns, int64_t total_ns)
    : plan_(plan),
      rep_(rep),
      store_(store),
      timeseries_(timeseries),
      rec_(rec),
      con_(con),
      run_start_ns_(run_start_ns),
      total_ns_(total_ns) {}

void phase_loop::close_phase(bool completed, sampler* smp) {
  if (!store_.is_open()) return;
  const int64_t ended = mono_ns();
  const double ended_wall = wall_s();
  rec_.clock.end_phase(ended);  // a request due from here is due in no phase
  // The closing sample belongs to the phase's resources; its length is the window requests were
  // due in (a slow sample on a loaded machine does not lengthen it).
  const int64_t p1 = smp ? smp->sample_now().t_ns : ended;
  auto& pr = store_.current();
  pr.end_s = t_s(ended);
  pr.end_wall = ended_wall;
  pr.completed = completed;
  auto& win = store_.current_window();
  win.end_ns = p1;
  store_.close();
  if (smp)
    pr.resources = phase_resources(smp->samples_from(win.applied_ns), win.start_ns, win.end_ns, win.applied_ns,
                                   find_target_kind(plan_.sc.target.kind)->counters);
  pr.resources["host"] = host_figures(host_at_start_, read_host_cpu(), pr.resources);
  if (crashes_ && crashes_->watching()) pr.resources["target"]["crashes"] = crashes_->phase_crashes();
}

// timeseries.csv as the run goes, each second's row a few seconds after it ended (a helper
// process's rows come later than the rig's own); of the samples, only those the open phase's
// figures and the rows still to write read are kept, so a long run's do not pile up.
void phase_loop::write_timeseries(int64_t before_ns, bool phase_open, sampler* smp) {
  const int64_t from = timeseries_.written_end_ns();
  if (before_ns < from + ns_per_s) return;
  timeseries_.write_before(before_ns, rec_.windows, smp ? smp->samples_from(from) : std::vector<resource_sample>{},
                           store_.windows(), phase_open);
  if (smp && phase_open)
    smp->forget_before(std::min(timeseries_.written_end_ns(), store_.windows().back().applied_ns));
}

void phase_loop::begin_phase(size_t pi, run_wiring& wiring) {
  const auto& ph = plan_.sc.phases[pi];
  phase_result pr;
  pr.name = ph.name;
  // Before this phase's injectors (a cap may kill a workload's helper process), each
  // workload hands in the phase that ended.
  if (pi > 0)
    for (auto& w : plan_.workloads) w->phase_over(int(pi) - 1);
  const int64_t applied_at = mono_ns();
  plan_.ctx.phase_duration_ns = ph.duration_ns;
  applied_phase_ = rep_.phases.size();  // the row this phase gets
  for (const auto& name : ph.inject) wiring.injectors().apply(name, *plan_.injectors.at(name));
  for (const auto& name : ph.inject) {
    injector& inj = *plan_.injectors.at(name);
    const auto v = inj.verify(plan_.ctx);
    pr.injections.push_back({name, plan_.sc.injector(name)->kind, inj.mechanism(), inj.params(), v.ok, v.text,
                             v.measured});
  }
  for (const auto& name : ph.inject) {
    try {
      plan_.injectors.at(name)->phase_starts(plan_.ctx);
    } catch (...) {
      // Unreadable (the target is going): its counts run from apply's reading.
    }
  }
  // The phase runs from here: the clock says so before anything else is read, so a request the
  // workloads record meanwhile (the opening sample may take a moment) counts in it.
  const int64_t p0 = mono_ns();
  rec_.clock.begin_phase(int(pi), p0);
  wiring.samples().sample_now();
  host_at_start_ = read_host_cpu();
  pr.start_s = t_s(p0);
  pr.start_wall = wall_s();
  con_.chatty << fmt::format("▶ {} ({:.1f}s){}\n", ph.name, double(ph.duration_ns) / 1e9,
                             ph.inject.empty() ? "" : ": injecting");
  for (const auto& i : pr.injections)
    if (!i.verified || !con_.quiet)  // an injection that did not take is said even when quiet
      con_.out << fmt::format("    {} {} — {}\n", i.verified ? "✓" : "✗", i.name, i.verification);
  con_.out.flush();
  store_.open(std::move(pr), {int(pi), p0, p0, applied_at});
}

bool phase_loop::watch_phase(size_t pi, run_wiring& wiring, memory_watcher& memory, crash_watcher& crashes,
                             death_watcher& death, progress_meter& progress) {
  const auto& ph = plan_.sc.phases[pi];
  const int64_t p_end = store_.current_window().start_ns + ph.duration_ns;
  memory.phase_begins();
  crashes.phase_begins();
  progress.phase_begins(pi, ph.name, store_.current_window().start_ns, ph.duration_ns);
  for (;;) {
    const int64_t now = mono_ns();
    if (now >= p_end) break;
    // Woken early by a child's exit: a dead target is seen (and timed) at once.
    if ((interrupted_by_ = wait_stop_signal(std::min<int64_t>(p_end - now, 200 * ns_per_ms), true))) break;
    crashes.poll(ph.name, t_s(mono_ns()), rep_, con_.out);  // first: an OOM kill it sees is named in the death
    memory.poll(ph.name, t_s(mono_ns()), rep_.events, con_.out);
    if (auto died = death.poll(ph.name, t_s(mono_ns()), rep_, con_.out)) {
      target_death_ = *died;
      break;
    }
    rec_.windows.finalize((mono_ns() - run_start_ns_) / ns_per_s - 1);  // a second of grace for late threads
    store_.collect();
    write_timeseries(mono_ns() - 3 * ns_per_s, true, &wiring.samples());
    progress.poll(mono_ns(), rec_.windows);
  }
  progress.phase_ends();
  return !interrupted_by_ && target_death_.empty();
}

void phase_loop::end_phase(size_t pi, run_wiring& wiring) {
  const auto& ph = plan_.sc.phases[pi];
  auto& injections = store_.current().injections;
  for (size_t k = 0; k < ph.inject.size(); ++k)
    injections[k].measured.update(plan_.injectors.at(ph.inject[k])->measure(plan_.ctx));
  if (crashes_) crashes_->poll(ph.name, t_s(mono_ns()), rep_, con_.out);  // up to the phase's last moment
  close_phase(!interrupted_by_ && target_death_.empty(), &wiring.samples());
  revert_applied(wiring);
}

void phase_loop::revert_applied(run_wiring& wiring) {
  const auto undone = wiring.injectors().revert_all();
  if (undone.empty() || applied_phase_ >= rep_.phases.size()) return;
  auto& pr = rep_.phases[applied_phase_];
  for (const auto& u : undone) {
    for (auto& i : pr.injections)
      if (i.name == u.name) {
        i.reverted = u.result.ok;
        i.revert = u.result.text;
      }
    if (u.result.ok) continue;
    const std::string what = fmt::format("{} in phase {}: {}", u.name, pr.name, u.result.text);
    rep_.events.push_back({t_s(mono_ns()), "revert_failed", what});
    con_.out << fmt::format("    ✗ {} not reverted — {}\n", u.name, u.result.text);
    revert_failures_ += (revert_failures_.empty() ? "" : "; ") + what;
  }
}

void phase_loop::run(run_wiring& wiring) {
  const auto& phases = plan_.sc.phases;
  memory_watcher memory(wiring.target_cgroup());
  crash_watcher crashes(*plan_.tgt, wiring.target_cgroup(), wiring.tree());
  crashes_ = &crashes;
  struct forget {  // close_phase may run after this returns (a failure's cleanup): not with a dangling watcher
    crash_watcher*& p;
    ~forget() { p = nullptr; }
  } forget_crashes{crashes_};
  death_watcher death(*plan_.tgt, wiring.target_cgroup(), &crashes);
  progress_meter progress(con_.out, con_.tty, con_.quiet, con_.progress_every_s, phases.size(), run_start_ns_,
                          total_ns_);
  for (size_t pi = 0; pi < phases.size(); ++pi) {
    begin_phase(pi, wiring);
    const bool go_on = watch_phase(pi, wiring, memory, crashes, death, progress);
    end_phase(pi, wiring);
    if (!target_death_.empty()) {
      // Nothing left to measure: the phases after this one do not run.
      std::string skipped;
      for (size_t k = pi + 1; k < phases.size(); ++k) skipped += (skipped.empty() ? "" : ", ") + phases[k].name;
      if (!skipped.empty()) rep_.events.push_back({t_s(mono_ns()), "phases_skipped", "not run: " + skipped});
    }
    if (!go_on) break;
  }
  rep_.target["process_events"] = crashes.describe();
  if (interrupted_by_) {
    rep_.status = "interrupted";
    rep_.events.push_back({t_s(mono_ns()), "interrupted",
                           std::string("received ") + (interrupted_by_ == SIGINT ? "SIGINT" : "SIGTERM") +
                               "; injectors reverted, target stopped"});
  }
}

}  // namespace rig
