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
      if (sig != SIGCHLD) return sig;
    return 0;
  }
  const timespec ts{time_t(timeout_ns / 1'000'000'000), long(timeout_ns % 1'000'000'000)};
  const int sig = sigtimedwait(&set, nullptr, &ts);
  return sig > 0 && sig != SIGCHLD ? sig : 0;
}

}  // namespace rig
