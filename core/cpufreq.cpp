#include "core/cpufreq.hpp"

#include <unistd.h>

#include <algorithm>
#include <fmt/format.h>

#include "core/cgroup.hpp"
#include "core/journal.hpp"

namespace rig {

std::string cpufreq_pin::file(int cpu, const char* name) const {
  return fmt::format("{}/cpu{}/cpufreq/{}", root_, cpu, name);
}

std::string cpufreq_pin::read_governor(int cpu) const {
  const std::string f = file(cpu, "scaling_governor");
  return ::access(f.c_str(), R_OK) == 0 ? read_control(f) : std::string();
}

std::string cpufreq_pin::restore_line(int cpu, const char* name, const std::string& text) const {
  return journal_line("restore", {file(cpu, name), text});
}

bool cpufreq_pin::available(const std::vector<int>& cpus) const {
  if (cpus.empty()) return false;
  for (int c : cpus)
    if (::access(file(c, "scaling_max_freq").c_str(), W_OK) != 0 ||
        ::access(file(c, "cpuinfo_max_freq").c_str(), R_OK) != 0)
      return false;
  return true;
}

int64_t cpufreq_pin::max_khz(int cpu) const { return std::stoll(read_control(file(cpu, "cpuinfo_max_freq"))); }
int64_t cpufreq_pin::min_khz(int cpu) const { return std::stoll(read_control(file(cpu, "cpuinfo_min_freq"))); }

int64_t cpufreq_pin::pin(const std::vector<int>& cpus, int64_t khz) {
  int64_t set = khz;
  for (int c : cpus) {
    const bool first_time = std::none_of(saved_.begin(), saved_.end(), [&](const saved& s) { return s.cpu == c; });
    if (first_time) {
      saved s{c, read_control(file(c, "scaling_max_freq")), read_control(file(c, "scaling_min_freq")), "", ""};
      s.governor = read_governor(c);
      if (s.governor == "userspace") s.setspeed = read_control(file(c, "scaling_setspeed"));
      saved_.push_back(s);
      // `rig cleanup` replays in reverse: max goes back first, then min, then the speed, as
      // restore() does.
      if (!s.setspeed.empty()) journal::self().record(restore_line(c, "scaling_setspeed", s.setspeed));
      journal::self().record(restore_line(c, "scaling_min_freq", s.min));
      journal::self().record(restore_line(c, "scaling_max_freq", s.max));
    }
    const int64_t lo = min_khz(c), cap = std::clamp(khz, lo, max_khz(c));
    // min may not exceed max: lower it to the hardware minimum first.
    write_control(file(c, "scaling_min_freq"), std::to_string(lo));
    write_control(file(c, "scaling_max_freq"), std::to_string(cap));
    // "userspace" holds whatever speed was set last; every other governor honours the cap.
    if (read_governor(c) == "userspace") write_control(file(c, "scaling_setspeed"), std::to_string(cap));
    set = cap;
  }
  return set;
}

std::vector<int64_t> cpufreq_pin::read_back() const {
  std::vector<int64_t> out;
  for (const auto& s : saved_) out.push_back(std::stoll(read_control(file(s.cpu, "scaling_max_freq"))));
  return out;
}

std::string cpufreq_pin::restore() noexcept {
  std::string differs;
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (::access(file(it->cpu, "scaling_max_freq").c_str(), F_OK) != 0) continue;  // offline: nothing to restore
    std::vector<std::pair<const char*, const std::string*>> files = {{"scaling_max_freq", &it->max},
                                                                     {"scaling_min_freq", &it->min}};
    if (!it->setspeed.empty()) files.push_back({"scaling_setspeed", &it->setspeed});
    for (const auto& [name, text] : files) {
      std::string now;
      try {
        write_control(file(it->cpu, name), *text);
        now = read_control(file(it->cpu, name));
      } catch (const std::exception& e) {
        now = e.what();
      }
      if (now != *text) differs += fmt::format("{}cpu{} {} reads {}, not {}", differs.empty() ? "" : "; ", it->cpu, name, now, *text);
    }
    journal::self().done(restore_line(it->cpu, "scaling_max_freq", it->max));
    journal::self().done(restore_line(it->cpu, "scaling_min_freq", it->min));
    if (!it->setspeed.empty()) journal::self().done(restore_line(it->cpu, "scaling_setspeed", it->setspeed));
  }
  saved_.clear();
  return differs;
}

}  // namespace rig
