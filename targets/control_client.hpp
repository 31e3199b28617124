#pragma once
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "core/fd.hpp"

namespace rig {

// Client of the built-in target's control channel (a unix socket, one line per request).
// Thread-safe: the sampler and the injectors share one. A request that times out (a stopped
// target) leaves the channel open: its late reply is skipped when it comes, so the next
// request, once the target runs again, gets its own answer.
class control_client {
 public:
  // An abstract socket name is per network namespace: netns_fd names the target's.
  void connect(const std::string& path, int timeout_ms = 2000, int netns_fd = -1);
  // Takes a connected socket (rig's end of a socket pair whose other end the target inherited).
  void adopt(unique_fd fd, int timeout_ms = 2000);
  // Sends one line, returns the reply without "ok "; throws on "error ...", on I/O failure, and
  // when no reply came within timeout_ms (the channel's own timeout when negative), the wait
  // for another thread's request included.
  std::string request(const std::string& line, int timeout_ms = -1);
  // "k=v k=v" -> map.
  static std::map<std::string, int64_t> parse_pairs(const std::string& text);

 private:
  void set_fd(unique_fd fd, int timeout_ms);
  // The next reply line, by `deadline_ns`; nullopt when it has not come by then.
  std::optional<std::string> read_line(int64_t deadline_ns);

  std::mutex mu_;
  unique_fd fd_;
  int timeout_ms_ = 2000;
  std::string buffered_;
  int owed_ = 0;  // replies to requests that timed out, still to come and be skipped
};

}  // namespace rig
