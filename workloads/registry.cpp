#include "workloads/cpu.hpp"
#include "workloads/disk.hpp"
#include "workloads/helper.hpp"
#include "workloads/http.hpp"
#include "workloads/memory.hpp"
#include "workloads/tcp.hpp"
#include "workloads/workload.hpp"

namespace rig {

const std::vector<workload_kind>& workload_kinds() {
  static const std::vector<workload_kind> kinds = {
      {"tcp", "request/reply over TCP: the built-in protocol or raw bytes; closed or open loop",
       &tcp_workload_options,
       &make_here<tcp_workload>,
       &check_tcp_workload},
      {"http", "HTTP/1.1 keep-alive requests (GET, POST, ...) with status classes counted; closed or open loop",
       &http_workload_options,
       &make_here<http_workload>,
       &check_http_workload},
      {"disk", "block I/O on a file through io_uring: sequential or random reads and writes at an iodepth, closed or "
               "open loop",
       &disk_workload_options,
       [](const option_values& v) { return here_or_in_target_cgroup<disk_workload>("disk", v, {"io"}); },
       &check_disk_workload, &make_here<disk_workload>},
      {"cpu", "units of calibrated CPU work on threads in the rig: the work rate and how long a unit takes",
       &cpu_workload_options,
       [](const option_values& v) { return here_or_in_target_cgroup<cpu_workload>("cpu", v, {"cpu"}); },
       &check_load_model,  // the load model's keys are all it checks
       &make_here<cpu_workload>},
      {"memory", "map and touch memory at a rate, hold it, release it: allocation latency and page faults",
       &memory_workload_options,
       [](const option_values& v) { return here_or_in_target_cgroup<memory_workload>("memory", v, {"memory"}); },
       &check_memory_workload, &make_here<memory_workload>},
  };
  return kinds;
}

}  // namespace rig
