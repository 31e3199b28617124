#include "core/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>

#include "core/error.hpp"
#include "core/fd.hpp"
#include "core/units.hpp"

namespace rig {

namespace {

std::string kind_of(mode_t m) {
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

std::string join_path(const std::string& dir, const std::string& name) {
  return dir.empty() || dir == "." ? name : dir.back() == '/' ? dir + name : dir + "/" + name;
}

// A path's directory and final name ("" name: the path ends in '/', a directory).
std::pair<std::string, std::string> split_path(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

// Why `name` in the directory cannot be replaced ("" when it can), and the mode to give it.
std::string replace_refusal(int dir_fd, const std::string& full, const std::string& name, mode_t* mode) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    return full + " names a directory, not a file";
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) return fmt::format("cannot write {}: {}", full, std::strerror(errno));
    *mode = 0644;
    return "";
  }
  if (!S_ISREG(st.st_mode))
    return fmt::format("{} is {}: rig writes only regular files, and never through a link (remove it, or give "
                       "another path)",
                       full, kind_of(st.st_mode));
  if (st.st_uid != ::geteuid())
    return fmt::format("{} belongs to uid {}, not to this user (uid {}): rig does not replace another user's file",
                       full, st.st_uid, ::geteuid());
  *mode = st.st_mode & 07777;
  return "";
}

std::string read_bounded(int fd, const std::string& path, const input_kind& kind) {
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw input_error(fmt::format("{}: cannot read {}: {}", path, kind.what, std::strerror(errno)));
    if (n == 0) return text;
    text.append(buf, size_t(n));
    if (text.size() > kind.max_bytes)
      throw input_error(fmt::format("{}: grew past {} ({}, the most rig reads of {}) while being read", path,
                                    format_bytes(double(kind.max_bytes)), kind.max_bytes, kind.what));
  }
}

// The checks before reading: a regular file within the cap.
void check_input(const struct stat& st, const std::string& path, const input_kind& kind) {
  if (!S_ISREG(st.st_mode))
    throw input_error(fmt::format("{} is {}, not {}: rig reads its inputs from regular files", path,
                                  kind_of(st.st_mode), kind.what));
  if (size_t(st.st_size) > kind.max_bytes)
    throw input_error(fmt::format("{} is {}: {} may be at most {} ({} bytes)", path, format_bytes(double(st.st_size)),
                                  kind.what, format_bytes(double(kind.max_bytes)), kind.max_bytes));
}

std::string read_open_input(unique_fd fd, const std::string& path, const input_kind& kind) {
  if (!fd) throw input_error(fmt::format("{}: cannot read {}: {}", path, kind.what, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw input_error(fmt::format("{}: cannot read {}: {}", path, kind.what, std::strerror(errno)));
  check_input(st, path, kind);  // again on what was opened: the name may have changed meanwhile
  return read_bounded(fd.get(), path, kind);
}

}  // namespace

void check_links_on_path(const std::string& path) {
  std::error_code ec;
  const std::string full = std::filesystem::absolute(path, ec).string();
  const uid_t me = ::geteuid();
  std::string prefix;
  size_t at = 1;
  while (at <= full.size()) {
    const size_t slash = std::min(full.find('/', at), full.size());
    const std::string part = full.substr(at, slash - at);
    at = slash + 1;
    if (part.empty()) continue;
    prefix += "/" + part;
    struct stat l {};
    if (::lstat(prefix.c_str(), &l) != 0) return;  // not there yet: made by rig, not followed
    if (!S_ISLNK(l.st_mode) || l.st_uid == me) continue;
    struct stat t {};
    if (::stat(prefix.c_str(), &t) != 0) return;  // a dangling link: what uses the path fails on it
    if (t.st_uid != l.st_uid)
      throw std::runtime_error(fmt::format("{} is a symbolic link of uid {} to a directory of uid {}: rig follows "
                                           "another user's link only into that user's own directory (give the path "
                                           "it leads to, if you meant it)",
                                           prefix, l.st_uid, t.st_uid));
  }
}

void make_user_dirs(const std::string& path) {
  if (path.empty()) return;  // the current directory
  check_links_on_path(path);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    throw std::runtime_error(fmt::format("{} is {}, not a directory", path, kind_of(st.st_mode)));
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot make the directory {}: {}", path, ec.message()));
}

std::string user_data_file_refusal(const std::string& path) {
  try {
    check_links_on_path(split_path(std::filesystem::absolute(path).string()).first);
  } catch (const std::exception& e) {
    return e.what();
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT ? "" : fmt::format("{}: {}", path, std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return fmt::format("{} is {}: rig writes only regular files, and never through a link", path, kind_of(st.st_mode));
  if (st.st_uid != ::geteuid())
    return fmt::format("{} belongs to uid {}, not to this user (uid {}): rig does not write another user's file", path,
                       st.st_uid, ::geteuid());
  return "";
}

void replace_file_at(int dir_fd, const std::string& dir_path, const std::string& name, const std::string& text) {
  const std::string full = join_path(dir_path, name);
  mode_t mode = 0644;
  if (const std::string why = replace_refusal(dir_fd, full, name, &mode); !why.empty()) throw std::runtime_error(why);
  // The new text goes to a file of its own beside the final name, made here and now (O_EXCL:
  // never one that was there; O_NOFOLLOW: never through a link), then renamed over it.
  static std::atomic<unsigned> counter{0};
  std::string tmp;
  unique_fd f;
  for (int attempt = 0; attempt < 100 && !f; ++attempt) {
    tmp = fmt::format(".{}.rig-{}-{}", name.substr(0, 200), ::getpid(), counter.fetch_add(1));
    f.reset(::openat(dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!f && errno != EEXIST) throw_system_error("create a file in " + dir_path + " to write " + full);
  }
  if (!f) throw std::runtime_error("cannot write " + full + ": no free temporary name beside it");
  auto fail = [&](const std::string& what) {
    const int e = errno;
    ::unlinkat(dir_fd, tmp.c_str(), 0);
    errno = e;
    throw_system_error(what + " " + full);
  };
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(f.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write");
    done += size_t(n);
  }
  if (::fchmod(f.get(), mode) != 0) fail("set the mode of");
  if (::close(f.release()) != 0) fail("write");
  // Whatever the name holds now is replaced as a name (a link put there meanwhile is replaced,
  // not followed; a directory makes the rename fail).
  if (::renameat(dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) fail("rename into place");
}

void write_user_file(const std::string& path, const std::string& text) {
  const auto [dir, name] = split_path(path);
  check_links_on_path(dir);
  const unique_fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  throw_system_error_on(!d, "open directory " + dir + " to write " + path);
  replace_file_at(d.get(), dir, name, text);
}

std::string user_file_refusal(const std::string& path) {
  const auto [dir, name] = split_path(path);
  try {
    check_links_on_path(dir);
  } catch (const std::exception& e) {
    return e.what();
  }
  const unique_fd d(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!d) return fmt::format("cannot write {}: its directory {}: {}", path, dir, std::strerror(errno));
  mode_t mode = 0;
  if (std::string why = replace_refusal(d.get(), path, name, &mode); !why.empty()) return why;
  if (::faccessat(d.get(), ".", W_OK, AT_EACCESS) != 0)
    return fmt::format("cannot write {}: its directory {}: {}", path, dir, std::strerror(errno));
  return "";
}

std::string read_input_file(const std::string& path, const input_kind& kind) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw input_error(fmt::format("{}: cannot read {}: {}", path, kind.what, std::strerror(errno)));
  check_input(st, path, kind);  // before opening: a device or FIFO is never opened
  return read_open_input(unique_fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)), path, kind);
}

std::string read_input_at(int dir_fd, const std::string& dir_path, const std::string& name, const input_kind& kind) {
  const std::string path = join_path(dir_path, name);
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    throw input_error(fmt::format("{}: cannot read {}: {}", path, kind.what, std::strerror(errno)));
  check_input(st, path, kind);
  return read_open_input(unique_fd(::openat(dir_fd, name.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)),
                         path, kind);
}

std::optional<std::string> read_input_if_present(int dir_fd, const std::string& dir_path, const std::string& name,
                                                 const input_kind& kind) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT) return std::nullopt;
  return read_input_at(dir_fd, dir_path, name, kind);
}

}  // namespace rig
