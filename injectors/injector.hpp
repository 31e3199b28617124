#pragma once
#include <sys/types.h>

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/options.hpp"
#include "core/socket_policy.hpp"

namespace rig {

class cgroup;
class cgroup_layout;
class failpoint_channel;
class preload_shim;
class toxic_proxy;
class veth_network;

// What an injector can reach in a run. Abilities are optional: null when the target or
// workload kind has no such handle.
struct run_context {
  struct site {
    std::string name;
    socket_tunable* sockets = nullptr;
    std::string via;  // how they are reached: "the built-in target's control channel", ...
    bool may_be_empty = false;  // no sockets here is fine (a workload whose connections go through the proxy)
  };
  std::string target_kind;
  std::optional<pid_t> target_pid;
  site target_sockets{"target"};   // sockets null: see target_sockets_missing
  std::string target_sockets_missing;
  std::vector<site> workloads;
  toxic_proxy* proxy = nullptr;  // between the workloads and the target, when a proxy injector exists
  veth_network* net = nullptr;   // the run's namespaces and veth, when an injector needs them
  const cgroup_layout* cgroups = nullptr;  // the host's hierarchies
  cgroup* target_cgroup = nullptr;         // the target's own cgroup, when an injector needs one
  std::string run_dir;                     // where the run writes (the built-in target's WAL lives here)
  preload_shim* shim = nullptr;            // the LD_PRELOAD shim in the target, when an injector needs it
  std::string shim_missing;                // else why the target cannot take it
  failpoint_channel* failpoints = nullptr;  // rig's failpoint channel, when an injector arms failpoints
  std::string failpoints_missing;           // else why the target cannot have one
  int64_t phase_duration_ns = 0;            // the phase being applied, for a schedule to fit in it (0: open)
  uint64_t seed = 0;                        // the scenario's: every random choice an injector makes draws from it
  bool target_started = false;  // the target is a process rig starts (its kind says so), not one already running
  std::function<std::vector<pid_t>()> target_processes;  // the target's whole tree, when rig can see it
};

struct probe_result {
  bool ok = true;
  std::string reason;
};

// What was read back or measured after apply(): the proof the fault is really there.
struct verification {
  bool ok = false;
  std::string text;
  nlohmann::json measured = nlohmann::json::object();
};

// What revert() left, read back after the undo: the proof the fault is gone.
struct undo_result {
  bool ok = true;    // nothing of the injection is left (read back), or it went with what held it
  std::string text;  // what was read back, or what could not be undone and why
};

// True when the target's process is gone (or a zombie): what an injector changed inside it
// (a socket option, an armed failpoint) went with it.
bool target_gone(const run_context& ctx);

class injector {
 public:
  virtual ~injector() = default;
  virtual probe_result probe(const run_context& ctx) = 0;
  virtual void apply(run_context& ctx) = 0;
  virtual verification verify(run_context& ctx) = 0;
  // Restores the state saved by apply() and reads it back: what could not be undone is said
  // (ok false), and the run records it as revert_failed. Idempotent: a call with nothing
  // applied is ok; never throws.
  virtual undo_result revert(run_context& ctx) noexcept = 0;
  // The mechanism actually used, e.g. "setsockopt TCP_NODELAY=0 via the target's control channel".
  virtual std::string mechanism() const = 0;
  virtual nlohmann::json params() const = 0;
  // The phase's window opens: counters measure() counts from are read here, just before the
  // phase's first resource sample (and measure() just before its last), so the injection's counts
  // and the target's cover the same window. When it throws (the target is going), the phase runs
  // on and the counts run from what apply() read. Default: nothing to read.
  virtual void phase_starts(run_context&) {}
  // What the injection did during the phase, read at its end (before revert).
  virtual nlohmann::json measure(run_context&) { return nlohmann::json::object(); }
};

// Injectors that act on the target's process (cgroups, signals) need one rig started:
// nullopt, or the refusal, `because` saying what rig would do to it.
inline std::optional<probe_result> needs_started_target(const run_context& ctx, const std::string& because) {
  if (ctx.target_started) return std::nullopt;
  return probe_result{false, "the " + ctx.target_kind + " target is a process rig did not start, so " + because +
                                 "; use a builtin or command target"};
}

// What `rig doctor` asks of each kind before any scenario exists.
struct host_context {
  std::string rig_exe;
};

// What an injector needs from the run, from its options: the run is wired from these.
struct injector_needs {
  bool target_sockets = false;  // into the target's sockets: its control channel, or the preload shim
  bool preload = false;         // the LD_PRELOAD shim itself (file faults), however the sockets are reached
  bool failpoints = false;      // rig's failpoint channel in the target's environment
  bool namespaces = false;      // the target and the workloads on the two sides of the run's veth
  bool proxy = false;           // rig's toxic proxy between the workloads and the target
  std::string proxy_over_tcp;   // why the workloads must reach it over TCP ("a reset_peer toxic needs TCP"), or empty
  std::vector<std::string> controllers;  // the cgroup controllers the target starts under
};

// A kind of injector: all that rig knows of it, in one record.
struct injector_kind {
  std::string_view name;
  std::string_view summary;
  const option_table& (*options)();
  std::unique_ptr<injector> (*make)(const std::string& name, const option_values&);
  void (*check)(const option_values&, const bind_context&, diagnostics&) = nullptr;
  probe_result (*host_probe)(const host_context&) = nullptr;  // null: needs nothing from the host
  injector_needs (*needs)(const option_values&, const cgroup_layout&) = nullptr;  // null: nothing of the run
  // What it takes over while its phase runs ("the target's memory cap"). Two injectors in one
  // phase that take the same thing would fight over it (the second undoing the first), so a
  // scenario may not hold both. Null: nothing.
  std::vector<std::string> (*holds)(const option_values&) = nullptr;
  // A key that picks a variant with keys of its own (the proxy's toxic): `rig list` and the
  // schema show each variant's keys. Null: none.
  const option_variants& (*variants)() = nullptr;
};

const std::vector<injector_kind>& injector_kinds();
inline const injector_kind* find_injector_kind(std::string_view name) { return find_kind(injector_kinds(), name); }

}  // namespace rig
