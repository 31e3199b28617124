/* rig's failpoint library: named points in a target's code where rig (or an environment
   variable) makes the program fail on purpose: throw, return an error, stall, or abort.

   C:    int e = RIG_FAILPOINT_C("wal.fsync");   0: go on; > 0: an errno value to fail with;
                                                 RIG_FP_THROW_REQUESTED: fail your own way.
   C++:  #include "rig_failpoint.hpp" and RIG_FAILPOINT("worker.handle") (throws rig::failpoint_error).

   Disarmed (no failpoint armed in the process) a point costs one relaxed atomic load.

   Configuration, both optional:
     RIG_FAILPOINTS="worker.handle=throw p=0.05 count=10; wal.fsync=delay delay=20ms"
     RIG_FAILPOINT_SOCKET=/path/to.sock   a unix socket rig listens on; the library connects
                                          at load (and in each forked child) and takes
                                          one-line commands: set, stats, ping.
   A spec is ACTION [p=P] [count=N] [delay=D] [errno=E] [seed=S]:
     ACTION  off | throw | error | delay | abort
     p       probability per hit, 0..1 or a percentage ("5%"); default 1
     count   fire at most N times (0: no limit); default 0
     delay   for delay: how long each fired hit stalls ("250us", "20ms", "1s")
     errno   for error: the code returned (EIO, ENOSPC, ... or a number); default EIO
     seed    the draws' seed (rig passes its run's); default 0. The n-th hit of a failpoint since
             its spec was set fires by the n-th draw of a stream made from the seed and the
             failpoint's name: the same seed fires on the same hit numbers in every run, whichever
             thread makes each hit. No clock, pid or address is mixed in. */
#ifndef RIG_FAILPOINT_H
#define RIG_FAILPOINT_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum rig_fp_action { RIG_FP_OFF = 0, RIG_FP_THROW = 1, RIG_FP_ERROR = 2, RIG_FP_DELAY = 3, RIG_FP_ABORT = 4 };

/* What a fired throw point returns to C callers (C++ callers get an exception). */
#define RIG_FP_THROW_REQUESTED (-1)
#define RIG_FP_NAME_MAX 64
#define RIG_FP_ENV_CONFIG "RIG_FAILPOINTS"
#define RIG_FP_ENV_SOCKET "RIG_FAILPOINT_SOCKET"

struct rig_fp_entry;
/* One place in the code; constant-initialised, bound to its entry on first evaluation. */
typedef struct rig_fp_site {
  const char* name;
  struct rig_fp_entry* entry;
} rig_fp_site;

/* Failpoints armed in this process: the fast path's only load. */
extern int rig_fp_armed_count;

/* The slow path: counts the hit, decides, acts (delay, abort) and returns what the caller does. */
int rig_fp_eval(rig_fp_site* site);

static inline int rig_fp_check(rig_fp_site* site) {
  if (__builtin_expect(__atomic_load_n(&rig_fp_armed_count, __ATOMIC_RELAXED) == 0, 1)) return 0;
  return rig_fp_eval(site);
}

#define RIG_FAILPOINT_C(name)                            \
  __extension__({                                        \
    static rig_fp_site rig_fp_site_ = {(name), 0};       \
    rig_fp_check(&rig_fp_site_);                         \
  })

/* Sets one failpoint from a spec. 0, or -1 with the reason in err. */
int rig_fp_set(const char* name, const char* spec, char* err, size_t errlen);
/* Sets several: "name=spec; name=spec" (the RIG_FAILPOINTS form). 0, or -1 with the reason. */
int rig_fp_configure(const char* text, char* err, size_t errlen);
/* Turns every failpoint off; counters stay. */
void rig_fp_disarm_all(void);

struct rig_fp_state {
  int action;               /* enum rig_fp_action */
  double probability;
  long long count;          /* as configured (0: no limit) */
  long long delay_ns;
  int error;
  unsigned long long hits;  /* evaluations while any failpoint was armed */
  unsigned long long fired;
  unsigned long long seed;  /* the draws' seed, as configured */
};
/* 0 and the state of `name`, or -1 when no such failpoint is known. */
int rig_fp_state_of(const char* name, struct rig_fp_state* out);
/* Every known failpoint, "NAME action=A p=P count=N delay_ns=D errno=E seed=S hits=H fired=F" joined
   by "; ", NUL-terminated in buf; returns the length it needed. */
size_t rig_fp_describe(char* buf, size_t len);
const char* rig_fp_action_name(int action);

/* Connects the control channel to a unix socket ("@name": abstract) on a thread of its own. */
int rig_fp_connect(const char* path);

#ifdef __cplusplus
}
#endif
#endif
