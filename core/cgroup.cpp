#include "core/cgroup.hpp"

#include <fcntl.h>
#include <signal.h>

#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <linux/magic.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fmt/format.h>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/fd.hpp"
#include "core/pidfd.hpp"
#include "core/journal.hpp"
#include "core/proc.hpp"

namespace rig {

namespace {

constexpr int64_t v1_unlimited = int64_t(1) << 62;  // v1 reports "no limit" as ~2^63 rounded to a page

bool is_cgroupfs(const std::string& path) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 && (fs.f_type == CGROUP_SUPER_MAGIC || fs.f_type == CGROUP2_SUPER_MAGIC);
}

std::string parent_of(const std::string& path) { return path.substr(0, path.rfind('/')); }

// "key value" lines (cpu.stat, memory.events, memory.oom_control) as a map.
std::map<std::string, int64_t> keyed(const std::string& text) {
  std::map<std::string, int64_t> out;
  std::istringstream in(text);
  std::string k;
  long long v = 0;
  while (in >> k >> v) out[k] = v;
  return out;
}

int64_t number_or(const std::string& text, int64_t otherwise) {
  try {
    return std::stoll(text);
  } catch (...) {
    return otherwise;
  }
}

int64_t get(const std::map<std::string, int64_t>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}

// v2's per-device files (io.max, io.stat): "MAJ:MIN key=value ..." lines; "max" reads as 0.
std::map<std::string, std::map<std::string, int64_t>> per_device(const std::string& text) {
  std::map<std::string, std::map<std::string, int64_t>> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string dev, kv;
    if (!(f >> dev)) continue;
    auto& m = out[dev];
    while (f >> kv)
      if (const auto eq = kv.find('='); eq != std::string::npos) m[kv.substr(0, eq)] = number_or(kv.substr(eq + 1), 0);
  }
  return out;
}

// Makes a directory; `created` gets it when it is new. rig/ parents may exist already.
void make_dir(const std::string& path, std::vector<std::string>* created, bool must_be_new) {
  if (::mkdir(path.c_str(), 0755) == 0) {
    if (created) created->push_back(path);
    return;
  }
  if (errno == EEXIST && !must_be_new) return;
  throw_system_error("mkdir " + path, errno,
                     errno == EEXIST ? "a cgroup of that name exists already" : "rig needs root to make cgroups");
}

// A run's cgroup directory, journaled first (on a real cgroupfs) so `rig cleanup` can
// remove it should this rig be killed; a failed mkdir is no change to undo.
void journaled_mkdir(const std::string& path, std::vector<std::string>& created) {
  const bool real = is_cgroupfs(parent_of(path));
  if (real) journal::self().record(journal_line("cgroup", {path}));
  try {
    make_dir(path, &created, true);
  } catch (...) {
    if (real) journal::self().done(journal_line("cgroup", {path}));
    throw;
  }
}

// Makes rig/ (set up by `prepare`) and the run's directory in it. Another run that ends
// meanwhile may remove rig/ between the two (it goes once no run uses it): then again.
void make_run_cgroup(const std::string& parent, const std::string& path, std::vector<std::string>& created,
                     const std::function<void()>& prepare) {
  for (int attempt = 0;; ++attempt) {
    try {
      make_dir(parent, nullptr, false);
      prepare();
      journaled_mkdir(path, created);
      return;
    } catch (const system_error& e) {
      if (e.code() != ENOENT || attempt >= 10) throw;
    }
  }
}

// Removes a cgroup directory: a run's (retried while the kernel lets go of it), or a rig/
// parent (only when no run's directory is left in it). A fake tree (tests) has plain files
// for control files, so there a directory goes with them.
bool remove_dir(const std::string& path, bool real, bool run_dir) {
  if (!real) {
    std::error_code ec;
    bool has_runs = false;
    for (const auto& e : std::filesystem::directory_iterator(path, ec)) has_runs = has_runs || e.is_directory();
    return !has_runs && (std::filesystem::remove_all(path, ec) > 0 || !std::filesystem::exists(path));
  }
  if (run_dir) return remove_cgroup_dir(path);
  return ::rmdir(path.c_str()) == 0 || errno == ENOENT;  // rig/ stays while a run uses it
}

}  // namespace

namespace {

std::vector<pid_t> pids_in(const std::string& dir) {
  std::vector<pid_t> pids;
  std::istringstream in(read_text_file(dir + "/cgroup.procs").value_or(""));
  for (long p; in >> p;) pids.push_back(pid_t(p));
  return pids;
}

}  // namespace

bool kill_cgroup_processes(const std::string& dir, size_t* killed) {
  std::set<pid_t> seen;
  auto left = [&] {
    const auto now = pids_in(dir);
    seen.insert(now.begin(), now.end());
    return now;
  };
  if (left().empty()) {
    if (killed) *killed = 0;
    return true;
  }
  // v2 (5.14 on): the kernel kills the whole cgroup at once, forks in flight included.
  bool by_kernel = false;
  try {
    if (::access((dir + "/cgroup.kill").c_str(), F_OK) == 0) {
      write_control(dir + "/cgroup.kill", "1");
      by_kernel = true;
    }
  } catch (const std::exception&) {
  }
  // Else one by one, frozen first where v1's freezer is here so nothing forks meanwhile; each
  // pid is held by a pidfd and found in the cgroup again before the signal, so a number that
  // passed to another process meanwhile is never signalled.
  const bool freezer = !by_kernel && ::access((dir + "/freezer.state").c_str(), F_OK) == 0;
  try {
    if (freezer) write_control(dir + "/freezer.state", "FROZEN");
  } catch (const std::exception&) {
  }
  const int64_t deadline = mono_ns() + 3 * ns_per_s;
  bool empty = false;
  while (!(empty = left().empty()) && mono_ns() < deadline) {
    if (!by_kernel)
      for (pid_t p : pids_in(dir)) {
        const unique_fd fd(open_pidfd(p));
        const auto now = pids_in(dir);
        if (fd && std::find(now.begin(), now.end(), p) != now.end()) pidfd_signal(fd.get(), SIGKILL);
      }
    if (freezer) {
      try {
        write_control(dir + "/freezer.state", "THAWED");  // the killed die as they thaw
      } catch (const std::exception&) {
      }
    }
    ::usleep(5000);
  }
  if (killed) *killed = seen.size();
  return empty;
}

bool remove_cgroup_dir(const std::string& dir) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return true;
    if (errno != EBUSY) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string read_control(const std::string& path) {
  auto read = read_text_file(path);
  if (!read) throw_system_error("read " + path);
  std::string s = std::move(*read);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

void write_control(const std::string& path, const std::string& value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  // A directory that is not cgroupfs is a fake tree (tests): its control files are plain files.
  if (fd < 0 && errno == ENOENT && !is_cgroupfs(parent_of(path)))
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw_system_error("open " + path);
  const ssize_t n = ::write(fd, value.data(), value.size());
  const int err = errno;
  ::close(fd);
  if (n != ssize_t(value.size())) throw_system_error(fmt::format("write '{}' to {}", value, path), err);
}

// ---------------------------------------------------------------------------------------
// layout

cgroup_layout cgroup_layout::detect(const std::string& mounts_file) {
  cgroup_layout l;
  std::ifstream in(mounts_file);
  std::string line;
  std::vector<std::string> v2_mounts;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string dev, mount, type, opts;
    if (!(f >> dev >> mount >> type >> opts)) continue;
    if (type == "cgroup2") {
      v2_mounts.push_back(mount);
    } else if (type == "cgroup") {
      std::istringstream o(opts);
      for (std::string c; std::getline(o, c, ',');) {
        const std::string name = c == "blkio" ? "io" : c;
        if (name == "memory" || name == "cpu" || name == "cpuacct" || name == "cpuset" || name == "io" ||
            name == "pids" || name == "freezer")
          l.by_controller_.try_emplace(name, hierarchy{cg_version::v1, mount});
      }
    }
  }
  // A controller lives in one hierarchy: a v2 mount lists only the ones no v1 hierarchy holds.
  for (const auto& m : v2_mounts) {
    std::ifstream c(m + "/cgroup.controllers");
    for (std::string name; c >> name;) l.by_controller_.try_emplace(name, hierarchy{cg_version::v2, m});
  }
  // The process tree is followed in a v2 hierarchy (cgroup.kill), with or without
  // controllers; else in v1's freezer (freeze, then kill), else in v1's pids.
  if (!v2_mounts.empty()) l.by_controller_.try_emplace("tree", hierarchy{cg_version::v2, v2_mounts.front()});
  for (const char* c : {"freezer", "pids"})
    if (const auto* h = l.find(c)) l.by_controller_.try_emplace("tree", *h);
  return l;
}

cgroup_layout cgroup_layout::v2_at(const std::string& root, const std::vector<std::string>& controllers) {
  cgroup_layout l;
  for (const auto& c : controllers) l.by_controller_[c] = {cg_version::v2, root};
  l.by_controller_["tree"] = {cg_version::v2, root};
  return l;
}

cgroup_layout cgroup_layout::v1_at(const std::map<std::string, std::string>& mounts) {
  cgroup_layout l;
  for (const auto& [c, m] : mounts) l.by_controller_[c] = {cg_version::v1, m};
  for (const char* c : {"freezer", "pids"})
    if (const auto* h = l.find(c)) l.by_controller_.try_emplace("tree", *h);
  if (!mounts.empty()) l.by_controller_.try_emplace("tree", hierarchy{cg_version::v1, mounts.begin()->second});
  return l;
}

const cgroup_layout::hierarchy* cgroup_layout::find(const std::string& controller) const {
  auto it = by_controller_.find(controller);
  return it == by_controller_.end() ? nullptr : &it->second;
}

std::string cgroup_layout::describe() const {
  std::vector<std::string> v1, v2;
  for (const auto& [c, h] : by_controller_)
    if (c != "cpuacct" && c != "tree") (h.version == cg_version::v1 ? v1 : v2).push_back(c);
  std::string s;
  if (!v1.empty()) s += fmt::format("v1 ({})", fmt::join(v1, ", "));
  if (!v2.empty()) s += fmt::format("{}v2 ({})", s.empty() ? "" : " + ", fmt::join(v2, ", "));
  return s.empty() ? "none" : s;
}

// ---------------------------------------------------------------------------------------
// cgroup

cgroup::cgroup(cgroup&& o) noexcept { *this = std::move(o); }

cgroup& cgroup::operator=(cgroup&& o) noexcept {
  if (this != &o) {
    destroy();
    dirs_ = std::move(o.dirs_);
    created_ = std::move(o.created_);
    enabled_at_top_ = std::move(o.enabled_at_top_);
    parents_ = std::move(o.parents_);
    o.dirs_.clear();
    o.created_.clear();
    o.enabled_at_top_.clear();
    o.parents_.clear();
  }
  return *this;
}

cgroup cgroup::create(const cgroup_layout& layout, const std::string& name, const std::vector<std::string>& controllers) {
  cgroup g;
  std::vector<std::string> wanted = controllers;
  wanted.push_back("tree");  // always: what the target starts stays in it, and goes with it
  if (std::count(wanted.begin(), wanted.end(), "cpu") && layout.find("cpuacct") &&
      layout.find("cpuacct")->mount != layout.find("cpu")->mount)
    wanted.push_back("cpuacct");  // v1: CPU usage is counted in a hierarchy of its own
  try {
    std::vector<std::string> v2_enable;
    std::string v2_top;
    for (const auto& c : wanted) {
      const auto* h = layout.find(c);
      if (!h && c == "tree")
        throw std::runtime_error("no cgroup hierarchy is mounted on this host: rig needs one (cgroup v2, or v1's "
                                 "freezer or pids) to follow the target's processes and end them with the run");
      if (!h)
        throw std::runtime_error(fmt::format("no cgroup '{}' controller on this host (cgroups: {})", c,
                                             layout.describe()));
      if (h->version == cg_version::v2) {
        if (c != "cpuacct" && c != "tree") v2_enable.push_back(c);
        v2_top = h->mount;
        continue;
      }
      const std::string parent = h->mount + "/rig", path = parent + "/" + name;
      if (g.dirs_.count(c)) continue;
      bool shared = false;  // cpu and cpuacct mounted together, say
      for (const auto& [other, d] : g.dirs_) shared = shared || d.path == path;
      if (!shared) {
        if (std::find(g.parents_.begin(), g.parents_.end(), parent) == g.parents_.end()) g.parents_.push_back(parent);
        make_run_cgroup(parent, path, g.created_, [&] {
          if (c != "cpuset") return;
          // v1 cpuset: a cgroup takes no task until it has CPUs and memory nodes.
          for (const char* f : {"cpuset.cpus", "cpuset.mems"})
            if (read_control(parent + "/" + f).empty()) write_control(parent + "/" + f, read_control(h->mount + "/" + f));
        });
        if (c == "cpuset")
          for (const char* f : {"cpuset.cpus", "cpuset.mems"}) write_control(path + "/" + f, read_control(parent + "/" + f));
      }
      g.dirs_[c] = {cg_version::v1, path, h->mount};
    }
    if (!v2_top.empty()) {
      const std::string top = v2_enable.empty() ? v2_top : layout.find(v2_enable[0])->mount;
      const std::string parent = top + "/rig", path = parent + "/" + name;
      std::string subtree;
      for (const auto& c : v2_enable) subtree += (subtree.empty() ? "+" : " +") + c;
      // Controllers reach a child only when its parent hands them down. Those the top did
      // not hand down before are taken back when rig/ goes.
      std::set<std::string> before;
      {
        std::ifstream in(top + "/cgroup.subtree_control");
        for (std::string c; in >> c;) before.insert(c);
      }
      for (const auto& c : v2_enable)
        if (!before.count(c)) {
          if (is_cgroupfs(top)) journal::self().record(journal_line("subtree", {top, c}));
          g.enabled_at_top_.push_back({top, c});
          write_control(top + "/cgroup.subtree_control", "+" + c);
        }
      g.parents_.push_back(parent);
      make_run_cgroup(parent, path, g.created_, [&] {
        if (!subtree.empty()) write_control(parent + "/cgroup.subtree_control", subtree);
      });
      for (const auto& c : v2_enable) g.dirs_[c] = {cg_version::v2, path, top};
      if (layout.find("tree")->version == cg_version::v2) g.dirs_["tree"] = {cg_version::v2, path, top};
    }
  } catch (...) {
    g.destroy();
    throw;
  }
  return g;
}

const cgroup::dir& cgroup::at(const std::string& controller) const {
  auto it = dirs_.find(controller);
  if (it == dirs_.end()) throw std::logic_error("cgroup has no '" + controller + "' controller");
  return it->second;
}

cg_version cgroup::version(const std::string& controller) const { return at(controller).version; }
std::string cgroup::path(const std::string& controller) const { return at(controller).path; }

std::vector<std::string> cgroup::procs_files() const {
  std::set<std::string> out;
  for (const auto& [c, d] : dirs_) out.insert(d.path + "/cgroup.procs");
  return {out.begin(), out.end()};
}

void cgroup::add(pid_t pid) {
  for (const auto& f : procs_files()) write_control(f, std::to_string(pid));
}

std::vector<pid_t> cgroup::pids() const {
  std::set<pid_t> out;
  for (const auto& [c, d] : dirs_)
    for (pid_t p : pids_in(d.path)) out.insert(p);
  return {out.begin(), out.end()};
}

bool cgroup::holds(pid_t pid) const {
  const auto text = read_text_file(fmt::format("/proc/{}/cgroup", pid));
  if (!text || dirs_.empty()) return true;
  std::set<std::string> tops, rels;
  for (const auto& [c, d] : dirs_) {
    tops.insert(d.top);
    rels.insert(d.path.substr(d.top.size()));  // "/rig/run-<pid>-<start>-<n>", the same in each hierarchy
  }
  // One line per hierarchy, "id:controllers:path": the run's directory must be on one line per top.
  size_t inside = 0;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    const auto a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string path = line.substr(b + 1);
    for (const auto& r : rels)
      if (path == r || path.rfind(r + "/", 0) == 0) {
        ++inside;
        break;
      }
  }
  return inside >= tops.size();
}

void cgroup::set_memory_limit(std::optional<int64_t> bytes, std::optional<int64_t> swap_bytes) {
  const dir& d = at("memory");
  if (d.version == cg_version::v2) {
    write_control(d.path + "/memory.max", bytes ? std::to_string(*bytes) : "max");
    if (swap_bytes || ::access((d.path + "/memory.swap.max").c_str(), F_OK) == 0)
      write_control(d.path + "/memory.swap.max", swap_bytes ? std::to_string(*swap_bytes) : "max");
    return;
  }
  // v1: memory+swap may never be below memory: lift it first, set memory, then memsw.
  const std::string memsw = d.path + "/memory.memsw.limit_in_bytes";
  const bool has_memsw = ::access(memsw.c_str(), F_OK) == 0;
  if (swap_bytes && !has_memsw)
    throw std::runtime_error("this kernel does not account swap in cgroup v1 (no memory.memsw.limit_in_bytes; "
                             "boot with swapaccount=1), so 'swap' cannot be capped");
  if (has_memsw) write_control(memsw, "-1");
  try {
    write_control(d.path + "/memory.limit_in_bytes", bytes ? std::to_string(*bytes) : "-1");
  } catch (const system_error& e) {
    if (e.code() != EBUSY || !bytes) throw;
    // v1 lowers a limit only as far as it can reclaim; v2 would OOM-kill instead.
    throw std::runtime_error(fmt::format(
        "cgroup v1 refused a memory cap of {} bytes: the cgroup holds {} bytes now and the kernel could not "
        "reclaim down to the cap (EBUSY; anonymous memory without swap cannot be reclaimed). Set the cap above "
        "what the cgroup holds, or apply it from the first phase",
        *bytes, memory().usage_bytes));
  }
  if (has_memsw && bytes && swap_bytes) write_control(memsw, std::to_string(*bytes + *swap_bytes));
}

std::optional<int64_t> cgroup::memory_limit() const {
  const dir& d = at("memory");
  const std::string v =
      read_control(d.path + (d.version == cg_version::v2 ? "/memory.max" : "/memory.limit_in_bytes"));
  const int64_t n = number_or(v, -1);
  if (n < 0 || n >= v1_unlimited) return std::nullopt;
  return n;
}

std::optional<int64_t> cgroup::swap_limit() const {
  const dir& d = at("memory");
  if (d.version == cg_version::v2) {
    if (::access((d.path + "/memory.swap.max").c_str(), F_OK) != 0) return std::nullopt;
    const int64_t n = number_or(read_control(d.path + "/memory.swap.max"), -1);
    return n < 0 ? std::nullopt : std::optional<int64_t>(n);
  }
  const std::string memsw = d.path + "/memory.memsw.limit_in_bytes";
  if (::access(memsw.c_str(), F_OK) != 0) return std::nullopt;
  const int64_t both = number_or(read_control(memsw), -1);
  const auto mem = memory_limit();
  if (both < 0 || both >= v1_unlimited || !mem) return std::nullopt;
  return both - *mem;
}

void cgroup::reset_memory_peak() {
  const dir& d = at("memory");
  if (d.version == cg_version::v1) write_control(d.path + "/memory.max_usage_in_bytes", "0");
}

memory_figures cgroup::memory() const {
  const dir& d = at("memory");
  memory_figures m;
  if (d.version == cg_version::v2) {
    m.usage_bytes = number_or(read_control(d.path + "/memory.current"), 0);
    m.peak_bytes = ::access((d.path + "/memory.peak").c_str(), F_OK) == 0
                       ? number_or(read_control(d.path + "/memory.peak"), -1)
                       : -1;
    const auto ev = keyed(read_control(d.path + "/memory.events"));
    m.limit_hits = get(ev, "max");
    m.oom_kills = get(ev, "oom_kill");
  } else {
    m.usage_bytes = number_or(read_control(d.path + "/memory.usage_in_bytes"), 0);
    m.peak_bytes = number_or(read_control(d.path + "/memory.max_usage_in_bytes"), -1);
    m.limit_hits = number_or(read_control(d.path + "/memory.failcnt"), 0);
    // With a swap cap, memory+swap is the limit that is hit first.
    if (::access((d.path + "/memory.memsw.failcnt").c_str(), F_OK) == 0)
      m.limit_hits = std::max(m.limit_hits, number_or(read_control(d.path + "/memory.memsw.failcnt"), 0));
    m.oom_kills = get(keyed(read_control(d.path + "/memory.oom_control")), "oom_kill");
  }
  return m;
}

void cgroup::set_cpu_quota(std::optional<int64_t> quota_us, int64_t period_us) {
  const dir& d = at("cpu");
  if (d.version == cg_version::v2) {
    write_control(d.path + "/cpu.max",
                  fmt::format("{} {}", quota_us ? std::to_string(*quota_us) : "max", period_us));
    return;
  }
  // v1: lift the quota before the period changes, so no intermediate pair is refused.
  write_control(d.path + "/cpu.cfs_quota_us", "-1");
  write_control(d.path + "/cpu.cfs_period_us", std::to_string(period_us));
  if (quota_us) write_control(d.path + "/cpu.cfs_quota_us", std::to_string(*quota_us));
}

std::optional<int64_t> cgroup::cpu_quota_us() const {
  const dir& d = at("cpu");
  const std::string v = d.version == cg_version::v2 ? read_control(d.path + "/cpu.max")
                                                    : read_control(d.path + "/cpu.cfs_quota_us");
  const int64_t n = number_or(v.substr(0, v.find(' ')), -1);  // "max 100000" -> -1
  return n < 0 ? std::nullopt : std::optional<int64_t>(n);
}

int64_t cgroup::cpu_period_us() const {
  const dir& d = at("cpu");
  if (d.version == cg_version::v2) {
    const std::string v = read_control(d.path + "/cpu.max");
    return number_or(v.substr(v.find(' ') + 1), 100'000);
  }
  return number_or(read_control(d.path + "/cpu.cfs_period_us"), 100'000);
}

cpu_figures cgroup::cpu() const {
  const dir& d = at("cpu");
  cpu_figures f;
  const auto st = keyed(read_control(d.path + "/cpu.stat"));
  f.periods = get(st, "nr_periods");
  f.throttled_periods = get(st, "nr_throttled");
  if (d.version == cg_version::v2) {
    f.usage_ns = get(st, "usage_usec") * 1000;
    f.throttled_ns = get(st, "throttled_usec") * 1000;
  } else {
    f.throttled_ns = get(st, "throttled_time");
    const auto acct = dirs_.find("cpuacct");
    const std::string usage = (acct != dirs_.end() ? acct->second.path : d.path) + "/cpuacct.usage";
    if (::access(usage.c_str(), F_OK) == 0) f.usage_ns = number_or(read_control(usage), 0);
  }
  return f;
}

void cgroup::set_cpus(const std::string& list) { write_control(at("cpuset").path + "/cpuset.cpus", list); }
std::string cgroup::cpus() const {
  const dir& d = at("cpuset");
  const std::string own = read_control(d.path + "/cpuset.cpus");
  // v2: empty means "as the parent"; the CPUs in force are the effective ones.
  if (own.empty() && d.version == cg_version::v2 && ::access((d.path + "/cpuset.cpus.effective").c_str(), R_OK) == 0)
    return read_control(d.path + "/cpuset.cpus.effective");
  return own;
}

void cgroup::set_io_limits(dev_t device, const io_limits& l) {
  const dir& d = at("io");
  const std::string dev = device_name(device);
  if (d.version == cg_version::v2) {
    auto v = [](int64_t n) { return n ? std::to_string(n) : std::string("max"); };
    write_control(d.path + "/io.max", fmt::format("{} rbps={} wbps={} riops={} wiops={}", dev, v(l.read_bps),
                                                  v(l.write_bps), v(l.read_iops), v(l.write_iops)));
    return;
  }
  const std::pair<const char*, int64_t> files[] = {{"read_bps_device", l.read_bps},
                                                   {"write_bps_device", l.write_bps},
                                                   {"read_iops_device", l.read_iops},
                                                   {"write_iops_device", l.write_iops}};
  for (const auto& [f, n] : files) write_control(d.path + "/blkio.throttle." + f, fmt::format("{} {}", dev, n));
}

std::map<std::string, io_limits> cgroup::io_limits_all() const {
  const dir& d = at("io");
  std::map<std::string, io_limits> out;
  if (d.version == cg_version::v2) {
    // "254:0 rbps=1000000 wbps=max riops=max wiops=50" per device with a cap ("max": none).
    for (const auto& [dev, kv] : per_device(read_control(d.path + "/io.max")))
      out[dev] = {get(kv, "rbps"), get(kv, "wbps"), get(kv, "riops"), get(kv, "wiops")};
    return out;
  }
  // v1: one file per kind, "254:0 1000000" per device with a cap.
  const std::pair<const char*, int64_t io_limits::*> files[] = {{"read_bps_device", &io_limits::read_bps},
                                                                {"write_bps_device", &io_limits::write_bps},
                                                                {"read_iops_device", &io_limits::read_iops},
                                                                {"write_iops_device", &io_limits::write_iops}};
  for (const auto& [f, field] : files) {
    std::istringstream in(read_control(d.path + "/blkio.throttle." + f));
    std::string dev;
    long long n;
    while (in >> dev >> n) out[dev].*field = n;
  }
  return out;
}

io_limits cgroup::io_limits_of(dev_t device) const {
  const auto all = io_limits_all();
  const auto it = all.find(device_name(device));
  return it == all.end() ? io_limits{} : it->second;
}

std::map<std::string, io_figures> cgroup::io_all() const {
  const dir& d = at("io");
  std::map<std::string, io_figures> out;
  if (d.version == cg_version::v2) {
    // "254:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0" per device.
    for (const auto& [dev, kv] : per_device(read_control(d.path + "/io.stat")))
      out[dev] = {get(kv, "rbytes"), get(kv, "wbytes"), get(kv, "rios"), get(kv, "wios")};
    return out;
  }
  // v1: "254:0 Read 4096", "254:0 Write 8192", ..., and a closing "Total N".
  auto rows = [&](const char* file, int64_t io_figures::*read, int64_t io_figures::*write) {
    std::istringstream in(read_control(d.path + "/" + file));
    std::string dev, op;
    long long n;
    while (in >> dev) {
      if (dev == "Total") {
        in >> n;
        continue;
      }
      if (!(in >> op >> n)) break;
      if (op == "Read") out[dev].*read = n;
      if (op == "Write") out[dev].*write = n;
    }
  };
  rows("blkio.throttle.io_service_bytes", &io_figures::read_bytes, &io_figures::write_bytes);
  rows("blkio.throttle.io_serviced", &io_figures::read_ops, &io_figures::write_ops);
  return out;
}

io_figures cgroup::io(dev_t device) const {
  const auto all = io_all();
  const auto it = all.find(device_name(device));
  return it == all.end() ? io_figures{} : it->second;
}

size_t cgroup::kill_all() noexcept {
  size_t n = 0;
  try {
    for (const auto& dir : created_) {
      size_t k = 0;
      kill_cgroup_processes(dir, &k);
      n += k;
    }
  } catch (const std::exception&) {
  }
  return n;
}

std::string cgroup::destroy() noexcept {
  std::string failed;
  try {
    // Processes still inside were started by the run (what the target left, a daemon it
    // started): killed; then the directories go, deepest first. The kernel may need a moment
    // after the last process left.
    const bool real = !created_.empty() && is_cgroupfs(created_.front());
    if (real) kill_all();
    // The run's directories, then rig/ parents that no other run uses any more (whichever
    // run ends last removes them).
    bool rig_dir_gone = true;
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
      if (!remove_dir(*it, real, true)) failed += (failed.empty() ? "" : ", ") + *it + " (" + strerror(errno) + ")";
      else if (real) journal::self().done(journal_line("cgroup", {*it}));
    }
    for (const auto& p : parents_) rig_dir_gone = remove_dir(p, real, false) && rig_dir_gone;
    // With rig/ still used by another run, the controllers it needs stay handed down.
    if (!rig_dir_gone && real)
      for (const auto& [top, c] : enabled_at_top_) journal::self().done(journal_line("subtree", {top, c}));
    if (rig_dir_gone)
      for (const auto& [top, c] : enabled_at_top_) {
        try {
          write_control(top + "/cgroup.subtree_control", "-" + c);
        } catch (...) {
          // Another cgroup of the host has come to use it meanwhile: it stays on.
        }
        if (real) journal::self().done(journal_line("subtree", {top, c}));
      }
  } catch (const std::exception& e) {
    failed += e.what();
  }
  dirs_.clear();
  created_.clear();
  parents_.clear();
  enabled_at_top_.clear();
  return failed;
}

dev_t block_device_of(const std::string& path) {
  struct stat st {};
  throw_system_error_on(::stat(path.c_str(), &st) != 0, "stat " + path);
  const unsigned maj = major(st.st_dev), min = minor(st.st_dev);
  const std::string sys = fmt::format("/sys/dev/block/{}:{}", maj, min);
  if (maj == 0 || ::access(sys.c_str(), F_OK) != 0)
    throw std::runtime_error(fmt::format("{} is on a file system with no block device ({}:{}, e.g. tmpfs or overlay): "
                                         "disk caps need a path on a real disk",
                                         path, maj, min));
  // A partition: caps apply to the whole disk, whose directory holds the partition's.
  if (::access((sys + "/partition").c_str(), F_OK) == 0) {
    const std::string disk_dev = read_control(std::filesystem::canonical(sys).parent_path().string() + "/dev");
    unsigned a = 0, b = 0;
    if (std::sscanf(disk_dev.c_str(), "%u:%u", &a, &b) == 2) return makedev(a, b);
  }
  return st.st_dev;
}

std::string device_name(dev_t d) { return fmt::format("{}:{}", major(d), minor(d)); }

}  // namespace rig
