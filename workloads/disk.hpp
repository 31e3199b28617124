#pragma once
#include <atomic>
#include <thread>

#include "workloads/threaded.hpp"

namespace rig {

const option_table& disk_workload_options();
void check_disk_workload(const option_values& v, const bind_context& ctx, diagnostics& diags);

// Block I/O through io_uring, as fio's io_uring engine does it: read, write, randread,
// randwrite or randrw of block_size at iodepth on one file (created and filled once when
// rig makes it), direct or buffered, registered file and buffers, an fsync every N writes,
// closed loop or open loop at a rate (latency from the intended submission time).
class disk_workload final : public threaded_workload {
 public:
  explicit disk_workload(const option_values& v);
  ~disk_workload() override { stop(); }
  nlohmann::json describe() const override;
  const std::string& path() const { return path_; }

 private:
  void prepare(const workload_env& env) override;
  void finish() noexcept override;
  void run(worker_threads::worker& w) override;

  std::string mode_, path_;
  bool created_ = false;
  uint32_t block_ = 4096;
  int iodepth_ = 1;
  bool direct_ = true;
  uint64_t file_size_ = 0;
  int64_t fsync_every_ = 0;
  double read_share_ = 0.5;
};

}  // namespace rig
