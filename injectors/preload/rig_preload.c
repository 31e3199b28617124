/* rig's LD_PRELOAD shim: reaches inside an unmodified program to force TCP_NODELAY off
   and clamp SO_SNDBUF/SO_RCVBUF, as rig's control page says, on the program's TCP
   sockets — those open now and those it opens later — to delay or fail fsync, write and
   read on files under a path, and reports what it touched.
   Inert when the program was not started by rig with a control page. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "core/draw.h"
#include "shim_control.h"

#define MAX_FDS 65536

/* setsockopt(SOL_SOCKET, SO_BUF_LOCK, mask) (Linux 5.14): which of the socket's buffer sizes
   are fixed. SO_SNDBUF / SO_RCVBUF fix theirs, switching the kernel's autotuning off for the
   socket's life; clearing the bit hands the size back to it. */
#ifndef SO_BUF_LOCK
#define SO_BUF_LOCK 72
#endif
#define BUF_LOCK_SND 1
#define BUF_LOCK_RCV 2

struct fd_state {
  uint8_t tcp;          /* a TCP socket we track */
  int8_t app_nodelay;   /* the program's own TCP_NODELAY choice (-1: never set) */
  int32_t app_sndbuf;   /* the program's own SO_SNDBUF ask (0: never set) */
  int32_t app_rcvbuf;
  int32_t orig_sndbuf;  /* the size before the shim first clamped it (0: not clamped) */
  int32_t orig_rcvbuf;
  uint32_t fault_gen;   /* the fault configuration fault_match was decided under (0: never) */
  uint8_t fault_match;  /* the fd is a file under the fault prefix */
  uint8_t under_cap;    /* a buffer cap was in force while the fd was tracked: its revert is owed */
};

/* The file-fault configuration, copied from the control page by the watcher when the
   generation changes; published as an immutable object (old ones are kept: a phase
   change leaks a few hundred bytes, and no reader can see a freed one). */
struct fault_cfg {
  uint32_t gen, ops, ppm;
  int32_t err;
  int64_t delay_ns;
  uint64_t stream;         /* the draws' stream, from the run's seed */
  uint64_t draws;          /* atomic: calls that rolled the dice under this configuration */
  size_t prefix_len;
  char prefix[RIG_SHIM_PREFIX_MAX];
};
static struct fault_cfg* faults;

static struct rig_shim_control* ctl;
static struct rig_shim_proc* me;
static struct fd_state* fds;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t watcher;
static int watcher_running;

static int (*real_socket)(int, int, int);
static int (*real_accept)(int, struct sockaddr*, socklen_t*);
static int (*real_accept4)(int, struct sockaddr*, socklen_t*, int);
static int (*real_setsockopt)(int, int, int, const void*, socklen_t);
static int (*real_close)(int);

static uint32_t load(const uint32_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static int32_t load_i(const int32_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void store(uint32_t* p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static void bump(uint32_t* p) { __atomic_add_fetch(p, 1, __ATOMIC_RELAXED); }

static void note_image(struct rig_shim_proc* p) {
  struct stat st;
  if (stat("/proc/self/exe", &st) != 0) return;
  __atomic_store_n(&p->exe_dev, (uint64_t)st.st_dev, __ATOMIC_RELEASE);
  __atomic_store_n(&p->exe_ino, (uint64_t)st.st_ino, __ATOMIC_RELEASE);
}

static int take_free_slot(int32_t pid) {
  for (int i = 0; i < RIG_SHIM_MAX_PROCS; ++i) {
    int32_t expected = 0;
    struct rig_shim_proc* p = &ctl->procs[i];
    if (__atomic_compare_exchange_n(&p->pid, &expected, pid, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      memset((char*)p + sizeof p->pid, 0, sizeof *p - sizeof p->pid);
      note_image(p);
      me = p;
      return 1;
    }
  }
  return 0;
}

static void claim_slot(void) {
  me = NULL;
  const int saved_errno = errno;
  const int32_t pid = (int32_t)getpid();
  /* A slot with our pid is this process before an exec (a wrapper: env, taskset, sh -c exec)
     or a dead process whose pid we were given: either way its counts are kept (folded in with
     the retired ones) and a fresh slot is ours, the image before the exec answering no more. */
  int execd = 0;
  for (int i = 0; i < RIG_SHIM_MAX_PROCS; ++i) {
    struct rig_shim_proc* p = &ctl->procs[i];
    if (__atomic_load_n(&p->pid, __ATOMIC_ACQUIRE) == pid) execd |= rig_shim_retire(ctl, p, pid, 0);
  }
  if (!take_free_slot(pid)) {
    /* Every slot taken: free those whose processes are gone (rig does so when it reads them),
       then try again; else this process's counts are missing, and said to be. */
    for (int i = 0; i < RIG_SHIM_MAX_PROCS; ++i) {
      struct rig_shim_proc* p = &ctl->procs[i];
      const int32_t other = __atomic_load_n(&p->pid, __ATOMIC_ACQUIRE);
      if (other > 0 && kill(other, 0) != 0 && errno == ESRCH) rig_shim_retire(ctl, p, other, 1);
    }
    if (!take_free_slot(pid)) {
      __atomic_add_fetch(&ctl->slotless, 1u, __ATOMIC_RELAXED);
      errno = saved_errno;
      return;
    }
  }
  if (execd) __atomic_store_n(&me->execs, 1u, __ATOMIC_RELEASE);
  errno = saved_errno;
}

static int get_int(int fd, int level, int name, int* out) {
  socklen_t len = sizeof *out;
  return getsockopt(fd, level, name, out, &len);
}

/* Applies the current policy to one tracked socket; returns 1 if it reads back as asked. */
static int apply_fd(int fd, int32_t nodelay, int32_t sndbuf, int32_t rcvbuf) {
  struct fd_state* s = &fds[fd];
  int ok = 1, v = 0;
  const int want_nodelay = nodelay != RIG_SHIM_LEAVE ? nodelay : (s->app_nodelay > 0 ? 1 : 0);
  if (get_int(fd, IPPROTO_TCP, TCP_NODELAY, &v) == 0 && (v != 0) != want_nodelay) {
    real_setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &want_nodelay, sizeof want_nodelay);
    if (nodelay == 0 && me) bump(&me->nodelay_forced);
  }
  ok &= get_int(fd, IPPROTO_TCP, TCP_NODELAY, &v) == 0 && (v != 0) == want_nodelay;
  struct { int32_t cap; int32_t* orig; int32_t app; int name; uint32_t* counter; } bufs[2] = {
      {sndbuf, &s->orig_sndbuf, s->app_sndbuf, SO_SNDBUF, me ? &me->sndbuf_clamped : NULL},
      {rcvbuf, &s->orig_rcvbuf, s->app_rcvbuf, SO_RCVBUF, me ? &me->rcvbuf_clamped : NULL}};
  int reverted = 0, back_bytes = 0;
  for (int i = 0; i < 2; ++i) {
    if (bufs[i].cap != RIG_SHIM_LEAVE) {
      int want = bufs[i].cap;
      if (bufs[i].app > 0 && bufs[i].app < want) want = bufs[i].app;
      if (get_int(fd, SOL_SOCKET, bufs[i].name, &v) == 0 && v > 2 * (want < 2304 ? 2304 : want)) {
        if (*bufs[i].orig == 0) *bufs[i].orig = v / 2;  /* the size before the first clamp */
        real_setsockopt(fd, SOL_SOCKET, bufs[i].name, &want, sizeof want);
        if (bufs[i].counter) bump(bufs[i].counter);
      }
      ok &= get_int(fd, SOL_SOCKET, bufs[i].name, &v) == 0 && v <= 2 * (want < 2304 ? 2304 : want);
    } else if (*bufs[i].orig > 0) {
      /* Reverted: back to the size it had before the clamp (or the program's own ask). */
      int back = bufs[i].app > 0 ? bufs[i].app : *bufs[i].orig;
      real_setsockopt(fd, SOL_SOCKET, bufs[i].name, &back, sizeof back);
      *bufs[i].orig = 0;
      reverted = 1;
      if (back > back_bytes) back_bytes = back;
    }
  }
  /* The clamp fixed the sizes it set, and a listener's clamp passed to every socket accepted from
     it: hand them back to the kernel's autotuning, keeping fixed only what the program fixed. */
  const int own_locks = (s->app_sndbuf > 0 ? BUF_LOCK_SND : 0) | (s->app_rcvbuf > 0 ? BUF_LOCK_RCV : 0);
  if (sndbuf != RIG_SHIM_LEAVE || rcvbuf != RIG_SHIM_LEAVE) {
    s->under_cap = 1;
  } else if (s->under_cap) {
    s->under_cap = 0;
    int locks = 0;
    if (get_int(fd, SOL_SOCKET, SO_BUF_LOCK, &locks) == 0) {
      if (locks & ~own_locks) {
        const int unlocked = real_setsockopt(fd, SOL_SOCKET, SO_BUF_LOCK, &own_locks, sizeof own_locks) == 0;
        if (me) bump(unlocked ? &me->buf_restored : &me->buf_fixed);
      }
    } else if (reverted && me) { /* a kernel without SO_BUF_LOCK: the old size, fixed */
      bump(&me->buf_fixed);
      if (back_bytes > load_i(&me->buf_fixed_bytes)) __atomic_store_n(&me->buf_fixed_bytes, back_bytes, __ATOMIC_RELEASE);
    }
  }
  /* Read back, policy off: no lock of rig's left (where the kernel can say). */
  if (sndbuf == RIG_SHIM_LEAVE && rcvbuf == RIG_SHIM_LEAVE && get_int(fd, SOL_SOCKET, SO_BUF_LOCK, &v) == 0)
    ok &= (v & ~own_locks) == 0;
  return ok;
}

/* A new configuration only when rig changed the file faults (their own generation): a policy
   change or a read-back of the counters keeps the configuration and where its draws are, so
   the n-th call since the fault was applied draws the n-th number however often rig looks. */
static void load_faults(void) {
  const uint32_t ops = load(&ctl->fault_ops), gen = load(&ctl->fault_generation);
  const struct fault_cfg* cur = __atomic_load_n(&faults, __ATOMIC_ACQUIRE);
  if (!ops && !cur) return;
  if (!ops) {
    __atomic_store_n(&faults, (struct fault_cfg*)NULL, __ATOMIC_RELEASE);
    return;
  }
  if (cur && cur->gen == gen) return;
  struct fault_cfg* c = calloc(1, sizeof *c);  /* kept once published: a reader may hold it */
  if (!c) return;
  c->gen = gen;
  c->ops = ops;
  c->ppm = load(&ctl->fault_ppm);
  c->err = load_i(&ctl->fault_errno);
  c->delay_ns = __atomic_load_n(&ctl->fault_delay_ns, __ATOMIC_ACQUIRE);
  c->stream = rig_stream_seed(__atomic_load_n(&ctl->fault_seed, __ATOMIC_ACQUIRE), "file_faults", 0);
  memcpy(c->prefix, ctl->fault_prefix, sizeof c->prefix);
  c->prefix[sizeof c->prefix - 1] = 0;
  c->prefix_len = strlen(c->prefix);
  /* Dormant, several threads may load at once (their file calls): one configuration wins. */
  struct fault_cfg* expected = (struct fault_cfg*)cur;
  if (!__atomic_compare_exchange_n(&faults, &expected, c, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) free(c);
}

static void apply_all(void) {
  if (!ctl || !fds) return;
  const uint32_t gen = load(&ctl->generation);
  load_faults();
  const int32_t nodelay = load_i(&ctl->nodelay), sndbuf = load_i(&ctl->sndbuf), rcvbuf = load_i(&ctl->rcvbuf);
  uint32_t sockets = 0, matching = 0;
  pthread_mutex_lock(&mu);
  int listening = 0;
  for (int fd = 0; fd < MAX_FDS; ++fd)
    if (fds[fd].tcp) {
      /* Listeners take the policy too (accepted sockets inherit it) but are not counted. */
      const int ok = apply_fd(fd, nodelay, sndbuf, rcvbuf);
      if (get_int(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening) == 0 && listening) continue;
      ++sockets;
      matching += (uint32_t)ok;
    }
  pthread_mutex_unlock(&mu);
  if (me) {
    store(&me->sockets, sockets);
    store(&me->matching, matching);
    store(&me->applied_generation, gen);
  }
}

static void* watch(void* arg) {
  (void)arg;
  uint32_t seen = (uint32_t)-1;
  const struct timespec tick = {0, 10 * 1000 * 1000};
  for (;;) {
    const uint32_t gen = load(&ctl->generation);
    if (gen != seen) {
      apply_all();
      seen = gen;
    }
    nanosleep(&tick, NULL);
  }
  return NULL;
}

static void start_watcher(void) {
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&a, 64 * 1024);
  __atomic_store_n(&watcher_running, pthread_create(&watcher, &a, watch, NULL) == 0, __ATOMIC_RELEASE);
  pthread_attr_destroy(&a);
}

/* The watcher starts with the process's first TCP socket, not at load: until then there is
   nothing to apply, and a program that changes its credentials first (setpriv, su, runuser,
   gosu: setresuid with PR_SET_KEEPCAPS, capset on its own thread, then setresgid) would have
   glibc abort when the shim's thread, without that capability, fails the setresgid. */
static int watcher_wanted;
static void ensure_watcher(void) {
  if (!ctl || __atomic_exchange_n(&watcher_wanted, 1, __ATOMIC_ACQ_REL)) return;
  start_watcher();
  if (__atomic_load_n(&watcher_running, __ATOMIC_ACQUIRE) && me) store(&me->dormant, 0u);
}

static void go_dormant(void) {
  __atomic_store_n(&watcher_running, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&watcher_wanted, 0, __ATOMIC_RELEASE);
  if (me) store(&me->dormant, 1u);
}

static void after_fork_child(void) {
  if (!ctl) return;
  pthread_mutex_init(&mu, NULL);
  claim_slot();
  go_dormant();  /* threads do not survive fork */
  for (int fd = 0; fd < MAX_FDS; ++fd)
    if (fds[fd].tcp) {  /* the sockets it inherited: the watcher applies the policy to them */
      ensure_watcher();
      break;
    }
}

__attribute__((constructor)) static void rig_shim_init(void) {
  real_socket = dlsym(RTLD_NEXT, "socket");
  real_accept = dlsym(RTLD_NEXT, "accept");
  real_accept4 = dlsym(RTLD_NEXT, "accept4");
  real_setsockopt = dlsym(RTLD_NEXT, "setsockopt");
  real_close = dlsym(RTLD_NEXT, "close");
  const char* env = getenv(RIG_SHIM_FD_ENV);
  if (!env) return;
  const int cfd = atoi(env);
  struct stat st;
  if (cfd < 0 || fstat(cfd, &st) != 0 || (size_t)st.st_size < sizeof(struct rig_shim_control)) return;
  void* m = mmap(NULL, sizeof(struct rig_shim_control), PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
  /* The descriptor and RIG_SHIM_FD stay: a wrapper (env, taskset, nice, numactl, sh -c exec,
     a script) execs the real server, whose own copy of the shim maps the page through them.
     The fd is left open across exec on purpose; everything else of rig's is close-on-exec. */
  if (m == MAP_FAILED) return;
  struct rig_shim_control* c = m;
  if (c->magic != RIG_SHIM_MAGIC || c->version != RIG_SHIM_VERSION) {
    munmap(m, sizeof *c);
    return;
  }
  fds = calloc(MAX_FDS, sizeof *fds);
  if (!fds) return;
  ctl = c;
  claim_slot();
  pthread_atfork(NULL, NULL, after_fork_child);
  go_dormant();  /* until its first TCP socket */
}

/* from: the listener an accepted socket came from (it inherits the sizes and locks the program
   set there), or -1. */
static void track(int fd, int from) {
  if (!ctl || fd < 0 || fd >= MAX_FDS) return;
  pthread_mutex_lock(&mu);
  memset(&fds[fd], 0, sizeof fds[fd]);
  fds[fd].tcp = 1;
  fds[fd].app_nodelay = -1;
  if (from >= 0 && from < MAX_FDS) {
    fds[fd].app_sndbuf = fds[from].app_sndbuf;
    fds[fd].app_rcvbuf = fds[from].app_rcvbuf;
  }
  if (me) bump(&me->tracked_total);
  apply_fd(fd, load_i(&ctl->nodelay), load_i(&ctl->sndbuf), load_i(&ctl->rcvbuf));
  pthread_mutex_unlock(&mu);
  ensure_watcher();
}

static int is_tcp(int domain, int type) {
  return (domain == AF_INET || domain == AF_INET6) && (type & 0xf) == SOCK_STREAM;
}

int socket(int domain, int type, int protocol) {
  if (!real_socket) real_socket = dlsym(RTLD_NEXT, "socket");
  const int fd = real_socket(domain, type, protocol);
  if (fd >= 0 && is_tcp(domain, type)) track(fd, -1);
  return fd;
}

static int tracked(int fd) { return ctl && fd >= 0 && fd < MAX_FDS && fds[fd].tcp; }

int accept(int s, struct sockaddr* addr, socklen_t* len) {
  if (!real_accept) real_accept = dlsym(RTLD_NEXT, "accept");
  const int fd = real_accept(s, addr, len);
  if (fd >= 0 && tracked(s)) track(fd, s);
  return fd;
}

int accept4(int s, struct sockaddr* addr, socklen_t* len, int flags) {
  if (!real_accept4) real_accept4 = dlsym(RTLD_NEXT, "accept4");
  const int fd = real_accept4(s, addr, len, flags);
  if (fd >= 0 && tracked(s)) track(fd, s);
  return fd;
}

int setsockopt(int fd, int level, int name, const void* val, socklen_t len) {
  if (!real_setsockopt) real_setsockopt = dlsym(RTLD_NEXT, "setsockopt");
  if (!tracked(fd) || !val || len < (socklen_t)sizeof(int)) return real_setsockopt(fd, level, name, val, len);
  int v;
  memcpy(&v, val, sizeof v);
  pthread_mutex_lock(&mu);
  struct fd_state* s = &fds[fd];
  const int32_t nodelay = load_i(&ctl->nodelay), sndbuf = load_i(&ctl->sndbuf), rcvbuf = load_i(&ctl->rcvbuf);
  int forced = v, override = 0;
  if (level == IPPROTO_TCP && name == TCP_NODELAY) {
    s->app_nodelay = v != 0;
    if (nodelay != RIG_SHIM_LEAVE && (v != 0) != nodelay) forced = nodelay, override = 1;
  } else if (level == SOL_SOCKET && name == SO_SNDBUF) {
    s->app_sndbuf = v;
    if (sndbuf != RIG_SHIM_LEAVE && v > sndbuf) forced = sndbuf, override = 1;
  } else if (level == SOL_SOCKET && name == SO_RCVBUF) {
    s->app_rcvbuf = v;
    if (rcvbuf != RIG_SHIM_LEAVE && v > rcvbuf) forced = rcvbuf, override = 1;
  }
  pthread_mutex_unlock(&mu);
  if (override && me) bump(&me->setsockopt_overridden);
  return real_setsockopt(fd, level, name, override ? (const void*)&forced : val, override ? sizeof forced : len);
}

/* The fd's path no longer holds: decide again on its next call. */
static void forget_fd(int fd) {
  if (ctl && fds && fd >= 0 && fd < MAX_FDS) __atomic_store_n(&fds[fd].fault_gen, 0u, __ATOMIC_RELAXED);
}

int close(int fd) {
  if (!real_close) real_close = dlsym(RTLD_NEXT, "close");
  if (tracked(fd)) {
    pthread_mutex_lock(&mu);
    fds[fd].tcp = 0;
    pthread_mutex_unlock(&mu);
  }
  forget_fd(fd);
  return real_close(fd);
}

int dup2(int from, int to) {
  static int (*real)(int, int);
  if (!real) real = dlsym(RTLD_NEXT, "dup2");
  forget_fd(to);
  return real(from, to);
}

int dup3(int from, int to, int flags) {
  static int (*real)(int, int, int);
  if (!real) real = dlsym(RTLD_NEXT, "dup3");
  forget_fd(to);
  return real(from, to, flags);
}

/* The fault's dice: the n-th call under a configuration (in this process) draws the n-th number
   of the run's stream, whichever thread makes it; uniform over [0, 1000000). */
static uint32_t roll_ppm(struct fault_cfg* c) {
  const uint64_t x = rig_draw(c->stream, __atomic_fetch_add(&c->draws, 1, __ATOMIC_RELAXED));
  return (uint32_t)(((x >> 32) * 1000000u) >> 32);
}

/* Before a call of kind `op` on fd: 0 to go on, -1 (errno set) to fail it. Costs one
   atomic load while no file faults are configured. */
static int file_fault(int fd, uint32_t op) {
  if (ctl && !__atomic_load_n(&watcher_running, __ATOMIC_ACQUIRE)) load_faults();  /* dormant: no watcher loads them (a few loads when unchanged) */
  struct fault_cfg* c = __atomic_load_n(&faults, __ATOMIC_ACQUIRE);
  if (!c || !(c->ops & op) || !fds || fd < 0 || fd >= MAX_FDS) return 0;
  struct fd_state* st = &fds[fd];
  if (__atomic_load_n(&st->fault_gen, __ATOMIC_RELAXED) != c->gen) {
    char link[32], path[RIG_SHIM_PREFIX_MAX + 1];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t n = readlink(link, path, sizeof path - 1);
    path[n > 0 ? n : 0] = 0;
    st->fault_match = n > 0 && (size_t)n >= c->prefix_len && strncmp(path, c->prefix, c->prefix_len) == 0;
    __atomic_store_n(&st->fault_gen, c->gen, __ATOMIC_RELAXED);
  }
  if (!st->fault_match) return 0;
  if (me) bump(&me->file_calls);
  if (roll_ppm(c) >= c->ppm) return 0;
  if (c->delay_ns > 0) {
    struct timespec d = {(time_t)(c->delay_ns / 1000000000), (long)(c->delay_ns % 1000000000)};
    while (nanosleep(&d, &d) != 0 && errno == EINTR) {
    }
    if (me) bump(&me->file_delayed);
  }
  if (c->err) {
    if (me) bump(&me->file_failed);
    errno = c->err;
    return -1;
  }
  return 0;
}

#define REAL(name)                          \
  static __typeof__(&name) real_##name;     \
  if (!real_##name) real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

int fsync(int fd) {
  REAL(fsync);
  return file_fault(fd, RIG_SHIM_OP_FSYNC) ? -1 : real_fsync(fd);
}

int fdatasync(int fd) {
  REAL(fdatasync);
  return file_fault(fd, RIG_SHIM_OP_FSYNC) ? -1 : real_fdatasync(fd);
}

ssize_t write(int fd, const void* buf, size_t n) {
  REAL(write);
  return file_fault(fd, RIG_SHIM_OP_WRITE) ? -1 : real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t at) {
  REAL(pwrite);
  return file_fault(fd, RIG_SHIM_OP_WRITE) ? -1 : real_pwrite(fd, buf, n, at);
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t at) {
  REAL(pwrite64);
  return file_fault(fd, RIG_SHIM_OP_WRITE) ? -1 : real_pwrite64(fd, buf, n, at);
}

ssize_t writev(int fd, const struct iovec* iov, int n) {
  REAL(writev);
  return file_fault(fd, RIG_SHIM_OP_WRITE) ? -1 : real_writev(fd, iov, n);
}

ssize_t read(int fd, void* buf, size_t n) {
  REAL(read);
  return file_fault(fd, RIG_SHIM_OP_READ) ? -1 : real_read(fd, buf, n);
}

ssize_t pread(int fd, void* buf, size_t n, off_t at) {
  REAL(pread);
  return file_fault(fd, RIG_SHIM_OP_READ) ? -1 : real_pread(fd, buf, n, at);
}

ssize_t pread64(int fd, void* buf, size_t n, off64_t at) {
  REAL(pread64);
  return file_fault(fd, RIG_SHIM_OP_READ) ? -1 : real_pread64(fd, buf, n, at);
}

ssize_t readv(int fd, const struct iovec* iov, int n) {
  REAL(readv);
  return file_fault(fd, RIG_SHIM_OP_READ) ? -1 : real_readv(fd, iov, n);
}
