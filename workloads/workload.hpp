#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/asio_fwd.hpp"
#include "core/options.hpp"
#include "core/socket_policy.hpp"
#include "workloads/recorder.hpp"

namespace rig {

// What a workload's event loop hosts (rig's proxy): the port other loops connect to, and,
// when set, a connect for the hosting loop itself that returns a connected stream fd (one
// end of an AF_UNIX socket pair; the proxy holds the other), no TCP stack in between.
struct hosted {
  uint16_t port = 0;
  std::function<int()> connect_local;
};

struct workload_env {
  std::string name;  // the workload's name in the scenario
  std::string host;
  uint16_t port = 0;
  run_clock* clock = nullptr;
  window_sink* windows = nullptr;
  // Optional: something to run on the workload's first event loop before it connects (rig's
  // proxy, so forwarding costs no cross-thread wake-up).
  std::function<hosted(asio::io_context&)> host_on_loop;
  std::string run_dir;  // where a workload may put files of its own (the disk workload's)
  uint64_t seed = 0;    // the scenario's: Poisson arrivals and random choices repeat with it
  // For a workload run in a helper process inside the target's cgroup (in_target_cgroup):
  std::vector<std::string> target_cgroup_procs;  // the cgroup.procs files the helper joins
  int clock_fd = -1;                              // the memfd that holds the run clock's cell
  std::string rig_exe;                            // the binary that serves `rig __workload`
};

// Runs from start() to stop() across all phases; the run clock says which phase each
// sample belongs to, so connections persist while injectors change around them.
class workload {
 public:
  virtual ~workload() = default;
  virtual void start(const workload_env& env) = 0;
  virtual void stop() noexcept = 0;
  // Per phase index, merged over threads, what take_finished_phases() did not take; after stop().
  virtual std::vector<phase_stats> results() const = 0;
  // Optional ability: runs env.host_on_loop on its event loop.
  virtual bool can_host_on_loop() const { return false; }
  // Optional ability: the rig's own sockets take a socket policy.
  virtual socket_tunable* sockets() { return nullptr; }
  virtual nlohmann::json describe() const = 0;
  // The figures of phases the threads have left since the last call, per thread (a phase may
  // come in pieces), no longer in results(); and the phase below which no piece is still to
  // come. Safe while running. The default hands in nothing: everything comes from results().
  virtual finished_phases take_finished_phases() { return {}; }
  // Between phases, before the next phase's injectors: a workload in a helper process hands in
  // the phase that ended, so a cap that kills the helper cannot take that phase with it.
  virtual void phase_over(int /*phase*/) {}
  // A workload that runs inside the target's cgroup: the controllers that cgroup needs.
  virtual std::vector<std::string> cgroup_controllers() const { return {}; }
};

struct workload_kind {
  std::string_view name;
  std::string_view summary;
  const option_table& (*options)();
  std::unique_ptr<workload> (*make)(const option_values&);
  void (*check)(const option_values&, const bind_context&, diagnostics&) = nullptr;
  // Kinds that can run in the target's cgroup (in_target_cgroup): the workload itself, which
  // the helper process runs; `make` then returns the stand-in when asked.
  std::unique_ptr<workload> (*make_here)(const option_values&) = nullptr;
};

const std::vector<workload_kind>& workload_kinds();
inline const workload_kind* find_workload_kind(std::string_view name) { return find_kind(workload_kinds(), name); }

// After stop(): every phase's figures by index, what take_finished_phases() still holds
// merged with results() (the rig itself takes each phase as it completes).
inline std::vector<phase_stats> all_phases(workload& w) {
  phase_assembler a;  // hands phases over in order from 0, each once
  std::vector<phase_stats> out;
  for (auto& [p, s] : a.add(w.take_finished_phases())) out.push_back(std::move(s));
  for (auto& [p, s] : a.finish(w.results())) out.push_back(std::move(s));
  return out;
}

}  // namespace rig
