#pragma once
#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace rig {

// Where a value came from: a file position, or a command-line origin such as "--set x=y".
struct source_pos {
  std::string file;
  uint32_t line = 0;
  uint32_t column = 0;
  std::string origin;  // used when there is no file position
  std::string str() const;
};

struct diagnostic {
  source_pos where;
  std::string message;
  std::string str() const { return where.str() + ": " + message; }
};

// Collects every error in an input so `rig validate` can print them all at once.
class diagnostics {
 public:
  void add(source_pos where, std::string message) { items_.push_back({std::move(where), std::move(message)}); }
  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  const std::vector<diagnostic>& items() const { return items_; }
  std::string str() const;
  // Orders by file position so errors read top to bottom (command-line origins first).
  void sort_by_position();

 private:
  std::vector<diagnostic> items_;
};

// Bad input (scenario, flags): exit code 2.
class input_error : public std::runtime_error {
 public:
  explicit input_error(diagnostics d) : std::runtime_error(d.str()), diags_(std::move(d)) {}
  explicit input_error(const std::string& what) : std::runtime_error(what) {}
  const diagnostics& diags() const { return diags_; }

 private:
  diagnostics diags_;
};

// A system call failed on a control path: carries errno and a hint for the user.
class system_error : public std::runtime_error {
 public:
  system_error(std::string what, int err, std::string hint = {});
  int code() const { return err_; }

 private:
  int err_;
};

[[noreturn]] void throw_system_error(const std::string& what, int err = errno, std::string hint = {});
inline void throw_system_error_on(bool cond, const std::string& what, std::string hint = {}) {
  if (cond) [[unlikely]] throw_system_error(what, errno, std::move(hint));
}

// Nearest candidate by edit distance, or empty when nothing is close enough to suggest.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);
size_t edit_distance(std::string_view a, std::string_view b);

// "; did you mean 'x'?" or empty.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace rig
