#pragma once
#include "core/fd.hpp"
#include "core/process.hpp"
#include "targets/target.hpp"

namespace rig {

const option_table& command_options();
void check_command(const option_values& v, const bind_context& ctx, diagnostics& diags);

// A program rig starts itself: a free port substituted for {port}, ready when the port
// accepts (or its output matches ready_log), stopped with SIGTERM then SIGKILL.
class command_target final : public target {
 public:
  explicit command_target(const option_values& v);
  void start(const target_env& env) override;
  void stop() noexcept override;
  std::string host() const override { return host_; }
  uint16_t port() const override { return port_; }
  // The process that serves the port (a wrapper's child, a server's master), else the one rig started.
  std::optional<pid_t> pid() const override;
  std::vector<pid_t> serving_pids() const override;
  // The process rig started and its descendants (not a helper of rig's in the same cgroup).
  std::vector<pid_t> processes() const override;
  std::optional<exit_info> died() override;
  std::optional<std::string> preload_executable() const override { return executable_; }
  nlohmann::json describe() const override;
  std::string cannot_start_here(bool in_own_netns) const override;

 private:
  option_values opts_;
  std::string executable_, log_path_;
  std::vector<std::string> argv_;
  child_process child_;
  const cgroup* tree_ = nullptr;  // the run's cgroup, where a daemon it started would be found
  // Set when the process rig started exited 0 and left others running: it daemonized.
  std::optional<std::string> daemonized();
  // The processes of the target that hold its listening socket, with the one found ready first.
  std::vector<pid_t> listening_in_tree() const;
  std::vector<uint64_t> listening_inodes() const;  // the port's listening sockets, in the target's namespace
  void find_server();
  std::string host_ = "127.0.0.1";
  uint16_t port_ = 0;
  pid_t serving_ = 0;   // found when the target became ready
  std::string serving_name_;
  unique_fd serving_fd_;  // a pidfd for it, when it is not the process rig started
};

}  // namespace rig
