#pragma once
// A journal of host changes, written before each is made, so that `rig cleanup` can undo
// them after the rig itself was killed. One file per running rig in the state directory
// (/run/rig, or $RIG_STATE_DIR): journal-<pid>-<start>.log, named by the rig's pid and start
// time so that a reused pid never makes a dead rig's journal look alive. The first line says
// whose it is; then one record per change, its fields separated by one space and
// percent-encoded (so no byte of a path, a space or a newline, can change a record):
//   rig-journal 2 <pid> <start>  the rig that writes it
//   cgroup <dir>                 a cgroup directory of the run, <mount>/rig/run-<pid>-<start>-<n>
//                                (undo: kill everything in it, then rmdir)
//   subtree <top> <controller>   a v2 controller rig handed down at the top (undo: take it back)
//   process <pid> <start>        a process rig started; <start> is its start time (/proc/PID/stat
//                                field 22): a reused pid is left alone (undo: SIGKILL that process)
//   netns <inode>                a network namespace of the run; the kernel frees it with its last
//                                process, and hands its inode number to the next namespace at
//                                once, so the number alone proves nothing (undo: none; says whether
//                                one with that number is still held)
//   file <path>                  a socket rig made in the state directory (undo: unlink)
//   restore <path> <text>        a cpufreq file rig overwrote, and what it held (undo: write it back)
//   done <same record>           undone by the rig itself
// Replay treats every record as data with a closed domain: one that names anything rig could
// not have made (a directory outside rig/ on a cgroupfs, a file outside the state directory,
// pid 0 or 1, a restore to a file that is not cpufreq's) is refused with its line number.
// A rig that ends normally removes its journal.
#include <sys/types.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/fd.hpp"

namespace rig {

// $RIG_STATE_DIR, else /run/rig (root), else $XDG_RUNTIME_DIR/rig or /tmp/rig-UID.
std::string state_dir();
// The state directory, made 0700 when absent and checked before every use: a directory (not a
// symlink), owned by the effective user, writable by no one else. Throws naming the directory
// and what is wrong with it.
unique_fd open_state_dir(bool create);

// One field of a record, percent-encoded: bytes up to ' ', '%' and from 0x7f on become %XX.
std::string encode_field(std::string_view raw);
// The reverse; nullopt for a malformed escape.
std::optional<std::string> decode_field(std::string_view text);
// A record: its kind and its fields, each encoded.
std::string journal_line(std::string_view kind, std::initializer_list<std::string_view> fields);

// A process's start time in clock ticks since boot (/proc/PID/stat field 22); 0 when gone.
unsigned long long process_start_time(pid_t pid);
// The record of a process rig started ("process PID START"); empty when it is gone.
std::string process_entry(pid_t pid);
// The name of a run's cgroup directory: run-<pid>-<start>-<n>, tied to this rig's journal.
std::string run_cgroup_name(int n);

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
  pid_t pid_ = 0;  // whose journal is open: a forked child starts its own
  int fd_ = -1;
  int open_ = 0;  // changes recorded and not yet done
};

// A journal left by a rig that is no longer running (its pid is gone, or is another process).
struct stale_journal {
  std::string path;
  pid_t pid = 0;
  unsigned long long start = 0;
  struct record {
    int line = 0;      // in the file, from 1
    std::string text;  // as written
  };
  std::vector<record> pending;  // changes never marked done, in the order made
  std::string problem;          // set when the file cannot be read as a journal (then pending is empty)
};
std::vector<stale_journal> stale_journals();

// Undoes a stale journal's pending changes in reverse order: one line per change saying
// what was done (or why it was not). The journal file goes when all were undone; a record
// refused as outside rig's domain keeps it, and makes the replay incomplete.
struct replay_result {
  std::vector<std::string> lines;
  bool complete = true;
};
replay_result replay(const stale_journal& j);

}  // namespace rig
