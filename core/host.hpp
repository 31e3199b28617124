#pragma once
#include <string>

namespace rig {

// "v2" (unified), "v1" (legacy hierarchies; a cgroup2 mount without controllers may sit
// beside them), or "none".
std::string cgroup_version();
std::string kernel_release();
int online_cpus();

}  // namespace rig
