// rig's failpoints for C++ targets: RIG_FAILPOINT("worker.handle") at a place in the code.
// Fired, it throws rig::failpoint_error (action throw), returns an errno value (action error;
// 0 otherwise, so `if (int e = RIG_FAILPOINT("wal.fsync")) ...` takes it), stalls (delay) or
// aborts. Disarmed it costs one relaxed atomic load. Configuration: see rig_failpoint.h.
#pragma once
#include <stdexcept>
#include <string>

#include "rig_failpoint.h"

namespace rig {

struct failpoint_error : std::runtime_error {
  explicit failpoint_error(const char* name) : std::runtime_error(std::string("failpoint ") + name + " fired") {}
};

inline int failpoint_check(rig_fp_site& site) {
  if (__builtin_expect(__atomic_load_n(&rig_fp_armed_count, __ATOMIC_RELAXED) == 0, 1)) return 0;
  const int r = rig_fp_eval(&site);
  if (r == RIG_FP_THROW_REQUESTED) throw failpoint_error(site.name);
  return r;
}

}  // namespace rig

// The site is a constant-initialised static: no guard variable, nothing on the fast path but the load.
#define RIG_FAILPOINT(name)                                 \
  ::rig::failpoint_check([]() -> rig_fp_site& {             \
    static rig_fp_site rig_fp_site_{(name), nullptr};       \
    return rig_fp_site_;                                    \
  }())
