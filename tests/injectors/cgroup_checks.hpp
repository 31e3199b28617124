#pragma once
// Checks shared by the tests that run the real rig with cgroup caps.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/cgroup.hpp"

namespace rig::testing {

// Root and the controllers the injector needs, or a printed reason to skip.
inline bool can_cap(const std::vector<std::string>& controllers) {
  if (::geteuid() != 0) {
    MESSAGE("skipped: making cgroups needs root");
    return false;
  }
  const auto l = cgroup_layout::detect();
  for (const auto& c : controllers)
    if (!l.find(c)) {
      MESSAGE("skipped: no cgroup '" << c << "' controller here (" << l.describe() << ")");
      return false;
    }
  return true;
}

// The run's cgroup directories (report.json target.cgroup) exist no more.
inline void check_cgroup_gone(const nlohmann::json& report) {
  const auto& cg = report["target"]["cgroup"];
  REQUIRE(cg.is_object());
  REQUIRE(!cg.empty());
  for (const auto& [controller, where] : cg.items())
    CHECK_MESSAGE(!std::filesystem::exists(where["path"].get<std::string>()), where["path"]);
}

inline double throughput(const nlohmann::json& report, size_t phase) {
  return report["phases"][phase]["workloads"]["rr"]["throughput_ops_s"].get<double>();
}

inline size_t count_events(const nlohmann::json& report, const std::string& kind) {
  size_t n = 0;
  for (const auto& e : report["events"]) n += e["kind"] == kind;
  return n;
}

inline double ops_per_s(const nlohmann::json& report, size_t phase, const std::string& workload) {
  return report["phases"][phase]["workloads"][workload]["throughput_ops_s"].get<double>();
}

// The helper process a workload ran in (report.json workloads.NAME.runs_in) has exited.
inline void check_helper_gone(const nlohmann::json& report, const std::string& workload) {
  const auto& runs_in = report["workloads"][workload]["runs_in"];
  REQUIRE(runs_in.is_object());
  const pid_t pid = runs_in["pid"].get<pid_t>();
  CHECK(pid > 0);
  CHECK_MESSAGE((::kill(pid, 0) == -1 && errno == ESRCH), "helper pid " << pid << " still there");
}

}  // namespace rig::testing
