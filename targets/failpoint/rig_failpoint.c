/* rig's failpoint library (see rig_failpoint.h). Plain C, so any C or C++ target can link it. */
#define _GNU_SOURCE
#include "rig_failpoint.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/draw.h"

#define MAX_ENTRIES 256

struct rig_fp_entry {
  char name[RIG_FP_NAME_MAX];
  int action;              /* atomic: written last on a change, so a hit sees a whole config */
  uint64_t threshold;      /* atomic: fire when a uniform 64-bit draw is below it; UINT64_MAX: always */
  double probability;      /* as configured, for read-back */
  long long count;         /* atomic: as configured */
  long long left;          /* atomic: fires left when count > 0 */
  long long delay_ns;      /* atomic */
  int error;               /* atomic */
  unsigned long long seed; /* as configured, for read-back */
  uint64_t stream;         /* atomic: the draws' stream, from the seed and the name */
  unsigned long long hits_at_set; /* atomic: hits when the spec was set; a hit's draw is its number since */
  int from_channel;        /* set by rig's channel: turned off when the channel closes */
  unsigned long long hits, fired; /* atomic */
};

int rig_fp_armed_count = 0;
static struct rig_fp_entry entries[MAX_ENTRIES];
static int entry_count = 0; /* atomic: entries [0, entry_count) are complete */
static pthread_mutex_t config_mu = PTHREAD_MUTEX_INITIALIZER;

static struct rig_fp_entry* find_entry(const char* name) {
  const int n = __atomic_load_n(&entry_count, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; ++i)
    if (strcmp(entries[i].name, name) == 0) return &entries[i];
  return NULL;
}

/* Under config_mu. NULL when the table is full or the name too long. */
static struct rig_fp_entry* find_or_add_locked(const char* name) {
  struct rig_fp_entry* e = find_entry(name);
  if (e || strlen(name) >= RIG_FP_NAME_MAX || entry_count == MAX_ENTRIES) return e;
  e = &entries[entry_count];
  strcpy(e->name, name);
  e->threshold = UINT64_MAX;
  e->probability = 1.0;
  e->error = EIO;
  __atomic_store_n(&entry_count, entry_count + 1, __ATOMIC_RELEASE);
  return e;
}

static void recount_armed_locked(void) {
  int armed = 0;
  for (int i = 0; i < entry_count; ++i) armed += __atomic_load_n(&entries[i].action, __ATOMIC_RELAXED) != RIG_FP_OFF;
  __atomic_store_n(&rig_fp_armed_count, armed, __ATOMIC_RELEASE);
}

int rig_fp_eval(rig_fp_site* site) {
  struct rig_fp_entry* e = __atomic_load_n(&site->entry, __ATOMIC_ACQUIRE);
  if (!e) {
    pthread_mutex_lock(&config_mu);
    e = find_or_add_locked(site->name);
    pthread_mutex_unlock(&config_mu);
    if (!e) return 0;
    __atomic_store_n(&site->entry, e, __ATOMIC_RELEASE);
  }
  const unsigned long long hit = __atomic_fetch_add(&e->hits, 1, __ATOMIC_RELAXED);
  const int action = __atomic_load_n(&e->action, __ATOMIC_ACQUIRE);
  if (action == RIG_FP_OFF) return 0;
  const uint64_t threshold = __atomic_load_n(&e->threshold, __ATOMIC_RELAXED);
  /* The n-th hit since the spec was set fires by the n-th draw of the failpoint's stream: the
     same seed fires on the same hit numbers, whichever thread makes them. */
  if (threshold != UINT64_MAX &&
      rig_draw(__atomic_load_n(&e->stream, __ATOMIC_RELAXED), hit - __atomic_load_n(&e->hits_at_set, __ATOMIC_RELAXED)) >=
          threshold)
    return 0;
  if (__atomic_load_n(&e->count, __ATOMIC_RELAXED) > 0) { /* a limited number of fires: take one, or none are left */
    long long left = __atomic_load_n(&e->left, __ATOMIC_RELAXED);
    do {
      if (left <= 0) return 0;
    } while (!__atomic_compare_exchange_n(&e->left, &left, left - 1, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  }
  __atomic_fetch_add(&e->fired, 1, __ATOMIC_RELAXED);
  switch (action) {
    case RIG_FP_THROW:
      return RIG_FP_THROW_REQUESTED;
    case RIG_FP_ERROR:
      return __atomic_load_n(&e->error, __ATOMIC_RELAXED);
    case RIG_FP_DELAY: {
      const long long ns = __atomic_load_n(&e->delay_ns, __ATOMIC_RELAXED);
      struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
      while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
      }
      return 0;
    }
    case RIG_FP_ABORT:
      fprintf(stderr, "rig failpoint: %s fired: abort\n", e->name);
      abort();
  }
  return 0;
}

const char* rig_fp_action_name(int action) {
  switch (action) {
    case RIG_FP_OFF: return "off";
    case RIG_FP_THROW: return "throw";
    case RIG_FP_ERROR: return "error";
    case RIG_FP_DELAY: return "delay";
    case RIG_FP_ABORT: return "abort";
  }
  return "?";
}

/* ---- parsing ---- */

static int fail(char* err, size_t errlen, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char* err, size_t errlen, const char* fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

static int parse_duration_ns(const char* v, long long* out) {
  char* end;
  errno = 0;
  const double x = strtod(v, &end);
  if (end == v || errno || x < 0) return -1;
  double scale;
  if (strcmp(end, "ns") == 0) scale = 1;
  else if (strcmp(end, "us") == 0) scale = 1e3;
  else if (strcmp(end, "ms") == 0) scale = 1e6;
  else if (strcmp(end, "s") == 0) scale = 1e9;
  else return -1;
  if (x * scale > 3600e9) return -1;
  *out = (long long)(x * scale + 0.5);
  return 0;
}

static int parse_errno(const char* v, int* out) {
  char* end;
  const long n = strtol(v, &end, 10);
  if (end != v && *end == 0 && n > 0 && n < 4096) {
    *out = (int)n;
    return 0;
  }
  for (int i = 1; i < 200; ++i) {
    const char* name = strerrorname_np(i);
    if (name && strcmp(name, v) == 0) {
      *out = i;
      return 0;
    }
  }
  return -1;
}

static int parse_action(const char* v) {
  for (int a = RIG_FP_OFF; a <= RIG_FP_ABORT; ++a)
    if (strcmp(v, rig_fp_action_name(a)) == 0) return a;
  return -1;
}

struct parsed_spec {
  int action;
  double probability;
  long long count, delay_ns;
  int error;
  unsigned long long seed;
};

static int parse_spec(const char* name, const char* spec, struct parsed_spec* s, char* err, size_t errlen) {
  char buf[512];
  if (strlen(spec) >= sizeof buf) return fail(err, errlen, "%s: spec too long", name);
  strcpy(buf, spec);
  *s = (struct parsed_spec){RIG_FP_OFF, 1.0, 0, 0, EIO, 0};
  int have_action = 0, have_delay = 0;
  char* save = NULL;
  for (char* w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
    char* eq = strchr(w, '=');
    if (!have_action) {
      if (eq || (s->action = parse_action(w)) < 0)
        return fail(err, errlen, "%s: '%s' is not an action (off, throw, error, delay, abort)", name, w);
      have_action = 1;
      continue;
    }
    if (!eq) return fail(err, errlen, "%s: '%s' is not key=value (p, count, delay, errno, seed)", name, w);
    *eq = 0;
    const char* v = eq + 1;
    char* end;
    if (strcmp(w, "p") == 0) {
      errno = 0;
      double p = strtod(v, &end);
      if (end != v && strcmp(end, "%") == 0) p /= 100, end++;
      if (end == v || *end || errno || !(p >= 0 && p <= 1))
        return fail(err, errlen, "%s: p=%s is not a probability (0..1, or 0%%..100%%)", name, v);
      s->probability = p;
    } else if (strcmp(w, "count") == 0) {
      errno = 0;
      const long long n = strtoll(v, &end, 10);
      if (end == v || *end || errno || n < 0) return fail(err, errlen, "%s: count=%s is not a count (0: no limit)", name, v);
      s->count = n;
    } else if (strcmp(w, "delay") == 0) {
      if (parse_duration_ns(v, &s->delay_ns) != 0)
        return fail(err, errlen, "%s: delay=%s is not a duration with a unit (250us, 20ms, 1s; at most 1h)", name, v);
      have_delay = 1;
    } else if (strcmp(w, "errno") == 0) {
      if (parse_errno(v, &s->error) != 0) return fail(err, errlen, "%s: errno=%s is not an errno name or number", name, v);
    } else if (strcmp(w, "seed") == 0) {
      errno = 0;
      const unsigned long long n = strtoull(v, &end, 10);
      if (end == v || *end || errno || *v == '-') return fail(err, errlen, "%s: seed=%s is not a number (0 .. 2^64-1)", name, v);
      s->seed = n;
    } else {
      return fail(err, errlen, "%s: unknown key '%s' (p, count, delay, errno, seed)", name, w);
    }
  }
  if (!have_action) return fail(err, errlen, "%s: no action (off, throw, error, delay, abort)", name);
  if (s->action == RIG_FP_DELAY && !have_delay) return fail(err, errlen, "%s: action delay needs delay=DURATION", name);
  return 0;
}

static int set_entry(const char* name, const char* spec, int from_channel, char* err, size_t errlen) {
  if (!*name) return fail(err, errlen, "a failpoint needs a name");
  if (strlen(name) >= RIG_FP_NAME_MAX) return fail(err, errlen, "%s: name longer than %d bytes", name, RIG_FP_NAME_MAX - 1);
  struct parsed_spec s;
  if (parse_spec(name, spec, &s, err, errlen) != 0) return -1;
  pthread_mutex_lock(&config_mu);
  struct rig_fp_entry* e = find_or_add_locked(name);
  if (!e) {
    pthread_mutex_unlock(&config_mu);
    return fail(err, errlen, "%s: no room for more than %d failpoints", name, MAX_ENTRIES);
  }
  __atomic_store_n(&e->action, RIG_FP_OFF, __ATOMIC_RELEASE); /* no hit sees half a change */
  e->probability = s.probability;
  __atomic_store_n(&e->threshold, s.probability >= 1 ? UINT64_MAX : (uint64_t)(s.probability * 18446744073709551616.0),
                   __ATOMIC_RELAXED);
  __atomic_store_n(&e->count, s.count, __ATOMIC_RELAXED);
  __atomic_store_n(&e->left, s.count, __ATOMIC_RELAXED);
  __atomic_store_n(&e->delay_ns, s.delay_ns, __ATOMIC_RELAXED);
  __atomic_store_n(&e->error, s.error, __ATOMIC_RELAXED);
  e->seed = s.seed;
  __atomic_store_n(&e->stream, rig_stream_seed(s.seed, name, 0), __ATOMIC_RELAXED);
  __atomic_store_n(&e->hits_at_set, __atomic_load_n(&e->hits, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
  e->from_channel = from_channel;
  __atomic_store_n(&e->action, s.action, __ATOMIC_RELEASE);
  recount_armed_locked();
  pthread_mutex_unlock(&config_mu);
  return 0;
}

int rig_fp_set(const char* name, const char* spec, char* err, size_t errlen) { return set_entry(name, spec, 0, err, errlen); }

static char* trim(char* s) {
  while (*s == ' ' || *s == '\t' || *s == '\n') ++s;
  char* end = s + strlen(s);
  while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n')) *--end = 0;
  return s;
}

int rig_fp_configure(const char* text, char* err, size_t errlen) {
  char* copy = strdup(text);
  if (!copy) return fail(err, errlen, "out of memory");
  int rc = 0;
  char* save = NULL;
  for (char* item = strtok_r(copy, ";", &save); item && rc == 0; item = strtok_r(NULL, ";", &save)) {
    item = trim(item);
    if (!*item) continue;
    char* eq = strchr(item, '=');
    if (!eq) {
      rc = fail(err, errlen, "'%s' is not NAME=ACTION [p=P] [count=N] [delay=D] [errno=E]", item);
      break;
    }
    *eq = 0;
    rc = rig_fp_set(trim(item), trim(eq + 1), err, errlen);
  }
  free(copy);
  return rc;
}

static void disarm(int only_from_channel) {
  pthread_mutex_lock(&config_mu);
  for (int i = 0; i < entry_count; ++i)
    if (!only_from_channel || entries[i].from_channel) __atomic_store_n(&entries[i].action, RIG_FP_OFF, __ATOMIC_RELEASE);
  recount_armed_locked();
  pthread_mutex_unlock(&config_mu);
}

void rig_fp_disarm_all(void) { disarm(0); }

int rig_fp_state_of(const char* name, struct rig_fp_state* out) {
  pthread_mutex_lock(&config_mu);
  struct rig_fp_entry* e = find_entry(name);
  if (e) {
    out->action = __atomic_load_n(&e->action, __ATOMIC_ACQUIRE);
    out->probability = e->probability;
    out->count = e->count;
    out->delay_ns = __atomic_load_n(&e->delay_ns, __ATOMIC_RELAXED);
    out->error = __atomic_load_n(&e->error, __ATOMIC_RELAXED);
    out->hits = __atomic_load_n(&e->hits, __ATOMIC_RELAXED);
    out->fired = __atomic_load_n(&e->fired, __ATOMIC_RELAXED);
    out->seed = e->seed;
  }
  pthread_mutex_unlock(&config_mu);
  return e ? 0 : -1;
}

size_t rig_fp_describe(char* buf, size_t len) {
  size_t need = 0;
  if (len) buf[0] = 0;
  const int n = __atomic_load_n(&entry_count, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; ++i) {
    struct rig_fp_state s;
    if (rig_fp_state_of(entries[i].name, &s) != 0) continue;
    char one[256];
    const int w = snprintf(one, sizeof one, "%s%s action=%s p=%.17g count=%lld delay_ns=%lld errno=%d seed=%llu hits=%llu fired=%llu",
                           i ? "; " : "", entries[i].name, rig_fp_action_name(s.action), s.probability, s.count,
                           s.delay_ns, s.error, s.seed, s.hits, s.fired);
    if (w > 0 && need + (size_t)w < len) memcpy(buf + need, one, (size_t)w + 1);
    need += (size_t)(w > 0 ? w : 0);
  }
  return need;
}

/* ---- the control channel ---- */

static char channel_path[sizeof(((struct sockaddr_un*)0)->sun_path) + 1];

static int send_line(int fd, const char* s) {
  size_t n = strlen(s);
  while (n > 0) {
    const ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    s += w;
    n -= (size_t)w;
  }
  return 0;
}

static int connect_to(const char* path) {
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  const size_t n = strlen(path);
  if (n == 0 || n >= sizeof a.sun_path) return -1;
  memcpy(a.sun_path, path, n);
  socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (path[0] == '@' ? 0 : 1));
  if (path[0] == '@') a.sun_path[0] = 0;
  /* rig listens before it starts the target; a few retries cover a listener not yet ready. */
  for (int attempt = 0; attempt < 250; ++attempt) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr*)&a, alen) == 0) return fd;
    const int e = errno;
    close(fd);
    if (e != ECONNREFUSED && e != ENOENT && e != EAGAIN) return -1;
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return -1;
}

static void reply_to(int fd, char* line) {
  char out[16384];
  char* save = NULL;
  char* cmd = strtok_r(line, " ", &save);
  if (!cmd) cmd = "";
  if (strcmp(cmd, "ping") == 0) {
    snprintf(out, sizeof out, "ok pid=%d\n", (int)getpid());
  } else if (strcmp(cmd, "stats") == 0) {
    memcpy(out, "ok ", 3);
    const size_t need = rig_fp_describe(out + 3, sizeof out - 4);
    if (need >= sizeof out - 4) snprintf(out, sizeof out, "error too many failpoints to describe\n");
    else strcat(out, "\n");
  } else if (strcmp(cmd, "set") == 0) {
    char* name = strtok_r(NULL, " ", &save);
    char* spec = save ? save : "";
    char err[256];
    if (!name) snprintf(out, sizeof out, "error set needs NAME ACTION [p=P] [count=N] [delay=D] [errno=E]\n");
    else if (set_entry(name, spec, 1, err, sizeof err) != 0) snprintf(out, sizeof out, "error %s\n", err);
    else snprintf(out, sizeof out, "ok\n");
  } else {
    snprintf(out, sizeof out, "error unknown command '%s' (ping, set, stats)\n", cmd);
  }
  send_line(fd, out);
}

static void* channel_main(void* arg) {
  (void)arg;
  const int fd = connect_to(channel_path);
  if (fd < 0) {
    fprintf(stderr, "rig failpoint: could not connect to %s: %s; failpoints keep their start configuration\n",
            channel_path, strerror(errno));
    return NULL;
  }
  char hello[64];
  snprintf(hello, sizeof hello, "hello pid=%d\n", (int)getpid());
  send_line(fd, hello);
  char buf[4096];
  size_t have = 0;
  for (;;) {
    const ssize_t r = recv(fd, buf + have, sizeof buf - 1 - have, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    have += (size_t)r;
    buf[have] = 0;
    char* nl;
    while ((nl = memchr(buf, '\n', have))) {
      *nl = 0;
      reply_to(fd, buf);
      const size_t used = (size_t)(nl + 1 - buf);
      memmove(buf, nl + 1, have - used);
      have -= used;
    }
    if (have == sizeof buf - 1) have = 0; /* an over-long line: dropped */
  }
  close(fd);
  disarm(1); /* rig is gone: what it armed does not outlive it */
  return NULL;
}

static int start_channel(void) {
  pthread_t t;
  pthread_attr_t attr;
  sigset_t all, old;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  /* Signals stay with the program's own threads (a sigwait loop must get its SIGTERM). */
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int rc = pthread_create(&t, &attr, channel_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  return rc == 0 ? 0 : -1;
}

int rig_fp_connect(const char* path) {
  if (strlen(path) >= sizeof channel_path) return -1;
  strcpy(channel_path, path);
  return start_channel();
}

static void after_fork_in_child(void) {
  if (channel_path[0]) start_channel(); /* each process of the target gets its own connection */
}

__attribute__((constructor)) static void configure_from_environment(void) {
  const char* config = getenv(RIG_FP_ENV_CONFIG);
  if (config && *config) {
    char err[256];
    if (rig_fp_configure(config, err, sizeof err) != 0) fprintf(stderr, "rig failpoint: %s: %s\n", RIG_FP_ENV_CONFIG, err);
  }
  const char* path = getenv(RIG_FP_ENV_SOCKET);
  if (path && *path) {
    if (rig_fp_connect(path) != 0) fprintf(stderr, "rig failpoint: %s=%s: cannot start the channel\n", RIG_FP_ENV_SOCKET, path);
    pthread_atfork(NULL, NULL, after_fork_in_child);
  }
}
