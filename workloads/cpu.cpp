#include "workloads/cpu.hpp"

#include "core/clock.hpp"
#include "core/spin.hpp"

namespace rig {

const option_table& cpu_workload_options() {
  static const option_table t = {
      {.name = "threads", .type = opt_type::integer, .default_text = "1",
       .help = "threads doing work, each unpinned", .min = 1, .max = 256},
      {.name = "unit", .type = opt_type::duration, .default_text = "\"100us\"",
       .help = "one operation: work that takes this long at full speed (calibrated at start)", .min = 1e3,
       .max = 10e9},
      {.name = "rate", .type = opt_type::op_rate, .default_text = "",
       .help = "total units per second, open loop (latency from the intended start); absent: as fast as it can",
       .min = 0.001, .max = 1e7},
  };
  return t;
}

cpu_workload::cpu_workload(const option_values& v) : opts_(v) {
  threads_ = int(v.integer("threads"));
  unit_ns_ = v.duration_ns("unit");
  if (v.has("rate")) rate_ = v.per_second("rate");
}

cpu_workload::~cpu_workload() { stop(); }

void cpu_workload::start(const workload_env& env) {
  iterations_ = uint64_t(spin_per_ns() * double(unit_ns_));
  workers_.start(threads_, env, [this](worker_threads::worker& w) { run(w); });
}

void cpu_workload::run(worker_threads::worker& w) {
  const int64_t interval = rate_ > 0 ? int64_t(double(threads_) * 1e9 / rate_) : 0;
  int64_t next = mono_ns() + (interval ? interval * w.index / threads_ : 0);
  while (!stopping_.load(std::memory_order_relaxed)) {
    int64_t intended = mono_ns();
    if (interval) {
      if (next > intended) {
        std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(next - intended, 10 * ns_per_ms)));
        w.rec->tick(mono_ns());
        continue;
      }
      intended = next;  // behind schedule: the backlog's wait counts
      next += interval;
    }
    const int64_t started = mono_ns();
    spin(iterations_);
    const int64_t done = mono_ns();
    w.rec->record(interval ? intended : started, started, done);
    w.rec->tick(done);
  }
}

void cpu_workload::stop() noexcept {
  if (stopping_.exchange(true)) return;
  workers_.join();
}

std::vector<phase_stats> cpu_workload::results() const {
  return workers_.results();
}

nlohmann::json cpu_workload::describe() const {
  return {{"kind", "cpu"},
          {"load_model", rate_ > 0 ? "open loop" : "closed loop"},
          {"iterations_per_unit", iterations_},
          {"params", opts_.to_json()}};
}

}  // namespace rig
