#pragma once
// What a run makes on the host and starts, as members declared in the order they are made:
// the compiler destroys them in reverse, so the teardown order is a fact of the code. Each
// member's destructor undoes what it made (a namespace left, a cgroup removed, a process
// stopped, an injector reverted).
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cgroup.hpp"
#include "core/netns.hpp"
#include "core/sampler.hpp"
#include "core/tree_guard.hpp"
#include "core/veth_network.hpp"
#include "reports/report.hpp"
#include "rig/run_options.hpp"
#include "rig/run_plan.hpp"
#include "workloads/recorder.hpp"

namespace rig {

// Calls its action when it goes: one step of the teardown, for what has no type of its own.
class on_teardown {
 public:
  on_teardown() = default;
  on_teardown(const on_teardown&) = delete;
  on_teardown& operator=(const on_teardown&) = delete;
  ~on_teardown() { run(); }
  void set(std::function<void()> f) { f_ = std::move(f); }
  void run() noexcept {
    if (auto f = std::exchange(f_, nullptr)) f();
  }

 private:
  std::function<void()> f_;
};

// The injectors applied in the current phase, reverted in reverse order of applying.
class applied_injectors {
 public:
  struct undone {
    std::string name;
    undo_result result;
  };
  explicit applied_injectors(run_context& ctx) : ctx_(ctx) {}
  applied_injectors(const applied_injectors&) = delete;
  applied_injectors& operator=(const applied_injectors&) = delete;
  ~applied_injectors();  // the last resort: what could not be undone goes to stderr
  // Applies it; it counts as applied before apply() returns, so a half-applied one is reverted too.
  void apply(const std::string& name, injector& inj);
  // Reverts every one, last applied first, and says what each left (read back).
  std::vector<undone> revert_all() noexcept;

 private:
  run_context& ctx_;
  std::vector<std::pair<std::string, injector*>> applied_;
};

// What the workloads and the sampler record into, for the whole run.
struct run_recording {
  run_clock& clock;
  window_sink& windows;
  const shared_clock_cell& clock_cell;
  std::string run_files;  // the run directory as others open it (its /proc fd path)
};

class run_wiring {
 public:
  // Makes the run's namespaces and the target's cgroup (as its injectors need), starts the
  // target, the sampler, the proxy and the workloads, and says so in `rep`. What fails throws;
  // what was made by then is undone as the members go.
  run_wiring(run_plan& plan, const run_options& opts, const run_recording& rec, run_report& rep,
             std::function<double()> now_s);
  run_wiring(const run_wiring&) = delete;
  run_wiring& operator=(const run_wiring&) = delete;

  sampler& samples() { return *sampler_; }
  // The sampler outlives the wiring (stopped): the run's last timeseries rows read its samples.
  std::shared_ptr<sampler> sampler_handle() const { return sampler_; }
  const cgroup* target_cgroup() const { return cgroup_.exists() ? &cgroup_ : nullptr; }
  // The target's tree as the kernel's process events name it (null: a target rig did not
  // start, no cgroup, or no events on this host).
  tree_guard* tree() { return tree_ && tree_->events() ? &*tree_ : nullptr; }
  applied_injectors& injectors() { return applied_; }

 private:
  void make_network();
  void make_cgroup();
  void start_target();
  void start_sampler();
  void start_workloads();
  void describe_target();

  run_plan& plan_;
  const run_options& opts_;
  const run_recording& rec_;
  run_report& rep_;
  std::function<double()> now_s_;
  // Made in this order, undone in the reverse one:
  std::optional<veth_network> net_;        // both namespaces and the veth
  std::optional<netns_scope> on_rig_side_;  // this thread (and those it starts) in the rig's namespace
  cgroup cgroup_;                           // the target's: follows its whole tree, ends it with the run
  on_teardown remove_cgroup_;               // ... and says what could not be removed
  std::optional<tree_guard> tree_;          // the target's tree wherever it goes (before the target starts)
  on_teardown end_escaped_;                 // ... what of it left the cgroup ends after the target stops
  on_teardown stop_target_;
  std::shared_ptr<sampler> sampler_;
  on_teardown stop_sampler_;
  on_teardown stop_workloads_;
  on_teardown stop_proxy_;  // first of the three: it may run on a workload's event loop
  applied_injectors applied_;
};

}  // namespace rig
