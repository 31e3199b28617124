// End to end through the run's own network: the target in a namespace of its own, the
// workloads in the rig's, a veth between them, qdiscs on it. Every test also checks
// that the host's network is exactly as it was: links, root qdiscs, namespaces.
#include <doctest/doctest.h>
#include <signal.h>

#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../helpers.hpp"

using namespace rig;
using namespace rig::testing;

namespace {

std::string write_scenario(const temp_dir& tmp, const std::string& target, const std::string& rate,
                           const std::string& capped = "4s") {
  const std::string path = tmp.path + "/net.toml";
  std::ofstream(path) << fmt::format(R"(name = "net"
{}
[workloads.bulk]
kind = "tcp"
connections = 2
response_size = "64KiB"
timeout = "5s"

[injectors.cap]
kind = "rate"
rate = "{}"

[[phases]]
name = "baseline"
duration = "1s"

[[phases]]
name = "capped"
duration = "{}"
inject = ["cap"]

[[phases]]
name = "recovery"
duration = "1s"
)",
                                     target, rate, capped);
  return path;
}

const std::string builtin_target = "[target]\nkind = \"builtin\"\nworkers = 2\n";

}  // namespace

TEST_CASE("rate: throughput through the veth is within 5% of the cap at 1 MB/s and 4 MB/s, and the host is untouched") {
  if (!can_make_netns()) return;
  for (const double cap : {1e6, 4e6}) {
    CAPTURE(cap);
    const host_network before = host_network::now();
    temp_dir tmp;
    const auto f = run_rig({"run", write_scenario(tmp, builtin_target, fmt::format("{:.0f}B/s", cap)), "--out", tmp.path},
                           tmp.path);
    INFO("stderr: " << f.err);
    REQUIRE(f.code == 0);
    const auto r = f.report();
    CHECK(r["target"]["host"] == "198.18.0.2");
    CHECK(r["target"]["network"]["description"].get<std::string>().find("rig-c 198.18.0.1") != std::string::npos);
    const auto& inj = r["phases"][1]["injections"][0];
    CHECK(inj["verified"] == true);
    CHECK(inj["verification"].get<std::string>().find("tbf on rig-t (target→rig): rate") != std::string::npos);
    CHECK(inj["reverted"] == true);  // the root qdisc read back as it was
    CHECK(inj["revert"] == "rig-t: root qdisc back to noqueue (kernel default) (read back)");
    const auto& m = inj["measured"]["rig-t"];
    const double wire = m["throughput_bytes_s"].get<double>();
    MESSAGE(fmt::format("cap {:.0f} B/s: tbf passed {:.0f} B/s on the wire ({:.3f}x)", cap, wire, wire / cap));
    CHECK(wire >= 0.95 * cap);
    CHECK(wire <= 1.05 * cap);
    // What the workload received: replies (64 KiB + 15 bytes of header), without TCP/IP overhead.
    const double goodput = r["phases"][1]["workloads"]["bulk"]["throughput_ops_s"].get<double>() * (65536 + 15);
    MESSAGE(fmt::format("  workload goodput {:.0f} B/s ({:.3f}x)", goodput, goodput / cap));
    CHECK(goodput <= 1.0 * cap);
    CHECK(goodput >= 0.85 * cap);
    // The baseline and recovery phases are not capped.
    CHECK(r["phases"][0]["workloads"]["bulk"]["throughput_ops_s"].get<double>() * 65551 > 5 * cap);
    CHECK(r["phases"][2]["workloads"]["bulk"]["throughput_ops_s"].get<double>() * 65551 > 5 * cap);
    check_run_left_nothing(before, r);
  }
}

TEST_CASE("rate with a command target: the program runs in the target's namespace and listens on {host}") {
  if (!can_make_netns()) return;
  const host_network before = host_network::now();
  temp_dir tmp;
  const std::string target =
      "[target]\nkind = \"command\"\nrun = [\"{rig}\", \"target\", \"--bind\", \"{host}\", \"--port\", \"{port}\"]\n";
  const auto f = run_rig({"run", write_scenario(tmp, target, "2MB/s", "3s"), "--out", tmp.path}, tmp.path);
  INFO("stderr: " << f.err);
  REQUIRE(f.code == 0);
  const auto r = f.report();
  CHECK(r["target"]["host"] == "198.18.0.2");
  const auto argv = r["target"]["argv"].dump();
  CHECK(argv.find("198.18.0.2") != std::string::npos);
  const auto& inj = r["phases"][1]["injections"][0];
  CHECK(inj["verified"] == true);
  const double wire = inj["measured"]["rig-t"]["throughput_bytes_s"].get<double>();
  CHECK(wire >= 0.95 * 2e6);
  CHECK(wire <= 1.05 * 2e6);
  CHECK(r["phases"][1]["workloads"]["bulk"]["errors"]["connect"] == 0);
  check_run_left_nothing(before, r);
}

TEST_CASE("Ctrl-C while the cap is on: exit 130, target stopped, no namespace, veth or qdisc left") {
  if (!can_make_netns()) return;
  const host_network before = host_network::now();
  temp_dir tmp;
  const auto f = interrupt_rig_in_phase({"run", write_scenario(tmp, builtin_target, "1MB/s", "30s"), "--out", tmp.path},
                                        tmp.path, "capped", SIGINT);
  CHECK(f.code == 130);
  const auto r = f.report();
  CHECK(r["status"] == "interrupted");
  const pid_t target = r["target"]["pid"].get<pid_t>();
  CHECK(::kill(target, 0) == -1);
  check_run_left_nothing(before, r);
}

TEST_CASE("netem-delay.toml: validates everywhere, runs where sch_netem exists, else exits 3 naming it") {
  temp_dir tmp;
  const std::string file = RIG_SOURCE_DIR "/scenarios/netem-delay.toml";
  const auto v = run_rig({"validate", file}, tmp.path);
  CHECK(v.code == 0);
  const host_network before = host_network::now();
  const auto f = run_rig({"run", file, "--out", tmp.path}, tmp.path);
  if (f.code == 3) {
    CHECK(f.err.find("this kernel has no netem qdisc (sch_netem); use kind = \"proxy\" for delay and loss at the TCP "
                     "level, or load sch_netem") != std::string::npos);
    CHECK(f.out.empty());  // refused before any run directory or host change
    MESSAGE("this kernel has no sch_netem: the run was refused as it should be; tests/kernel runs it for real");
  } else {
    INFO("stderr: " << f.err);
    CHECK(f.code == 0);  // the scenario's expectations hold
  }
  host_network::now().check_unchanged_since(before);
}

TEST_CASE("rate against an endpoint target is refused before the run (exit 3)") {
  temp_dir tmp;
  const auto f = run_rig(
      {"run", write_scenario(tmp, "[target]\nkind = \"endpoint\"\naddress = \"127.0.0.1:9\"\n", "1MB/s"), "--out", tmp.path},
      tmp.path);
  CHECK(f.code == 3);
  CHECK(f.err.find("endpoint target is already running") != std::string::npos);
}
