#pragma once
// Workloads whose threads each run one loop of their own (disk, cpu, memory): the threads, a
// recorder each, the load model and each thread's pacer.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "core/clock.hpp"
#include "core/draw.h"
#include "workloads/load_model.hpp"
#include "workloads/workload.hpp"

namespace rig {

// The threads of a threaded_workload: each has its own recorder; joined and flushed by
// join(), merged per phase by results().
class worker_threads {
 public:
  struct worker {
    int index = 0;
    std::unique_ptr<thread_recorder> rec;
    std::thread th;
  };
  template <typename Body>
  void start(int n, const workload_env& env, Body body) {
    for (int t = 0; t < n; ++t) {
      auto w = std::make_unique<worker>();
      w->index = t;
      w->rec = std::make_unique<thread_recorder>(*env.clock, *env.windows, env.name);
      workers_.push_back(std::move(w));
    }
    for (auto& w : workers_)
      w->th = std::thread([body, w = w.get()] { body(*w); });
  }
  void join() noexcept {
    for (auto& w : workers_) {
      if (w->th.joinable()) w->th.join();
      w->rec->flush();
    }
  }
  std::vector<phase_stats> results() const { return merge_phases_of(workers_); }
  finished_phases take_finished() { return take_finished_of(workers_); }

 private:
  std::vector<std::unique_ptr<worker>> workers_;
};

// The loop of a workload whose operation is a plain call on its own thread (cpu, memory):
// closed loop, or paced by `plan` (sleeping in slices of at most 10 ms, so a stop is seen).
// `op` returns nullopt on success or the kind of its failure; `between` runs before each
// operation (housekeeping such as releasing memory that is due).
template <typename Op, typename Between>
void run_paced(thread_recorder& rec, pacer* plan, const std::atomic<bool>& stopping, Op op, Between between) {
  int64_t next = plan ? plan->next() : 0, free = mono_ns();
  while (!stopping.load(std::memory_order_relaxed)) {
    between();
    int64_t intended = mono_ns();
    if (plan) {
      if (next > intended) {
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(next - intended, 10 * ns_per_ms)));
        rec.hold_from(next);
        rec.tick(mono_ns());
        continue;
      }
      intended = next;  // behind schedule: the backlog's wait counts
      next = plan->next();
    }
    const int64_t started = mono_ns();
    if (!plan) intended = started;
    rec.hold_from(intended);  // the op may tick while it runs (memory's allocations)
    const std::optional<error_kind> failed = op();
    const int64_t done = mono_ns();
    if (failed) rec.error(*failed, done, 0, intended);
    else rec.record(intended, started, done, plan ? generator_lag_ns(intended, free, started) : 0);
    free = done;
    rec.hold_from(plan ? next : INT64_MAX);
    rec.tick(done);
  }
  if (plan) not_taken_at_end(rec, *plan, next);
}

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
  finished_phases take_finished_phases() final { return workers_.take_finished(); }

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

  // A thread's own stream of draws (core/draw.h), from the workload's seed: the same each run.
  uint64_t stream_for(const char* name, const worker_threads::worker& w) const {
    return rig_stream_seed(seed_, name, uint64_t(w.index));
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
