#pragma once
#include <atomic>
#include <thread>

#include "workloads/load_model.hpp"
#include "workloads/workload.hpp"

namespace rig {

const option_table& disk_workload_options();
void check_disk_workload(const option_values& v, const bind_context& ctx, diagnostics& diags);

// Block I/O through io_uring, as fio's io_uring engine does it: read, write, randread,
// randwrite or randrw of block_size at iodepth on one file (created and filled once when
// rig makes it), direct or buffered, registered file and buffers, an fsync every N writes,
// closed loop or open loop at a rate (latency from the intended submission time).
class disk_workload final : public workload {
 public:
  explicit disk_workload(const option_values& v);
  ~disk_workload() override;
  void start(const workload_env& env) override;
  void stop() noexcept override;
  std::vector<phase_stats> results() const override;
  nlohmann::json describe() const override;
  const std::string& path() const { return path_; }

 private:
  void run(worker_threads::worker& w);

  option_values opts_;
  std::string mode_, path_;
  bool created_ = false;
  uint32_t block_ = 4096;
  int iodepth_ = 1, threads_ = 1;
  bool direct_ = true;
  uint64_t file_size_ = 0;
  int64_t fsync_every_ = 0;
  double read_share_ = 0.5;
  load_model load_;
  const run_clock* clock_ = nullptr;
  uint64_t seed_ = 0;
  worker_threads workers_;
  std::atomic<bool> stopping_{false};
};

}  // namespace rig
