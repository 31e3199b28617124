// A real kernel for what this machine's lacks: sch_netem, and cgroup v2 with controllers.
// The Debian kernel boots under qemu (TCG) with rig inside (scripts/kernel-vm.sh) and runs
// a scenario from tests/kernel/; the report comes back over the serial console.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/helpers.hpp"

using namespace rig;
using namespace rig::testing;

namespace {

// Why the VM cannot run here, or empty when it can.
std::string vm_missing() {
  if (which("qemu-system-x86_64").empty()) return "qemu-system-x86_64 is not installed";
  bool kernel = false;
  for (const auto& e : std::filesystem::directory_iterator("/boot"))
    kernel = kernel || e.path().filename().string().rfind("vmlinuz-", 0) == 0;
  if (!kernel) return "no kernel image in /boot (linux-image-amd64)";
  if (which("busybox").empty()) return "busybox is not installed (busybox-static)";
  if (which("cpio").empty()) return "cpio is not installed";
  return {};
}

double p50_ms(const nlohmann::json& phase) { return phase["workloads"]["rr"]["latency_us"]["p50"].get<double>() / 1e3; }

// What one scenario run in the VM printed: its section's text and rig's exit code there.
struct vm_part {
  std::string text;
  int rig_exit = -1;
};

// Boots the VM once with rig running each scenario in turn ("kill:FILE" for the kill-and-clean-up
// run); by scenario name, what the console printed between "=== rig-vm KIND NAME begin ===" and
// its end, and rig's exit. A VM that failed fails the test with the whole console.
std::map<std::string, vm_part> run_vm(const std::vector<std::string>& scenarios) {
  temp_dir tmp;
  std::vector<std::string> argv = {"/bin/bash", RIG_SOURCE_DIR "/scripts/kernel-vm.sh", RIG_BINARY};
  argv.insert(argv.end(), scenarios.begin(), scenarios.end());
  auto vm = child_process::spawn({.argv = argv, .capture_stdout = true, .stderr_path = tmp.path + "/vm.stderr"});
  std::map<std::string, vm_part> parts;
  std::string console, inside;
  while (auto line = vm.read_line(300'000)) {
    std::string l = *line;
    if (!l.empty() && l.back() == '\r') l.pop_back();
    console += l + "\n";
    char kind[16], name[128], edge[16];
    int code = -1;
    if (std::sscanf(l.c_str(), "=== rig-vm %15s %127s %15s ===", kind, name, edge) == 3) {
      inside = std::string(edge) == "begin" ? name : "";
    } else if (std::sscanf(l.c_str(), "rig-vm: %127[^:]: rig exited %d", name, &code) == 2) {
      parts[name].rig_exit = code;
    } else if (!inside.empty()) {
      parts[inside].text += l + "\n";
    }
  }
  REQUIRE(vm.wait(10'000));
  bool whole = vm.exit_code() == 0 && console.find("rig-vm: kernel ") != std::string::npos;
  for (const auto& s : scenarios) {
    const auto name = std::filesystem::path(s).stem().string();
    whole = whole && parts.count(name) && !parts[name].text.empty();
  }
  if (!whole)
    FAIL("the VM failed (", vm.exit_description(), "); console:\n", console, "\nstderr: ", slurp(tmp.path + "/vm.stderr"));
  return parts;
}

// The report rig wrote in the VM, which must have exited 0 there.
nlohmann::json report_of(const vm_part& p) {
  INFO(p.text);
  CHECK(p.rig_exit == 0);
  return nlohmann::json::parse(p.text.substr(p.text.find('{')));
}


// netem delay 25 ms (replies): p50 rises by 25 ms ±5%, read back, reverted.
void check_netem(const nlohmann::json& r) {
  CHECK(r["status"] == "ok");
  REQUIRE(r["phases"].size() == 3);
  const auto& base = r["phases"][0];
  const auto& netem = r["phases"][1];
  const auto& recovery = r["phases"][2];
  const auto& inj = netem["injections"][0];
  CHECK(inj["kind"] == "netem");
  CHECK(inj["verified"] == true);
  const std::string text = inj["verification"];
  CHECK(text.find("netem on rig-t (target→rig): delay 25.00ms limit 1000 read back from the kernel") != std::string::npos);
  const double delta = p50_ms(netem) - p50_ms(base);
  MESSAGE(fmt::format("kernel {}: baseline p50 {:.2f} ms, netem p50 {:.2f} ms, added {:.2f} ms (asked 25 ms), "
                      "recovery p50 {:.2f} ms",
                      r["host"]["kernel"].get<std::string>(), p50_ms(base), p50_ms(netem), delta, p50_ms(recovery)));
  CHECK(delta >= 25 * 0.95);
  CHECK(delta <= 25 * 1.05);
  CHECK(netem["workloads"]["rr"]["errors"]["timeout"] == 0);
  // Reverted: latency is back, and draining netem before deleting it lost no packets
  // (a dropped reply would show as a ~200 ms retransmission in the recovery phase).
  CHECK(p50_ms(recovery) < p50_ms(base) + 5);
  CHECK(recovery["workloads"]["rr"]["latency_us"]["max"].get<double>() < 150e3);
}

// cgroup v2: cpu.max and memory.max read back, the cap's effect and OOM kill measured.
void check_cgroup_v2(const nlohmann::json& r) {
  CHECK(r["status"] == "ok");  // the scenario expects the OOM kill
  CHECK(r["host"]["cgroup"] == "v2");
  for (const auto& [controller, where] : r["target"]["cgroup"].items()) {
    CHECK(where["version"] == "v2");
    CHECK(where["path"].get<std::string>().find("/sys/fs/cgroup/rig/run-") == 0);
  }
  REQUIRE(r["phases"].size() == 3);
  const auto& base = r["phases"][0];
  const auto& slow = r["phases"][1];
  const auto& capped = r["phases"][2];
  const auto& cpu = slow["injections"][0];
  CHECK(cpu["verified"] == true);
  CHECK(cpu["mechanism"].get<std::string>().find("cpu.max") != std::string::npos);
  CHECK(cpu["measured"]["quota_us"] == 5000);
  CHECK(cpu["measured"]["period_us"] == 10000);
  CHECK(cpu["measured"]["cpu_used_cpus"].get<double>() == doctest::Approx(0.5).epsilon(0.1));
  CHECK(cpu["measured"]["throttled_periods"].get<int>() > 100);
  const double ratio = slow["workloads"]["rr"]["throughput_ops_s"].get<double>() /
                       base["workloads"]["rr"]["throughput_ops_s"].get<double>();
  const auto& mem = capped["injections"][0];
  CHECK(mem["verified"] == true);
  CHECK(mem["mechanism"].get<std::string>().find("memory.max") != std::string::npos);
  CHECK(mem["measured"]["limit_bytes"] == 32 << 20);
  CHECK(mem["measured"]["oom_kills"] == 1);
  INFO("capped phase: " << capped.dump() << " events: " << r["events"].dump());
  CHECK(capped["resources"]["cgroup"]["oom_kills"] == 1);
  // The 1-vCPU VM shares its CPU with rig, so the baseline's share of it varies with the host
  // (0.7 to 0.85 CPU seen): the work rate must follow the CPU the cap left, not a fixed fraction.
  const double base_cpus = base["resources"]["cgroup"]["cpu_used_cpus"].get<double>();
  const double slow_cpus = slow["resources"]["cgroup"]["cpu_used_cpus"].get<double>();
  MESSAGE(fmt::format("cgroup v2 in the VM: work rate at cpu.max 50% = {:.0f}% of the baseline, CPU {:.2f} of "
                      "{:.2f} at the baseline ({:.0f}%), growth {:.1f} KiB/op, OOM kill under memory.max 32 MiB",
                      ratio * 100, slow_cpus, base_cpus, slow_cpus / base_cpus * 100,
                      base["resources"]["target"]["rss_growth_per_op_bytes"].get<double>() / 1024));
  CHECK(ratio < 0.9);
  // One-sided: the work cannot outrun the CPU the cap left (+25% for the samples' edges). Less
  // work per CPU-second under the cap is what throttling costs in an emulated VM on a busy host:
  // 29% of the work from 63% of the CPU was seen in a stress run (tests then asked for +/-20%).
  CHECK(ratio <= slow_cpus / base_cpus * 1.25);
  bool oom = false;
  for (const auto& e : r["events"]) oom = oom || e["kind"] == "oom_kill";
  CHECK(oom);
  // A cap set below the usage OOM-kills inside the write to memory.max, where v2 may count
  // no "max" event: limit hits are reported, not required.
  MESSAGE("memory.events max (limit hits) in the capped phase: " << mem["measured"]["limit_hits"]);
}

// cgroup v2: a memory workload in the target's cgroup is charged there, and the OOM killer
// takes the helper under memory.max.
void check_helper_in_target_cgroup(const nlohmann::json& r) {
  INFO("report: " << r.dump());
  CHECK(r["status"] == "ok");  // the scenario expects the OOM kill; the target lives
  CHECK(r["host"]["cgroup"] == "v2");
  REQUIRE(r["phases"].size() == 2);
  const auto& held = r["phases"][0];
  const auto& capped = r["phases"][1];
  const double used = held["resources"]["cgroup"]["memory_used_max_bytes"].get<double>();
  MESSAGE(fmt::format("cgroup v2 in the VM: after 1 s at 16 MiB/s the target's cgroup held {:.1f} MiB; under "
                      "memory.max 32 MiB: {} OOM kill(s), the helper's phase counts {}",
                      used / 1048576, capped["resources"]["cgroup"]["oom_kills"].get<int>(),
                      capped["workloads"]["mem"]["counts"].dump()));
  CHECK(used >= 12.0 * 1048576);
  CHECK(held["workloads"]["mem"]["ops"].get<int>() >= 3);  // handed in before the helper died
  CHECK(capped["injections"][0]["verified"] == true);
  CHECK(capped["resources"]["cgroup"]["oom_kills"] == 1);
  REQUIRE(capped["workloads"]["mem"]["counts"].is_object());
  CHECK(capped["workloads"]["mem"]["counts"]["helper_died"] == 1);
  for (const auto& e : r["events"]) CHECK(e["kind"] != "target_exit");
}

// SIGKILL mid-phase (netem on the veth, a CPU cap in cgroup v2), then rig cleanup: nothing left.
void check_kill_cleanup(const std::string& out) {
  INFO(out);
  // What the killed rig's journal named: its cgroup, the controllers handed down for it,
  // both namespaces, the target.
  const auto journal = out.substr(0, out.find("rig cleanup:"));
  CHECK(journal.find("cgroup /sys/fs/cgroup/rig/run-") != std::string::npos);
  CHECK(journal.find("subtree /sys/fs/cgroup cpu") != std::string::npos);
  CHECK(journal.find("netns ") != std::string::npos);
  CHECK(journal.find("process ") != std::string::npos);
  // What cleanup did, line by line, and the host after it.
  CHECK(out.find("cleanup exited 0") != std::string::npos);
  CHECK(out.find("(and the veth end in it): freed") != std::string::npos);
  CHECK(out.find(": removed") != std::string::npos);
  CHECK(out.find("taken back") != std::string::npos);
  CHECK(out.find("NOT") == std::string::npos);
  const auto line_after = [&](const std::string& key) {
    const auto at = out.find(key);
    return at == std::string::npos ? std::string("?") : out.substr(at + key.size(), out.find('\n', at) - at - key.size());
  };
  CHECK(line_after("subtree after: ") == line_after("subtree before: "));
  CHECK(out.find("no rig cgroup") != std::string::npos);
  CHECK(out.find("no state left") != std::string::npos);
  CHECK(out.find("no rig process") != std::string::npos);
}

}  // namespace

// One boot for every check (a boot is ~10 s of emulation): the scenarios run in turn inside,
// the kill-and-clean-up run last, and each is checked as its own part.
TEST_CASE("the Debian kernel under qemu: netem delay, cgroup v2 caps and a helper's OOM kill, SIGKILL then rig cleanup") {
  if (const auto why = vm_missing(); !why.empty()) {
    MESSAGE("skipped: " << why << " (scripts/install-deps.sh --kernel-tests installs what the VM needs)");
    return;
  }
  auto parts = run_vm({RIG_SOURCE_DIR "/tests/kernel/netem-25ms.toml", RIG_SOURCE_DIR "/tests/kernel/cgroup-v2.toml",
                       RIG_SOURCE_DIR "/tests/kernel/cgroup-v2-helper.toml",
                       "kill:" RIG_SOURCE_DIR "/tests/kernel/kill-cleanup.toml"});
  {
    INFO("netem delay 25 ms (replies): p50 rises by 25 ms ±5%, read back, reverted");
    check_netem(report_of(parts["netem-25ms"]));
  }
  {
    INFO("cgroup v2: cpu.max and memory.max read back, the cap's effect and OOM kill measured");
    check_cgroup_v2(report_of(parts["cgroup-v2"]));
  }
  {
    INFO("cgroup v2: a memory workload in the target's cgroup is charged there, the OOM killer takes the helper");
    check_helper_in_target_cgroup(report_of(parts["cgroup-v2-helper"]));
  }
  {
    INFO("SIGKILL mid-phase (netem on the veth, a CPU cap in cgroup v2), then rig cleanup: nothing left");
    CHECK(parts["kill-cleanup"].rig_exit == 0);
    check_kill_cleanup(parts["kill-cleanup"].text);
  }
}
