#pragma once
#include <atomic>
#include <thread>

#include "workloads/load_model.hpp"
#include "workloads/workload.hpp"

namespace rig {

const option_table& cpu_workload_options();
void check_cpu_workload(const option_values& v, const bind_context& ctx, diagnostics& diags);

// A probe for the CPU injectors: threads that each do units of calibrated work (a loop
// that takes `unit` at this CPU's full speed, measured at start), closed loop or at a rate.
// Each unit is an operation: its latency is how long the work took, so a slower, capped or
// shared CPU shows as latency, and the work rate as throughput.
class cpu_workload final : public workload {
 public:
  explicit cpu_workload(const option_values& v);
  ~cpu_workload() override;
  void start(const workload_env& env) override;
  void stop() noexcept override;
  std::vector<phase_stats> results() const override;
  nlohmann::json describe() const override;

 private:
  void run(worker_threads::worker& w);

  option_values opts_;
  int threads_ = 1;
  int64_t unit_ns_ = 0;
  load_model load_;
  const run_clock* clock_ = nullptr;
  uint64_t seed_ = 0;
  uint64_t iterations_ = 0;
  worker_threads workers_;
  std::atomic<bool> stopping_{false};
};

}  // namespace rig
