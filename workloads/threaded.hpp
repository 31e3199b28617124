#pragma once
// Workloads whose threads each run one loop of their own (disk, cpu, memory): the threads, a
// recorder each, the load model and each thread's pacer.
#include <atomic>
#include <optional>

#include "workloads/load_model.hpp"
#include "workloads/workload.hpp"

namespace rig {

class threaded_workload : public workload {
 public:
  void start(const workload_env& env) final {
    clock_ = env.clock;
    seed_ = env.seed;
    prepare(env);
    workers_.start(threads_, env, [this](worker_threads::worker& w) { run(w); });
  }
  // Derived destructors call stop(): the threads run their code.
  void stop() noexcept final {
    if (stopping_.exchange(true)) return;
    workers_.join();
    finish();
  }
  std::vector<phase_stats> results() const final { return workers_.results(); }

 protected:
  threaded_workload(const option_values& v, int threads, load_model load)
      : opts_(v), threads_(threads), load_(std::move(load)) {}
  virtual void prepare(const workload_env&) {}  // before the threads start
  virtual void finish() noexcept {}             // after they have stopped
  virtual void run(worker_threads::worker& w) = 0;
  // Open loop: this thread's share of the rate, started now; closed loop: none.
  std::optional<pacer> pacer_for(const worker_threads::worker& w) const {
    std::optional<pacer> p;
    if (load_.open()) {
      p.emplace(load_, *clock_, threads_, w.index, seed_);
      p->start(mono_ns());
    }
    return p;
  }

  const option_values opts_;
  const int threads_;
  load_model load_;
  std::atomic<bool> stopping_{false};

 private:
  const run_clock* clock_ = nullptr;
  uint64_t seed_ = 0;
  worker_threads workers_;
};

}  // namespace rig
