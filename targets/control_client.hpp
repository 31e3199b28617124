#pragma once
#include <map>
#include <mutex>
#include <string>

#include "core/fd.hpp"

namespace rig {

// Client of the built-in target's control channel (a unix socket, one line per request).
// Thread-safe: the sampler and the injectors share one.
class control_client {
 public:
  // An abstract socket name is per network namespace: netns_fd names the target's.
  void connect(const std::string& path, int timeout_ms = 2000, int netns_fd = -1);
  // Takes a connected socket (rig's end of a socket pair whose other end the target inherited).
  void adopt(unique_fd fd, int timeout_ms = 2000);
  // Sends one line, returns the reply without "ok "; throws on "error ..." or I/O failure.
  std::string request(const std::string& line);
  // "k=v k=v" -> map.
  static std::map<std::string, int64_t> parse_pairs(const std::string& text);

 private:
  std::mutex mu_;
  unique_fd fd_;
  std::string buffered_;
};

}  // namespace rig
