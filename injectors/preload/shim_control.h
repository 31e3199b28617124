/* Shared between the LD_PRELOAD shim (C) and rig (C++): a small shared-memory page
   rig writes the socket policy into and every shimmed process reports back through.
   All fields are accessed with __atomic builtins on both sides. */
#ifndef RIG_SHIM_CONTROL_H
#define RIG_SHIM_CONTROL_H
#include <stdint.h>

#define RIG_SHIM_MAGIC 0x52494753u /* "RIGS" */
#define RIG_SHIM_VERSION 5u
#define RIG_SHIM_MAX_PROCS 64
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
};

#endif
