// The seed cases of CASES.md that failpoints and the built-in target's knobs reproduce, each
// beside its fixed variant: the real rig binary, short phases, the shape asserted.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../helpers.hpp"
#include "core/clock.hpp"

using namespace rig;
using namespace rig::testing;
namespace fs = std::filesystem;

namespace {

// A pair shares its checks (the release gate): the fixed variant passes them (exit 0), the
// broken one fails them (exit 1, checks_failed), the report written either way.
enum class gate { passes, fails };

nlohmann::json run_case(const temp_dir& tmp, const std::string& file,
                        const std::vector<std::pair<std::string, std::string>>& durations, gate expect,
                        double* wall_s = nullptr) {
  const int64_t t0 = mono_ns();
  const auto run = run_rig(run_args(std::string(RIG_SOURCE_DIR "/scenarios/") + file, tmp.path, durations), tmp.path);
  if (wall_s) *wall_s = double(mono_ns() - t0) / 1e9;
  INFO(file << ": " << run.stdout_text() << run.err);
  auto r = run.report();
  REQUIRE(r.is_object());
  CHECK(run.code == (expect == gate::passes ? 0 : 1));
  CHECK(r["status"] == (expect == gate::passes ? "ok" : "checks_failed"));
  r["test_run_dir"] = run.run_dir();
  return r;
}

const nlohmann::json& phase(const nlohmann::json& r, const std::string& name) {
  for (const auto& p : r["phases"])
    if (p["name"] == name) return p;
  FAIL("no phase " << name);
  return r;
}

// One column of timeseries.csv in the rows of one phase.
std::vector<double> column(const nlohmann::json& r, const std::string& phase_name, const std::string& col) {
  std::istringstream csv(slurp(r["test_run_dir"].get<std::string>() + "/timeseries.csv"));
  std::string line, cell;
  std::getline(csv, line);
  std::vector<std::string> head;
  for (std::istringstream h(line); std::getline(h, cell, ',');) head.push_back(cell);
  const auto at = size_t(std::find(head.begin(), head.end(), col) - head.begin());
  REQUIRE(at < head.size());
  std::vector<double> out;
  while (std::getline(csv, line)) {
    std::vector<std::string> cells;
    for (std::istringstream l(line); std::getline(l, cell, ',');) cells.push_back(cell);
    if (cells.size() > at && cells[1] == phase_name && !cells[at].empty()) out.push_back(std::stod(cells[at]));
  }
  return out;
}

}  // namespace

TEST_CASE("thread-loss.toml: live workers fall monotonically to 0, queue and RSS rise, latency climbs, then timeouts") {
  temp_dir tmp;
  const auto r = run_case(tmp, "thread-loss.toml", {{"baseline", "1s"}, {"loss", "10s"}, {"after", "2s"}}, gate::fails);
  const auto& base = phase(r, "baseline");
  const auto& loss = phase(r, "loss");
  const auto& after = phase(r, "after");
  CHECK(loss["resources"]["target"]["live_workers_start"] == 8);
  CHECK(loss["resources"]["target"]["live_workers_end"] == 0);
  const auto live = column(r, "loss", "target.live_workers");
  REQUIRE(live.size() >= 6);
  for (size_t i = 1; i < live.size(); ++i) CHECK(live[i] <= live[i - 1]);  // never back up
  CHECK(live.front() > live.back());
  // Each fire ended one worker: exactly 8 fired, as many as died.
  const auto& measured = loss["injections"][0]["measured"];
  CHECK(measured["fired"] == 8);
  CHECK(loss["resources"]["target"]["workers_died"] == 8);
  CHECK(measured["hits"].get<uint64_t>() >= 8);
  // The OS threads went with them (/proc/PID/task).
  CHECK(after["resources"]["target"]["threads_max"].get<int>() + 8 <= base["resources"]["target"]["threads_min"].get<int>());
  CHECK(after["resources"]["target"]["queue_depth_max"].get<int>() > 50);
  CHECK(after["resources"]["target"]["rss_end_bytes"].get<double>() >
        base["resources"]["target"]["rss_end_bytes"].get<double>() + 2 * 1048576);
  // Latency climbs while the last one or two workers serve a growing queue, before everything times out. How
  // far depends on how long those last workers live: the whole phase's p99 was 6-24x the baseline's in 6 runs
  // here and 2.4x once in CI, when the fires were random. They are fixed now by the seed (0; core/draw.h): hits
  // 11, 16, 60, 78, 89, 152, 197 and 237 of worker.handle fire, so the last worker serves ~40 hits alone (~1.6 s
  // at 25/s) and the worst second's p99 is far past 2x the baseline's.
  const auto p99_by_second = column(r, "loss", "rr.p99_us");
  REQUIRE(!p99_by_second.empty());
  if (!rig::testing::sanitized_skip("the climb against the baseline: instrumented code stretches the baseline's p99"))
    CHECK(*std::max_element(p99_by_second.begin(), p99_by_second.end()) >
          2 * base["workloads"]["rr"]["latency_us"]["p99"].get<double>());
  CHECK(after["workloads"]["rr"]["errors"]["timeout"].get<uint64_t>() > 0);
  CHECK(base["workloads"]["rr"]["errors"]["timeout"] == 0);
}

TEST_CASE("thread-loss-fixed.toml: the same failpoint caught: all 8 workers stay and latency stays flat") {
  temp_dir tmp;
  // 5 s of loss at 80/s and p = 0.05: ~400 hits. Which hits fire is fixed by the seed (0;
  // core/draw.h): 18 of the first 400 (14 of the first 300), so the scenario's "> 5" and the
  // "> 3" below hold whatever the hit count a loaded machine gives. (When the draws were random,
  // Binomial(400, 0.05) fell to 5 once in ~14,000 runs.)
  const auto r = run_case(tmp, "thread-loss-fixed.toml", {{"baseline", "1s"}, {"loss", "5s"}, {"after", "1s"}}, gate::passes);
  const auto& base = phase(r, "baseline");
  const auto& loss = phase(r, "loss");
  for (const auto& p : r["phases"]) CHECK(p["resources"]["target"]["live_workers_min"] == 8);
  const auto fired = loss["injections"][0]["measured"]["fired"].get<uint64_t>();
  CHECK(fired > 3);
  // The failpoint's count and the target's counters cover the same window, read at its edges
  // at slightly different instants (23 fired and 22 caught once, under ASan).
  const auto caught = loss["resources"]["target"]["exceptions_caught"].get<uint64_t>();
  CHECK_MESSAGE(rig::testing::same_fires(caught, fired), "caught ", caught, ", fired ", fired);
  const auto answered = loss["workloads"]["rr"]["errors"]["status_5xx"].get<uint64_t>();  // each answered with an error
  CHECK_MESSAGE(rig::testing::same_fires(answered, fired), "answered ", answered, ", fired ", fired);
  CHECK(loss["workloads"]["rr"]["errors"]["timeout"] == 0);
  CHECK(loss["workloads"]["rr"]["latency_us"]["p99"].get<double>() <
        2 * base["workloads"]["rr"]["latency_us"]["p99"].get<double>());
}

TEST_CASE("overflow.toml: queue capacity 1 sends nearly every request down the reject path and the fixed queue none") {
  temp_dir tmp;
  const auto r = run_case(tmp, "overflow.toml", {{"overflow", "1s"}, {"tiny_buffers", "1s"}}, gate::fails);
  for (const auto& p : r["phases"]) {
    const auto& w = p["workloads"]["rr"];
    const double rejected = w["errors"]["rejected"].get<double>();
    CHECK(rejected / (rejected + w["ops"].get<double>()) > 0.9);
    // Counted by the target too; its count is sampled at the phase's edges (a request to the
    // target's control channel) a little apart from the workload's switch to the next phase, so
    // the rejections in between land in one phase or the other. Rejections come at the CPU's
    // pace (tens of thousands a second), so 1% was 5 ms at each edge; 5% allows 25 ms there, what
    // a round trip to a sanitized target on a loaded machine can take.
    CHECK(std::abs(p["resources"]["target"]["rejected"].get<double>() - rejected) <= 0.05 * rejected);
  }
  temp_dir tmp2;
  const auto f = run_case(tmp2, "overflow-fixed.toml", {{"overflow", "1s"}, {"tiny_buffers", "1s"}}, gate::passes);
  for (const auto& p : f["phases"]) {
    CHECK(p["resources"]["target"]["rejected"] == 0);
    CHECK(p["workloads"]["rr"]["errors"]["rejected"] == 0);
    CHECK(p["workloads"]["rr"]["ops"].get<uint64_t>() > 20);
  }
}

TEST_CASE("silent-limit.toml: the target stops answering: timeouts recorded, the phase named, the run ends on time") {
  temp_dir tmp;
  double wall_s = 0;
  const auto r = run_case(tmp, "silent-limit.toml", {}, gate::fails, &wall_s);
  CHECK(wall_s < 10 + 1 + 5);  // 10 s of phases, a 1 s timeout, and start-up: never a hang
  CHECK(phase(r, "small")["workloads"]["api"]["errors"]["timeout"] == 0);
  CHECK(phase(r, "beyond")["workloads"]["api"]["errors"]["timeout"].get<uint64_t>() > 150);
  CHECK(phase(r, "beyond")["workloads"]["api"].value("status", nlohmann::json::object()).value("2xx", 0) == 0);
  bool named = false;
  for (const auto& e : r["events"])
    named = named || (e["kind"] == "errors_began" &&
                      e["detail"].get<std::string>().find("timeout errors began in phase growing") != std::string::npos);
  CHECK(named);

  temp_dir tmp2;
  const auto f = run_case(tmp2, "silent-limit-fixed.toml", {}, gate::passes);
  for (const auto& p : f["phases"]) CHECK(p["workloads"]["api"]["errors"]["timeout"] == 0);
  CHECK(phase(f, "beyond")["workloads"]["api"]["errors"]["status_5xx"].get<uint64_t>() > 200);
}
