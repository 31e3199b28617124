#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/fd.hpp"
#include "core/line_reader.hpp"

namespace rig {

// One failpoint as a target process reports it (rig_failpoint.h's `stats`).
struct failpoint_state {
  std::string action = "off";
  double probability = 1;
  int64_t count = 0, delay_ns = 0;
  int error = 0;
  uint64_t seed = 0;  // the draws' seed
  uint64_t hits = 0, fired = 0;
};
// "NAME action=A p=P count=N delay_ns=D errno=E seed=S hits=H fired=F; NAME ..." -> by name.
std::map<std::string, failpoint_state> parse_failpoint_stats(const std::string& text);

// rig's end of the failpoint control channel: a unix socket rig listens on, which every
// process of the target that links the failpoint library connects to (RIG_FAILPOINT_SOCKET).
// Nothing runs in the background: connections waiting in the backlog are taken when rig asks.
// A process that never connects leaves the channel empty; one that dies is dropped.
class failpoint_channel {
 public:
  // Listens on a fresh socket (0600) in rig's state dir; only processes of rig's own user are
  // taken, up to max_processes.
  failpoint_channel();
  static constexpr size_t max_processes = 256;
  ~failpoint_channel();
  failpoint_channel(const failpoint_channel&) = delete;
  failpoint_channel& operator=(const failpoint_channel&) = delete;

  const std::string& path() const { return path_; }
  std::string environment() const;  // RIG_FAILPOINT_SOCKET=path, for the target's environment

  // Takes the processes that connected; waits up to timeout_ms for the first. How many there are.
  size_t await_processes(int timeout_ms);

  struct reply {
    pid_t pid;
    bool ok;
    std::string text;  // without "ok " / "error "
  };
  // Sends one line to every connected process and returns each reply. A process that has
  // gone (closed, or silent past timeout_ms) is dropped and not among the replies.
  std::vector<reply> request(const std::string& line, int timeout_ms = 2000);
  // Every failpoint, summed over the processes (action and settings: the first process's).
  std::map<std::string, failpoint_state> stats(int timeout_ms = 2000);
  size_t processes() const { return conns_.size(); }

 private:
  void accept_waiting();
  struct conn {
    pid_t pid = 0;
    line_reader in;
  };
  std::string dir_, path_;
  unique_fd listener_;
  std::vector<conn> conns_;
};

}  // namespace rig
