#pragma once
// Files at paths a user gave: written one way, read one way, by every command (docs/host-safety.md).
//
// Writing (a report, --junit, export --out, compare --out, history --out, ...): the directory is
// opened and held by descriptor; the text goes into a new file made beside the final name
// (O_CREAT|O_EXCL|O_NOFOLLOW under a temporary name), which is then renamed into place. What is
// at the final name must be nothing or a regular file of the writing user: a symbolic link, a
// FIFO, a device, a directory or another user's file is refused, naming it, and left as it was.
// The file replaced keeps its mode; a new one is 0644. Nothing is ever written through a link.
//
// Reading (a scenario, a suite, report.json, repeat/sweep/suite/history files): a regular file
// only, checked before it is opened and again by fstat on the descriptor (opened O_NONBLOCK, so
// a FIFO cannot block), at most a stated number of bytes. A refusal is an input_error (exit 2)
// naming the path and, when the file is too large, the cap.
#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>

namespace rig {

// A symbolic link on the way to a directory rig writes in (or reads from) is followed only when
// it is this user's, or leads into a directory its own owner owns: another user's link into a
// directory of someone else (root's, say) is refused, naming it, whatever fs.protected_symlinks
// says. Components that do not exist yet end the walk (rig makes them, following nothing).
void check_links_on_path(const std::string& path);
// The directories of `path` made as `mkdir -p` would, after that check.
void make_user_dirs(const std::string& path);
// A data file at a path a scenario gave (the disk workload's file, the built-in target's WAL):
// "" when it is absent or a regular file of this user reached by no refused link; else why not.
std::string user_data_file_refusal(const std::string& path);

// Writes `text` to `name` in the directory held by dir_fd (its path for messages), as above.
// Throws std::runtime_error naming the path.
void replace_file_at(int dir_fd, const std::string& dir_path, const std::string& name, const std::string& text);
// The same at a path: its directory is opened (the path up to it may go through links the user
// chose; the final name never does).
void write_user_file(const std::string& path, const std::string& text);
// Why a file could not be written at `path` ("" when it could): the same checks, nothing
// written (a --junit path is checked before the runs, not after them).
std::string user_file_refusal(const std::string& path);

// A kind of input and the most bytes rig reads of it.
struct input_kind {
  const char* what;  // "a scenario file", ...
  size_t max_bytes;
};
inline constexpr input_kind scenario_input{"a scenario or suite file", size_t(1) << 20};  // the largest here: ~3 KiB
inline constexpr input_kind report_input{"a report.json", size_t(64) << 20};  // a 1,000-phase run: ~6 MiB
inline constexpr input_kind summary_input{"a repeat.json, sweep.json or suite.json", size_t(16) << 20};
inline constexpr input_kind hlog_input{"a .latency.hlog file", size_t(512) << 20};  // a day's run: ~250 MiB
inline constexpr input_kind run_file_input{"a run's timeseries.csv or scenario.toml", size_t(256) << 20};
// The most runs rig reads as one group (a repeat's or sweep's runs, a history's points and runs)
// and the most entries a suite expands to.
inline constexpr size_t max_runs_read = 10'000;
inline constexpr size_t max_suite_entries = 1'000;

// The whole file at `path`, as above (a link on the way is followed: the user named it).
std::string read_input_file(const std::string& path, const input_kind& kind);
// A file of the directory held by dir_fd, never through a link.
// nullopt when the directory has no such name: an input that may be absent (an older run's).
std::string read_input_at(int dir_fd, const std::string& dir_path, const std::string& name, const input_kind& kind);
std::optional<std::string> read_input_if_present(int dir_fd, const std::string& dir_path, const std::string& name,
                                                 const input_kind& kind);

}  // namespace rig
