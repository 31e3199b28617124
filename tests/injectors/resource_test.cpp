// Resource caps on a real target in a cgroup of the run's own: memory (cgroup limit, and
// RLIMIT_AS), a slower CPU (CFS quota + cpuset). Each test runs the real rig and checks the
// effect, the events, and that the run's cgroup is gone afterwards.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/resource.h>

#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "../helpers.hpp"
#include "cgroup_checks.hpp"
#include "core/cgroup.hpp"
#include "core/journal.hpp"
#include "injectors/file_faults.hpp"
#include "injectors/resource_injectors.hpp"

using namespace rig;
using namespace rig::testing;
namespace fs = std::filesystem;


TEST_CASE("memory-accumulation.toml: 64 KiB per request as bytes/op, then the OOM kill under the cap as an event") {
  if (!can_cap({"memory"})) return;
  if (rig::testing::sanitized_skip("memory figures: ASan adds redzones and a quarantine to every allocation, and its target starts at ~60 MiB")) return;
  temp_dir tmp;
  const auto run = run_rig(run_args(RIG_SOURCE_DIR "/scenarios/memory-accumulation.toml", tmp.path,
                                    {{"baseline", "1s"}, {"capped", "20s"}}),
                           tmp.path);
  INFO(run.stdout_text() << run.err);
  CHECK(run.code == 1);  // the release gate's checks (memory-accumulation-fixed.toml's) fail on this build
  const auto r = run.report();
  CHECK(r["status"] == "checks_failed");
  for (const auto& e : r["expectations"])
    if (e["expr"] == "capped.cgroup.oom_kills == 0") CHECK(e["ok"] == false);
  const auto& base = r["phases"][0]["resources"]["target"];
  MESSAGE("growth per op: RSS " << base["rss_growth_per_op_bytes"].get<double>() << " B, retained "
                                << base["retained_per_request_bytes"].get<double>() << " B");
  CHECK(base["rss_growth_per_op_bytes"].get<double>() == doctest::Approx(65536).epsilon(0.1));
  // The target counts a request as a worker takes it and its 64 KiB once they are kept: a request
  // between the two as a phase's first or last sample reads them moves the figure by one request in ~300.
  CHECK(base["retained_per_request_bytes"].get<double>() == doctest::Approx(65536).epsilon(0.02));
  CHECK(count_events(r, "oom_kill") == 1);
  CHECK(count_events(r, "target_exit") == 1);
  const auto& death = r["target"]["death"];  // the cause from the cgroup's OOM counter
  CHECK(death["cause"] == "oom_kill");
  CHECK(death["signal"] == "SIGKILL");
  CHECK(death["oom_kills"] == 1);
  CHECK(death["phase"] == "capped");
  const auto& capped = r["phases"][1];
  CHECK(capped["completed"] == false);  // cut short by the death
  CHECK(capped["end_s"].get<double>() - capped["start_s"].get<double>() < 15);
  CHECK(capped["resources"]["cgroup"]["memory_cap_bytes"] == 128 << 20);
  CHECK(capped["resources"]["cgroup"]["memory_used_max_bytes"].get<double>() > 100 << 20);
  CHECK(capped["resources"]["cgroup"]["memory_peak_bytes"].get<double>() >= 120 << 20);  // the kernel's high-water mark
  const auto& inj = capped["injections"][0];
  CHECK(inj["verified"] == true);
  CHECK(inj["reverted"] == true);
  CHECK(inj["revert"] == "memory cap back to no limit (read back)");
  CHECK(inj["measured"]["limit_bytes"] == 128 << 20);
  CHECK(inj["measured"]["oom_kills"] == 1);
  CHECK(inj["measured"]["cap_reached"] == true);
  // After the kill: the cap reached and the kill said, the peak given, not what the kill left
  // as "uses", and no "hit 0 times" where the kernel keeps no count (cgroup v1 here).
  const std::string summary = inj["measured"]["summary"];
  CHECK_MESSAGE(summary.rfind("the target reached its 128.0MiB cap and the kernel's OOM killer killed 1 process (peak ", 0) == 0,
                summary);
  CHECK(summary.find("hit 0 times") == std::string::npos);
  CHECK(inj["measured"]["peak_bytes"].get<double>() >= 120 << 20);
  const auto& hits = inj["measured"]["limit_hits"];
  CHECK((hits.is_null() || hits.get<int64_t>() > 0));
  CHECK((capped["resources"]["cgroup"]["memory_limit_hits"].is_null() ||
         capped["resources"]["cgroup"]["memory_limit_hits"].get<int64_t>() > 0));
  CHECK(count_events(r, "memory_limit") == 1);  // the cap reached, said once, before the kill
  CHECK(run.stdout_text().find("OOM") != std::string::npos);
  check_cgroup_gone(r);
}

TEST_CASE("memory-accumulation-fixed.toml: no growth per op and no OOM under the same cap") {
  if (!can_cap({"memory"})) return;
  if (rig::testing::sanitized_skip("memory figures: ASan adds redzones and a quarantine to every allocation, and its target starts at ~60 MiB")) return;
  temp_dir tmp;
  const auto run = run_rig(run_args(RIG_SOURCE_DIR "/scenarios/memory-accumulation-fixed.toml", tmp.path,
                                    {{"baseline", "1s"}, {"capped", "2s"}}),
                           tmp.path);
  INFO(run.stdout_text() << run.err);
  CHECK(run.code == 0);
  const auto r = run.report();
  CHECK(count_events(r, "oom_kill") == 0);
  CHECK(r["phases"][1]["completed"] == true);
  check_cgroup_gone(r);
}

TEST_CASE("a target that dies when no check expects it fails the run with exit 1, as a failed check") {
  if (!can_cap({"memory"})) return;
  temp_dir tmp;
  std::string text = slurp(RIG_SOURCE_DIR "/scenarios/memory-accumulation.toml");
  text = text.substr(0, text.find("[expect]"));
  std::ofstream(tmp.path + "/s.toml") << text;
  const auto run = run_rig(run_args(tmp.path + "/s.toml", tmp.path, {{"baseline", "1s"}, {"capped", "20s"}}), tmp.path);
  INFO(run.stdout_text() << run.err);
  CHECK(run.code == 1);  // a result the user must see, not rig's own failure
  const auto r = run.report();
  CHECK(r["status"] == "checks_failed");
  REQUIRE(!r["expectations"].empty());
  const auto& died = r["expectations"].back();
  CHECK(died["expr"] == "the target runs until the run ends");
  CHECK(died["ok"] == false);
  CHECK(died["actual"].get<std::string>().find("OOM killer") != std::string::npos);
  check_cgroup_gone(r);
}

TEST_CASE("memory via rlimit: RLIMIT_AS set on a real process, read back, and restored") {
  auto child = child_process::spawn({.argv = {"/bin/sleep", "30"}});
  run_context ctx;
  ctx.target_kind = "command";
  ctx.target_started = true;
  ctx.target_pid = child.pid();
  auto inj = make_memory(rig::testing::bind_text(memory_options(), "limit = \"256MiB\"\nvia = \"rlimit\"\n"));
  REQUIRE(inj->probe(ctx).ok);
  inj->apply(ctx);
  const auto v = inj->verify(ctx);
  INFO(v.text);
  CHECK(v.ok);
  CHECK(inj->mechanism().find("RLIMIT_AS") != std::string::npos);
  rlimit cur{};
  REQUIRE(::prlimit(child.pid(), RLIMIT_AS, nullptr, &cur) == 0);
  CHECK(cur.rlim_cur == 256u << 20);
  CHECK(slurp("/proc/" + std::to_string(child.pid()) + "/limits").find("268435456") != std::string::npos);
  const auto u = inj->revert(ctx);
  CHECK(u.ok);
  CHECK(u.text == fmt::format("RLIMIT_AS (soft) of pid {} reads back unlimited again", child.pid()));
  REQUIRE(::prlimit(child.pid(), RLIMIT_AS, nullptr, &cur) == 0);
  CHECK(cur.rlim_cur == RLIM_INFINITY);
  CHECK(inj->revert(ctx).text == "nothing applied");  // idempotent
  child.stop();
}

TEST_CASE("caps need a target rig starts, and bad cpu lists are refused") {
  run_context ctx;
  ctx.target_kind = "endpoint";
  const auto layout = cgroup_layout::detect();
  ctx.cgroups = &layout;
  for (auto* inj : {make_memory(rig::testing::bind_text(memory_options(), "limit = \"64MiB\"\n")).release(),
                    make_cpu(rig::testing::bind_text(cpu_options(), "scale = \"50%\"\n")).release()}) {
    std::unique_ptr<injector> owned(inj);
    const auto p = owned->probe(ctx);
    CHECK_FALSE(p.ok);
    CHECK(p.reason.find("endpoint target") != std::string::npos);
  }
  if (!fs::exists("/sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq")) {
    run_context here;
    here.target_kind = "builtin";
    here.target_started = true;
    here.cgroups = &layout;
    auto freq = make_cpu(rig::testing::bind_text(cpu_options(), "frequency = \"1.2GHz\"\n"));
    const auto p = freq->probe(here);
    if (::geteuid() == 0 && layout.find("cpu") && layout.find("cpuset")) {
      CHECK_FALSE(p.ok);
      CHECK(p.reason.find("'frequency' needs cpufreq") != std::string::npos);
    }
  }
  CHECK(count_cpus("0-1") == 2);
  CHECK(count_cpus("0,2-4") == 4);
  CHECK(count_cpus("1") == 1);
  CHECK(count_cpus("2-1") == 0);
  CHECK(count_cpus("x") == 0);
  temp_dir tmp;
  std::ofstream(tmp.path + "/s.toml") << R"(name = "bad"
[target]
kind = "builtin"
[workloads.rr]
kind = "tcp"
[injectors.slow]
kind = "cpu"
scale = "25%"
cpus = "one"
[injectors.mem]
kind = "memory"
limit = "64MiB"
swap = "0B"
via = "rlimit"
[injectors.both]
kind = "cpu"
scale = "50%"
frequency = "fast"
[[phases]]
name = "p"
duration = "1s"
inject = ["slow", "mem", "both"]
)";
  const auto run = run_rig({"validate", tmp.path + "/s.toml"}, tmp.path);
  CHECK(run.code == 2);
  CHECK(run.err.find("s.toml:9") != std::string::npos);
  CHECK(run.err.find("'cpus'") != std::string::npos);
  CHECK(run.err.find("s.toml:13") != std::string::npos);
  CHECK(run.err.find("RLIMIT_AS has no swap cap") != std::string::npos);
  CHECK(run.err.find("needs one of 'scale'") != std::string::npos);
  CHECK(run.err.find("'frequency' in [injectors.both] is \"fast\"") != std::string::npos);
}

TEST_CASE("Ctrl-C while a cap is on: exit 130, target stopped, the run's cgroup removed") {
  if (!can_cap({"cpu", "cpuset"})) return;
  temp_dir tmp;
  const auto f = rig::testing::interrupt_rig_in_phase(
      run_args(RIG_SOURCE_DIR "/scenarios/cpu-frequency.toml", tmp.path, {{"baseline", "1s"}, {"slow_clock", "20s"}}),
      tmp.path, "slow_clock", SIGINT);
  CHECK(f.code == 130);
  const auto r = f.report();
  CHECK(r["status"] == "interrupted");
  // Reverted when the signal came, and read back: the quota gone, the CPUs all the host's.
  const auto& inj = r["phases"][1]["injections"][0];
  CHECK(inj["reverted"] == true);
  CHECK(inj["revert"].get<std::string>().find("CPU quota back to no quota (read back); cpuset back to") !=
        std::string::npos);
  check_cgroup_gone(r);
  const pid_t target = r["target"]["pid"].get<pid_t>();
  CHECK(::kill(target, 0) == -1);
}

TEST_CASE("Ctrl-C three times in a row while a cap and a failpoint are on: the revert is not abandoned") {
  if (!can_cap({"cpu", "cpuset"})) return;
  temp_dir tmp;
  std::ofstream(tmp.path + "/s.toml") << R"(name = "impatient"
[target]
kind = "builtin"
[workloads.rr]
kind = "tcp"
connections = 2
rate = "200/s"
[injectors.slow]
kind = "cpu"
scale = "50%"
[injectors.stall]
kind = "failpoint"
failpoint = "reply.write"
action = "delay"
delay = "1ms"
[[phases]]
name = "baseline"
duration = "1s"
[[phases]]
name = "capped"
duration = "20s"
inject = ["slow", "stall"]
)";
  const auto f = rig::testing::interrupt_rig_in_phase({"run", tmp.path + "/s.toml", "--out", tmp.path}, tmp.path,
                                                      "capped", SIGINT, 3);
  INFO(f.stdout_text() << f.err);
  CHECK(f.code == 130);  // not killed by the second signal: it finished reverting and said so
  const auto r = f.report();
  CHECK(r["status"] == "interrupted");
  check_cgroup_gone(r);
  CHECK(!fs::exists(r["target"]["failpoint_channel"].get<std::string>()));
  CHECK(::kill(r["target"]["pid"].get<pid_t>(), 0) == -1);
}

TEST_CASE("disk write_bps: the target's direct WAL writes pass at the cap (within 10%), read back, then uncapped") {
  if (!can_cap({"io"})) return;
  temp_dir tmp;
  std::ofstream(tmp.path + "/s.toml") << R"(name = "disk-bps"
[target]
kind = "builtin"
wal = true
wal_direct = true
[workloads.rr]
kind = "tcp"
connections = 4
[injectors.cap]
kind = "disk"
write_bps = "400KB/s"
[[phases]]
name = "baseline"
duration = "1s"
[[phases]]
name = "capped"
duration = "3s"
inject = ["cap"]
[[phases]]
name = "recovery"
duration = "1s"
)";
  // On a file system without direct I/O (tmpfs) the WAL cannot be direct: skip there.
  if (on_tmpfs(tmp.path)) return;
  const auto r = run_ok(tmp, "s.toml");
  const auto& inj = r["phases"][1]["injections"][0];
  CHECK(inj["verified"] == true);
  CHECK(inj["reverted"] == true);
  CHECK(inj["revert"].get<std::string>().find("back to no cap (read back)") != std::string::npos);
  CHECK(inj["measured"]["write_bps"] == 400000);
  const double wrote = inj["measured"]["write_bytes_per_s"].get<double>();
  MESSAGE("disk write cap 400 KB/s: the target wrote " << wrote / 1e3 << " KB/s, " << throughput(r, 1)
                                                        << " req/s (4 KiB per request)");
  CHECK(wrote == doctest::Approx(400000).epsilon(0.1));
  // The sampler's view of the same phase: the cgroup's writes against the cap in force.
  const auto& cg = r["phases"][1]["resources"]["cgroup"];
  CHECK(cg["io_write_bytes_per_s"].get<double>() == doctest::Approx(400000).epsilon(0.15));
  CHECK(cg["io_cap"]["write_bps"] == 400000);
  CHECK(r["phases"][2]["resources"]["cgroup"]["io_cap"].is_null());
  CHECK(throughput(r, 1) < 120);
  CHECK(throughput(r, 2) > 10 * throughput(r, 1));  // reverted
  check_cgroup_gone(r);
}

TEST_CASE("slow-disk.toml: disk latency becomes request latency, phase by phase") {
  if (!can_cap({"io"})) return;
  temp_dir tmp;
  const auto run = run_rig(run_args(RIG_SOURCE_DIR "/scenarios/slow-disk.toml", tmp.path,
                                    {{"baseline", "1s"}, {"slow_disk", "2s"}, {"flaky_controller", "4s"},
                                     {"failing_disk", "3s"}, {"recovery", "1s"}}),
                           tmp.path);
  INFO(run.stdout_text() << run.err);
  CHECK(run.code == 0);
  const auto r = run.report();
  CHECK(r["phases"][1]["injections"][0]["verification"].get<std::string>().find("write ops 75/s") != std::string::npos);
  // Each failed write fails one request, counted in the phase that request was due in: the
  // flaky controller's 1 s stalls leave a backlog that the failing disk answers (and fails), so
  // its closes fall in both phases; together they are the failed writes.
  const auto failed = r["phases"][3]["injections"][0]["measured"]["failed"].get<uint64_t>();
  const auto closed = r["phases"][2]["workloads"]["rr"]["errors"]["closed"].get<uint64_t>() +
                      r["phases"][3]["workloads"]["rr"]["errors"]["closed"].get<uint64_t>();
  CHECK_MESSAGE(same_fires(closed, failed, 2), "closed ", closed, ", failed ", failed);
  check_cgroup_gone(r);
}

TEST_CASE("disk on a path with no block device is refused at probe, naming it") {
  if (!can_cap({"io"})) return;
  run_context ctx;
  ctx.target_kind = "builtin";
  ctx.target_started = true;
  const auto layout = cgroup_layout::detect();
  ctx.cgroups = &layout;
  auto inj = make_disk(rig::testing::bind_text(disk_options(), "path = \"/proc\"\nwrite_iops = \"10/s\"\n"));
  const auto p = inj->probe(ctx);
  CHECK_FALSE(p.ok);
  CHECK(p.reason.find("/proc is on a file system with no block device") != std::string::npos);
}

TEST_CASE("file_faults through the shim: fsync delayed or failed with EIO at the asked probability, counted, reverted") {
  temp_dir tmp;
  // 400/s: ~800 fsyncs in each 2 s phase, so a 5-sigma band of p = 0.2 excludes 0.1 and 0.4. The
  // log is on tmpfs: on this VM's disk an fsync takes ~3 ms and the log is serialized, which caps
  // the target near 300/s. The delay is 2 ms so that the delayed half (200/s) keeps the
  // serialized log 40% busy, not past its capacity.
  temp_dir wal_dir(memory_dir());
  std::ofstream(tmp.path + "/s.toml") << R"(name = "ff"
[target]
kind = "builtin"
wal = true
wal_path = ")" << wal_dir.path << R"(/target.wal"
[workloads.rr]
kind = "tcp"
connections = 2
rate = "400/s"
timeout = "2s"
[injectors.slow_fsync]
kind = "file_faults"
delay = "2ms"
error = "none"
probability = 0.5
path_prefix = ")" << wal_dir.path << R"("
[injectors.eio]
kind = "file_faults"
ops = ["fsync"]
probability = 0.2
path_prefix = ")" << wal_dir.path << R"("
[[phases]]
name = "baseline"
duration = "1s"
[[phases]]
name = "slow"
duration = "2s"
inject = ["slow_fsync"]
[[phases]]
name = "eio"
duration = "2s"
inject = ["eio"]
[[phases]]
name = "after"
duration = "1s"
)";
  const auto r = run_ok(tmp, "s.toml");
  const auto& slow = r["phases"][1]["injections"][0];
  CHECK(slow["verified"] == true);
  CHECK(slow["reverted"] == true);
  CHECK(slow["revert"] == "file faults off in 1 of 1 process of the target (applied by the shim)");
  CHECK(slow["measured"]["processes"] == 1);
  const double calls = slow["measured"]["calls"].get<double>(), delayed = slow["measured"]["delayed"].get<double>();
  MESSAGE("fsync delay at p=0.5: " << delayed << " of " << calls << " calls delayed");
  // One fsync a request: 400/s for 2 s is 800; a loaded machine may lose some of the phase's end.
  REQUIRE(calls >= 400);
  // Which calls are faulted is fixed by the seed (core/draw.h), how many calls there are is not:
  // the count is checked against its distribution. Binomial(n, 0.5): mean 0.5n, sigma 0.5 sqrt(n);
  // 5 sigma (n = 800: 400 +/- 71, a share of 0.41 to 0.59).
  CHECK(delayed >= 0.5 * calls - 5 * 0.5 * std::sqrt(calls));
  CHECK(delayed <= 0.5 * calls + 5 * 0.5 * std::sqrt(calls));
  // Half the requests wait the 2 ms delay at least: more than the slowest 1%.
  CHECK(r["phases"][1]["workloads"]["rr"]["latency_us"]["p99"].get<double>() >= 2000);
  const auto& eio = r["phases"][2]["injections"][0];
  const double failed = eio["measured"]["failed"].get<double>(), eio_calls = eio["measured"]["calls"].get<double>();
  MESSAGE("fsync EIO at p=0.2: " << failed << " of " << eio_calls << " calls failed");
  REQUIRE(eio_calls >= 400);
  // Binomial(n, 0.2): mean 0.2n, sigma 0.4 sqrt(n); 5 sigma (n = 800: 160 +/- 57, a share of 0.13 to 0.27).
  CHECK(failed >= 0.2 * eio_calls - 5 * 0.4 * std::sqrt(eio_calls));
  CHECK(failed <= 0.2 * eio_calls + 5 * 0.4 * std::sqrt(eio_calls));
  // Each failed fsync fails one request, counted in the phase its close arrives in.
  const auto closed = r["phases"][2]["workloads"]["rr"]["errors"]["closed"].get<uint64_t>();
  CHECK_MESSAGE(same_fires(closed, uint64_t(failed), 2), "closed ", closed, ", failed ", failed);
  CHECK(r["phases"][3]["workloads"]["rr"]["ops"].get<int>() > 150);  // reverted: no errors after (400/s for 1 s asked)
  for (const auto& [k, n] : r["phases"][3]["workloads"]["rr"]["errors"].items()) CHECK_MESSAGE(n == 0, k);
}

TEST_CASE("file_faults: bad ops and a fault that does nothing are refused, a static target cannot take the shim") {
  temp_dir tmp;
  std::ofstream(tmp.path + "/s.toml") << R"(name = "bad"
[target]
kind = "builtin"
wal = true
[workloads.rr]
kind = "tcp"
[injectors.a]
kind = "file_faults"
ops = ["fsnyc"]
[injectors.b]
kind = "file_faults"
error = "none"
path_prefix = "relative/dir"
[[phases]]
name = "p"
duration = "1s"
inject = ["a", "b"]
)";
  const auto run = run_rig({"validate", tmp.path + "/s.toml"}, tmp.path);
  CHECK(run.code == 2);
  CHECK(run.err.find("'fsnyc'; did you mean 'fsync'?") != std::string::npos);
  CHECK(run.err.find("does nothing: give a delay or an error") != std::string::npos);
  CHECK(run.err.find("'path_prefix' in [injectors.b] must be an absolute path") != std::string::npos);

  run_context ctx;
  ctx.shim_missing = std::string(STATIC_SERVER) + " is statically linked: LD_PRELOAD cannot reach its sockets";
  auto inj = make_file_faults(rig::testing::bind_text(file_faults_options(), "probability = 0.5\n"));
  const auto p = inj->probe(ctx);
  CHECK_FALSE(p.ok);
  CHECK(p.reason.find("statically linked") != std::string::npos);
}

TEST_CASE("rig killed mid-phase: its journal names the cgroup, the next run refuses, rig cleanup removes it") {
  if (!can_cap({"cpu", "cpuset"})) return;
  temp_dir tmp;
  const std::vector<std::string> env = {"RIG_STATE_DIR=" + tmp.path + "/state"};  // this test's journals only
  auto rig = child_process::spawn(
      {.argv = {RIG_BINARY, "run", RIG_SOURCE_DIR "/scenarios/cpu-frequency.toml", "--out", tmp.path, "--set",
                "phases.baseline.duration=1s", "--set", "phases.slow_clock.duration=30s"},
       .capture_stdout = true,
       .stderr_path = tmp.path + "/stderr.txt",
       .env = env});
  bool in_phase = false;
  while (auto line = rig.read_line(20'000))
    if (line->find("▶ slow_clock") != std::string::npos) {
      in_phase = true;
      break;
    }
  REQUIRE(in_phase);
  const std::string journal_path =
      fmt::format("{}/state/journal-{}-{}.log", tmp.path, rig.pid(), process_start_time(rig.pid()));
  const std::string journal = slurp(journal_path);
  INFO(journal);
  std::vector<std::string> dirs;
  std::istringstream in(journal);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string kind, path;
    if (f >> kind >> path && kind == "cgroup") dirs.push_back(decode_field(path).value_or(""));
  }
  REQUIRE(dirs.size() >= 3);  // cpu, cpuset and the process tree at least
  ::kill(rig.pid(), SIGKILL);
  REQUIRE(rig.wait(5000));
  for (const auto& d : dirs) CHECK_MESSAGE(fs::exists(d), d);  // what a killed rig leaves behind

  const auto refused = run_rig({"run", RIG_SOURCE_DIR "/scenarios/cpu-frequency.toml", "--out", tmp.path}, tmp.path,
                               60'000, env);
  CHECK(refused.code == 5);
  CHECK(refused.err.find("run `rig cleanup` first") != std::string::npos);

  const auto cleanup = run_rig({"cleanup"}, tmp.path, 60'000, env);
  INFO(cleanup.stdout_text());
  CHECK(cleanup.code == 0);
  CHECK(cleanup.stdout_text().find("removed") != std::string::npos);
  for (const auto& d : dirs) CHECK_MESSAGE(!fs::exists(d), d);
  CHECK_FALSE(fs::exists(journal_path));
  const auto again = run_rig({"cleanup"}, tmp.path, 60'000, env);
  CHECK(again.stdout_text().find("nothing to undo") != std::string::npos);
}


TEST_CASE("in_target_cgroup: a disk cap on the target reaches a disk workload there, not one in the rig") {
  if (!can_cap({"io"})) return;
  temp_dir tmp;
  if (on_tmpfs(tmp.path)) return;
  std::ofstream(tmp.path + "/s.toml") << R"(name = "disk-in-cgroup"
[target]
kind = "builtin"
[workloads.there]
kind = "disk"
iodepth = 8
rate = "2000/s"
file_size = "16MiB"
in_target_cgroup = true
[workloads.here]
kind = "disk"
iodepth = 8
rate = "2000/s"
file_size = "16MiB"
path = "here.dat"
[injectors.cap]
kind = "disk"
read_iops = "200/s"
[[phases]]
name = "baseline"
duration = "1s"
[[phases]]
name = "capped"
duration = "3s"
inject = ["cap"]
[[phases]]
name = "recovery"
duration = "1s"
)";
  {
    std::ofstream f(tmp.path + "/here.dat");
    f.seekp(16 << 20);
    f.put('\0');
  }
  const auto r = run_ok(tmp, "s.toml");
  MESSAGE("randread 4 KiB under a 200/s read cap on the target's cgroup: in it " << ops_per_s(r, 1, "there")
                                                                                 << "/s, in the rig "
                                                                                 << ops_per_s(r, 1, "here") << "/s");
  // Open loop at 2000/s each (light on the CPU, for the tests beside it), ten times the cap. The
  // 1 s baseline may lose the requests of its last 100 ms (a loaded machine's scheduler delays),
  // 250 ms under a sanitizer: 10%, 25% there.
  CHECK(std::abs(ops_per_s(r, 0, "there") - 2000) <= 2000 * (rig::testing::sanitized() ? 0.25 : 0.1));
  CHECK(ops_per_s(r, 1, "there") == doctest::Approx(200).epsilon(0.15));
  CHECK(ops_per_s(r, 1, "here") == doctest::Approx(2000).epsilon(0.1));  // the rig's own I/O is not the target's
  CHECK(ops_per_s(r, 2, "there") > 1000);  // uncapped again (the backlog is not made up: iodepth bounds it)
  for (const auto& [k, n] : r["phases"][1]["workloads"]["there"]["errors"].items()) CHECK_MESSAGE(n == 0, k);
  // The injector's own measurement sees the helper's reads as the target's.
  CHECK(r["phases"][1]["injections"][0]["measured"]["read_ops_per_s"].get<double>() ==
        doctest::Approx(200).epsilon(0.15));
  CHECK(r["workloads"]["there"]["params"]["in_target_cgroup"] == true);
  check_helper_gone(r, "there");
  const std::string made = r["workloads"]["there"]["path"].get<std::string>();  // the helper's own file
  CHECK(made.find("disk-workload.dat") != std::string::npos);
  CHECK_FALSE(fs::exists(made));  // removed
  check_cgroup_gone(r);
}

TEST_CASE("in_target_cgroup: a memory workload's memory is charged to the target's cgroup, up to an OOM kill") {
  if (!can_cap({"memory"})) return;
  if (rig::testing::sanitized_skip("memory figures: ASan adds redzones and a quarantine to every allocation, and its target starts at ~60 MiB")) return;
  temp_dir tmp;
  // 64 MiB held at most, under no cap, then under a 40 MiB cap applied from a phase's start.
  std::ofstream(tmp.path + "/s.toml") << R"(name = "memory-in-cgroup"
[target]
kind = "builtin"
[workloads.mem]
kind = "memory"
rate = "128MiB/s"
chunk = "4MiB"
hold = "10s"
max_held = "64MiB"
in_target_cgroup = true
[[phases]]
name = "uncapped"
duration = "2s"
)";
  const auto r = run_ok(tmp, "s.toml");
  const auto& cg = r["phases"][0]["resources"]["cgroup"];
  MESSAGE("memory workload holding 64 MiB in the target's cgroup: the cgroup used up to "
          << cg["memory_used_max_bytes"].get<double>() / 1048576 << " MiB");
  CHECK(cg["memory_used_max_bytes"].get<double>() >= 64.0 * 1048576);
  // 16 chunks of 4 MiB fill max_held; the first may be taken before the phase starts.
  CHECK(r["phases"][0]["workloads"]["mem"]["ops"].get<uint64_t>() >= 15);
  check_helper_gone(r, "mem");

  std::ofstream(tmp.path + "/capped.toml") << R"(name = "memory-in-cgroup-capped"
[target]
kind = "builtin"
[workloads.mem]
kind = "memory"
rate = "128MiB/s"
chunk = "4MiB"
hold = "10s"
max_held = "64MiB"
in_target_cgroup = true
[injectors.cap]
kind = "memory"
limit = "40MiB"
swap = "0B"
[[phases]]
name = "capped"
duration = "2s"
inject = ["cap"]
[expect]
checks = ["capped.mem.counts.helper_died == 1"]  # and so no successful op is expected of it
)";
  const auto capped = run_rig({"run", tmp.path + "/capped.toml", "--out", tmp.path}, tmp.path);
  INFO(capped.stdout_text() << capped.err);
  REQUIRE(capped.code == 0);  // the target lived: the OOM killer took the largest process, the helper
  const auto c = capped.report();
  CHECK(count_events(c, "oom_kill") == 1);
  CHECK(c["phases"][0]["workloads"]["mem"]["counts"]["helper_died"] == 1);
  CHECK(capped.err.find("killed by signal 9") != std::string::npos);
  check_helper_gone(c, "mem");
  check_cgroup_gone(c);
}

TEST_CASE("in_target_cgroup: a helper that cannot start says why, naming the workload, and the run stops cleanly") {
  if (!can_cap({"io"})) return;
  temp_dir tmp;
  std::ofstream(tmp.path + "/small.dat") << "x";
  std::ofstream(tmp.path + "/s.toml") << R"(name = "helper-fails"
[target]
kind = "builtin"
[workloads.io]
kind = "disk"
path = ")" << tmp.path << R"(/small.dat"
in_target_cgroup = true
[[phases]]
name = "p"
duration = "1s"
)";
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path}, tmp.path);
  INFO(run.stdout_text() << run.err);
  CHECK(run.code != 0);
  CHECK(run.err.find("workload io: disk workload:") != std::string::npos);
  CHECK(run.err.find("fewer than file_size") != std::string::npos);
  CHECK(run.err.find("before it stopped") == std::string::npos);  // not mistaken for a death mid-run
}
