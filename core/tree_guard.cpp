#include "core/tree_guard.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include "core/journal.hpp"
#include "core/process.hpp"

namespace rig {

namespace {

std::string process_line(pid_t pid, unsigned long long start) {
  return journal_line("process", {std::to_string(pid), std::to_string(start)});
}

// Its name now (an exec since its fork renames it), else the one the events gave.
std::string name_now(pid_t pid, const std::string& known) { return proc_events::comm_of(pid).value_or(known); }

}  // namespace

tree_guard::tree_guard() {
  events_ = proc_events::open(&why_not_);
  if (events_) events_->follow({::getpid()});
}

void tree_guard::target_started(pid_t root) {
  if (!events_ || root <= 0) return;
  events_->set_tree_root(root);
  rooted_ = true;
}

std::vector<std::string> tree_guard::newly_escaped(const cgroup& cg) {
  std::vector<std::string> out;
  if (!events_ || !rooted_ || !cg.exists()) return out;
  for (const auto& p : events_->tree()) {
    if (p.start == 0 || journaled_.count(p.pid) || cg.holds(p.pid)) continue;
    if (process_start_time(p.pid) != p.start) continue;  // gone, its pid another's now
    journal::self().record(process_line(p.pid, p.start));
    const std::string name = name_now(p.pid, p.comm);
    journaled_[p.pid] = {p.start, name};
    out.push_back(fmt::format("{} (pid {})", name, p.pid));
  }
  return out;
}

std::vector<std::string> tree_guard::end_escaped(const cgroup& cg) {
  std::vector<std::string> ended;
  if (!events_ || !rooted_ || !cg.exists()) return ended;
  // Every process of the tree outside the cgroup now (what left since the last check too),
  // then those journaled before: each by pid and start time.
  std::map<pid_t, std::pair<unsigned long long, std::string>> outside = journaled_;
  for (const auto& p : events_->tree())
    if (p.start != 0 && !cg.holds(p.pid)) outside.emplace(p.pid, std::pair{p.start, name_now(p.pid, p.comm)});
  for (const auto& [pid, what] : outside) {
    const auto outcome = kill_process_if_same(pid, what.first);
    if (outcome == kill_outcome::killed) ended.push_back(fmt::format("{} (pid {})", what.second, pid));
    if (outcome != kill_outcome::survived && journaled_.count(pid)) journal::self().done(process_line(pid, what.first));
  }
  journaled_.clear();
  return ended;
}

}  // namespace rig
