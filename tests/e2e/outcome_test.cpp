// Outcome figures from real runs: the share of requests that failed and their latency, read from
// report.json and every output built on it, after `rig run` against a real redis-server and nginx
// that give error replies. (The recorder's unit tests passed while every real run said 0%.)
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../helpers.hpp"
#include "../nginx.hpp"
#include "../redis.hpp"

using namespace rig;
using rig::testing::run_rig;
using rig::testing::slurp;
using rig::testing::temp_dir;
using nlohmann::json;

namespace {

// Two workloads on one redis: `good` PINGs (closed loop), `bad` sends a command redis does not
// know (open loop, 200/s), so every one of its replies is "-ERR unknown command".
std::string redis_scenario(const std::string& address, const std::string& checks) {
  return fmt::format(R"(name = "redis-errors"
[target]
kind = "endpoint"
address = "{}"
[workloads.good]
kind = "tcp"
connections = 2
request = "PING\r\n"
response_until = "\r\n"
expect_reply = "+PONG\r\n"
error_prefix = ["-"]
[workloads.bad]
kind = "tcp"
connections = 1
rate = "200/s"
request = "NOPE\r\n"
response_until = "\r\n"
expect_reply = "+PONG\r\n"
error_prefix = ["-"]
[[phases]]
name = "baseline"
duration = "1s"
[[phases]]
name = "again"
duration = "1s"
[expect]
checks = [{}]
)",
                     address, checks);
}

const json& workload(const json& r, size_t phase, const char* w) { return r["phases"][phase]["workloads"][w]; }

bool has_line(const rig::testing::rig_result& r, const std::string& text) {
  return r.stdout_text().find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("redis error replies: errors_pct, error and all latency in report.json, an unanswered baseline fails") {
  temp_dir tmp;
  auto redis = rig::testing::redis_server::start(tmp.path);
  if (!redis) {
    MESSAGE("skipped: redis-server is not installed (scripts/install-deps.sh installs it)");
    return;
  }
  std::ofstream(tmp.path + "/plain.toml") << redis_scenario(redis->address(), "\"baseline.good.errors_pct < 1\"");
  const auto run = run_rig({"run", tmp.path + "/plain.toml", "--out", tmp.path + "/plain"}, tmp.path);
  INFO(run.stdout_text() << run.err);
  // Every request of `bad` failed in the first phase, and no check expects it: not a result.
  CHECK(run.code == 1);
  const json r = run.report();
  REQUIRE(r.is_object());
  CHECK(r["status"] == "checks_failed");
  bool implicit = false;
  for (const auto& e : r["expectations"])
    if (e["expr"] == "bad answers in the baseline phase") {
      implicit = true;
      CHECK(e["ok"] == false);
      CHECK(e["actual"].get<std::string>().find("error_reply") != std::string::npos);
    }
  CHECK(implicit);
  for (size_t p : {0, 1}) {
    CAPTURE(p);
    const json& bad = workload(r, p, "bad");
    const json& good = workload(r, p, "good");
    const uint64_t replies = bad["errors"]["error_reply"].get<uint64_t>();
    // 200/s for 1 s: about 200 due; a loaded machine may send fewer, never none.
    CHECK(replies > 50);
    CHECK(bad["ops"] == 0);
    CHECK(bad["errors_pct"].get<double>() == 100.0);
    CHECK(bad["error_latency_us"]["count"].get<uint64_t>() == replies);  // each error reply has its latency
    CHECK(bad["all_latency_us"]["count"].get<uint64_t>() == replies);
    CHECK(bad["error_latency_us"]["p50"].get<double>() > 0);
    CHECK(bad["latency_us"]["count"] == 0);  // latency is successful replies only
    CHECK(good["errors_pct"].get<double>() == 0.0);
    CHECK(good["all_latency_us"]["count"].get<uint64_t>() == good["ops"].get<uint64_t>());
    CHECK(good["error_latency_us"]["count"] == 0);
  }
  // A later phase with no reply: a warning, in report.json and on the terminal.
  REQUIRE(r["warnings"].size() == 1);
  CHECK(r["warnings"][0].get<std::string>().find("phase again: workload bad: no successful reply") == 0);
  CHECK(has_line(run, "! phase again: workload bad: no successful reply"));
  CHECK(has_line(run, "100.0%"));  // the terminal's failed column

  // The same with checks that expect the errors: a result, and the checks read the figures.
  std::ofstream(tmp.path + "/expected.toml")
      << redis_scenario(redis->address(), "\"baseline.bad.errors_pct > 99\", \"baseline.good.errors_pct < 1\", "
                                          "\"baseline.bad.error_latency.p50 < 1s\", \"again.bad.errors.error_reply > 50\"");
  const auto ok = run_rig({"run", tmp.path + "/expected.toml", "--out", tmp.path + "/runs/r1"}, tmp.path);
  INFO(ok.stdout_text() << ok.err);
  REQUIRE(ok.code == 0);
  const json ok_report = ok.report();
  for (const auto& e : ok_report["expectations"]) CHECK(e["ok"] == true);

  // compare: errors_pct held to a share of B's requests; a ratio of shares is refused.
  const std::string dir = ok.run_dir();
  const auto gate = run_rig({"compare", dir, dir, "--out", tmp.path + "/c.html", "--fail-if", "errors_pct > 1",
                             "--junit", tmp.path + "/gate.xml"},
                            tmp.path);
  INFO(gate.stdout_text() << gate.err);
  CHECK(gate.code == 1);
  // The same decision for a CI's test reporter: a testcase per row, the failed one with its figures.
  const std::string xml = slurp(tmp.path + "/gate.xml");
  INFO(xml);
  CHECK(xml.find("check: errors_pct &gt; 1 at baseline.bad.errors_pct") != std::string::npos);
  CHECK(xml.find("A 100.00%, B 100.00%") != std::string::npos);
  CHECK(xml.find("check: errors_pct &gt; 1 at baseline.good.errors_pct") != std::string::npos);
  CHECK(xml.find("failures=\"2\"") != std::string::npos);  // bad in both phases; good passes
  CHECK(has_line(gate, "FAIL errors_pct > 1: baseline.bad.errors_pct"));
  CHECK_FALSE(has_line(gate, "FAIL errors_pct > 1: baseline.good"));
  const auto good_gate = run_rig({"compare", dir, dir, "--out", tmp.path + "/c.html", "--fail-if", "*.good.errors_pct > 1%"}, tmp.path);
  CHECK(good_gate.code == 0);
  const auto ratio = run_rig({"compare", dir, dir, "--out", tmp.path + "/c.html", "--fail-if", "errors_pct > 1.2x"}, tmp.path);
  CHECK(ratio.code == 2);
  CHECK(ratio.err.find("errors_pct is held to a share of B's requests in percent") != std::string::npos);

  // OpenMetrics: the ratio of failed requests per workload and phase.
  const auto om = run_rig({"export", dir, "--format", "openmetrics"}, tmp.path);
  REQUIRE(om.code == 0);
  bool bad_ratio = false, good_ratio = false;
  for (const auto& l : om.out) {
    if (l.rfind("rig_errors_ratio{", 0) != 0) continue;
    if (l.find("workload=\"bad\"") != std::string::npos) bad_ratio = bad_ratio || l.substr(l.rfind(' ') + 1) == "1";
    if (l.find("workload=\"good\"") != std::string::npos) good_ratio = good_ratio || l.substr(l.rfind(' ') + 1) == "0";
  }
  CHECK(bad_ratio);
  CHECK(good_ratio);

  // history over two runs: the errors column and history.json's points.
  const auto second = run_rig({"run", tmp.path + "/expected.toml", "--out", tmp.path + "/runs/r2"}, tmp.path);
  REQUIRE(second.code == 0);
  const auto hist = run_rig({"history", tmp.path + "/runs", "--out", tmp.path + "/hist"}, tmp.path);
  INFO(hist.stdout_text() << hist.err);
  REQUIRE(hist.code == 0);
  CHECK(has_line(hist, "errors median"));
  const json h = json::parse(slurp(tmp.path + "/hist/history.json"));
  bool seen = false;
  for (const auto& row : h["phases"])
    if (row["phase"] == "baseline" && row["workload"] == "bad") {
      seen = true;
      for (const auto& pt : row["figures"]["errors_pct"]["points"]) CHECK(pt["median"].get<double>() == 100.0);
    }
  CHECK(seen);
}

TEST_CASE("redis error replies through --repeat and suite: repeat.json and suite.json carry errors_pct") {
  temp_dir tmp;
  auto redis = rig::testing::redis_server::start(tmp.path);
  if (!redis) {
    MESSAGE("skipped: redis-server is not installed (scripts/install-deps.sh installs it)");
    return;
  }
  std::filesystem::create_directories(tmp.path + "/s");
  std::ofstream(tmp.path + "/s/expected.toml")
      << redis_scenario(redis->address(), "\"baseline.bad.errors_pct > 99\", \"baseline.good.errors_pct < 1\"");
  const auto rep = run_rig({"run", tmp.path + "/s/expected.toml", "--out", tmp.path + "/rep", "--repeat", "2",
                            "--set", "phases.again.duration=300ms"},
                           tmp.path);
  INFO(rep.stdout_text() << rep.err);
  REQUIRE(rep.code == 0);
  CHECK(has_line(rep, "errors median"));
  std::string repeat_json;
  for (const auto& e : std::filesystem::recursive_directory_iterator(tmp.path + "/rep"))
    if (e.path().filename() == "repeat.json") repeat_json = e.path().string();
  REQUIRE(!repeat_json.empty());
  const json rj = json::parse(slurp(repeat_json));
  int rows = 0;
  for (const auto& row : rj["phases"]) {
    if (row["workload"] == "bad") CHECK(row["figures"]["errors_pct"]["median"].get<double>() == 100.0);
    if (row["workload"] == "good") CHECK(row["figures"]["errors_pct"]["median"].get<double>() == 0.0);
    ++rows;
  }
  CHECK(rows == 4);

  const auto suite = run_rig({"suite", tmp.path + "/s", "--out", tmp.path + "/suite", "--phase-duration", "500ms"}, tmp.path);
  INFO(suite.stdout_text() << suite.err);
  REQUIRE(suite.code == 0);
  std::string suite_json;
  for (const auto& e : std::filesystem::recursive_directory_iterator(tmp.path + "/suite"))
    if (e.path().filename() == "suite.json") suite_json = e.path().string();
  REQUIRE(!suite_json.empty());
  const json sj = json::parse(slurp(suite_json));
  REQUIRE(sj["scenarios"].size() == 1);
  const json& row = sj["scenarios"][0]["figures"];
  REQUIRE(row.is_object());
  CHECK(row["workload"] == "bad");  // the first workload by name
  CHECK(row["errors_pct"].get<double>() == 100.0);
}

TEST_CASE("nginx 404 on every request: status_4xx, errors_pct 100 and its latency, and the implicit check") {
  const std::string bin = rig::testing::which("nginx");
  if (bin.empty()) {
    MESSAGE("skipped: nginx is not installed (scripts/install-deps.sh installs nginx-light)");
    return;
  }
  temp_dir tmp;
  const uint16_t port = rig::testing::free_port();
  const auto files = rig::testing::nginx_files::write(tmp.path, port);
  const auto scenario = [&](const std::string& checks) {
    return fmt::format(R"(name = "nginx-404"
{}[workloads.web]
kind = "http"
connections = 2
path = "/missing"
[[phases]]
name = "baseline"
duration = "1s"
[expect]
checks = [{}]
)",
                       files.target_toml(bin, port), checks);
  };
  std::ofstream(tmp.path + "/plain.toml") << scenario("");
  const auto plain = run_rig({"run", tmp.path + "/plain.toml", "--out", tmp.path}, tmp.path);
  INFO(plain.stdout_text() << plain.err);
  CHECK(plain.code == 1);
  CHECK(has_line(plain, "FAIL  web answers in the baseline phase"));

  std::ofstream(tmp.path + "/expected.toml") << scenario("\"baseline.web.errors.status_4xx > 100\"");
  const auto run = run_rig({"run", tmp.path + "/expected.toml", "--out", tmp.path}, tmp.path);
  INFO(run.stdout_text() << run.err);
  REQUIRE(run.code == 0);
  const json r = run.report();
  const json& w = workload(r, 0, "web");
  const uint64_t n = w["errors"]["status_4xx"].get<uint64_t>();
  CHECK(n > 100);
  CHECK(w["ops"] == 0);
  CHECK(w["status"]["4xx"].get<uint64_t>() == n);
  CHECK(w["errors_pct"].get<double>() == 100.0);
  CHECK(w["error_latency_us"]["count"].get<uint64_t>() == n);
  CHECK(w["all_latency_us"]["count"].get<uint64_t>() == n);
}

TEST_CASE("a request counts in the phase it was due in: a stalled phase keeps its own slow replies, the next starts clean") {
  temp_dir tmp;
  // The target stopped (SIGSTOP) for 900 ms of the middle phase: the requests due then wait and
  // are answered once it runs again. They belong to the stalled phase, not to the one after.
  // The last phase stalls too, past the run's end: what was due and not answered is said.
  std::ofstream(tmp.path + "/s.toml") << R"(name = "stall"
[target]
kind = "builtin"
[workloads.rr]
kind = "tcp"
connections = 4
rate = "400/s"
timeout = "5s"
[injectors.stop]
kind = "pause"
period = "10s"
pause_for = "900ms"
[injectors.stop_long]
kind = "pause"
period = "10s"
pause_for = "5s"
[[phases]]
name = "base"
duration = "1s"
[[phases]]
name = "stalled"
duration = "1s"
inject = ["stop"]
[[phases]]
name = "after"
duration = "1s"
[[phases]]
name = "stalled_at_end"
duration = "500ms"
inject = ["stop_long"]
)";
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path}, tmp.path);
  INFO(run.stdout_text() << run.err);
  REQUIRE(run.code == 0);
  const json r = run.report();
  for (size_t p = 0; p < 4; ++p) {
    const json& w = workload(r, p, "rr");
    CAPTURE(p);
    CAPTURE(w.dump());
    // Every request due has one outcome.
    uint64_t errors = 0;
    for (const auto& [k, n] : w["errors"].items())
      if (k != "connect") errors += n.get<uint64_t>();
    CHECK(w["due"].get<uint64_t>() == w["ops"].get<uint64_t>() + errors + w["not_sent"].get<uint64_t>() +
                                          w["unfinished"].get<uint64_t>());
    // A uniform schedule of 400/s: the phase's length times the rate, whatever the target did
    // (each of the 4 connections' schedules may put one request either side of an edge).
    const double seconds = r["phases"][p]["end_s"].get<double>() - r["phases"][p]["start_s"].get<double>();
    CHECK(std::abs(w["due"].get<double>() - 400 * seconds) <= 4 + 400 * 0.02);
  }
  // The stall's requests waited in the stalled phase (up to its 900 ms); the next phase's did not.
  CHECK(workload(r, 1, "rr")["ops"].get<uint64_t>() > 300);
  CHECK(workload(r, 1, "rr")["latency_us"]["p50"].get<double>() > 100'000);
  // From the pause's end a request waits at most the backlog's drain: well under the 900 ms
  // stall that would show here if the stalled phase's requests were counted in this one.
  CHECK(workload(r, 2, "rr")["latency_us"]["p50"].get<double>() < 100'000);
  // Each phase lasts what it was asked, a stopped target's included: a boundary does not wait
  // for counters the stopped target cannot give (it held the last phase 2 s for a 2 s timeout).
  const double asked[] = {1.0, 1.0, 1.0, 0.5};
  for (size_t p = 0; p < 4; ++p) {
    CAPTURE(p);
    CHECK(r["phases"][p]["end_s"].get<double>() - r["phases"][p]["start_s"].get<double>() < asked[p] + 0.4);
  }
  // The pause still on as the last phase ended is counted (it was "stopped for 0.00s").
  CHECK(r["phases"][3]["injections"][0]["measured"]["paused_s"].get<double>() >= 0.5);
  // The last phase ended with the target stopped: its requests were not answered in the run.
  const json& last = workload(r, 3, "rr");
  CHECK(last["not_sent"].get<uint64_t>() + last["unfinished"].get<uint64_t>() + last["ops"].get<uint64_t>() > 150);
}

TEST_CASE("an open loop whose connections cannot carry the rate says so, with the connections that would") {
  temp_dir tmp;
  // 2 ms of work a request: one connection (one request in flight) carries at most ~500/s, and
  // 1,000/s are due. The requests wait in rig; the warning says how many connections would do.
  std::ofstream(tmp.path + "/s.toml") << R"(name = "few-connections"
[target]
kind = "builtin"
workers = 4
work = "2ms"
[workloads.rr]
kind = "tcp"
connections = 1
rate = "1000/s"
timeout = "5s"
[[phases]]
name = "load"
duration = "1s"
)";
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path}, tmp.path);
  INFO(run.stdout_text() << run.err);
  REQUIRE(run.code == 0);
  const json r = run.report();
  REQUIRE(r["warnings"].size() == 1);
  const std::string w = r["warnings"][0].get<std::string>();
  CHECK(w.find("phase load: workload rr's 1 connection (one request in flight each) carry at most") == 0);
  CHECK(w.find("connections would carry it") != std::string::npos);
  CHECK(has_line(run, "! phase load: workload rr's 1 connection"));
}

TEST_CASE("rig run --run-dir: the run directory CI names, made by rig, refused when it exists or with --repeat") {
  temp_dir tmp;
  std::ofstream(tmp.path + "/s.toml") << R"(name = "named"
[target]
kind = "builtin"
[workloads.rr]
kind = "tcp"
[[phases]]
name = "p"
duration = "300ms"
)";
  const std::string dir = tmp.path + "/ci/run-42";
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--run-dir", dir, "--quiet", "--set", "seed=7"}, tmp.path);
  INFO(run.stdout_text() << run.err);
  REQUIRE(run.code == 0);
  CHECK(run.run_dir() == dir);
  CHECK(std::filesystem::exists(dir + "/report.json"));
  // The seed the run drew from and its overrides, in the report; the copied scenario says how to rerun it.
  const json r = run.report();
  CHECK(r["scenario"]["seed"] == 7);
  CHECK(r["scenario"]["sets"] == json::array({"seed=7"}));
  CHECK(slurp(dir + "/scenario.toml").find("rig run scenario.toml --set 'seed=7'") != std::string::npos);
  const auto again = run_rig({"run", tmp.path + "/s.toml", "--run-dir", dir, "--quiet"}, tmp.path);
  CHECK(again.code == 2);
  CHECK(again.err.find("--run-dir " + dir + " exists") != std::string::npos);
  const auto repeat = run_rig({"run", tmp.path + "/s.toml", "--run-dir", tmp.path + "/other", "--repeat", "2"}, tmp.path);
  CHECK(repeat.code == 2);
  CHECK(repeat.err.find("--run-dir names one run's directory") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(tmp.path + "/other"));
}

TEST_CASE("each phase records what else the host ran: a busy process beside the run shows as other CPUs") {
  temp_dir tmp;
  std::ofstream(tmp.path + "/s.toml") << R"(name = "host-load"
[target]
kind = "builtin"
[workloads.rr]
kind = "tcp"
rate = "50/s"
[[phases]]
name = "p"
duration = "1s"
)";
  // A thread of this test spinning the whole run: neither the target nor rig.
  std::atomic<bool> stop{false};
  std::thread spin([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path, "--quiet"}, tmp.path);
  stop = true;
  spin.join();
  INFO(run.stdout_text() << run.err);
  REQUIRE(run.code == 0);
  const json r = run.report();
  const json& host = r["phases"][0]["resources"]["host"];
  INFO(host.dump());
  REQUIRE(host.is_object());
  const double busy = host["cpu_busy_cpus"].get<double>(), other = host["other_cpus"].get<double>();
  // The spinner holds up to one CPU; a loaded machine (tests beside this one) shares it, so only a
  // third of one is asked, which an idle host (other ~0) cannot show.
  CHECK(other > 0.3);
  CHECK(busy >= other);
  CHECK(busy <= double(std::thread::hardware_concurrency()) + 0.05);
  CHECK(host["steal_pct"].get<double>() >= 0);
  CHECK(host["load1_end"].get<double>() >= 0);
}

TEST_CASE("an nginx worker killed by SIGSEGV is a crash: an event naming it, counted in its phase, a failed run unless a check expects it") {
  const std::string bin = rig::testing::which("nginx");
  if (bin.empty() || ::geteuid() != 0) {
    MESSAGE("skipped: needs nginx and root (the kernel's process events; scripts/install-deps.sh installs nginx-light)");
    return;
  }
  temp_dir tmp;
  const uint16_t port = rig::testing::free_port();
  const auto files = rig::testing::nginx_files::write(tmp.path, port, 2);  // a master and 2 workers
  const auto scenario = [&](const std::string& checks) {
    return fmt::format(R"(name = "nginx-crash"
{}[workloads.web]
kind = "http"
connections = 2
rate = "200/s"
path = "/hello"
[injectors.segv]
kind = "kill"
process = "child"
signal = "SIGSEGV"
at = "200ms"
[[phases]]
name = "base"
duration = "1s"
[[phases]]
name = "crash"
duration = "1s"
inject = ["segv"]
[[phases]]
name = "after"
duration = "1s"
[expect]
checks = [{}]
)",
                       files.target_toml(bin, port), checks);
  };
  std::ofstream(tmp.path + "/plain.toml") << scenario("");
  const auto plain = run_rig({"run", tmp.path + "/plain.toml", "--out", tmp.path}, tmp.path);
  INFO(plain.stdout_text() << plain.err);
  CHECK(plain.code == 1);
  CHECK(has_line(plain, "FAIL  no process of the target crashes"));
  const json r = plain.report();
  CHECK(r["target"]["process_events"]["watched"] == true);
  CHECK(r["target"]["process_events"]["lost"] == 0);  // none dropped: the crash count is whole
  const json& shot = r["phases"][1]["injections"][0]["measured"];
  REQUIRE(shot["sent"] == true);
  const int pid = shot["pid"].get<int>();
  std::vector<std::string> crashes;
  for (const auto& e : r["events"])
    if (e["kind"] == "crash") crashes.push_back(e["detail"].get<std::string>());
  REQUIRE(crashes.size() == 1);
  CHECK(crashes[0].rfind(fmt::format("nginx (pid {}) of the target's processes was killed by SIGSEGV", pid), 0) == 0);
  CHECK(crashes[0].find("during phase crash") != std::string::npos);
  CHECK(r["phases"][0]["resources"]["target"]["crashes"] == 0);
  CHECK(r["phases"][1]["resources"]["target"]["crashes"] == 1);
  CHECK(r["phases"][2]["resources"]["target"]["crashes"] == 0);

  // Expected, it is a result: the master started a new worker, and the phase after answers.
  std::ofstream(tmp.path + "/expected.toml") << scenario("\"crash.target.crashes == 1\", \"events.crash == 1\"");
  const auto run = run_rig({"run", tmp.path + "/expected.toml", "--out", tmp.path}, tmp.path);
  INFO(run.stdout_text() << run.err);
  CHECK(run.code == 0);
  CHECK(run.report()["phases"][2]["workloads"]["web"]["ops"].get<uint64_t>() > 100);
}

TEST_CASE("nginx's master killed under an sh -c wrapper is the target's death, killed by SIGKILL, not a daemon") {
  const std::string bin = rig::testing::which("nginx");
  if (bin.empty() || ::geteuid() != 0) {
    MESSAGE("skipped: needs nginx and root (the kernel's process events; scripts/install-deps.sh installs nginx-light)");
    return;
  }
  temp_dir tmp;
  const uint16_t port = rig::testing::free_port();
  const auto files = rig::testing::nginx_files::write(tmp.path, port, 2);
  // The wrapper goes on after nginx and exits 0, leaving the orphaned workers behind: once taken
  // for a daemonizing program ("the command target daemonized").
  std::ofstream(tmp.path + "/s.toml") << fmt::format(R"(name = "nginx-master-killed"
[target]
kind = "command"
run = ["/bin/sh", "-c", "{} -c {} -e stderr; true"]
port = {}
[workloads.web]
kind = "http"
connections = 2
rate = "100/s"
path = "/hello"
[injectors.kill]
kind = "kill"
at = "200ms"
[[phases]]
name = "base"
duration = "1s"
[[phases]]
name = "killed"
duration = "2s"
inject = ["kill"]
)",
                                                     bin, files.conf, port);
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path}, tmp.path);
  INFO(run.stdout_text() << run.err);
  CHECK(run.code == 1);
  const json r = run.report();
  const json& death = r["target"]["death"];
  CAPTURE(death.dump());
  CHECK(death["description"].get<std::string>().rfind("the serving process nginx (pid ", 0) == 0);
  CHECK(death["description"].get<std::string>().find("it was killed by SIGKILL") != std::string::npos);
  CHECK(death["description"].get<std::string>().find("daemonized") == std::string::npos);
  CHECK(death.value("signal", "") == "SIGKILL");
}

TEST_CASE("tiny buffers on nginx's master and workers are put back whole: autotuning handed back, read back by rig in each process") {
  const std::string bin = rig::testing::which("nginx");
  if (bin.empty() || ::geteuid() != 0) {
    MESSAGE("skipped: needs nginx and root (rig reads the workers' sockets itself; scripts/install-deps.sh installs "
            "nginx-light)");
    return;
  }
  temp_dir tmp;
  const uint16_t port = rig::testing::free_port();
  const auto files = rig::testing::nginx_files::write(tmp.path, port, 2);
  std::ofstream(tmp.path + "/www/256k.bin") << std::string(256 * 1024, 'b');
  ::chmod(tmp.path.c_str(), 0755);  // nginx's workers run as nobody: they must reach the file
  // The same keep-alive connections through all three phases: their sockets in the workers are
  // clamped, then must get back what they had, as must the listener new connections inherit from.
  std::ofstream(tmp.path + "/s.toml") << fmt::format(R"(name = "nginx-tiny-buffers"
{}[workloads.web]
kind = "http"
connections = 4
path = "/256k.bin"
[injectors.tiny]
kind = "sockbuf"
send = "4KiB"
receive = "4KiB"
[[phases]]
name = "base"
duration = "2s"
[[phases]]
name = "tiny"
duration = "2s"
inject = ["tiny"]
[[phases]]
name = "after"
duration = "2s"
)",
                                                     files.target_toml(bin, port));
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path}, tmp.path);
  INFO(run.stdout_text() << run.err);
  REQUIRE(run.code == 0);
  const json r = run.report();
  const json& inj = r["phases"][1]["injections"][0];
  CAPTURE(inj.dump());
  CHECK(inj["verified"] == true);
  CHECK(inj["verification"].get<std::string>().find("itself: ") != std::string::npos);
  CHECK(inj["reverted"] == true);
  const std::string revert = inj["revert"].get<std::string>();
  CHECK(revert.find("buffer autotuning handed back on") != std::string::npos);
  CHECK(revert.find("itself: as before") != std::string::npos);
  // The recovery is a recovery: once it stayed at 283/s against 45,889/s before the clamp.
  const double base = workload(r, 0, "web")["throughput_ops_s"].get<double>();
  const double after = workload(r, 2, "web")["throughput_ops_s"].get<double>();
  CHECK(after > 0.5 * base);
}

TEST_CASE("the OOM killer takes a server started through su: the target's death is the OOM kill of the serving process, not su's exit 137") {
  if (::geteuid() != 0 || rig::testing::which("su").empty() || !std::filesystem::exists("/sys/fs/cgroup")) {
    MESSAGE("skipped: needs root, su and a memory cgroup");
    return;
  }
  if (rig::testing::sanitized_skip("the sanitizer's shadow memory, not the retained requests, meets the memory cap"))
    return;
  temp_dir tmp;
  ::chmod(tmp.path.c_str(), 0755);
  // su forks the server as nobody and waits: killed by the OOM killer, the server takes su out with
  // exit status 137, which once read as an ordinary exit.
  std::ofstream(tmp.path + "/s.toml") << R"(name = "oom-under-su"
[target]
kind = "command"
run = ["su", "-s", "/bin/sh", "nobody", "-c", "exec {rig} target --port {port} --set retain_per_request=1MiB"]
[workloads.rr]
kind = "tcp"
connections = 2
rate = "200/s"
timeout = "1s"
[injectors.cap]
kind = "memory"
limit = "48MiB"
swap = "0B"
[[phases]]
name = "base"
duration = "200ms"
[[phases]]
name = "capped"
duration = "10s"
inject = ["cap"]
[expect]
checks = ["events.oom_kill >= 1"]
)";
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path}, tmp.path, 60'000);
  INFO(run.stdout_text() << run.err);
  const json r = run.report();
  REQUIRE(r["target"].contains("death"));
  const json& death = r["target"]["death"];
  CAPTURE(death.dump());
  CHECK(run.code == 0);  // the death is expected by the check
  // The serving process (rig target, su's child) is the target: how it died comes from the
  // kernel's process events, as rig is not its parent.
  CHECK(death["cause"] == "oom_kill");
  CHECK(death["signal"] == "SIGKILL");
  const std::string text = death["description"].get<std::string>();
  CHECK(text.rfind("the serving process rig (pid ", 0) == 0);
  CHECK(text.find("it was killed by SIGKILL") != std::string::npos);
  bool said = false;
  for (const auto& e : r["events"])
    if (e["kind"] == "target_exit")
      said = e["detail"].get<std::string>().find("(the OOM killer, under the memory cap)") != std::string::npos;
  CHECK(said);
}

namespace {
// PostgreSQL's server binaries (Debian: /usr/lib/postgresql/VERSION/bin), "" when not installed.
std::string postgres_bin_dir() {
  std::error_code ec;
  for (const auto& v : std::filesystem::directory_iterator("/usr/lib/postgresql", ec))
    if (std::filesystem::exists(v.path() / "bin/postgres") && std::filesystem::exists(v.path() / "bin/initdb"))
      return (v.path() / "bin").string();
  return "";
}
}  // namespace

TEST_CASE("PostgreSQL: fsync delays in its per-connection backends are counted, nodelay reaches new backends and is read back") {
  const std::string bin = postgres_bin_dir();
  if (bin.empty() || ::geteuid() != 0 || !::getpwnam("postgres") || rig::testing::which("setpriv").empty()) {
    MESSAGE("skipped: needs PostgreSQL (postgresql-15), its postgres user, setpriv and root");
    return;
  }
  temp_dir tmp;
  ::chmod(tmp.path.c_str(), 0755);
  const std::string data = tmp.path + "/data";
  std::filesystem::create_directories(data);
  const passwd* pg = ::getpwnam("postgres");
  REQUIRE(::chown(data.c_str(), pg->pw_uid, pg->pw_gid) == 0);
  const std::vector<std::string> as_postgres = {"setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"};
  std::vector<std::string> initdb = as_postgres;
  for (const auto& a : {bin + "/initdb", std::string("-D"), data, std::string("-A"), std::string("trust"),
                        std::string("-U"), std::string("postgres"), std::string("--no-sync")})
    initdb.push_back(a);
  initdb[0] = rig::testing::which("setpriv");
  const auto init = rig::testing::run_program(initdb, tmp.path, 120'000);
  INFO(init.err);
  REQUIRE(init.code == 0);
  // A request: a connection's startup (user postgres, trust), one insert, and its end; each on
  // a connection of its own, so each is served by a backend forked for it that exits after it.
  const std::string sql = "CREATE TABLE IF NOT EXISTS t(x int); INSERT INTO t VALUES (1)";
  const auto u32 = [](uint32_t v) {
    return fmt::format("\\u{:04x}\\u{:04x}\\u{:04x}\\u{:04x}", v >> 24, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff);
  };
  const std::string params = "user\\u0000postgres\\u0000database\\u0000postgres\\u0000\\u0000";
  const std::string startup = u32(4 + 4 + 33) + u32(196608) + params;
  const std::string query = "Q" + u32(uint32_t(4 + sql.size() + 1)) + sql + "\\u0000";
  const std::string request = startup + query + "X" + u32(4);
  std::ofstream(tmp.path + "/s.toml") << fmt::format(R"(name = "postgres-backends"
[target]
kind = "command"
run = ["{}", "--reuid=postgres", "--regid=postgres", "--init-groups", "{}/postgres", "-D", "{}", "-p", "{{port}}",
       "-k", "{}", "-c", "listen_addresses=127.0.0.1", "-c", "fsync=on", "-c", "synchronous_commit=on"]
ready_timeout = "30s"
[workloads.db]
kind = "tcp"
connection = "per_request"
request = "{}"
response_until = "INSERT 0 1\u0000"
rate = "20/s"
timeout = "5s"
[injectors.slow_fsync]
kind = "file_faults"
path_prefix = "{}"
delay = "20ms"
error = "none"
[injectors.nagle]
kind = "nodelay"
[[phases]]
name = "base"
duration = "2s"
[[phases]]
name = "slow"
duration = "2s"
inject = ["slow_fsync", "nagle"]
)",
                                                     rig::testing::which("setpriv"), bin, data, data, request, data);
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path}, tmp.path, 120'000);
  INFO(run.stdout_text() << run.err);
  REQUIRE(run.code == 0);
  const json r = run.report();
  CHECK(workload(r, 0, "db")["ops"].get<uint64_t>() >= 20);
  const json& slow = r["phases"][1];
  json fsync, nagle;
  for (const auto& i : slow["injections"]) (i["name"] == "slow_fsync" ? fsync : nagle) = i;
  CAPTURE(fsync.dump());
  CAPTURE(nagle.dump());
  // Each commit's WAL flush in its backend was delayed and counted, though every backend exited.
  CHECK(fsync["verified"] == true);
  CHECK(fsync["measured"]["calls"].get<int64_t>() >= 20);
  // Each delayed, but for a call under way at either edge of the phase (counted as it began, its
  // delay counted as it ended: one on each side of the edge's reading, with one connection).
  const int64_t calls = fsync["measured"]["calls"].get<int64_t>(), delayed = fsync["measured"]["delayed"].get<int64_t>();
  CHECK(std::abs(delayed - calls) <= 2);
  CHECK(fsync["measured"]["processes_exited"].get<int64_t>() >= 10);
  CHECK(workload(r, 1, "db")["latency_us"]["p50"].get<double>() > 20'000);
  // Nagle's algorithm reached the backends forked for the new connections.
  CHECK(nagle["verified"] == true);
  // (PostgreSQL sets TCP_NODELAY on each connection it accepts: the shim overrides that call.)
  const json& forced = nagle["measured"]["target"];
  CHECK(forced["setsockopt_overridden"].get<int64_t>() + forced["nodelay_forced"].get<int64_t>() >= 20);
  CHECK(nagle["reverted"] == true);
}
