#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rig {

// Who listens on a TCP port: read from /proc/PID/net/tcp{,6} (the network namespace of a
// process) and /proc/PID/fd (which process holds the socket). Used to refuse a port another
// server already holds, and to find the process of a target that serves its port.

struct tcp_listener {
  uint64_t inode = 0;
  std::string address;  // "127.0.0.1", "0.0.0.0", "::", ...
};

// The listening TCP sockets on `port` in the network namespace of `netns_of` (0: rig's own).
std::vector<tcp_listener> tcp_listeners(uint16_t port, pid_t netns_of = 0);

// The processes among `pids` (empty: every process) that hold one of the socket inodes.
std::vector<pid_t> socket_holders(const std::vector<uint64_t>& inodes, const std::vector<pid_t>& pids = {});

// Every process's pid.
std::vector<pid_t> all_pids();

// `root` and every process descended from it, parents before children.
std::vector<pid_t> process_tree(pid_t root);

// "redis-server (pid 123)", or "pid 123" when it is gone.
std::string process_name(pid_t pid);

// The same for several, joined with ", "; empty for none.
std::string process_names(const std::vector<pid_t>& pids);

// The listeners of `port` that would take connections meant for `host` (the same address or a
// wildcard), named with their processes; empty when the port is free there.
std::string port_holders(uint16_t port, const std::string& host, pid_t netns_of = 0);

}  // namespace rig
