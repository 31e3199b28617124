#include "core/journal.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <regex>
#include <sstream>

#include "core/cgroup.hpp"
#include "core/error.hpp"
#include "core/proc.hpp"
#include "core/process.hpp"

namespace rig {

// ---------------------------------------------------------------------------------------
// the state directory

namespace {

// A directory of this user that no one else can write: no other user can make or squat a name in it.
bool own_private_dir(const std::string& dir) {
  struct stat st {};
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() &&
         !(st.st_mode & (S_IWGRP | S_IWOTH)) && ::access(dir.c_str(), W_OK) == 0;
}

}  // namespace

std::string state_dir() {
  if (const char* d = ::getenv("RIG_STATE_DIR"); d && *d) return d;
  if (::geteuid() == 0) return "/run/rig";
  // Without root /run is not ours: the user's runtime directory, else the user's state directory
  // in their home (where no other user can make the name first), and /tmp only without either:
  // there another user can make /tmp/rig-UID before rig does (it is refused then, not used).
  if (const char* x = ::getenv("XDG_RUNTIME_DIR"); x && *x && own_private_dir(x)) return std::string(x) + "/rig";
  if (const char* s = ::getenv("XDG_STATE_HOME"); s && *s && s[0] == '/' && own_private_dir(s))
    return std::string(s) + "/rig";
  if (const char* h = ::getenv("HOME"); h && *h && h[0] == '/' && own_private_dir(h)) {
    const std::string home = h;
    if (own_private_dir(home + "/.local/state")) return home + "/.local/state/rig";
    if (!std::filesystem::exists(home + "/.local/state")) return home + "/.local/state/rig";  // made as it is needed
  }
  return fmt::format("/tmp/rig-{}", ::geteuid());
}

namespace {

[[noreturn]] void refuse_state_dir(const std::string& dir, const std::string& what) {
  throw std::runtime_error(fmt::format("rig's state directory {} {}; rig keeps its journal and sockets there, so it "
                                       "must be a directory of the user running rig (uid {}) that no one else can "
                                       "write. Remove or fix it, or point RIG_STATE_DIR at another",
                                       dir, what, ::geteuid()));
}

}  // namespace

unique_fd open_state_dir(bool create) {
  const std::string dir = state_dir();
  if (create) {
    // Its parent (/run in a bare initramfs, say) is made as mkdir -p would; the directory itself 0700.
    std::error_code ec;
    if (const auto parent = std::filesystem::path(dir).parent_path(); !parent.empty() && !std::filesystem::exists(parent))
      std::filesystem::create_directories(parent, ec);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw_system_error("make rig's state directory " + dir);
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT && !create) return unique_fd();
    throw_system_error("lstat rig's state directory " + dir);
  }
  if (S_ISLNK(st.st_mode)) refuse_state_dir(dir, "is a symbolic link");
  unique_fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) throw_system_error("open rig's state directory " + dir);
  // The checks are on what was opened, so a swap after the lstat above changes nothing.
  throw_system_error_on(::fstat(fd.get(), &st) != 0, "fstat " + dir);
  if (!S_ISDIR(st.st_mode)) refuse_state_dir(dir, "is not a directory");
  if (st.st_uid != ::geteuid()) refuse_state_dir(dir, fmt::format("is owned by uid {}", st.st_uid));
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    refuse_state_dir(dir, fmt::format("is writable by {} (mode {:o})",
                                      st.st_mode & S_IWOTH ? "every user" : "its group", st.st_mode & 07777));
  return fd;
}

// ---------------------------------------------------------------------------------------
// records

std::string encode_field(std::string_view raw) {
  std::string out;
  for (const unsigned char c : raw) {
    if (c <= ' ' || c == '%' || c >= 0x7f)
      out += fmt::format("%{:02X}", c);
    else
      out += char(c);
  }
  return out;
}

std::optional<std::string> decode_field(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    unsigned v = 0;
    for (size_t k = 1; k <= 2; ++k) {
      const char h = text[i + k];
      if (!std::isxdigit(static_cast<unsigned char>(h))) return std::nullopt;
      v = v * 16 + unsigned(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : std::toupper(h) - 'A' + 10);
    }
    out += char(v);
    i += 2;
  }
  return out;
}

std::string journal_line(std::string_view kind, std::initializer_list<std::string_view> fields) {
  std::string line(kind);
  for (const auto f : fields) line += " " + encode_field(f);
  return line;
}

unsigned long long process_start_time(pid_t pid) {
  if (pid <= 0) return 0;
  const auto fields = stat_fields(pid);
  if (!fields) return 0;
  std::istringstream f(*fields);
  std::string state, skip;
  f >> state;
  if (state == "Z" || state == "X") return 0;  // exited, not yet reaped: gone for our purposes
  for (int field = 4; field < 22; ++field) f >> skip;
  unsigned long long start = 0;
  f >> start;
  return start;
}

std::string process_entry(pid_t pid) {
  const auto start = process_start_time(pid);
  return start ? journal_line("process", {std::to_string(pid), std::to_string(start)}) : std::string();
}

namespace {

struct identity {
  pid_t pid;
  unsigned long long start;
};

identity self_identity() { return {::getpid(), process_start_time(::getpid())}; }

std::string journal_name(const identity& id) { return fmt::format("journal-{}-{}.log", id.pid, id.start); }
std::string header_line(const identity& id) { return fmt::format("rig-journal 2 {} {}", id.pid, id.start); }

}  // namespace

std::string run_cgroup_name(int n) {
  const auto id = self_identity();
  return fmt::format("run-{}-{}-{}", id.pid, id.start, n);
}

// ---------------------------------------------------------------------------------------
// the journal of this process

journal& journal::self() {
  static journal j;
  return j;
}

std::string journal::path() const { return state_dir() + "/" + journal_name(self_identity()); }

void journal::record(const std::string& line) {
  if (pid_ != ::getpid()) {  // first use, or a forked child: the parent's changes are not its own
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    open_ = 0;
    pid_ = ::getpid();
  }
  if (fd_ < 0) {
    const auto id = self_identity();
    // Another rig's clean exit may remove the (empty) directory between the two calls: once more.
    for (int attempt = 0; fd_ < 0 && attempt < 2; ++attempt) {
      const unique_fd dir = open_state_dir(true);
      fd_ = ::openat(dir.get(), journal_name(id).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
                     0600);
      if (fd_ < 0 && errno != ENOENT) break;
    }
    throw_system_error_on(fd_ < 0, "create journal " + path());
    const std::string head = header_line(id) + "\n";
    throw_system_error_on(::write(fd_, head.data(), head.size()) != ssize_t(head.size()), "write journal " + path());
  }
  const std::string text = line + "\n";
  throw_system_error_on(::write(fd_, text.data(), text.size()) != ssize_t(text.size()), "write journal " + path());
  ::fdatasync(fd_);
  ++open_;
}

void journal::done(const std::string& line) {
  if (fd_ < 0 || pid_ != ::getpid()) return;
  const std::string text = "done " + line + "\n";
  if (::write(fd_, text.data(), text.size()) == ssize_t(text.size())) --open_;
  if (open_ <= 0) close_clean();
}

void journal::close_clean() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  open_ = 0;
  try {
    const unique_fd dir = open_state_dir(false);
    if (dir) ::unlinkat(dir.get(), journal_name(self_identity()).c_str(), 0);
  } catch (const std::exception&) {
    // The directory is no longer one rig may trust: nothing in it is touched.
  }
  ::rmdir(state_dir().c_str());  // the directory too, once no rig keeps anything there
}

// ---------------------------------------------------------------------------------------
// stale journals

std::vector<stale_journal> stale_journals() {
  std::vector<stale_journal> out;
  const unique_fd dir = open_state_dir(false);
  if (!dir) return out;
  DIR* d = ::fdopendir(::fcntl(dir.get(), F_DUPFD_CLOEXEC, 0));
  if (!d) return out;
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) names.push_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    int pid = 0;
    unsigned long long start = 0;
    char tail = 0;
    if (name.rfind("journal-", 0) != 0) continue;
    stale_journal j;
    j.path = state_dir() + "/" + name;
    const bool named = std::sscanf(name.c_str(), "journal-%d-%llu.lo%c", &pid, &start, &tail) == 3 && tail == 'g' &&
                       pid > 0 && start > 0 && name == journal_name({pid, start});
    if (!named) {
      j.problem = "not named journal-PID-START.log (a journal of an older rig, or not rig's): left alone";
      out.push_back(j);
      continue;
    }
    if (process_start_time(pid) == start) continue;  // that rig still runs
    j.pid = pid;
    j.start = start;
    // Opened without following a link, and only a plain file of the user that runs rig.
    unique_fd f(::openat(dir.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st {};
    if (!f || ::fstat(f.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
        (st.st_mode & (S_IWGRP | S_IWOTH))) {
      j.problem = !f ? fmt::format("cannot be opened as a plain file ({})", strerror(errno))
                     : "is not a plain file of uid " + std::to_string(::geteuid()) + " that only it can write";
      out.push_back(j);
      continue;
    }
    std::string text;
    char buf[65536];
    for (ssize_t n; (n = ::read(f.get(), buf, sizeof buf)) > 0 && text.size() < (64u << 20);) text.append(buf, size_t(n));
    std::istringstream in(text);
    std::string l;
    if (!std::getline(in, l) || l != header_line({pid, start})) {
      j.problem = "its first line is not \"" + header_line({pid, start}) + "\"";
      out.push_back(j);
      continue;
    }
    int line_no = 1;
    while (std::getline(in, l)) {
      ++line_no;
      if (l.rfind("done ", 0) == 0) {
        auto it = std::find_if(j.pending.begin(), j.pending.end(), [&](const auto& r) { return r.text == l.substr(5); });
        if (it != j.pending.end()) j.pending.erase(it);
      } else if (!l.empty()) {
        j.pending.push_back({line_no, l});
      }
    }
    if (j.pending.empty()) {  // everything was undone; only the file was left
      ::unlinkat(dir.get(), name.c_str(), 0);
      ::rmdir(state_dir().c_str());
      continue;
    }
    out.push_back(j);
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// replay: each record checked against what rig could have made, then undone

namespace {

std::string plural(size_t n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

// A record a replay will not act on: its line, the record, and why.
struct refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() < 20 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// A number of a record, at most `max`: out of range refuses the record (it never aborts the
// replay, and is never cut down to another number).
unsigned long long record_number(const std::string& s, unsigned long long max, const char* what) {
  unsigned long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
    throw refused(fmt::format("{} must be a number", what));
  if (ec != std::errc() || end != s.data() + s.size() || v > max)
    throw refused(fmt::format("{} {} is out of range (at most {})", what, s, max));
  return v;
}

// An absolute path with no empty, "." or ".." component.
void check_plain_components(const std::string& p) {
  if (p.empty() || p[0] != '/' || p.back() == '/') throw refused("not an absolute path");
  std::istringstream parts(p.substr(1));
  for (std::string c; std::getline(parts, c, '/');)
    if (c.empty() || c == "." || c == "..") throw refused("a path with an empty, '.' or '..' component");
}

// The same, and no symbolic link on the way.
void check_plain_path(const std::string& p) {
  check_plain_components(p);
  std::error_code ec;
  const auto canon = std::filesystem::weakly_canonical(p, ec);
  if (ec || canon.string() != p) throw refused("a path that goes through a symbolic link");
}

// Mount points of cgroup file systems, from the mount table: {mount, is v2}.
std::map<std::string, bool> cgroup_mounts() {
  std::map<std::string, bool> out;
  std::istringstream in(read_text_file("/proc/self/mounts").value_or(""));
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string dev, mount, type;
    if (f >> dev >> mount >> type && (type == "cgroup" || type == "cgroup2")) out[mount] = type == "cgroup2";
  }
  return out;
}

bool on_cgroupfs(const std::string& path) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 && (fs.f_type == CGROUP_SUPER_MAGIC || fs.f_type == CGROUP2_SUPER_MAGIC);
}

// A cgroup record: <a cgroup mount>/rig/run-<pid>-<start>-<n>, of the journal's own rig.
void check_cgroup_record(const std::string& dir, const stale_journal& j) {
  check_plain_path(dir);
  const std::string run = dir.substr(dir.rfind('/') + 1), parent = dir.substr(0, dir.rfind('/'));
  const std::string mount = parent.substr(0, parent.rfind('/'));
  if (parent.substr(parent.rfind('/') + 1) != "rig" || !cgroup_mounts().count(mount))
    throw refused("not a directory in rig/ at the top of a mounted cgroup hierarchy");
  if (!std::regex_match(run, std::regex(fmt::format("run-{}-{}-[0-9]+", j.pid, j.start))))
    throw refused(fmt::format("not a run cgroup of this journal's rig (run-{}-{}-N)", j.pid, j.start));
  if (std::filesystem::exists(dir) && !on_cgroupfs(dir)) throw refused("not on a cgroup file system");
}

bool undo_cgroup(const std::string& dir, const stale_journal& j, std::vector<std::string>& report) {
  check_cgroup_record(dir, j);
  if (!std::filesystem::exists(dir)) {
    report.push_back("cgroup " + dir + ": already gone");
    return true;
  }
  // What is still inside was started by the killed rig (a target, what it started, a helper).
  size_t killed = 0;
  const bool empty = kill_cgroup_processes(dir, &killed);
  if (!empty || !remove_cgroup_dir(dir)) {
    report.push_back(fmt::format("cgroup {}: NOT removed ({})", dir,
                                 empty ? strerror(errno) : "processes in it survived SIGKILL"));
    return false;
  }
  ::rmdir(dir.substr(0, dir.rfind('/')).c_str());  // rig/ too, once no run uses it
  report.push_back(fmt::format("cgroup {}: removed{}", dir,
                               killed ? fmt::format(" ({} rig started {} still in it: killed first)",
                                                    plural(killed, "process", "processes"), killed == 1 ? "was" : "were")
                                      : ""));
  return true;
}

bool undo_subtree(const std::string& top, const std::string& controller, std::vector<std::string>& report) {
  check_plain_path(top);
  const auto mounts = cgroup_mounts();
  if (auto it = mounts.find(top); it == mounts.end() || !it->second) throw refused("not a cgroup2 mount point");
  static const std::regex name("[a-z_]{1,32}");
  if (!std::regex_match(controller, name)) throw refused("not a controller name");
  try {
    if (!std::filesystem::exists(top + "/rig")) write_control(top + "/cgroup.subtree_control", "-" + controller);
    report.push_back(fmt::format("{}/cgroup.subtree_control: {} taken back", top, controller));
  } catch (const std::exception& e) {
    report.push_back(fmt::format("{}/cgroup.subtree_control: {} left on ({})", top, controller, e.what()));
  }
  return true;
}

bool undo_process(const std::string& pid_text, const std::string& start_text, std::vector<std::string>& report) {
  // The kernel's pids stop at 2^22 (PID_MAX_LIMIT); start times are clock ticks since boot.
  const pid_t pid = pid_t(record_number(pid_text, 4'194'304, "the pid"));
  const unsigned long long start = record_number(start_text, ULLONG_MAX, "the start time");
  if (pid <= 1 || start == 0) throw refused("pid 0 and 1 are never rig's");
  if (pid == ::getpid()) throw refused("names this very process");
  switch (kill_process_if_same(pid, start)) {
    case kill_outcome::gone:
      report.push_back(fmt::format("process {}: already gone", pid));
      return true;
    case kill_outcome::not_same:
      report.push_back(fmt::format("process {}: already gone (pid {} is another process now, started at {} not {}: "
                                   "left alone)",
                                   pid, pid, process_start_time(pid), start));
      return true;
    case kill_outcome::killed:
      report.push_back(fmt::format("process {}: killed", pid));
      return true;
    case kill_outcome::survived:
      report.push_back(fmt::format("process {}: NOT gone after SIGKILL", pid));
      return false;
  }
  return false;
}

// Processes in a network namespace with inode `ino`, and whether anything (a process in it, or
// an fd to it) holds one.
std::vector<pid_t> processes_in_netns(unsigned long ino, bool* held) {
  std::vector<pid_t> in;
  const std::string link = fmt::format("net:[{}]", ino);
  *held = false;
  std::error_code ec;
  for (const auto& p : std::filesystem::directory_iterator("/proc", ec)) {
    const pid_t pid = std::atoi(p.path().filename().c_str());
    if (pid <= 0) continue;
    struct stat st {};
    if (::stat((p.path() / "ns/net").c_str(), &st) == 0 && st.st_ino == ino) {
      in.push_back(pid);
      *held = true;
    }
    std::error_code fd_ec;
    for (const auto& fd : std::filesystem::directory_iterator(p.path() / "fd", fd_ec))
      if (std::filesystem::read_symlink(fd.path(), fd_ec).string() == link) *held = true;
  }
  return in;
}

bool undo_netns(const std::string& ino_text, std::vector<std::string>& report) {
  const unsigned long ino = record_number(ino_text, ULONG_MAX, "the inode");
  bool held = false;
  // The run's namespaces are freed with the last process of the run, which the records before
  // this one killed. One held now under the same number may be another's: never touched.
  const auto in = processes_in_netns(ino, &held);
  report.push_back(held ? fmt::format("network namespace net:[{}]: a namespace with this number is in use ({}); the "
                                      "kernel reuses the numbers of freed namespaces, so rig cannot prove it is the "
                                      "run's: left alone",
                                      ino, in.empty() ? "held by a descriptor" : plural(in.size(), "process", "processes") + " in it")
                    : fmt::format("network namespace net:[{}] (and the veth end in it): freed", ino));
  return true;
}

// A socket rig made in the state directory: fp-<pid>-<n>.sock, directly in it.
bool undo_file(const std::string& path, std::vector<std::string>& report) {
  const std::string dir = state_dir(), name = path.substr(path.rfind('/') + 1);
  if (path.substr(0, path.rfind('/')) != dir || !std::regex_match(name, std::regex("fp-[0-9]+-[0-9]+\\.sock")))
    throw refused("not a socket of rig's in its state directory " + dir);
  const unique_fd d = open_state_dir(false);
  struct stat st {};
  if (!d || ::fstatat(d.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    report.push_back("file " + path + ": removed (already gone)");
    return true;
  }
  if (!S_ISSOCK(st.st_mode)) throw refused("not a socket");
  if (::unlinkat(d.get(), name.c_str(), 0) == 0 || errno == ENOENT) {
    report.push_back("file " + path + ": removed");
    return true;
  }
  report.push_back(fmt::format("file {}: NOT removed ({})", path, strerror(errno)));
  return false;
}

// Whether a cpufreq policy's related_cpus ("0 1 2 3") lists `cpu`.
bool policy_covers(const std::string& policy_dir, const std::string& cpu) {
  std::istringstream in(read_text_file(policy_dir + "/related_cpus").value_or(""));
  for (std::string c; in >> c;)
    if (c == cpu) return true;
  return false;
}

// A cpufreq file of one CPU that rig writes, under sysfs (or $RIG_CPUFREQ_ROOT, a test's tree):
// the record names it as rig wrote it, ROOT/cpuN/cpufreq/NAME. On current kernels cpuN/cpufreq
// is a link to ../cpufreq/policyM (the policy CPU N belongs to): that link is resolved, and what
// it leads to must be NAME of a policy that covers CPU N (or, on kernels without policies, the
// CPU's own directory). Nothing else is written.
bool undo_restore(const std::string& path, const std::string& text, std::vector<std::string>& report) {
  const char* root_env = ::getenv("RIG_CPUFREQ_ROOT");
  const std::string root = root_env && *root_env ? root_env : "/sys/devices/system/cpu";
  std::smatch m;
  const std::string rest = path.rfind(root + "/", 0) == 0 ? path.substr(root.size()) : "";
  static const std::regex rig_writes("/cpu([0-9]+)/cpufreq/(scaling_(max_freq|min_freq|setspeed))");
  if (!std::regex_match(rest, m, rig_writes))
    throw refused("not a cpufreq file rig writes (" + root + "/cpuN/cpufreq/scaling_{max_freq,min_freq,setspeed})");
  const std::string cpu = m[1], name = m[2];
  if (!all_digits(text)) throw refused("a cpufreq value is a number of kHz");
  check_plain_components(path);
  std::error_code ec;
  const auto croot = std::filesystem::canonical(root, ec);
  const auto real = ec ? std::filesystem::path() : std::filesystem::canonical(path, ec);
  if (ec) {
    report.push_back(fmt::format("{}: NOT restored to \"{}\" ({})", path, text, ec.message()));
    return false;
  }
  const std::string r = real.string(), base = croot.string();
  std::smatch pm;
  static const std::regex policy_file("/cpufreq/policy[0-9]+/(scaling_(max_freq|min_freq|setspeed))");
  const bool own_dir = r == base + rest;  // no link on the way (older kernels, a test's plain tree)
  const bool policy = !own_dir && r.rfind(base + "/", 0) == 0 && [&] {
    const std::string tail = r.substr(base.size());
    return std::regex_match(tail, pm, policy_file) && pm[1] == name &&
           policy_covers(real.parent_path().string(), cpu);
  }();
  if (!own_dir && !policy)
    throw refused(fmt::format("leads to {}, which is not {} of a cpufreq policy covering cpu{}", r, name, cpu));
  try {
    write_control(r, text);
    report.push_back(fmt::format("{}: \"{}\" written back", path, text));
    return true;
  } catch (const std::exception& e) {
    report.push_back(fmt::format("{}: NOT restored to \"{}\" ({})", path, text, e.what()));
    return false;
  }
}

// Undoes one record; false when it could not be undone. Throws `refused` for one outside rig's domain.
bool undo(const stale_journal::record& r, const stale_journal& j, std::vector<std::string>& report) {
  std::vector<std::string> f;
  std::istringstream in(r.text);
  std::string kind;
  in >> kind;
  for (std::string w; in >> w;) {
    auto d = decode_field(w);
    if (!d) throw refused("a malformed %-escape");
    f.push_back(*d);
  }
  static const std::map<std::string, size_t> arity = {{"cgroup", 1}, {"subtree", 2}, {"process", 2},
                                                       {"netns", 1},  {"file", 1},    {"restore", 2}};
  const auto a = arity.find(kind);
  if (a == arity.end()) throw refused("an unknown kind of record");
  std::string canonical = kind;  // one space apart, each field encoded as rig writes it
  for (const auto& x : f) canonical += " " + encode_field(x);
  if (f.size() != a->second || r.text != canonical)
    throw refused(fmt::format("'{}' takes {} field{}, one space apart", kind, a->second, a->second == 1 ? "" : "s"));
  if (kind == "cgroup") return undo_cgroup(f[0], j, report);
  if (kind == "subtree") return undo_subtree(f[0], f[1], report);
  if (kind == "process") return undo_process(f[0], f[1], report);
  if (kind == "netns") return undo_netns(f[0], report);
  if (kind == "file") return undo_file(f[0], report);
  return undo_restore(f[0], f[1], report);
}

}  // namespace

replay_result replay(const stale_journal& j) {
  replay_result r;
  if (!j.problem.empty()) {
    r.lines.push_back(fmt::format("{}: {}; nothing in it was acted on", j.path, j.problem));
    r.complete = false;
    return r;
  }
  for (auto it = j.pending.rbegin(); it != j.pending.rend(); ++it) {
    try {
      r.complete = undo(*it, j, r.lines) && r.complete;
    } catch (const refused& e) {
      r.lines.push_back(fmt::format("line {}: REFUSED, {}: {}", it->line, e.what(), it->text));
      r.complete = false;
    }
  }
  if (r.complete) {
    if (const unique_fd d = open_state_dir(false))
      ::unlinkat(d.get(), j.path.substr(j.path.rfind('/') + 1).c_str(), 0);
    ::rmdir(state_dir().c_str());
  }
  return r;
}

}  // namespace rig
