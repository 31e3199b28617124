#include "injectors/failpoint_injector.hpp"
#include "injectors/file_faults.hpp"
#include "injectors/injector.hpp"
#include "injectors/proxy_injector.hpp"
#include "injectors/toxics/toxic.hpp"
#include "injectors/qdisc_injectors.hpp"
#include "injectors/resource_injectors.hpp"
#include "injectors/signal_injectors.hpp"
#include "injectors/socket_injectors.hpp"
#include "core/proc.hpp"

namespace rig {

namespace {

// A kind whose injectors do not need their name in the scenario.
template <std::unique_ptr<injector> (*Make)(const option_values&)>
std::unique_ptr<injector> unnamed(const std::string&, const option_values& v) {
  return Make(v);
}

// What injectors of a side-taking kind hold: one thing per side they act on.
std::vector<std::string> sides(const option_values& v, const char* key, const char* a, const char* b,
                               const std::string& what) {
  std::vector<std::string> out;
  if (!v.has(key)) return out;
  const std::string w = v.str(key);
  if (w == a || w == "both") out.push_back(what + " (" + a + ")");
  if (w == b || w == "both") out.push_back(what + " (" + b + ")");
  return out;
}

injector_needs socket_needs(const option_values& v, const cgroup_layout&) {
  return {.target_sockets = !v.has("where") || v.str("where") != "workload"};
}
injector_needs veth_needs(const option_values&, const cgroup_layout&) { return {.namespaces = true}; }
injector_needs failpoint_needs(const option_values&, const cgroup_layout&) { return {.failpoints = true}; }

std::vector<std::string> qdisc_holds(const option_values& v) {
  return sides(v, "direction", "replies", "requests", "the root qdisc on the run's veth");
}
std::vector<std::string> failpoint_holds(const option_values& v) {
  return v.has("failpoint") ? std::vector<std::string>{"failpoint " + v.str("failpoint")} : std::vector<std::string>{};
}

}  // namespace

const std::vector<injector_kind>& injector_kinds() {
  static const std::vector<injector_kind> kinds = {
      {.name = "nodelay",
       .summary = "TCP_NODELAY forced off (Nagle's algorithm on) for the target, the rig, or both",
       .options = &nodelay_options,
       .make = &unnamed<&make_nodelay>,
       .host_probe = &probe_socket_host,
       .needs = &socket_needs,
       .holds = [](const option_values& v) { return sides(v, "where", "target", "workload", "TCP_NODELAY"); }},
      {.name = "sockbuf",
       .summary = "tiny SO_SNDBUF/SO_RCVBUF for the target, the rig, or both",
       .options = &sockbuf_options,
       .make = &unnamed<&make_sockbuf>,
       .check = &check_sockbuf,
       .host_probe = &probe_socket_host,
       .needs = &socket_needs,
       .holds = [](const option_values& v) { return sides(v, "where", "target", "workload", "the socket buffers"); }},
      {.name = "proxy",
       .summary = "Toxiproxy's toxics in rig's own TCP proxy between the workloads and the target",
       .options = &proxy_options,
       .make = &make_proxy_injector,
       .check = &check_proxy,
       .needs = [](const option_values& v, const cgroup_layout&) {
         const toxic_kind* t = find_toxic_kind(v.str("toxic"));
         return injector_needs{.proxy = true,
                               .proxy_over_tcp = t && t->needs_tcp ? "a " + std::string(t->name) + " toxic needs TCP" : ""};
       },
       .variants = &proxy_variants},
      {.name = "netem",
       .summary = "netem on the veth between the rig and a target in its own network namespace: delay, jitter, "
                  "loss, duplicate, reorder, corrupt, rate",
       .options = &netem_options,
       .make = &unnamed<&make_netem>,
       .check = &check_netem,
       .host_probe = &probe_netem_host,
       .needs = &veth_needs,
       .holds = &qdisc_holds},
      {.name = "rate",
       .summary = "a bandwidth cap (tbf) on the veth between the rig and a target in its own network namespace",
       .options = &rate_options,
       .make = &unnamed<&make_rate>,
       .check = &check_rate,
       .host_probe = &probe_rate_host,
       .needs = &veth_needs,
       .holds = &qdisc_holds},
      {.name = "memory",
       .summary = "a memory cap on the target alone (its own cgroup; RLIMIT_AS where there is no memory controller)",
       .options = &memory_options,
       .make = &unnamed<&make_memory>,
       .check = &check_memory,
       .host_probe = &probe_memory_host,
       .needs = [](const option_values& v, const cgroup_layout& l) {
         return injector_needs{.controllers = memory_via_cgroup(v, l) ? std::vector<std::string>{"memory"}
                                                                      : std::vector<std::string>{}};
       },
       .holds = [](const option_values&) { return std::vector<std::string>{"the target's memory cap"}; }},
      {.name = "cpu",
       .summary = "a slower CPU for the target alone: a CFS quota of scale x its CPUs, pinned with cpuset",
       .options = &cpu_options,
       .make = &unnamed<&make_cpu>,
       .check = &check_cpu,
       .host_probe = &probe_cpu_host,
       .needs = [](const option_values&, const cgroup_layout&) { return injector_needs{.controllers = {"cpu", "cpuset"}}; },
       .holds = [](const option_values&) { return std::vector<std::string>{"the target's CPU quota"}; }},
      {.name = "disk",
       .summary = "a throttled disk for the target alone: read/write bytes and operations per second on the disk "
                  "behind a path",
       .options = &disk_options,
       .make = &unnamed<&make_disk>,
       .check = &check_disk,
       .host_probe = &probe_disk_host,
       .needs = [](const option_values&, const cgroup_layout&) { return injector_needs{.controllers = {"io"}}; },
       .holds = [](const option_values&) { return std::vector<std::string>{"the target's disk caps"}; }},
      {.name = "noise",
       .summary = "a noisy neighbour: threads spinning on the target's CPUs",
       .options = &noise_options,
       .make = &unnamed<&make_noise>,
       .check = &check_noise},
      {.name = "file_faults",
       .summary = "delays and errors (EIO) on fsync, write or read of the target's files under a path, through "
                  "the preload shim",
       .options = &file_faults_options,
       .make = &unnamed<&make_file_faults>,
       .check = &check_file_faults,
       .host_probe = &probe_file_faults_host,
       .needs = [](const option_values&, const cgroup_layout&) { return injector_needs{.preload = true}; },
       .holds = [](const option_values&) { return std::vector<std::string>{"the preload shim's file faults"}; }},
      {.name = "pause",
       .summary = "the target stopped (SIGSTOP) for pause_for every period, then continued",
       .options = &pause_options,
       .make = &unnamed<&make_pause>,
       .check = &check_pause,
       .holds = [](const option_values&) { return std::vector<std::string>{"the target's stop/continue schedule"}; }},
      {.name = "threads",
       .summary = "dropped worker threads: a failpoint at the target's worker entry throws, so a worker that does "
                  "not catch it dies (built-in target: catch_exceptions = false)",
       .options = &threads_options,
       .make = &unnamed<&make_failpoint>,
       .check = &check_failpoint,
       .needs = &failpoint_needs,
       .holds = &failpoint_holds},
      {.name = "failpoint",
       .summary = "any failpoint in a target that links rig's failpoint library: throw, return an error, stall or "
                  "abort at a named point",
       .options = &failpoint_options,
       .make = &unnamed<&make_failpoint>,
       .check = &check_failpoint,
       .needs = &failpoint_needs,
       .holds = &failpoint_holds},
      {.name = "kill",
       .summary = "a signal (SIGKILL by default) to the target at a set time into the phase",
       .options = &kill_options,
       .make = &unnamed<&make_kill>},
  };
  return kinds;
}

}  // namespace rig

namespace rig {

bool target_gone(const run_context& ctx) {
  if (!ctx.target_pid) return false;
  const auto head = stat_head(*ctx.target_pid);
  return !head || head->state == 'Z' || head->state == 'X';
}

}  // namespace rig
