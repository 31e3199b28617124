#include "core/directory.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "core/error.hpp"

namespace rig {

directory directory::open(const std::string& path) {
  check_links_on_path(path);  // another user's link into someone else's directory: refused
  directory d;
  d.path_ = path;
  d.fd_.reset(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  throw_system_error_on(!d.fd_, "open directory " + path);
  return d;
}

std::optional<directory> directory::make_subdir(const std::string& name, mode_t mode) const {
  if (::mkdirat(fd(), name.c_str(), mode) != 0) {
    if (errno == EEXIST) return std::nullopt;
    throw_system_error("make directory " + path_ + "/" + name);
  }
  directory d;
  d.path_ = path_ + "/" + name;
  d.fd_.reset(::openat(fd(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  throw_system_error_on(!d.fd_, "open directory " + d.path_);
  return d;
}

unique_fd directory::create(const std::string& name) const {
  unique_fd f(::openat(fd(), name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644));
  throw_system_error_on(!f, "create " + path_ + "/" + name);
  return f;
}

void directory::write_file(const std::string& name, const std::string& text) const {
  replace_file_at(fd(), path_, name, text);
}

std::string directory::read_input(const std::string& name, const input_kind& kind) const {
  return read_input_at(fd(), path_, name, kind);
}

std::optional<std::string> directory::read_input_if_present(const std::string& name, const input_kind& kind) const {
  return rig::read_input_if_present(fd(), path_, name, kind);
}

std::optional<std::string> directory::read_file(const std::string& name) const {
  const unique_fd f(::openat(fd(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!f) return std::nullopt;
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(f.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return text;
    text.append(buf, size_t(n));
  }
}

std::string directory::current_path() const {
  char buf[4096];
  const ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(fd())).c_str(), buf, sizeof buf - 1);
  if (n <= 0) return path_;
  const std::string now(buf, size_t(n));
  // The same directory under the name given (the name may go through links): that name.
  struct stat held {}, named {};
  if (::fstat(fd(), &held) == 0 && ::stat(path_.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
      held.st_ino == named.st_ino)
    return path_;
  return now;
}

void directory::remove(const std::string& name) const { ::unlinkat(fd(), name.c_str(), 0); }

int fd_ostream::fd_buf::overflow(int c) {
  if (sync() != 0) return traits_type::eof();
  if (c != traits_type::eof()) {
    *pptr() = char(c);
    pbump(1);
  }
  return traits_type::not_eof(c);
}

int fd_ostream::fd_buf::sync() {
  for (char* p = pbase(); p < pptr();) {
    if (!fd) return -1;
    const ssize_t n = ::write(fd.get(), p, size_t(pptr() - p));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
  }
  setp(data, data + sizeof data);
  return 0;
}

}  // namespace rig
