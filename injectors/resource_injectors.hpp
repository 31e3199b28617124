#pragma once
// Real caps on the target alone, the way production limits it: memory (cgroup memory
// limit, RLIMIT_AS where there is no memory controller), a slower CPU (CFS bandwidth quota
// plus cpuset pinning, where the host has no cpufreq to pin) and a throttled disk (blkio /
// io.max on the block device behind a path).
#include "injectors/injector.hpp"

namespace rig {

const option_table& memory_options();
void check_memory(const option_values& v, const bind_context& ctx, diagnostics& diags);
std::unique_ptr<injector> make_memory(const option_values& v);
probe_result probe_memory_host(const host_context& h);

const option_table& cpu_options();
void check_cpu(const option_values& v, const bind_context& ctx, diagnostics& diags);
std::unique_ptr<injector> make_cpu(const option_values& v);
probe_result probe_cpu_host(const host_context& h);

const option_table& disk_options();
void check_disk(const option_values& v, const bind_context& ctx, diagnostics& diags);
std::unique_ptr<injector> make_disk(const option_values& v);
probe_result probe_disk_host(const host_context& h);

const option_table& noise_options();
void check_noise(const option_values& v, const bind_context& ctx, diagnostics& diags);
std::unique_ptr<injector> make_noise(const option_values& v);

// A memory injector caps through the target's cgroup (via = "cgroup", or "auto" where the host
// has a memory controller), else through RLIMIT_AS.
bool memory_via_cgroup(const option_values& v, const cgroup_layout& l);

// Number of CPUs in a cpuset list ("0-2,5" -> 4); 0 when malformed.
int count_cpus(const std::string& list);

}  // namespace rig
