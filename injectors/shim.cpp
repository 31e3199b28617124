#include "injectors/shim.hpp"

#include <sys/stat.h>

#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/listener.hpp"
#include "core/proc.hpp"
#include "injectors/preload/shim_control.h"

namespace rig {

namespace {
template <typename T>
T load(const T* p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
template <typename T>
void store(T* p, T v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
}  // namespace

preload_shim::preload_shim() {
  fd_ = ::memfd_create("rig-shim-control", MFD_CLOEXEC);
  throw_system_error_on(fd_ < 0, "memfd_create for the preload shim");
  throw_system_error_on(::ftruncate(fd_, sizeof(rig_shim_control)) != 0, "ftruncate shim control");
  void* m = ::mmap(nullptr, sizeof(rig_shim_control), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  throw_system_error_on(m == MAP_FAILED, "mmap shim control");
  ctl_ = static_cast<rig_shim_control*>(m);
  std::memset(ctl_, 0, sizeof *ctl_);
  ctl_->nodelay = ctl_->sndbuf = ctl_->rcvbuf = RIG_SHIM_LEAVE;
  ctl_->version = RIG_SHIM_VERSION;
  store(&ctl_->magic, RIG_SHIM_MAGIC);
}

preload_shim::~preload_shim() {
  if (ctl_) ::munmap(ctl_, sizeof *ctl_);
  if (fd_ >= 0) ::close(fd_);
}

std::vector<std::string> preload_shim::environment(const std::string& library) const {
  const char* prior = ::getenv("LD_PRELOAD");
  return {"LD_PRELOAD=" + library + (prior && *prior ? ":" + std::string(prior) : ""),
          fmt::format("{}={}", RIG_SHIM_FD_ENV, RIG_SHIM_FD_NUMBER)};
}

namespace {
// The pid still runs the image whose shim claimed the slot (an exec since, without the shim's
// descriptor, leaves a slot no shim answers for).
bool same_image(pid_t pid, const rig_shim_proc& p) {
  struct stat st {};
  if (::stat(fmt::format("/proc/{}/exe", pid).c_str(), &st) != 0) return false;
  return uint64_t(st.st_dev) == __atomic_load_n(&p.exe_dev, __ATOMIC_ACQUIRE) &&
         uint64_t(st.st_ino) == __atomic_load_n(&p.exe_ino, __ATOMIC_ACQUIRE);
}
}  // namespace

socket_report preload_shim::publish_and_wait() {
  const uint32_t gen = __atomic_add_fetch(&ctl_->generation, 1, __ATOMIC_ACQ_REL);
  // Each shimmed process re-applies the policy within its 10 ms watch tick.
  const int64_t deadline = mono_ns() + 2 * ns_per_s;
  socket_report r;
  const auto serving = serving_ ? serving_() : std::vector<pid_t>{};
  for (;;) {
    r = socket_report{};
    bool all = true;
    int64_t processes = 0, stale = 0, server_sockets = 0;
    std::vector<pid_t> answered;
    for (auto& p : ctl_->procs) {
      const int32_t pid = load(&p.pid);
      if (pid <= 0) continue;
      if (::kill(pid, 0) != 0 && errno == ESRCH) {  // gone: what it counted is kept with the retired
        rig_shim_retire(ctl_, &p, pid, 1);
        continue;
      }
      ++processes;
      // Dormant (no TCP socket yet, so no watcher): nothing to apply, its file calls read the faults
      // themselves; it answers while the pid still runs the image that claimed the slot.
      if (load(&p.applied_generation) != gen && !(load(&p.dormant) && same_image(pid, p))) {
        all = false;
        ++stale;
        continue;
      }
      answered.push_back(pid);
      if (std::find(serving.begin(), serving.end(), pid) != serving.end()) server_sockets += load(&p.sockets);
      r.sockets += int(load(&p.sockets));
      r.matching += int(load(&p.matching));
      r.counters["setsockopt_overridden"] += load(&p.setsockopt_overridden);
      r.counters["tcp_sockets_seen"] += load(&p.tracked_total);
      r.counters["nodelay_forced"] += load(&p.nodelay_forced);
      r.counters["sndbuf_clamped"] += load(&p.sndbuf_clamped);
      r.counters["rcvbuf_clamped"] += load(&p.rcvbuf_clamped);
      r.counters["file_calls"] += load(&p.file_calls);
      r.counters["file_delayed"] += load(&p.file_delayed);
      r.counters["file_failed"] += load(&p.file_failed);
      r.counters["buffers_restored"] += load(&p.buf_restored);
      r.counters["buffers_fixed"] += load(&p.buf_fixed);
      r.counters["buffers_fixed_bytes"] = std::max<int64_t>(r.counters["buffers_fixed_bytes"], load(&p.buf_fixed_bytes));
    }
    // What processes that are gone counted (a backend that served one connection and exited).
    const rig_shim_proc& gone = ctl_->retired;
    r.counters["setsockopt_overridden"] += load(&gone.setsockopt_overridden);
    r.counters["tcp_sockets_seen"] += load(&gone.tracked_total);
    r.counters["nodelay_forced"] += load(&gone.nodelay_forced);
    r.counters["sndbuf_clamped"] += load(&gone.sndbuf_clamped);
    r.counters["rcvbuf_clamped"] += load(&gone.rcvbuf_clamped);
    r.counters["file_calls"] += load(&gone.file_calls);
    r.counters["file_delayed"] += load(&gone.file_delayed);
    r.counters["file_failed"] += load(&gone.file_failed);
    r.counters["buffers_restored"] += load(&gone.buf_restored);
    r.counters["buffers_fixed"] += load(&gone.buf_fixed);
    r.counters["processes_exited"] = load(&ctl_->retired_procs);
    r.counters["processes_exited_with_sockets"] = load(&ctl_->retired_with_sockets);
    r.counters["processes_exited_with_file_calls"] = load(&ctl_->retired_with_files);
    r.counters["processes_without_slot"] = load(&ctl_->slotless);
    r.counters["processes"] = processes;
    if (all || mono_ns() > deadline) {
      r.counters["processes_not_answering"] = stale;
      r.counters["serving_processes"] = int64_t(serving.size());
      r.counters["serving_sockets"] = server_sockets;
      const int64_t exited = r.counters["processes_exited"], slotless = r.counters["processes_without_slot"];
      r.detail = fmt::format("shim in {} process{}{}{}: {} TCP sockets seen, {} of the program's setsockopt calls "
                             "overridden{}",
                             processes, processes == 1 ? "" : "es",
                             exited ? fmt::format(" and {} that exited since", exited) : "",
                             stale ? fmt::format(" ({} did not answer)", stale) : "", r.counters["tcp_sockets_seen"],
                             r.counters["setsockopt_overridden"],
                             slotless ? fmt::format("; {} process{} found no slot on rig's control page: not counted",
                                                    slotless, slotless == 1 ? "" : "es")
                                      : "");
      check_reach(r, serving, answered);
      return r;
    }
    ::usleep(2000);
  }
}

// An injection through the shim has landed only if the shim answered in each process that serves
// the port (through a wrapper's exec too); the target's other processes it missed are named.
void preload_shim::check_reach(socket_report& r, const std::vector<pid_t>& serving,
                               const std::vector<pid_t>& answered) const {
  const auto in = [](const std::vector<pid_t>& v, pid_t p) { return std::find(v.begin(), v.end(), p) != v.end(); };
  std::vector<pid_t> missed_servers, missed_others;
  for (pid_t p : serving)
    if (!in(answered, p)) missed_servers.push_back(p);
  for (pid_t p : tree_ ? tree_() : std::vector<pid_t>{}) {  // the target's processes, not rig's helpers
    const auto h = stat_head(p);
    if (!in(answered, p) && !in(serving, p) && h && h->state != 'Z') missed_others.push_back(p);
  }
  const std::string servers = process_names(missed_servers), others = process_names(missed_others);
  r.reached_server = servers.empty();
  if (!servers.empty())
    r.unreached = fmt::format("not in the process serving the port: {} (the program dropped LD_PRELOAD or "
                              "RIG_SHIM_FD, closed the shim's descriptor {}, or is statically linked)",
                              servers, RIG_SHIM_FD_NUMBER);
  if (!others.empty()) r.unreached += (r.unreached.empty() ? "" : "; ") + std::string("not in ") + others;
  if (!r.unreached.empty()) r.detail += "; " + r.unreached;
}

socket_report preload_shim::set_socket_policy(const socket_policy& p) {
  if (p.nodelay) store(&ctl_->nodelay, int32_t(*p.nodelay ? 1 : 0));
  if (p.send_buffer) store(&ctl_->sndbuf, int32_t(*p.send_buffer));
  if (p.receive_buffer) store(&ctl_->rcvbuf, int32_t(*p.receive_buffer));
  return publish_and_wait();
}

socket_report preload_shim::check_socket_policy(const socket_policy&) { return publish_and_wait(); }

socket_policy preload_shim::socket_policy_now() {
  socket_policy p;
  if (const int32_t v = load(&ctl_->nodelay); v != RIG_SHIM_LEAVE) p.nodelay = v != 0;
  if (const int32_t v = load(&ctl_->sndbuf); v != RIG_SHIM_LEAVE) p.send_buffer = v;
  if (const int32_t v = load(&ctl_->rcvbuf); v != RIG_SHIM_LEAVE) p.receive_buffer = v;
  return p;
}

socket_report preload_shim::set_file_faults(uint32_t ops, const std::string& prefix, double probability,
                                            int64_t delay_ns, int error, uint64_t seed) {
  if (prefix.size() >= RIG_SHIM_PREFIX_MAX)
    throw std::runtime_error(fmt::format("path prefix longer than {} bytes: {}", RIG_SHIM_PREFIX_MAX - 1, prefix));
  // Off first, so no process ever reads a half-written prefix with faults on.
  store(&ctl_->fault_ops, 0u);
  std::memset(ctl_->fault_prefix, 0, sizeof ctl_->fault_prefix);
  std::memcpy(ctl_->fault_prefix, prefix.data(), prefix.size());
  store(&ctl_->fault_ppm, uint32_t(std::llround(std::clamp(probability, 0.0, 1.0) * 1e6)));
  store(&ctl_->fault_errno, int32_t(error));
  store(&ctl_->fault_delay_ns, delay_ns);
  store(&ctl_->fault_seed, seed);
  store(&ctl_->fault_ops, ops);
  __atomic_add_fetch(&ctl_->fault_generation, 1, __ATOMIC_ACQ_REL);  // a new configuration: its draws from the first
  return publish_and_wait();
}

void preload_shim::reset_socket_policy(const socket_policy& prior) {
  store(&ctl_->nodelay, prior.nodelay ? int32_t(*prior.nodelay ? 1 : 0) : int32_t(RIG_SHIM_LEAVE));
  store(&ctl_->sndbuf, prior.send_buffer ? int32_t(*prior.send_buffer) : int32_t(RIG_SHIM_LEAVE));
  store(&ctl_->rcvbuf, prior.receive_buffer ? int32_t(*prior.receive_buffer) : int32_t(RIG_SHIM_LEAVE));
  publish_and_wait();
}

std::optional<std::string> preload_library(const std::string& rig_exe, std::string* why) {
  const auto lib = std::filesystem::path(rig_exe).parent_path() / "librig_preload.so";
  if (::access(lib.c_str(), R_OK) == 0) return lib.string();
  if (why) *why = "the preload shim " + lib.string() + " is not built (make build builds it)";
  return std::nullopt;
}

std::optional<std::string> preload_unreachable(const std::string& executable) {
  std::ifstream in(executable, std::ios::binary);
  if (!in) return "cannot read " + executable;
  char head[2] = {};
  in.read(head, 2);
  if (head[0] == '#' && head[1] == '!') return std::nullopt;  // a script: its interpreter is dynamic
  in.seekg(0);
  Elf64_Ehdr eh{};
  if (!in.read(reinterpret_cast<char*>(&eh), sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0)
    return executable + " is not an ELF executable";
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) return executable + " is not a 64-bit ELF executable";
  for (int i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph{};
    in.seekg(std::streamoff(eh.e_phoff + uint64_t(i) * eh.e_phentsize));
    if (!in.read(reinterpret_cast<char*>(&ph), sizeof ph)) break;
    if (ph.p_type == PT_INTERP) return std::nullopt;
  }
  return executable + " is statically linked: LD_PRELOAD cannot reach its sockets";
}

}  // namespace rig
