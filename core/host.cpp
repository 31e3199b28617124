#include "core/host.hpp"

#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <linux/magic.h>

namespace rig {

std::string cgroup_version() {
  struct statfs fs {};
  if (::statfs("/sys/fs/cgroup", &fs) != 0) return "none";
  if (fs.f_type == CGROUP2_SUPER_MAGIC) return "v2";
  if (::access("/sys/fs/cgroup/memory", F_OK) == 0 || ::access("/sys/fs/cgroup/cpu", F_OK) == 0) return "v1";
  return "none";
}

std::string kernel_release() {
  utsname u{};
  if (::uname(&u) != 0) return "unknown";
  return std::string(u.sysname) + " " + u.release;
}

int online_cpus() { return int(::sysconf(_SC_NPROCESSORS_ONLN)); }

}  // namespace rig
