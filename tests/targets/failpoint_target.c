/* A C program that links rig's failpoint library as a shared object (the C ABI): hits
   "c.loop" every millisecond, prints "ready" once started and "errors=N" (fires of action
   error so far) every 100 hits. With argument "fork" it forks first, so two processes of it
   connect to rig's channel; the forked one dies with its parent. */
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
  long errors = 0;
  for (long i = 1;; ++i) {
    const int e = RIG_FAILPOINT_C("c.loop");
    if (e > 0) ++errors;
    if (i % 100 == 0) {
      printf("errors=%ld\n", errors);
      fflush(stdout);
    }
    usleep(1000);
  }
}
