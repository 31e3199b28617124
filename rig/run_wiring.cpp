#include "rig/run_wiring.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <iostream>

#include "core/clock.hpp"
#include "core/draw.h"
#include "core/journal.hpp"

namespace rig {

void applied_injectors::apply(const std::string& name, injector& inj) {
  applied_.push_back({name, &inj});  // before apply: a half-applied injector is reverted too
  inj.apply(ctx_);
}

std::vector<applied_injectors::undone> applied_injectors::revert_all() noexcept {
  std::vector<undone> out;
  for (auto it = applied_.rbegin(); it != applied_.rend(); ++it) out.push_back({it->first, it->second->revert(ctx_)});
  applied_.clear();
  return out;
}

applied_injectors::~applied_injectors() {
  for (const auto& u : revert_all())
    if (!u.result.ok) std::cerr << "rig: injector " << u.name << " not reverted: " << u.result.text << "\n";
}

run_wiring::run_wiring(run_plan& plan, const run_options& opts, const run_recording& rec, run_report& rep,
                       std::function<double()> now_s)
    : plan_(plan), opts_(opts), rec_(rec), rep_(rep), now_s_(std::move(now_s)), applied_(plan.ctx) {
  // A process of the target's tree can write itself into another cgroup (as root): the kernel's
  // process events follow the tree from the target's fork on, wherever it goes. Subscribed
  // first, from the host's network namespace: the kernel sends them only there.
  if (plan_.ctx.target_started) tree_.emplace();
  make_network();
  make_cgroup();
  start_target();
  start_sampler();
  start_workloads();
}

// netem and rate act on a veth of the run's own: the target runs in one namespace, and this
// thread (so every thread it starts from here on: workloads, proxy, sampler) in the other.
void run_wiring::make_network() {
  if (!plan_.needs.namespaces) return;
  net_.emplace(veth_network::create());
  plan_.ctx.net = &*net_;
  auto& tenv = plan_.reach.tenv;
  tenv.host = veth_network::target_addr;
  tenv.netns_fd = net_->ns(veth_network::side::target).fd();
  on_rig_side_.emplace(net_->ns(veth_network::side::client).fd());
}

// A target rig starts always runs in a cgroup of the run, so that everything it starts (a
// daemon, a setsid child) is found, measured and ended with it.
void run_wiring::make_cgroup() {
  const auto& controllers = plan_.needs.controllers;
  if (controllers.empty() && !plan_.ctx.target_started) return;
  static int runs = 0;
  try {
    cgroup_ = cgroup::create(plan_.cgroups, run_cgroup_name(++runs), {controllers.begin(), controllers.end()});
  } catch (const std::exception& e) {
    if (!controllers.empty() || ::geteuid() == 0) throw;
    // Without root and without a cap to apply, the run goes on, saying what it cannot promise.
    rep_.events.push_back({0, "target_not_contained",
                           std::string("the target runs outside a cgroup of the run (") + e.what() +
                               "): what it starts outside its process group may outlive the run"});
    return;
  }
  plan_.ctx.target_cgroup = &cgroup_;
  plan_.reach.tenv.cgroup_procs = cgroup_.procs_files();
  plan_.reach.tenv.tree = &cgroup_;
  remove_cgroup_.set([this] {
    const std::string left = cgroup_.destroy();
    if (left.empty()) return;
    rep_.events.push_back({now_s_(), "cleanup_failed", "cgroup not removed: " + left});
    std::cerr << "rig: could not remove the target's cgroup: " << left << "\n";
  });
  if (!tree_) return;
  end_escaped_.set([this] {
    const auto ended = tree_->end_escaped(cgroup_);
    if (ended.empty()) return;
    rep_.events.push_back({now_s_(), "escaped_ended",
                           fmt::format("ended with the run outside its cgroup: {}", fmt::join(ended, ", "))});
  });
}

void run_wiring::start_target() {
  auto& tenv = plan_.reach.tenv;
  auto& tgt = *plan_.tgt;
  tenv.run_dir = rec_.run_files;
  tenv.rig_exe = opts_.rig_exe;
  stop_target_.set([&tgt] { tgt.stop(); });
  tgt.start(tenv);
  if (tree_ && tgt.pid()) tree_->target_started(*tgt.pid());
  plan_.ctx.target_pid = tgt.pid();
  plan_.ctx.target_processes = [&tgt] { return tgt.processes(); };
  if (plan_.reach.shim)
    plan_.reach.shim->watch_target([&tgt] { return tgt.serving_pids(); }, [&tgt] { return tgt.processes(); });
  describe_target();
}

void run_wiring::describe_target() {
  rep_.target = plan_.tgt->describe();
  if (plan_.reach.failpoints) rep_.target["failpoint_channel"] = plan_.reach.failpoints->path();
  if (net_)
    rep_.target["network"] = {{"description", net_->describe()},
                              {"namespaces", {net_->ns(veth_network::side::client).inode(),
                                              net_->ns(veth_network::side::target).inode()}}};
  if (!cgroup_.exists()) return;
  nlohmann::json cg = nlohmann::json::object();
  auto where = [&](const std::string& c) {
    return nlohmann::json{{"path", cgroup_.path(c)}, {"version", cgroup_.version(c) == cg_version::v2 ? "v2" : "v1"}};
  };
  for (const auto& c : plan_.needs.controllers) cg[c] = where(c);
  cg["tree"] = where("tree");  // the directory that follows the target's whole process tree
  rep_.target["cgroup"] = cg;
}

void run_wiring::start_sampler() {
  auto& tgt = *plan_.tgt;
  sampler_ = std::make_shared<sampler>(
      tgt.pid(), [&tgt](int timeout_ms) { return tgt.counters(timeout_ms); }, 200 * ns_per_ms, target_cgroup(),
      [&tgt] { return tgt.processes(); });
  stop_sampler_.set([this] { sampler_->stop(); });
  sampler_->start();
}

// With a proxy injector in the scenario, every workload goes through rig's proxy for the whole
// run, so toxics come and go between phases on the same connections. The proxy runs on the
// first workload's event loop that can host it (no cross-thread wake-up per message), else on
// a thread of its own.
void run_wiring::start_workloads() {
  auto& sc = plan_.sc;
  auto& tgt = *plan_.tgt;
  auto& workloads = plan_.workloads;
  toxic_proxy* proxy = plan_.reach.proxy.get();
  const bool proxy_over_tcp = !plan_.needs.proxy_over_tcp.empty();
  std::optional<size_t> host_of_proxy;
  if (proxy) {
    plan_.ctx.proxy = proxy;
    for (size_t i = 0; i < workloads.size() && !host_of_proxy; ++i)
      if (workloads[i]->can_host_on_loop()) host_of_proxy = i;
    stop_proxy_.set([proxy] { proxy->stop(); });
    if (!host_of_proxy) proxy->start_for(tgt.host(), tgt.port());
  }
  stop_workloads_.set([&workloads] {
    for (auto& w : workloads) w->stop();
  });
  const std::string host = proxy ? "127.0.0.1" : tgt.host();
  for (size_t i = 0; i < workloads.size(); ++i) {
    workload_env env{sc.workloads[i].name, host, proxy ? proxy->port() : tgt.port(), &rec_.clock, &rec_.windows};
    env.run_dir = rec_.run_files;
    // Each workload draws from its own stream of the run's seed, so two alike draw unalike.
    env.seed = rig_stream_seed(uint64_t(sc.seed), ("workload." + sc.workloads[i].name).c_str(), 0);
    env.target_cgroup_procs = plan_.reach.tenv.cgroup_procs;
    env.clock_fd = rec_.clock_cell.fd();
    env.rig_exe = opts_.rig_exe;
    if (host_of_proxy == i)
      env.host_on_loop = [proxy, &tgt, proxy_over_tcp](asio::io_context& loop) {
        proxy->start_on(loop, tgt.host(), tgt.port());
        // The hosting loop's connections reach the proxy through socket pairs (no TCP stack
        // in between), except where a toxic needs TCP to deliver a real reset.
        hosted h{proxy->port(), nullptr};
        if (!proxy_over_tcp) h.connect_local = [proxy] { return proxy->connect_local(); };
        return h;
      };
    workloads[i]->start(env);
    rep_.workloads[sc.workloads[i].name] = workloads[i]->describe();
  }
  if (proxy) {
    rep_.target["proxy_port"] = proxy->port();
    rep_.target["proxy_hop"] = host_of_proxy && !proxy_over_tcp
                                   ? "unix socket pairs from workload " + sc.workloads[*host_of_proxy].name +
                                         "'s first thread, loopback TCP from any other"
                                   : std::string("loopback TCP") + (proxy_over_tcp ? " (" + plan_.needs.proxy_over_tcp + ")" : "");
  }
}

}  // namespace rig
