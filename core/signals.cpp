#include "core/signals.hpp"

#include <pthread.h>
#include <signal.h>

namespace rig {

namespace {
sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}
// Both pending (a SIGTERM, then a SIGINT before rig looked): the kernel hands the lower number
// first, SIGINT, though SIGTERM came first. Which came first it does not keep, so SIGTERM, the
// request to end, is the answer whenever it is there: taken too, so it is not answered twice.
int prefer_sigterm(int sig) {
  if (sig != SIGINT) return sig;
  sigset_t pending;
  if (sigpending(&pending) != 0 || !sigismember(&pending, SIGTERM)) return sig;
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  const timespec now{0, 0};
  return sigtimedwait(&term, nullptr, &now) == SIGTERM ? SIGTERM : sig;
}
}  // namespace

void block_stop_signals() {
  sigset_t set = stop_signals();
  sigaddset(&set, SIGCHLD);  // taken by wait_stop_signal(.., true); its default action is to ignore it
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int wait_stop_signal(int64_t timeout_ns, bool wake_on_child) {
  sigset_t set = stop_signals();
  if (wake_on_child) sigaddset(&set, SIGCHLD);
  if (timeout_ns < 0) {
    int sig = 0;
    while (sigwait(&set, &sig) == 0)
      if (sig != SIGCHLD) return prefer_sigterm(sig);
    return 0;
  }
  const timespec ts{time_t(timeout_ns / 1'000'000'000), long(timeout_ns % 1'000'000'000)};
  const int sig = sigtimedwait(&set, nullptr, &ts);
  return sig > 0 && sig != SIGCHLD ? prefer_sigterm(sig) : 0;
}

}  // namespace rig
