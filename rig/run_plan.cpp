#include "rig/run_plan.hpp"

#include <unistd.h>

#include <algorithm>

#include "injectors/preload/shim_control.h"

namespace rig {

namespace {

run_needs needs_of(const run_plan& p) {
  run_needs n;
  for (const auto& i : p.sc.injectors) {
    const injector_kind* k = find_injector_kind(i.kind);
    if (!k->needs) continue;
    const injector_needs in = k->needs(i.opts, p.cgroups);
    for (const auto& c : in.controllers) n.controllers.insert(c);
    n.failpoints = n.failpoints || in.failpoints;
    n.target_sockets = n.target_sockets || in.target_sockets;
    n.namespaces = n.namespaces || in.namespaces;
    n.preload = n.preload || in.preload;
    n.proxy = n.proxy || in.proxy;
    if (n.proxy_over_tcp.empty()) n.proxy_over_tcp = in.proxy_over_tcp;
  }
  for (const auto& w : p.workloads)
    for (const auto& c : w->cgroup_controllers()) n.controllers.insert(c);
  return n;
}

// The ways into the target its injectors need, and the run context the probes read.
void make_reach(run_plan& p, const run_options& opts) {
  p.reach = run_reach{};
  auto& ctx = p.ctx;
  ctx = run_context{};
  ctx.target_kind = p.sc.target.kind;
  ctx.target_started = find_target_kind(p.sc.target.kind)->started_by_rig;
  ctx.cgroups = &p.cgroups;
  ctx.seed = uint64_t(p.sc.seed);
  for (size_t i = 0; i < p.workloads.size(); ++i)
    ctx.workloads.push_back({"workload " + p.sc.workloads[i].name, p.workloads[i]->sockets(),
                             "the rig's own sockets (workload " + p.sc.workloads[i].name + ")"});
  // With a proxy, the rig's sockets the target sees are the proxy's; the workloads' own may
  // all be socket pairs to the proxy, with no TCP options to set.
  if (p.needs.proxy) {
    p.reach.proxy = std::make_unique<toxic_proxy>(uint64_t(p.sc.seed));
    for (auto& w : ctx.workloads) w.may_be_empty = true;
    ctx.workloads.push_back({"proxy", p.reach.proxy->upstream_sockets(), "the sockets of rig's proxy to the target"});
  }
  // The preload shim goes into a target rig starts when an injector reaches in through it:
  // its sockets (where the target has no control channel of its own) or its file I/O.
  const bool sockets_via_shim = p.needs.target_sockets && !p.tgt->sockets();
  if (auto exe = p.tgt->preload_executable()) {
    std::string why;
    if (auto unreachable = preload_unreachable(*exe)) {
      ctx.shim_missing = *unreachable;
    } else if (auto lib = preload_library(opts.rig_exe, &why)) {
      if (sockets_via_shim || p.needs.preload) {
        p.reach.shim = std::make_unique<preload_shim>();
        p.reach.tenv.env = p.reach.shim->environment(*lib);
        p.reach.tenv.inherit_fds.push_back({p.reach.shim->control_fd(), RIG_SHIM_FD_NUMBER});
        ctx.shim = p.reach.shim.get();
      }
    } else {
      ctx.shim_missing = why;
    }
  } else {
    ctx.shim_missing = "the " + p.sc.target.kind + " target is a process rig did not start";
  }
  if (p.tgt->sockets())
    ctx.target_sockets = {"target", p.tgt->sockets(), "the built-in target's control channel"};
  else if (p.reach.shim && sockets_via_shim)
    ctx.target_sockets = {"target", p.reach.shim.get(), "the LD_PRELOAD shim in the target"};
  else
    ctx.target_sockets_missing = ctx.shim_missing;
  // Failpoints: rig listens, and each process of the target that links the library connects.
  if (p.needs.failpoints && ctx.target_started) {
    p.reach.failpoints = std::make_unique<failpoint_channel>();
    p.reach.tenv.env.push_back(p.reach.failpoints->environment());
    ctx.failpoints = p.reach.failpoints.get();
  }
}

// Leaves out the injectors named in `skipped` (and their place in every phase).
void leave_out(run_plan& p, const nlohmann::json& skipped) {
  for (const auto& s : skipped) {
    const std::string name = s["name"];
    p.injectors.erase(name);
    std::erase_if(p.sc.injectors, [&](const kind_decl& k) { return k.name == name; });
    for (auto& ph : p.sc.phases) std::erase(ph.inject, name);
  }
}

}  // namespace

std::variant<std::unique_ptr<run_plan>, int> plan_run(const scenario& sc, const run_options& opts, std::ostream& err) {
  auto p = std::make_unique<run_plan>();
  p->sc = sc;
  p->cgroups = cgroup_layout::detect();
  p->tgt = find_target_kind(sc.target.kind)->make(sc.target.opts);
  for (const auto& w : sc.workloads) p->workloads.push_back(find_workload_kind(w.kind)->make(w.opts));
  for (const auto& i : sc.injectors) p->injectors[i.name] = find_injector_kind(i.kind)->make(i.name, i.opts);
  // An injector left out may change what the rest need (the namespaces, the shim), so the
  // reach is made again and the rest probed again without it.
  for (;;) {
    p->needs = needs_of(*p);
    // What this host holds that the target needs (its fixed port): refused like a probe, before
    // anything is made: the host's state, not rig's failure and not the target's result.
    if (const auto why = p->tgt->cannot_start_here(p->needs.namespaces); !why.empty()) {
      err << "rig: the target cannot start on this host: " << why << "\nrig: nothing was changed on this host\n";
      return exit_capability;
    }
    make_reach(*p, opts);
    nlohmann::json failed = nlohmann::json::array();
    for (const auto& [name, inj] : p->injectors) {
      const auto pr = inj->probe(p->ctx);
      if (pr.ok) continue;
      err << "rig: injector '" << name << "' cannot run on this host: " << pr.reason
          << (sc.require_all ? "\n" : "\n     skipped: the scenario says require_all = false\n");
      failed.push_back({{"name", name}, {"kind", p->sc.injector(name)->kind}, {"reason", pr.reason}});
    }
    if (failed.empty()) return p;
    if (sc.require_all) {
      // Root is the remedy only where rig is not root (a missing kernel module is not).
      err << "rig: nothing was changed on this host. "
          << (::geteuid() == 0 ? "Give the host what is named above" : "Run as root")
          << ", or set require_all = false in the scenario to run without the injectors above\n";
      return exit_capability;
    }
    leave_out(*p, failed);
    for (auto& f : failed) p->skipped.push_back(std::move(f));
  }
}

}  // namespace rig
