#include "core/proc.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "core/clock.hpp"

namespace rig {

namespace {

bool read_status_counters(const std::string& path, uint64_t* rss, uint64_t& vol, uint64_t& invol) {
  const auto text = read_text_file(path);  // close-on-exec: this runs beside spawns on other threads
  if (!text) return false;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    unsigned long long v = 0;
    if (rss && std::sscanf(line.c_str(), "VmRSS: %llu kB", &v) == 1) *rss = v * 1024;
    else if (std::sscanf(line.c_str(), "voluntary_ctxt_switches: %llu", &v) == 1) vol += v;
    else if (std::sscanf(line.c_str(), "nonvoluntary_ctxt_switches: %llu", &v) == 1) invol += v;
  }
  return true;
}

int count_entries(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return 0;
  int n = 0;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') ++n;
  closedir(d);
  return n;
}

}  // namespace

std::optional<std::string> read_text_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      errno = e;
      return std::nullopt;
    }
    if (n == 0) break;
    out.append(buf, size_t(n));
  }
  ::close(fd);
  return out;
}

std::optional<std::string> stat_fields(pid_t pid) {
  const auto read = read_text_file("/proc/" + std::to_string(pid) + "/stat");
  if (!read) return std::nullopt;
  const std::string& all = *read;
  const auto close = all.rfind(')');  // fields start after the last ')'
  if (close == std::string::npos || close + 2 >= all.size()) return std::nullopt;
  return all.substr(close + 2);
}

std::optional<proc_stat_head> stat_head(pid_t pid) {
  const auto f = stat_fields(pid);
  proc_stat_head h;
  int ppid = 0, pgrp = 0;
  if (!f || std::sscanf(f->c_str(), " %c %d %d", &h.state, &ppid, &pgrp) != 3) return std::nullopt;
  h.ppid = ppid;
  h.pgrp = pgrp;
  return h;
}

std::optional<proc_sample> read_proc(pid_t pid) {
  static const double ticks = double(sysconf(_SC_CLK_TCK));
  const std::string base = "/proc/" + std::to_string(pid);
  proc_sample s;
  s.t_ns = mono_ns();
  {
    const auto fields = stat_fields(pid);
    if (!fields) return std::nullopt;
    char state = 0;
    unsigned long long utime = 0, stime = 0;
    long threads = 0;
    // Fields 3.. : state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    //              cutime cstime priority nice num_threads
    if (std::sscanf(fields->c_str(),
                    " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %ld", &state,
                    &utime, &stime, &threads) != 4)
      return std::nullopt;
    if (state == 'Z' || state == 'X') return std::nullopt;
    s.cpu_user_s = double(utime) / ticks;
    s.cpu_sys_s = double(stime) / ticks;
    s.threads = int(threads);
  }
  uint64_t vol = 0, invol = 0;
  read_status_counters(base + "/status", &s.rss_bytes, vol, invol);
  // /proc/PID/status counts the main thread only; sum the live threads instead.
  vol = invol = 0;
  if (DIR* d = opendir((base + "/task").c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      const std::string task = base + "/task/" + e->d_name;
      read_status_counters(task + "/status", nullptr, vol, invol);
      // schedstat: time on a CPU, time runnable but waiting for one (the ready-time analog), slices.
      unsigned long long run = 0, wait = 0;
      if (const auto st = read_text_file(task + "/schedstat"); st && std::sscanf(st->c_str(), "%llu %llu", &run, &wait) == 2)
        s.run_queue_wait_ns += wait;
    }
    closedir(d);
  }
  s.voluntary_ctx = vol;
  s.involuntary_ctx = invol;
  s.fds = count_entries(base + "/fd");
  if (const auto io = read_text_file(base + "/io")) {
    const auto field = [&](const char* key) -> uint64_t {
      const auto at = io->find(key);
      return at == std::string::npos ? 0 : std::strtoull(io->c_str() + at + std::strlen(key), nullptr, 10);
    };
    s.disk_read_bytes = field("\nread_bytes: ");
    // Bytes written and then truncated away before writeback never reach the disk.
    const uint64_t written = field("\nwrite_bytes: "), cancelled = field("\ncancelled_write_bytes: ");
    s.disk_write_bytes = written > cancelled ? written - cancelled : 0;
  }
  return s;
}

std::optional<proc_sample> process_group_meter::read(const std::vector<pid_t>& pids) {
  std::map<pid_t, proc_sample> now;
  proc_sample sum{};
  sum.processes = 0;
  for (pid_t p : pids) {
    const auto r = read_proc(p);
    if (!r) continue;
    const auto prev = last_.find(p);
    // Growth since the last reading (all of it for a process not seen before); never negative.
    auto grow = [&](auto proc_sample::*f) {
      const auto was = prev == last_.end() ? decltype((*r).*f){} : prev->second.*f;
      if ((*r).*f > was) total_.*f += (*r).*f - was;
    };
    grow(&proc_sample::cpu_user_s);
    grow(&proc_sample::cpu_sys_s);
    grow(&proc_sample::voluntary_ctx);
    grow(&proc_sample::involuntary_ctx);
    grow(&proc_sample::run_queue_wait_ns);
    grow(&proc_sample::disk_read_bytes);
    grow(&proc_sample::disk_write_bytes);
    sum.t_ns = r->t_ns;
    sum.rss_bytes += r->rss_bytes;
    sum.threads += r->threads;
    sum.fds += r->fds;
    ++sum.processes;
    now.emplace(p, *r);
  }
  last_ = std::move(now);
  if (!sum.processes) return std::nullopt;
  sum.cpu_user_s = total_.cpu_user_s;
  sum.cpu_sys_s = total_.cpu_sys_s;
  sum.voluntary_ctx = total_.voluntary_ctx;
  sum.involuntary_ctx = total_.involuntary_ctx;
  sum.run_queue_wait_ns = total_.run_queue_wait_ns;
  sum.disk_read_bytes = total_.disk_read_bytes;
  sum.disk_write_bytes = total_.disk_write_bytes;
  return sum;
}

double cpu_pct_between(const proc_sample& a, const proc_sample& b) {
  const double dt = double(b.t_ns - a.t_ns) / 1e9;
  if (dt <= 0) return 0;
  const double cpu = (b.cpu_user_s + b.cpu_sys_s) - (a.cpu_user_s + a.cpu_sys_s);
  return cpu < 0 ? 0 : 100.0 * cpu / dt;
}

}  // namespace rig
