#include "core/line_reader.hpp"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>

#include "core/clock.hpp"

namespace rig {

line_reader::got line_reader::read_line(std::string& line, int timeout_ms) {
  const int64_t deadline = timeout_ms < 0 ? INT64_MAX : mono_ns() + int64_t(timeout_ms) * ns_per_ms;
  for (;;) {
    if (const size_t nl = buffered_.find('\n'); nl != std::string::npos) {
      line.assign(buffered_, 0, nl);
      buffered_.erase(0, nl + 1);
      return got::line;
    }
    if (!fd_) return got::closed;
    int wait_ms = -1;
    if (timeout_ms >= 0) {
      const int64_t left = deadline - mono_ns();
      wait_ms = left > 0 ? int(std::min<int64_t>((left + ns_per_ms - 1) / ns_per_ms, INT_MAX)) : 0;
    }
    pollfd p{fd_.get(), POLLIN, 0};
    const int r = ::poll(&p, 1, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      if (mono_ns() >= deadline) return got::timeout;
      continue;
    }
    char chunk[65536];
    const ssize_t n = r < 0 ? -1 : ::read(fd_.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fd_.reset();
      return got::closed;
    }
    buffered_.append(chunk, size_t(n));
  }
}

}  // namespace rig
