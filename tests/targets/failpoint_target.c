/* A C program that links rig's failpoint library as a shared object (the C ABI): hits
   "c.loop" every millisecond, prints "ready" once started and "errors=N" (fires of action
   error so far) every 100 hits. With argument "fork" it forks first, so two processes of it
   connect to rig's channel; the forked one dies with its parent. With "stop-when-armed" it
   stops itself (SIGSTOP) 200 ms after it sees c.loop armed: a process that no longer answers
   on the channel, as one a debugger holds. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "rig_failpoint.h"

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "fork") == 0) {
    const pid_t parent = getpid();
    const pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0 && (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)) return 1;
  }
  printf("ready\n");
  fflush(stdout);
  const int stop_when_armed = argc > 1 && strcmp(argv[1], "stop-when-armed") == 0;
  long errors = 0, armed_at = 0;
  for (long i = 1;; ++i) {
    struct rig_fp_state st;
    if (stop_when_armed && !armed_at && rig_fp_state_of("c.loop", &st) == 0 && st.action != RIG_FP_OFF) armed_at = i;
    if (armed_at && i == armed_at + 200) raise(SIGSTOP);
    const int e = RIG_FAILPOINT_C("c.loop");
    if (e > 0) ++errors;
    if (i % 100 == 0) {
      printf("errors=%ld\n", errors);
      fflush(stdout);
    }
    usleep(1000);
  }
}
