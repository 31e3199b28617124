#include "injectors/failpoint_injector.hpp"
#include "injectors/file_faults.hpp"
#include "injectors/injector.hpp"
#include "injectors/proxy.hpp"
#include "injectors/proxy_injector.hpp"
#include "injectors/qdisc_injectors.hpp"
#include "injectors/resource_injectors.hpp"
#include "injectors/signal_injectors.hpp"
#include "injectors/socket_injectors.hpp"
#include "core/proc.hpp"

namespace rig {

const std::vector<injector_kind>& injector_kinds() {
  static const std::vector<injector_kind> kinds = {
      {"nodelay", "TCP_NODELAY forced off (Nagle's algorithm on) for the target, the rig, or both",
       &nodelay_options, [](const std::string&, const option_values& v) { return make_nodelay(v); }, nullptr,
       &probe_socket_host},
      {"sockbuf", "tiny SO_SNDBUF/SO_RCVBUF for the target, the rig, or both", &sockbuf_options,
       [](const std::string&, const option_values& v) { return make_sockbuf(v); }, &check_sockbuf,
       &probe_socket_host},
      {"proxy", "Toxiproxy's toxics in rig's own TCP proxy between the workloads and the target", &proxy_options,
       &make_proxy_injector, &check_proxy},
      {"netem", "netem on the veth between the rig and a target in its own network namespace: delay, jitter, loss, "
                "duplicate, reorder, corrupt, rate",
       &netem_options, [](const std::string&, const option_values& v) { return make_netem(v); }, &check_netem,
       &probe_netem_host},
      {"rate", "a bandwidth cap (tbf) on the veth between the rig and a target in its own network namespace",
       &rate_options, [](const std::string&, const option_values& v) { return make_rate(v); }, &check_rate,
       &probe_rate_host},
      {"memory", "a memory cap on the target alone (its own cgroup; RLIMIT_AS where there is no memory controller)",
       &memory_options, [](const std::string&, const option_values& v) { return make_memory(v); }, &check_memory,
       &probe_memory_host},
      {"cpu", "a slower CPU for the target alone: a CFS quota of scale x its CPUs, pinned with cpuset",
       &cpu_options, [](const std::string&, const option_values& v) { return make_cpu(v); }, &check_cpu,
       &probe_cpu_host},
      {"disk", "a throttled disk for the target alone: read/write bytes and operations per second on the disk "
               "behind a path",
       &disk_options, [](const std::string&, const option_values& v) { return make_disk(v); }, &check_disk,
       &probe_disk_host},
      {"noise", "a noisy neighbour: threads spinning on the target's CPUs", &noise_options,
       [](const std::string&, const option_values& v) { return make_noise(v); }, &check_noise},
      {"file_faults", "delays and errors (EIO) on fsync, write or read of the target's files under a path, through "
                      "the preload shim",
       &file_faults_options, [](const std::string&, const option_values& v) { return make_file_faults(v); },
       &check_file_faults, &probe_file_faults_host},
      {"pause", "the target stopped (SIGSTOP) for pause_for every period, then continued", &pause_options,
       [](const std::string&, const option_values& v) { return make_pause(v); }, &check_pause},
      {"threads", "dropped worker threads: a failpoint at the target's worker entry throws, so a worker that does "
                  "not catch it dies (built-in target: catch_exceptions = false)",
       &threads_options, [](const std::string&, const option_values& v) { return make_failpoint(v); },
       &check_failpoint},
      {"failpoint", "any failpoint in a target that links rig's failpoint library: throw, return an error, stall "
                    "or abort at a named point",
       &failpoint_options, [](const std::string&, const option_values& v) { return make_failpoint(v); },
       &check_failpoint},
      {"kill", "a signal (SIGKILL by default) to the target at a set time into the phase", &kill_options,
       [](const std::string&, const option_values& v) { return make_kill(v); }},
  };
  return kinds;
}

std::vector<std::string> injector_holds(const std::string& k, const option_values& opts) {
  if (k == "memory") return {"the target's memory cap"};
  if (k == "cpu") return {"the target's CPU quota"};
  if (k == "disk") return {"the target's disk caps"};
  if (k == "file_faults") return {"the preload shim's file faults"};
  if (k == "pause") return {"the target's stop/continue schedule"};
  auto sides = [&](const std::string& w, const char* a, const char* b, const std::string& what) {
    std::vector<std::string> out;
    if (w == a || w == "both") out.push_back(what + " (" + a + ")");
    if (w == b || w == "both") out.push_back(what + " (" + b + ")");
    return out;
  };
  if ((k == "netem" || k == "rate") && opts.has("direction"))
    return sides(opts.str("direction"), "replies", "requests", "the root qdisc on the run's veth");
  if ((k == "nodelay" || k == "sockbuf") && opts.has("where"))
    return sides(opts.str("where"), "target", "workload", k == "nodelay" ? "TCP_NODELAY" : "the socket buffers");
  if ((k == "threads" || k == "failpoint") && opts.has("failpoint")) return {"failpoint " + opts.str("failpoint")};
  return {};
}

}  // namespace rig

namespace rig {

bool target_gone(const run_context& ctx) {
  if (!ctx.target_pid) return false;
  const auto head = stat_head(*ctx.target_pid);
  return !head || head->state == 'Z' || head->state == 'X';
}

}  // namespace rig
