#pragma once
// A directory held by a descriptor, and files made and read inside it by name (openat with
// O_NOFOLLOW): once it is open, renaming it or putting a symbolic link in its place cannot
// redirect a write. Every descriptor is close-on-exec.
#include <optional>
#include <ostream>
#include <streambuf>
#include <string>

#include "core/fd.hpp"
#include "core/files.hpp"

namespace rig {

class directory {
 public:
  directory() = default;
  // An existing directory by path (the path may go through links: this user's, or another
  // user's into that user's own directory; core/files.hpp check_links_on_path).
  static directory open(const std::string& path);
  // A new subdirectory `name` (mkdirat), opened without following a link; nullopt if it exists.
  std::optional<directory> make_subdir(const std::string& name, mode_t mode = 0755) const;

  const std::string& path() const { return path_; }
  // Where the directory held is now (/proc/self/fd): path() unless it was moved since it was
  // opened (then its new name; a name put in its old place leads elsewhere).
  std::string current_path() const;
  int fd() const { return fd_.get(); }
  explicit operator bool() const { return bool(fd_); }

  // A file of this directory for writing, made (0644) or truncated; never through a link.
  unique_fd create(const std::string& name) const;
  // Writes the whole text to a file of this directory, replacing it whole (core/files.hpp: a
  // new file renamed into place; a link, a non-regular file or another user's file there is
  // refused); throws naming the file on failure.
  void write_file(const std::string& name, const std::string& text) const;
  // The whole file, or nullopt (errno set) when it cannot be opened or read: rig's own files.
  std::optional<std::string> read_file(const std::string& name) const;
  // An input of this directory (report.json, repeat.json, ...): a regular file within the kind's
  // cap, never through a link (core/files.hpp); throws input_error naming it.
  std::string read_input(const std::string& name, const input_kind& kind) const;
  // The same; nullopt when there is no such name.
  std::optional<std::string> read_input_if_present(const std::string& name, const input_kind& kind) const;
  void remove(const std::string& name) const;

 private:
  std::string path_;
  unique_fd fd_;
};

// An ostream over a file descriptor it owns (what std::ofstream cannot be: made by openat,
// close-on-exec). A failed write sets badbit.
class fd_ostream : public std::ostream {
 public:
  fd_ostream() : std::ostream(&buf_) {}
  explicit fd_ostream(unique_fd fd) : std::ostream(&buf_) { open(std::move(fd)); }
  void open(unique_fd fd) {
    buf_.fd = std::move(fd);
    clear(buf_.fd ? goodbit : badbit);
  }
  bool is_open() const { return bool(buf_.fd); }
  void close() {
    flush();
    buf_.fd.reset();
  }

 private:
  struct fd_buf : std::streambuf {
    unique_fd fd;
    char data[8192];
    fd_buf() { setp(data, data + sizeof data); }
    ~fd_buf() override { sync(); }
    int overflow(int c) override;
    int sync() override;
  };
  fd_buf buf_;
};

}  // namespace rig
