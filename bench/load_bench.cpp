// The load generator's own honesty and cost, against the built-in target (`rig target`, a
// process of its own):
//   pacing  open loop at 20k req/s on one thread: send lag p99.9 (goal < 50 us)
//   co      coordinated omission: 1,000 req/s open loop while the bench stops the target for
//           1 s (SIGSTOP/SIGCONT), beside a closed loop at about the same rate
//   cost    `rig run` at 20k req/s for N seconds: rig's CPU per 10k requests, its RSS (goal
//           < 64 MB) and fds over the run
//   build/bench/load_bench pacing [repeats=3] [seconds=5] [rate=20000/s]
//   build/bench/load_bench co
//   build/bench/load_bench cost [seconds=60]
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench/bench.hpp"
#include "core/clock.hpp"
#include "core/net.hpp"
#include "core/proc.hpp"
#include "core/process.hpp"
#include "core/units.hpp"
#include "workloads/tcp.hpp"

using namespace rig;
using rig::bench::median;

namespace {

struct target_process {
  uint16_t port = uint16_t(22000 + ::getpid() % 2000);
  child_process proc;
  target_process()
      : proc(child_process::spawn({.argv = {RIG_BINARY, "target", "--port", std::to_string(port)},
                                   .output_path = "/dev/null"})) {
    if (!wait_port_accepts("127.0.0.1", port, 5000)) throw std::runtime_error("rig target did not start");
  }
  ~target_process() { proc.stop(); }
};

// One phase of the tcp workload against the target; `during` runs once the phase has started.
phase_stats run_phase(const std::string& toml, uint16_t port, int64_t ms, const std::function<void()>& during = {}) {
  return rig::bench::one_phase<tcp_workload>(tcp_workload_options(), toml, {"bench", "127.0.0.1", port}, ms,
                                             {.during = during});
}

std::string us(int64_t ns) { return format_duration_us(double(ns) / 1e3); }

// Every thread of `pid` (and so what it starts later) on CPU `cpu` only.
void pin(pid_t pid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  for (const auto& t : std::filesystem::directory_iterator(fmt::format("/proc/{}/task", pid)))
    ::sched_setaffinity(std::stoi(t.path().filename().string()), sizeof set, &set);
}

// Open loop at `rate` on one thread, each pacing mode, the target pinned to CPU 0 and the
// workload to CPU 1 (so neither preempts the other on a 2-CPU host).
int pacing(int repeats, int seconds, const std::string& rate) {
  target_process tgt;
  pin(tgt.proc.pid(), 0);
  pin(::getpid(), 1);
  for (const std::string mode : {"sleep", "spin"}) {
    std::vector<double> p999s;
    for (int r = 0; r < repeats; ++r) {
      const auto s = run_phase(fmt::format("connections = 32\nthreads = 1\nrate = \"{}\"\npacing = \"{}\"\n", rate, mode),
                               tgt.port, seconds * 1000);
      const int64_t p999 = s.send_lag.percentile(99.9);
      p999s.push_back(double(p999));
      fmt::print("  {} run {}: {:.0f} req/s, send lag p50 {} p99 {} p99.9 {} max {}, {} sent > 1 ms late, {} errors\n",
                 mode, r + 1, double(s.ops) / seconds, us(s.send_lag.percentile(50)), us(s.send_lag.percentile(99)),
                 us(p999), us(s.send_lag.max()), s.late_sends, s.error_total());
    }
    const double m = median(p999s);
    fmt::print("open loop {}, 32 connections on 1 thread, pacing = {}: send lag p99.9 {} (median of {}; goal < 50us: "
               "{})\n",
               rate, mode, us(int64_t(m)), repeats, m < 50e3 ? "met" : "MISSED");
  }
  return 0;
}

int coordinated_omission() {
  target_process tgt;
  auto stall = [&] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    ::kill(tgt.proc.pid(), SIGSTOP);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ::kill(tgt.proc.pid(), SIGCONT);
  };
  const auto open = run_phase("connections = 4\nrate = \"1000/s\"\ntimeout = \"5s\"\n", tgt.port, 5000, stall);
  const auto closed = run_phase("connections = 4\nthink = \"4ms\"\ntimeout = \"5s\"\n", tgt.port, 5000, stall);
  auto row = [](const char* name, const phase_stats& s) {
    const uint64_t delayed = s.latency.count() - s.latency.count_below(10'000'000);
    fmt::print("  {:<28} {:>6} req  {:>8} delayed > 10 ms  p50 {:>9}  p99 {:>9}  p99.9 {:>9}  max {:>9}\n", name, s.ops,
               delayed, us(s.latency.percentile(50)), us(s.latency.percentile(99)), us(s.latency.percentile(99.9)),
               us(s.latency.max()));
    return delayed;
  };
  fmt::print("a 5 s phase, the target stopped (SIGSTOP) from 2 s to 3 s:\n");
  const uint64_t od = row("open loop, 1000/s", open);
  const uint64_t cd = row("closed loop, 4 conn, 4 ms think", closed);
  const bool ok = od >= 900 && od <= 1200 && open.latency.percentile(99) >= 900'000'000;
  fmt::print("open loop reports {} requests delayed (goal about 1,000, p99 >= 900 ms: {}); closed loop {} (one per "
             "connection)\n",
             od, ok ? "met" : "MISSED", cd);
  return 0;
}

int cost(int seconds) {
  char tmpl[] = "/tmp/rig-cost-bench-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  const std::string sc = dir + "/cost.toml";
  std::ofstream(sc) << fmt::format(
      "name = \"cost\"\n[target]\nkind = \"builtin\"\n[workloads.rr]\nkind = \"tcp\"\nconnections = 32\nrate = "
      "\"20000/s\"\n[[phases]]\nname = \"steady\"\nduration = \"{}s\"\n",
      seconds);
  auto rig = child_process::spawn({.argv = {RIG_BINARY, "run", sc, "--out", dir}, .output_path = dir + "/out.log"});
  std::vector<proc_sample> samples;
  while (rig.running()) {
    if (auto p = read_proc(rig.pid())) samples.push_back(*p);
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  uint64_t ops = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().filename() == "report.json") {
      std::ifstream in(e.path());
      const auto j = nlohmann::json::parse(in);
      ops = j["phases"][0]["workloads"]["rr"]["ops"].get<uint64_t>();
    }
  std::filesystem::remove_all(dir);
  if (samples.size() < 3 || !ops) {
    fmt::print(stderr, "cost: the run did not complete\n");
    return 1;
  }
  const auto& first = samples[1];  // after start-up
  const auto& last = samples.back();
  uint64_t rss_max = 0;
  for (const auto& s : samples) rss_max = std::max(rss_max, s.rss_bytes);
  const double cpu_s = (last.cpu_user_s + last.cpu_sys_s) - (first.cpu_user_s + first.cpu_sys_s);
  const double span_s = double(last.t_ns - first.t_ns) / 1e9;
  const double ops_in_span = double(ops) * span_s / seconds;
  fmt::print("rig run at 20k req/s for {} s: {} requests; rig's CPU {:.1f}% of one core, {:.1f} ms per 10k requests; "
             "RSS at 1 s {}, at the end {}, max {} (goal < 64 MB: {}); fds {} -> {}\n",
             seconds, format_count(double(ops)), 100 * cpu_s / span_s, 1e3 * cpu_s / (ops_in_span / 1e4),
             format_bytes(double(first.rss_bytes)), format_bytes(double(last.rss_bytes)), format_bytes(double(rss_max)),
             rss_max < 64e6 ? "met" : "MISSED", first.fds, last.fds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "pacing")
    return pacing(argc > 2 ? std::atoi(argv[2]) : 3, argc > 3 ? std::atoi(argv[3]) : 5, argc > 4 ? argv[4] : "20000/s");
  if (mode == "co") return coordinated_omission();
  if (mode == "cost") return cost(argc > 2 ? std::atoi(argv[2]) : 60);
  fmt::print(stderr, "usage: load_bench pacing [repeats] [seconds] | co | cost [seconds]\n");
  return 2;
}
