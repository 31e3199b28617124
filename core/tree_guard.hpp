#pragma once
// The target's process tree beyond its cgroup. A process of the tree running as root can write
// itself into another cgroup (any hierarchy's root included) and so leave the directory that
// ends the tree with the run. The kernel's process events name every process forked in the
// tree from the target's own fork on, wherever it goes: one found outside the run's cgroup is
// journaled at once (so `rig cleanup` ends it after a killed rig), said as an `escaped` event,
// and ended with the run, by pid and start time (a pid reused meanwhile is left alone).
// What is not covered: a process that leaves and is not yet seen outside (checked about every
// 200 ms while the phases run) when rig itself is SIGKILLed; a host without the events (not
// root, or rig in a network namespace other than the host's first).
#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/cgroup.hpp"
#include "core/proc_events.hpp"

namespace rig {

class tree_guard {
 public:
  // Follows rig's own forks from now on: made before the target starts (it is one of them).
  // Without the events, events() is null and why_not() says why.
  tree_guard();
  tree_guard(const tree_guard&) = delete;
  tree_guard& operator=(const tree_guard&) = delete;

  proc_events* events() const { return events_.get(); }
  const std::string& why_not() const { return why_not_; }
  // The target's pid, as soon as it is known.
  void target_started(pid_t root);
  // The processes of the tree found outside the run's cgroup since the last call, each journaled
  // before this returns: "name (pid N)".
  std::vector<std::string> newly_escaped(const cgroup& cg);
  // Ends every process of the tree outside the cgroup (the journaled ones, and any since): what
  // was ended, "name (pid N)".
  std::vector<std::string> end_escaped(const cgroup& cg);

 private:
  std::unique_ptr<proc_events> events_;
  std::string why_not_;
  bool rooted_ = false;
  std::map<pid_t, std::pair<unsigned long long, std::string>> journaled_;  // pid -> start, name
};

}  // namespace rig
