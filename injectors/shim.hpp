#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/socket_policy.hpp"

struct rig_shim_control;

namespace rig {

// rig's side of the LD_PRELOAD shim: a shared-memory control page (a memfd, so nothing
// is left on disk) that the target inherits. Policies written here reach the sockets of
// every process of the target that loaded the shim, open ones included.
class preload_shim final : public socket_tunable {
 public:
  preload_shim();
  ~preload_shim() override;
  preload_shim(const preload_shim&) = delete;
  preload_shim& operator=(const preload_shim&) = delete;

  int control_fd() const { return fd_; }
  // The target's processes, once it runs: the ones serving its port (an injection counts as
  // landed only when the shim answered in each) and the whole tree (the rest named when missed).
  void watch_target(std::function<std::vector<pid_t>()> serving, std::function<std::vector<pid_t>()> tree) {
    serving_ = std::move(serving);
    tree_ = std::move(tree);
  }
  // Environment additions for the target: LD_PRELOAD (prepended to any it had) and the fd number.
  std::vector<std::string> environment(const std::string& library) const;

  // File faults in the target: on calls of the kinds in `ops` (RIG_SHIM_OP_* bits) on files
  // whose path starts with `prefix`, with probability `probability`: a delay, then a failure
  // with `error` (0: none); the n-th matching call of a process draws the n-th number of the
  // stream of `seed` (core/draw.h). ops 0 turns them off. Returns once every process applied it;
  // counters: file_calls, file_delayed, file_failed, processes.
  socket_report set_file_faults(uint32_t ops, const std::string& prefix, double probability, int64_t delay_ns,
                                int error, uint64_t seed = 0);
  socket_report file_fault_report() { return publish_and_wait(); }

  socket_report set_socket_policy(const socket_policy& p) override;
  socket_report check_socket_policy(const socket_policy& p) override;
  socket_policy socket_policy_now() override;
  void reset_socket_policy(const socket_policy& prior) override;

 private:
  socket_report publish_and_wait();
  void check_reach(socket_report& r, const std::vector<pid_t>& serving, const std::vector<pid_t>& answered) const;
  int fd_ = -1;
  rig_shim_control* ctl_ = nullptr;
  std::function<std::vector<pid_t>()> serving_, tree_;
};

// The shim library built beside the rig binary, or nullopt with the reason.
std::optional<std::string> preload_library(const std::string& rig_exe, std::string* why);
// Nullopt when LD_PRELOAD can reach the program, else why not (static binary, not found).
std::optional<std::string> preload_unreachable(const std::string& executable);

}  // namespace rig
