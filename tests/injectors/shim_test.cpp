// The preload shim against real programs: the built-in target run as a plain command,
// redis-server, and a statically linked server it cannot reach.
#include <doctest/doctest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../helpers.hpp"
#include "injectors/shim.hpp"

using namespace rig;
using rig::testing::slurp;
using rig::testing::temp_dir;
using rig::testing::run_rig;
namespace fs = std::filesystem;

namespace {




bool gone(const nlohmann::json& report) {
  const pid_t pid = report["target"]["pid"].get<pid_t>();
  return pid > 0 && ::kill(pid, 0) == -1 && errno == ESRCH;
}

}  // namespace

TEST_CASE("preload reachability: dynamic programs and scripts yes, static binaries no") {
  CHECK_FALSE(preload_unreachable("/bin/sh").has_value());
  CHECK_FALSE(preload_unreachable(RIG_BINARY).has_value());
  const auto why = preload_unreachable(STATIC_SERVER);
  REQUIRE(why.has_value());
  CHECK(why->find("statically linked") != std::string::npos);
  CHECK(preload_unreachable("/nonexistent/x").value().find("cannot read") == 0);
}

TEST_CASE("nagle.toml: TCP_NODELAY forced off inside an unmodified program, and given back") {
  const auto before = rig::testing::host_network::now();
  temp_dir tmp;
  const auto run = run_rig(rig::testing::run_args(RIG_SOURCE_DIR "/scenarios/nagle.toml", tmp.path,
                                                  {{"baseline", "1s"}, {"nagle", "2s"}, {"recovery", "1s"}}),
                           tmp.path);
  const auto report = run.report();
  INFO(run.stdout_text() << run.err);
  REQUIRE(run.code == 0);
  const auto& inj = report["phases"][1]["injections"][0];
  CHECK(inj["verified"] == true);
  CHECK(inj["mechanism"].get<std::string>().find("LD_PRELOAD shim") != std::string::npos);
  CHECK(inj["measured"]["target"]["matching"] == 4);  // the 4 connections; the listener is not counted
  CHECK(inj["measured"]["target"]["processes"] == 1);
  double p50x = 0;
  for (const auto& m : report["magnification"])
    if (m["phase"] == "nagle") p50x = m["p50_x"];
  MESSAGE("nagle through the shim: p50 x" << p50x);
  CHECK(p50x >= 10);
  CHECK(report["phases"][2]["workloads"]["rr"]["latency_us"]["p50"].get<double>() < 5000);
  CHECK(gone(report));
  rig::testing::host_network::now().check_unchanged_since(before);
}

TEST_CASE("tiny-buffers.toml: 4 KiB socket buffers inside redis-server change its throughput") {
  if (rig::testing::which("redis-server").empty()) {
    MESSAGE("skipped: redis-server is not installed (scripts/install-deps.sh installs it)");
    return;
  }
  temp_dir tmp;
  const auto run = run_rig(rig::testing::run_args(RIG_SOURCE_DIR "/scenarios/tiny-buffers.toml", tmp.path,
                                                  {{"baseline", "1s"}, {"tiny", "2s"}, {"recovery", "1s"}}),
                           tmp.path);
  const auto report = run.report();
  INFO(run.stdout_text() << run.err);
  REQUIRE(run.code == 0);
  const auto& phases = report["phases"];
  const double base = phases[0]["workloads"]["get"]["throughput_ops_s"];
  const double tiny = phases[1]["workloads"]["get"]["throughput_ops_s"];
  const double back = phases[2]["workloads"]["get"]["throughput_ops_s"];
  MESSAGE("redis 64 KiB GET: " << base << " ops/s, with 4 KiB buffers " << tiny << " ops/s, after " << back);
  CHECK(tiny < base / 2);
  CHECK(back > base / 2);
  const auto& m = phases[1]["injections"][0]["measured"]["target"];
  CHECK(m["matching"] == 4);
  CHECK(m["tcp_sockets_seen"].get<int>() >= 4);
  CHECK(m["sndbuf_clamped"].get<int>() >= 4);
  CHECK(gone(report));
}

TEST_CASE("a statically linked target: the run is refused with exit 3 naming why") {
  temp_dir tmp;
  const std::string file = tmp.path + "/static.toml";
  std::ofstream(file) << "name = \"static\"\n[target]\nkind = \"command\"\nrun = [\"" STATIC_SERVER
                         "\", \"{port}\"]\n[workloads.rr]\nkind = \"tcp\"\n[injectors.n]\nkind = \"nodelay\"\n"
                         "[[phases]]\nname = \"p\"\nduration = \"1s\"\ninject = [\"n\"]\n";
  const auto run = run_rig({"run", file, "--out", tmp.path}, tmp.path);
  const auto report = run.report();
  CHECK(run.code == 3);
  CHECK(run.err.find("statically linked: LD_PRELOAD cannot reach its sockets") != std::string::npos);
  CHECK(!fs::exists(tmp.path + "/runs"));
}
