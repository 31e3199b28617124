#include "core/host.hpp"

#include <fstream>

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

namespace {
rlimit read_nofile() {
  rlimit r{};
  ::getrlimit(RLIMIT_NOFILE, &r);
  return r;
}
const rlimit given_nofile = read_nofile();  // before main(): what rig's parent gave it
}  // namespace

void raise_fd_limit() {
  rlimit r = read_nofile();
  if (r.rlim_cur == r.rlim_max) return;
  r.rlim_cur = r.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &r);
}

int64_t fd_limit_hard() {
  const rlimit r = read_nofile();
  return r.rlim_max == RLIM_INFINITY ? INT64_MAX : int64_t(r.rlim_max);
}

const rlimit& fd_limit_given() { return given_nofile; }

}  // namespace rig

namespace rig {

host_cpu_sample read_host_cpu() {
  host_cpu_sample h;
  std::ifstream stat("/proc/stat");
  std::string cpu;
  uint64_t v[10] = {};
  if (stat >> cpu && cpu == "cpu") {
    for (auto& x : v) stat >> x;  // user nice system idle iowait irq softirq steal guest guest_nice
    for (int i = 0; i < 8; ++i) h.total += v[i];  // guest time is inside user already
    h.idle = v[3] + v[4];
    h.steal = v[7];
  }
  std::ifstream("/proc/loadavg") >> h.load1;
  return h;
}

}  // namespace rig
