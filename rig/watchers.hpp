#pragma once
// What the phase loop watches for between its ticks, one small object each: the target's
// memory cap and the OOM killer, the target's death, and the progress a person watches.
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/cgroup.hpp"
#include "core/proc_events.hpp"
#include "core/tree_guard.hpp"
#include "reports/report.hpp"
#include "targets/target.hpp"
#include "workloads/recorder.hpp"

namespace rig {

// The target's cgroup against its memory cap: `memory_limit` when the cap is first reached in
// a phase, `oom_kill` for each kill of the kernel's OOM killer.
class memory_watcher {
 public:
  explicit memory_watcher(const cgroup* cg) : cg_(cg && cg->exists() && cg->has("memory") ? cg : nullptr) {}
  void phase_begins() { event_this_phase_ = false; }
  void poll(const std::string& phase, double t_s, std::vector<event_row>& events, std::ostream& out);

 private:
  const cgroup* cg_;
  int64_t oom_kills_seen_ = 0, limit_hits_seen_ = 0;
  bool event_this_phase_ = false;
};

// The processes of the target's tree that die while the run measures, and how (the kernel's
// process events: root only). One killed by a signal is a `crash` event (its name, pid and
// signal) and counts in its phase's target.crashes; one the OOM killer killed is the memory
// watcher's oom_kill (named here for the death text); the target's own death is the death
// watcher's.
class crash_watcher {
 public:
  // The events of the run's tree guard when it has them (null: opened here, following the
  // target's processes from now on).
  crash_watcher(target& t, const cgroup* cg, tree_guard* tree = nullptr);
  bool watching() const { return events_ != nullptr; }
  // report.json's target.process_events: watched or why not, and events the kernel dropped.
  nlohmann::json describe() const;
  void phase_begins() { phase_crashes_ = 0; }
  uint64_t phase_crashes() const { return phase_crashes_; }
  void poll(const std::string& phase, double t_s, run_report& rep, std::ostream& out);
  // The processes of the tree the OOM killer killed so far: "redis-server (pid 12)", or "".
  std::string oom_victims() const;
  // How the target's serving process ended, when the events showed it (rig is not its parent
  // when a wrapper started it, so only they can say).
  const std::optional<proc_events::exit_event>& target_exit() const { return target_exit_; }
  // Waits up to timeout_ms for the event of the serving process's exit: rig may see the death
  // (its child, a wrapper, exiting) before the events thread has read it.
  void await_target_exit(int timeout_ms);

 private:
  target& target_;
  const cgroup* cg_;       // with memory: OOM kills
  const cgroup* tree_cg_;  // the run's cgroup: what of the tree is outside it
  tree_guard* tree_;
  std::unique_ptr<proc_events> own_events_;
  proc_events* events_ = nullptr;
  std::string why_not_;
  int64_t oom_kills_seen_ = 0;
  uint64_t phase_crashes_ = 0;
  std::vector<std::string> oom_victims_;
  std::optional<proc_events::exit_event> target_exit_;
};

// The target's death mid-run and its cause: the OOM killer when the cgroup's counter says it
// killed (the target dies of SIGKILL then), else the signal, else its own exit.
class death_watcher {
 public:
  death_watcher(target& t, const cgroup* cg, crash_watcher* crashes = nullptr)
      : target_(t), cg_(cg && cg->exists() && cg->has("memory") ? cg : nullptr), crashes_(crashes) {}
  // Null while the target runs; once it died, what to say of it (recorded in `rep` too: the
  // target_exit event and target.death).
  std::optional<std::string> poll(const std::string& phase, double t_s, run_report& rep, std::ostream& out);

 private:
  target& target_;
  const cgroup* cg_;
  crash_watcher* crashes_;
};

// Phase i/n, elapsed of the phase and of the run, and each workload's last second: rewritten in
// place on a terminal, a plain line every `every_s` otherwise, nothing when quiet.
class progress_meter {
 public:
  progress_meter(std::ostream& out, bool tty, bool quiet, int every_s, size_t phases, int64_t run_start_ns,
                 int64_t total_ns);
  void phase_begins(size_t index, const std::string& name, int64_t start_ns, int64_t duration_ns);
  void poll(int64_t now_ns, const window_sink& windows);
  void phase_ends();

 private:
  std::ostream& out_;
  bool tty_, quiet_;
  int64_t every_ns_;
  size_t phases_;
  int64_t run_start_ns_, total_ns_;
  size_t index_ = 0;
  std::string name_;
  int64_t start_ns_ = 0, duration_ns_ = 0, next_ns_ = 0;
};

}  // namespace rig
