#pragma once
// pidfds through the system calls: glibc 2.36's <sys/pidfd.h> declares them without C linkage.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace rig {

// A descriptor for process `pid` that stays with that process (its number cannot pass to
// another while it is open); -1 with errno when the process is gone. Close-on-exec.
inline int open_pidfd(pid_t pid) { return int(::syscall(SYS_pidfd_open, pid, 0)); }
// Sends `sig` to the process a pidfd holds; -1 with errno ESRCH once it has exited.
inline int pidfd_signal(int pidfd, int sig) { return int(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0)); }
// A copy, in this process, of descriptor `fd` of the process a pidfd holds (Linux 5.6; needs
// the right to ptrace it: root); -1 with errno. Close-on-exec.
inline int pidfd_getfd(int pidfd, int fd) { return int(::syscall(SYS_pidfd_getfd, pidfd, fd, 0)); }

}  // namespace rig
