#pragma once
#include "workloads/threaded.hpp"

namespace rig {

const option_table& cpu_workload_options();

// A probe for the CPU injectors: threads that each do units of calibrated work (a loop
// that takes `unit` at this CPU's full speed, measured at start), closed loop or at a rate.
// Each unit is an operation: its latency is how long the work took, so a slower, capped or
// shared CPU shows as latency, and the work rate as throughput.
class cpu_workload final : public threaded_workload {
 public:
  explicit cpu_workload(const option_values& v);
  ~cpu_workload() override { stop(); }
  nlohmann::json describe() const override;

 private:
  void prepare(const workload_env& env) override;
  void run(worker_threads::worker& w) override;

  int64_t unit_ns_ = 0;
  uint64_t iterations_ = 0;
};

}  // namespace rig
