#pragma once
// A journal of host changes, written before each is made, so that `rig cleanup` can undo
// them after the rig itself was killed. One file per running rig under the state directory
// (/run/rig, or $RIG_STATE_DIR): journal-<pid>.log, one line per change:
//   cgroup <dir>                 a cgroup directory rig made (undo: move its processes out, rmdir)
//   subtree <top> <controller>   a v2 controller rig handed down at the top (undo: take it back)
//   done <same line>             undone by the rig itself
// A rig that ends normally removes its journal.
#include <sys/types.h>

#include <string>
#include <vector>

namespace rig {

std::string state_dir();  // $RIG_STATE_DIR, else /run/rig

class journal {
 public:
  // The journal of this process; created on the first change.
  static journal& self();
  void record(const std::string& line);  // before the change; flushed to disk
  void done(const std::string& line);    // after it was undone
  void close_clean();                    // every change undone: the file goes
  std::string path() const { return path_; }

 private:
  journal();
  std::string path_;
  int fd_ = -1;
  int open_ = 0;  // changes recorded and not yet done
};

// A journal left by a rig that is no longer running.
struct stale_journal {
  std::string path;
  pid_t pid = 0;
  std::vector<std::string> pending;  // changes never marked done, in the order made
};
std::vector<stale_journal> stale_journals();

// Undoes a stale journal's pending changes in reverse order; returns one line per change
// saying what was done (or why it could not be). The journal file goes when all went.
std::vector<std::string> replay(const stale_journal& j);

}  // namespace rig
