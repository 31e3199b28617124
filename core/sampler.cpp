#include "core/sampler.hpp"

#include <unistd.h>

#include <algorithm>

#include "core/clock.hpp"

namespace rig {

sampler::sampler(std::optional<pid_t> target, counter_source counters, int64_t interval_ns, const cgroup* cg,
                 process_source processes)
    : target_(target), counters_(std::move(counters)), processes_(std::move(processes)), interval_ns_(interval_ns),
      cg_(cg) {}

sampler::~sampler() { stop(); }

void sampler::start() {
  thread_ = std::thread([this] {
    std::unique_lock lk(mu_);
    while (!stopping_) {
      lk.unlock();
      sample_now(false);
      lk.lock();
      cv_.wait_for(lk, std::chrono::nanoseconds(interval_ns_), [&] { return stopping_; });
    }
  });
}

void sampler::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

resource_sample sampler::sample_now(bool at_boundary) {
  resource_sample s;
  s.t_ns = mono_ns();
  if (target_) s.target_main = read_proc(*target_);
  if (processes_) {
    std::lock_guard lk(meter_mu_);
    s.target = meter_.read(processes_());
  } else {
    s.target = s.target_main;
  }
  s.self = read_proc(::getpid());
  const auto stopped = [&] {
    const auto head = target_ ? stat_head(*target_) : std::nullopt;
    return head && (head->state == 'T' || head->state == 't');
  };
  if (counters_ && (!target_ || s.target) && !(at_boundary && stopped())) {
    try {
      s.counters = counters_(at_boundary ? boundary_counters_ms : background_counters_ms);
    } catch (...) {
      // The target stopped answering; its absence shows as missing counters.
    }
  }
  if (cg_ && cg_->exists()) {
    cgroup_sample c;
    try {
      if (cg_->has("memory")) {
        c.memory = cg_->memory();
        c.memory_limit = cg_->memory_limit();
      }
      if (cg_->has("cpu")) {
        c.cpu = cg_->cpu();
        c.cpu_quota_us = cg_->cpu_quota_us();
        c.cpu_period_us = cg_->cpu_period_us();
      }
      if (cg_->has("io")) {
        io_figures sum;
        for (const auto& [dev, f] : cg_->io_all()) {
          sum.read_bytes += f.read_bytes;
          sum.write_bytes += f.write_bytes;
          sum.read_ops += f.read_ops;
          sum.write_ops += f.write_ops;
        }
        c.io = sum;
        for (const auto& [dev, l] : cg_->io_limits_all())
          if (l.any()) c.io_cap = l;
      }
      s.cgroup = c;
    } catch (...) {
      // Removed meanwhile (end of run): nothing to read.
    }
  }
  std::lock_guard lk(mu_);
  // In time order: a sample is stamped when it starts and stored when its reads finish, so
  // the sampler's thread and a phase boundary's sample can finish out of order.
  const auto at = std::upper_bound(samples_.begin(), samples_.end(), s.t_ns,
                                   [](int64_t t, const resource_sample& x) { return t < x.t_ns; });
  samples_.insert(at, s);
  return s;
}

namespace {
// The last sample before t_ns (the first one if none is before it): where "from t_ns" starts.
template <typename Samples>
auto last_before(Samples& samples, int64_t t_ns) {
  auto it = std::lower_bound(samples.begin(), samples.end(), t_ns,
                             [](const resource_sample& x, int64_t t) { return x.t_ns < t; });
  return it == samples.begin() ? it : it - 1;
}
}  // namespace

std::vector<resource_sample> sampler::samples_from(int64_t t_ns) const {
  std::lock_guard lk(mu_);
  return {last_before(samples_, t_ns), samples_.end()};
}

void sampler::forget_before(int64_t t_ns) {
  std::lock_guard lk(mu_);
  samples_.erase(samples_.begin(), last_before(samples_, t_ns));
}

}  // namespace rig
