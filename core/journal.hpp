#pragma once
// A journal of host changes, written before each is made, so that `rig cleanup` can undo
// them after the rig itself was killed. One file per running rig under the state directory
// (/run/rig, or $RIG_STATE_DIR): journal-<pid>.log, one line per change:
//   cgroup <dir>                 a cgroup directory rig made (undo: kill what rig started in it, rmdir)
//   subtree <top> <controller>   a v2 controller rig handed down at the top (undo: take it back)
//   process <pid> <start>        a process rig started, its own group leader; <start> is its start
//                                time (/proc/PID/stat field 22), so a reused pid is left alone
//                                (undo: SIGKILL its process group)
//   netns <inode>                an anonymous network namespace of the run (with the veth in it);
//                                the kernel frees it with its last process (undo: kill what is
//                                still in it, then check that it is gone)
//   file <path>                  a file rig made outside the run directory (undo: unlink)
//   restore <path> <text>        a file rig overwrote, and what it held (undo: write it back)
//   done <same line>             undone by the rig itself
// A rig that ends normally removes its journal.
#include <sys/types.h>

#include <string>
#include <vector>

namespace rig {

std::string state_dir();  // $RIG_STATE_DIR, else /run/rig (root), else $XDG_RUNTIME_DIR/rig or /tmp/rig-UID

class journal {
 public:
  // The journal of this process; created on the first change.
  static journal& self();
  void record(const std::string& line);  // before the change; flushed to disk
  void done(const std::string& line);    // after it was undone
  void close_clean();                    // every change undone: the file goes
  std::string path() const;  // this process's journal file (it may not exist)

 private:
  journal() = default;
  std::string path_;
  pid_t pid_ = 0;  // whose journal is open: a forked child starts its own
  int fd_ = -1;
  int open_ = 0;  // changes recorded and not yet done
};

// The journal line for a process rig started ("process PID START"); empty when it is gone.
std::string process_entry(pid_t pid);
// A process's start time in clock ticks since boot (/proc/PID/stat field 22); 0 when gone.
unsigned long long process_start_time(pid_t pid);

// A journal left by a rig that is no longer running.
struct stale_journal {
  std::string path;
  pid_t pid = 0;
  std::vector<std::string> pending;  // changes never marked done, in the order made
};
std::vector<stale_journal> stale_journals();

// Undoes a stale journal's pending changes in reverse order: one line per change saying
// what was done (or why it could not be). The journal file goes when all were undone.
struct replay_result {
  std::vector<std::string> lines;
  bool complete = true;
};
replay_result replay(const stale_journal& j);

}  // namespace rig
