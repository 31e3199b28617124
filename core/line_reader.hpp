#pragma once
#include <string>

#include "core/fd.hpp"

namespace rig {

// Lines from a pipe or stream socket, with a deadline: a child's stdout, a helper's channel.
class line_reader {
 public:
  line_reader() = default;
  explicit line_reader(unique_fd fd) : fd_(std::move(fd)) {}
  int fd() const { return fd_.get(); }
  explicit operator bool() const { return bool(fd_); }

  enum class got { line, timeout, closed };
  // The next line (without its newline) within timeout_ms; -1 waits as long as it takes, 0
  // takes only what is already there. At end of stream (or an error) the fd is closed.
  got read_line(std::string& line, int timeout_ms);

 private:
  unique_fd fd_;
  std::string buffered_;
};

}  // namespace rig
