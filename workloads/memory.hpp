#pragma once
#include "workloads/threaded.hpp"

namespace rig {

const option_table& memory_workload_options();
void check_memory_workload(const option_values& v, const bind_context& ctx, diagnostics& diags);

// A probe for memory pressure: threads in the rig that map and touch `chunk` bytes at a
// rate (an operation each: its latency is how long the kernel took to hand the memory over,
// page faults and reclaim included), hold each chunk for `hold`, then release it. Page
// faults per phase are counted (counts.minor_faults, counts.major_faults).
class memory_workload final : public threaded_workload {
 public:
  explicit memory_workload(const option_values& v);
  ~memory_workload() override { stop(); }
  nlohmann::json describe() const override;

 private:
  void run(worker_threads::worker& w) override;

  uint64_t chunk_ = 0, max_held_ = 0;
  int64_t hold_ns_ = 0;
  std::atomic<uint64_t> held_{0};  // over all threads
};

}  // namespace rig
