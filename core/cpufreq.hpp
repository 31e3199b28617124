#pragma once
// CPU frequency pinning through cpufreq in sysfs: scaling_max_freq (with scaling_min_freq
// lowered under it) on a set of CPUs, every file saved first (in the journal too) and
// restored exactly.
#include <cstdint>
#include <string>
#include <vector>

namespace rig {

class cpufreq_pin {
 public:
  // root: /sys/devices/system/cpu (tests: a fake tree of the same shape).
  explicit cpufreq_pin(std::string root = "/sys/devices/system/cpu") : root_(std::move(root)) {}
  ~cpufreq_pin() { restore(); }
  cpufreq_pin(const cpufreq_pin&) = delete;
  cpufreq_pin& operator=(const cpufreq_pin&) = delete;

  // True when every CPU in the list has cpufreq with a writable scaling_max_freq.
  bool available(const std::vector<int>& cpus) const;
  int64_t max_khz(int cpu) const;  // cpuinfo_max_freq
  int64_t min_khz(int cpu) const;  // cpuinfo_min_freq
  // Caps each CPU at khz (clamped to what the CPU supports); returns the cap set.
  int64_t pin(const std::vector<int>& cpus, int64_t khz);
  // The cap each CPU reads back now (scaling_max_freq).
  std::vector<int64_t> read_back() const;
  // Every saved file as it was: max first, then min, then (userspace governor) the set speed.
  // Returns what did not read back as saved (empty: all of it did; a CPU gone offline has
  // nothing to read back).
  std::string restore() noexcept;

 private:
  struct saved {
    int cpu;
    std::string max, min, governor, setspeed;  // setspeed: under the userspace governor only
  };
  std::string file(int cpu, const char* name) const;
  std::string read_governor(int cpu) const;  // "" without one
  std::string restore_line(int cpu, const char* name, const std::string& text) const;  // for the journal
  std::string root_;
  std::vector<saved> saved_;
};

}  // namespace rig
