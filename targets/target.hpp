#pragma once
#include <sys/types.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/options.hpp"
#include "core/process.hpp"
#include "core/socket_policy.hpp"

namespace rig {

class cgroup;

struct target_env {
  std::string run_dir;  // logs and files of the target go here
  std::string rig_exe;  // the rig binary, which runs the built-in target as `rig target`
  // What injectors ask of the target's process: environment (the preload shim) and fds.
  std::vector<std::string> env;
  std::vector<std::pair<int, int>> inherit_fds;
  // Where the target runs and listens: the host's loopback, or (netns_fd >= 0) the
  // target's side of the run's veth, in a network namespace of its own.
  std::string host = "127.0.0.1";
  int netns_fd = -1;
  // cgroup.procs files the target's process joins before its first instruction.
  std::vector<std::string> cgroup_procs;
  // The run's cgroup that follows the target's whole process tree (null where none could be made).
  const cgroup* tree = nullptr;
};

// What workloads talk to, what the sampler watches, and what injectors reach into.
class target {
 public:
  virtual ~target() = default;
  virtual void start(const target_env& env) = 0;
  virtual void stop() noexcept = 0;
  virtual std::string host() const = 0;
  virtual uint16_t port() const = 0;
  virtual std::optional<pid_t> pid() const { return std::nullopt; }
  // Every process of the target (a master and its workers, a wrapper and its server): its CPU,
  // memory and threads are theirs summed.
  virtual std::vector<pid_t> processes() const {
    if (const auto p = pid()) return {*p};
    return {};
  }
  // The processes that hold the target's listening socket (where an injection must be seen to
  // have landed); empty when rig cannot see them (a target rig did not start).
  virtual std::vector<pid_t> serving_pids() const {
    if (const auto p = pid()) return {*p};
    return {};
  }
  // Set once the target process has died: how ("killed by signal 9 (Killed)"), its exit
  // status or signal. A target rig did not start (endpoint) never says.
  virtual std::optional<exit_info> died() { return std::nullopt; }
  // Internal counters (built-in target: live workers, queue depth, ...), waiting at most
  // timeout_ms for them (a stopped target answers nothing); throws when they did not come.
  virtual std::map<std::string, int64_t> counters(int /*timeout_ms*/) { return {}; }
  // Optional ability: the target's sockets take a socket policy.
  virtual socket_tunable* sockets() { return nullptr; }
  // The program rig will execute, when its process can take the preload shim.
  virtual std::optional<std::string> preload_executable() const { return std::nullopt; }
  virtual nlohmann::json describe() const = 0;
  // Why this host cannot run the target now (another process holds its fixed port), checked
  // before the run makes anything; empty when nothing stands in its way. in_own_netns: the
  // target will run in a network namespace of the run's, where nothing else listens.
  virtual std::string cannot_start_here(bool in_own_netns) const {
    (void)in_own_netns;
    return "";
  }
};

// A counter a target reports about itself (the built-in target's control channel "stats"): a
// total becomes the phase's delta under its own name; a gauge is reported as NAME_min, _max,
// _start and _end.
struct target_counter {
  std::string_view name;
  bool total = false;
};

// A kind of target: all that rig knows of it, in one record.
struct target_kind {
  std::string_view name;
  std::string_view summary;
  const option_table& (*options)();
  std::unique_ptr<target> (*make)(const option_values&);
  // Cross-key checks beyond the option table (may be null).
  void (*check)(const option_values&, const bind_context&, diagnostics&) = nullptr;
  // A process rig starts (in a cgroup of the run, with what injectors put in its environment),
  // not one that already runs: what acts on its process needs this.
  bool started_by_rig = false;
  std::vector<target_counter> counters = {};
};

const std::vector<target_kind>& target_kinds();
inline const target_kind* find_target_kind(std::string_view name) { return find_kind(target_kinds(), name); }

}  // namespace rig
