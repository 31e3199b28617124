/* Shared between the LD_PRELOAD shim (C) and rig (C++): a small shared-memory page
   rig writes the socket policy into and every shimmed process reports back through.
   All fields are accessed with __atomic builtins on both sides. */
#ifndef RIG_SHIM_CONTROL_H
#define RIG_SHIM_CONTROL_H
#include <stdint.h>

#define RIG_SHIM_MAGIC 0x52494753u /* "RIGS" */
#define RIG_SHIM_VERSION 6u
#define RIG_SHIM_MAX_PROCS 256
#define RIG_SHIM_FD_ENV "RIG_SHIM_FD"      /* fd number of the control memfd in the target */
#define RIG_SHIM_FD_NUMBER 231             /* where rig places it between fork and exec */

/* A policy field: leave the program's own choice, or force a value. */
#define RIG_SHIM_LEAVE (-1)

/* File faults: calls on files whose path starts with fault_prefix. */
#define RIG_SHIM_OP_FSYNC 1u /* fsync, fdatasync */
#define RIG_SHIM_OP_WRITE 2u /* write, pwrite, pwrite64, writev */
#define RIG_SHIM_OP_READ 4u  /* read, pread, pread64, readv */
#define RIG_SHIM_PREFIX_MAX 256

struct rig_shim_proc {
  int32_t pid;                 /* 0: free slot */
  uint32_t applied_generation; /* the policy generation this process has applied */
  uint32_t sockets;            /* TCP sockets open now */
  uint32_t matching;           /* of those, how many read back as the policy asks */
  uint32_t tracked_total;      /* TCP sockets seen since start */
  uint32_t nodelay_forced;     /* sockets set to TCP_NODELAY=0 by the shim */
  uint32_t setsockopt_overridden; /* program calls whose value the shim replaced */
  uint32_t sndbuf_clamped, rcvbuf_clamped;
  uint32_t file_calls;     /* calls of the faulted kinds on files under the prefix, faults on */
  uint32_t file_delayed;   /* of those, how many the shim delayed */
  uint32_t file_failed;    /* and how many it failed with fault_errno */
  uint32_t execs;          /* 1: the slot was taken over by this pid's image after an exec */
  uint32_t dormant;        /* 1: no TCP socket yet, so no watcher thread: nothing to apply, and it
                              answers every generation (a thread of the shim's in a program that
                              drops privileges, as setpriv does, makes glibc abort its setresgid) */
  uint64_t exe_dev, exe_ino; /* the image that claimed the slot (stat of /proc/self/exe): a dormant
                                slot answers only while its pid still runs that image, not one it
                                exec'd without the shim's descriptor */
  uint32_t buf_restored;   /* sockets whose clamped buffer went back with the kernel's autotuning on */
  uint32_t buf_fixed;      /* sockets whose buffer went back to its old size but stays fixed there:
                              the kernel has no SO_BUF_LOCK (Linux < 5.14) to hand autotuning back */
  int32_t buf_fixed_bytes; /* the largest size one of those stays fixed at */
};

struct rig_shim_control {
  uint32_t magic, version;
  uint32_t generation;   /* bumped by rig after each policy change */
  int32_t nodelay;       /* RIG_SHIM_LEAVE, 0 (off) or 1 (on) */
  int32_t sndbuf;        /* RIG_SHIM_LEAVE or bytes */
  int32_t rcvbuf;        /* RIG_SHIM_LEAVE or bytes */
  uint32_t fault_ops;    /* RIG_SHIM_OP_* bits; 0: no file faults */
  uint32_t fault_ppm;    /* probability of a fault per call, in millionths */
  int32_t fault_errno;   /* 0: delay only */
  uint32_t fault_generation; /* bumped by rig when the file faults change: only then do the draws restart */
  int64_t fault_delay_ns;
  uint64_t fault_seed;   /* the run's seed: the n-th faulted call of a process draws the n-th number */
  char fault_prefix[RIG_SHIM_PREFIX_MAX];
  struct rig_shim_proc procs[RIG_SHIM_MAX_PROCS];
  /* What processes that are gone counted (a per-connection backend, a worker that exited): a
     slot whose process died is folded in here and freed, by rig or by a shim needing a slot. */
  struct rig_shim_proc retired;
  uint32_t retired_procs;        /* slots folded in */
  uint32_t retired_with_sockets; /* of those, processes that had a TCP socket */
  uint32_t retired_with_files;   /* and that made a faulted file call */
  uint32_t slotless;             /* processes that found no free slot: their counts are missing */
};

/* A slot being folded in: neither free (0) nor any process's. */
#define RIG_SHIM_RETIRING (-1)

/* Folds slot p of process `pid` into the retired counts and frees it; 0 when another did it
   first. gone: the process exited (counted as one); else it exec'd and takes a fresh slot.
   Used by rig and by the shim alike. */
static inline int rig_shim_retire(struct rig_shim_control* c, struct rig_shim_proc* p, int32_t pid, int gone) {
  int32_t expected = pid;
  if (!__atomic_compare_exchange_n(&p->pid, &expected, (int32_t)RIG_SHIM_RETIRING, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE))
    return 0;
  uint32_t* const from[] = {&p->tracked_total, &p->nodelay_forced, &p->setsockopt_overridden, &p->sndbuf_clamped,
                            &p->rcvbuf_clamped, &p->file_calls, &p->file_delayed, &p->file_failed,
                            &p->buf_restored, &p->buf_fixed};
  uint32_t* const to[] = {&c->retired.tracked_total, &c->retired.nodelay_forced, &c->retired.setsockopt_overridden,
                          &c->retired.sndbuf_clamped, &c->retired.rcvbuf_clamped, &c->retired.file_calls,
                          &c->retired.file_delayed, &c->retired.file_failed, &c->retired.buf_restored,
                          &c->retired.buf_fixed};
  for (unsigned i = 0; i < sizeof from / sizeof from[0]; ++i)
    __atomic_add_fetch(to[i], __atomic_load_n(from[i], __ATOMIC_ACQUIRE), __ATOMIC_RELAXED);
  if (gone) {
    __atomic_add_fetch(&c->retired_procs, 1u, __ATOMIC_RELAXED);
    if (__atomic_load_n(&p->tracked_total, __ATOMIC_ACQUIRE))
      __atomic_add_fetch(&c->retired_with_sockets, 1u, __ATOMIC_RELAXED);
    if (__atomic_load_n(&p->file_calls, __ATOMIC_ACQUIRE))
      __atomic_add_fetch(&c->retired_with_files, 1u, __ATOMIC_RELAXED);
  }
  {
    unsigned char* b = (unsigned char*)p + sizeof p->pid;
    for (unsigned i = 0; i < sizeof *p - sizeof p->pid; ++i) b[i] = 0;
  }
  __atomic_store_n(&p->pid, 0, __ATOMIC_RELEASE);
  return 1;
}

#endif
