#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/asio.hpp"
#include "core/options.hpp"
#include "core/socket_policy.hpp"
#include "workloads/recorder.hpp"

namespace rig {

// What a workload's event loop hosts (rig's proxy): the port other loops connect to, and,
// when set, a connect for the hosting loop itself that returns a connected stream fd (one
// end of an AF_UNIX socket pair; the proxy holds the other), no TCP stack in between.
struct hosted {
  uint16_t port = 0;
  std::function<int()> connect_local;
};

struct workload_env {
  std::string name;  // the workload's name in the scenario
  std::string host;
  uint16_t port = 0;
  run_clock* clock = nullptr;
  window_sink* windows = nullptr;
  // Optional: something to run on the workload's first event loop before it connects (rig's
  // proxy, so forwarding costs no cross-thread wake-up).
  std::function<hosted(asio::io_context&)> host_on_loop;
  std::string run_dir;  // where a workload may put files of its own (the disk workload's)
  uint64_t seed = 0;    // the scenario's: Poisson arrivals and random choices repeat with it
};

// Asks the kernel to wake this thread's timers on time: the default timer slack (50 us)
// would make every paced send up to 50 us late.
void precise_timers() noexcept;

// The threads of a workload whose threads each run one loop (disk, cpu): each has its
// own recorder; joined and flushed by join(), merged per phase by results().
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
      w->th = std::thread([body, w = w.get()] {
        precise_timers();
        body(*w);
      });
  }
  void join() noexcept {
    for (auto& w : workers_) {
      if (w->th.joinable()) w->th.join();
      w->rec->flush();
    }
  }
  std::vector<phase_stats> results() const { return merge_phases_of(workers_); }

 private:
  std::vector<std::unique_ptr<worker>> workers_;
};

// Runs from start() to stop() across all phases; the run clock says which phase each
// sample belongs to, so connections persist while injectors change around them.
class workload {
 public:
  virtual ~workload() = default;
  virtual void start(const workload_env& env) = 0;
  virtual void stop() noexcept = 0;
  // Per phase index, merged over threads; valid after stop().
  virtual std::vector<phase_stats> results() const = 0;
  // Optional ability: runs env.host_on_loop on its event loop.
  virtual bool can_host_on_loop() const { return false; }
  // Optional ability: the rig's own sockets take a socket policy.
  virtual socket_tunable* sockets() { return nullptr; }
  virtual nlohmann::json describe() const = 0;
};

struct workload_kind {
  std::string_view name;
  std::string_view summary;
  const option_table& (*options)();
  std::unique_ptr<workload> (*make)(const option_values&);
  void (*check)(const option_values&, const bind_context&, diagnostics&) = nullptr;
};

const std::vector<workload_kind>& workload_kinds();
inline const workload_kind* find_workload_kind(std::string_view name) { return find_kind(workload_kinds(), name); }

}  // namespace rig
