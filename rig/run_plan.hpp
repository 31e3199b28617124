#pragma once
// The plan of a run: every kind of the scenario built, the ways into the target its injectors
// need made, and each injector probed, before anything on the host changes.
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "core/cgroup.hpp"
#include "core/failpoint_channel.hpp"
#include "injectors/injector.hpp"
#include "injectors/proxy.hpp"
#include "injectors/shim.hpp"
#include "rig/run_options.hpp"
#include "rig/scenario.hpp"
#include "targets/target.hpp"
#include "workloads/workload.hpp"

namespace rig {

// What the injectors and workloads of a run need from it; the run is wired from this.
struct run_needs {
  std::set<std::string> controllers;  // the target starts in a cgroup of its own with these
  bool target_sockets = false;        // its sockets: its control channel, or the preload shim
  bool preload = false;               // the preload shim itself (file faults)
  bool failpoints = false;            // rig's failpoint channel in its environment
  bool namespaces = false;            // the run's veth between two namespaces
  bool proxy = false;                 // rig's toxic proxy between the workloads and the target
  std::string proxy_over_tcp;         // why the workloads reach the proxy over TCP (a reset needs it), or empty
};

// The ways into the target, made before the host is touched (the probes read them through the
// run context): the preload shim, rig's failpoint channel, the toxic proxy.
struct run_reach {
  std::unique_ptr<preload_shim> shim;
  std::unique_ptr<failpoint_channel> failpoints;
  std::unique_ptr<toxic_proxy> proxy;
  target_env tenv;  // what the target starts with for them (environment, inherited fds)
};

struct run_plan {
  scenario sc;  // as run: less the injectors left out (require_all = false)
  std::unique_ptr<target> tgt;
  std::vector<std::unique_ptr<workload>> workloads;
  std::map<std::string, std::unique_ptr<injector>> injectors;
  cgroup_layout cgroups;
  run_needs needs;
  run_reach reach;
  run_context ctx;  // what the injectors reach; the run's wiring fills in the rest
  nlohmann::json skipped = nlohmann::json::array();  // injectors left out: {name, kind, reason}

  run_plan() = default;
  run_plan(const run_plan&) = delete;  // the context points into the plan
  run_plan& operator=(const run_plan&) = delete;
};

// The plan of a run of `sc`, or the exit code that refuses it (why is said on `err`): a target
// that cannot start on this host (its fixed port held), or an injector that cannot run here
// while the scenario says require_all = true. With require_all = false such an injector is
// left out before anything is made for it, and the rest planned without it.
std::variant<std::unique_ptr<run_plan>, int> plan_run(const scenario& sc, const run_options& opts, std::ostream& err);

}  // namespace rig
