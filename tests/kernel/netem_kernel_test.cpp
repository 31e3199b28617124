// netem on a real kernel: this machine's kernel has no sch_netem, so the Debian kernel
// boots under qemu (TCG) with rig inside (scripts/kernel-vm.sh) and runs
// tests/kernel/netem-25ms.toml; the report comes back over the serial console.
#include <doctest/doctest.h>

#include <filesystem>
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

}  // namespace

TEST_CASE("netem delay 25 ms (replies) on the Debian kernel under qemu: p50 rises by 25 ms ±5%, read back, reverted") {
  if (const auto why = vm_missing(); !why.empty()) {
    MESSAGE("skipped: " << why << " (scripts/install-deps.sh --kernel-tests installs what the VM needs)");
    return;
  }
  temp_dir tmp;
  auto vm = child_process::spawn({.argv = {"/bin/bash", RIG_SOURCE_DIR "/scripts/kernel-vm.sh", RIG_BINARY,
                                           RIG_SOURCE_DIR "/tests/kernel/netem-25ms.toml"},
                                  .capture_stdout = true,
                                  .stderr_path = tmp.path + "/vm.stderr"});
  std::string console, report;
  bool in_report = false;
  int rig_exit = -1;
  while (auto line = vm.read_line(180'000)) {
    std::string l = *line;
    if (!l.empty() && l.back() == '\r') l.pop_back();
    console += l + "\n";
    if (l == "=== rig-vm report begin ===") in_report = true;
    else if (l == "=== rig-vm report end ===") in_report = false;
    else if (in_report) report += l + "\n";
    std::sscanf(l.c_str(), "rig-vm: rig exited %d", &rig_exit);
  }
  REQUIRE(vm.wait(10'000));
  if (vm.exit_code() != 0 || rig_exit != 0 || report.empty())
    FAIL("the VM or rig in it failed (vm ", vm.exit_description(), ", rig exit ", rig_exit, "); console:\n", console,
         "\nstderr: ", slurp(tmp.path + "/vm.stderr"));
  CHECK(console.find("rig-vm: kernel ") != std::string::npos);
  const auto r = nlohmann::json::parse(report);
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
