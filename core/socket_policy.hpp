#pragma once
#include <cstdint>
#include <mutex>
#include <optional>
#include <map>
#include <string>

namespace rig {

// Socket options an injector forces on a set of sockets (the rig's own, the target's).
struct socket_policy {
  std::optional<bool> nodelay;
  std::optional<int> send_buffer;     // bytes, SO_SNDBUF
  std::optional<int> receive_buffer;  // bytes, SO_RCVBUF
  std::string str() const;
  bool operator==(const socket_policy&) const = default;
};

// Outcome of applying or reading back a policy: how many sockets were reached and how
// many read back with the asked-for values.
struct socket_report {
  int sockets = 0;
  int matching = 0;
  std::map<std::string, int64_t> counters;  // what else the mechanism counted (the shim: overrides, ...)
  std::string detail;                       // the same in words, for the verification text
  // Where the mechanism reaches into processes (the preload shim): whether it answered in every
  // process that serves the target's port, and the ones it did not reach, named.
  bool reached_server = true;
  std::string unreached;
};

// Optional ability of a target or workload: its sockets can take a policy. Applies to the
// open sockets now and to every socket opened later, until another policy replaces it.
class socket_tunable {
 public:
  virtual ~socket_tunable() = default;
  // Forces the fields p sets, keeps the others.
  virtual socket_report set_socket_policy(const socket_policy& p) = 0;
  // Reads every socket back against p.
  virtual socket_report check_socket_policy(const socket_policy& p) = 0;
  // The whole policy in force; an unset field means the program's own choice.
  virtual socket_policy socket_policy_now() = 0;
  // Puts back a policy saved with socket_policy_now(): unset fields return to the
  // program's own choice (buffer sizes to what they were before the clamp).
  virtual void reset_socket_policy(const socket_policy& prior) = 0;
};

// The set of open sockets of one side (a target, a workload) under one policy: new
// sockets get the policy when added; set_socket_policy() reaches the open ones.
class socket_set : public socket_tunable {
 public:
  explicit socket_set(socket_policy initial) : policy_(std::move(initial)) {}
  void add(int fd);
  void remove(int fd);
  socket_report set_socket_policy(const socket_policy& p) override;
  socket_report check_socket_policy(const socket_policy& p) override;
  socket_policy socket_policy_now() override;
  void reset_socket_policy(const socket_policy& prior) override;

 private:
  struct sizes {
    int send = 0, receive = 0;  // as they were when the socket was added
  };
  std::mutex mu_;
  std::map<int, sizes> fds_;
  socket_policy policy_;
};

// setsockopt(SOL_SOCKET, SO_BUF_LOCK, mask) (Linux 5.14): which buffer sizes are fixed on the
// socket (1: send, 2: receive). SO_SNDBUF/SO_RCVBUF fix theirs, switching the kernel's
// autotuning off for the socket's life; clearing the bit hands the size back to it.
inline constexpr int so_buf_lock = 72, buf_lock_send = 1, buf_lock_receive = 2;

// Applies a policy to one fd with setsockopt.
bool apply_socket_policy(int fd, const socket_policy& p);
// True when every field of the policy reads back from the fd as asked (SO_*BUF: the
// kernel doubles the asked value, so the read-back is compared against that).
bool socket_matches(int fd, const socket_policy& p);

}  // namespace rig
