// End to end: the real rig binary, the real built-in target as its child, real sockets.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <signal.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../helpers.hpp"
#include "../nginx.hpp"
#include "../redis.hpp"
#include "core/process.hpp"

using namespace rig;
using rig::testing::slurp;
using rig::testing::temp_dir;
using rig::testing::report_path;
using rig::testing::run_rig;
using rig::testing::run_args;
using rig::testing::interrupt_rig_in_phase;
namespace fs = std::filesystem;

namespace {




void require_keys(const nlohmann::json& j, const std::vector<std::string>& keys, const std::string& where) {
  for (const auto& k : keys) {
    CAPTURE(where);
    CAPTURE(k);
    CHECK(j.contains(k));
  }
}

const std::string quickstart = RIG_SOURCE_DIR "/scenarios/quickstart.toml";

}  // namespace

TEST_CASE("quickstart with short phases: every report key, and the nagle phase magnified") {
  temp_dir tmp;
  const auto f = run_rig(run_args(quickstart, tmp.path, {{"baseline", "1s"}, {"nagle", "2s"}, {"recovery", "1s"}}),
                         tmp.path);
  INFO("stderr: " << f.err);
  REQUIRE(f.code == 0);
  const std::string path = report_path(f.out);
  REQUIRE(!path.empty());
  const auto r = nlohmann::json::parse(slurp(path));

  require_keys(r, {"rig_version", "status", "scenario", "host", "phases", "magnification", "events", "expectations"},
               "report");
  CHECK(r["status"] == "ok");
  require_keys(r["scenario"], {"name", "file"}, "scenario");
  require_keys(r["host"], {"kernel", "cpus", "cgroup"}, "host");
  REQUIRE(r["phases"].size() == 3);
  for (const auto& p : r["phases"]) {
    require_keys(p, {"name", "start_s", "end_s", "injections", "workloads", "resources"}, "phase");
    const auto& w = p["workloads"]["rr"];
    require_keys(w, {"ops", "errors", "throughput_ops_s", "latency_us", "service_us", "send_lag_us"}, "workload");
    for (const char* h : {"latency_us", "service_us", "send_lag_us"})
      require_keys(w[h], {"min", "mean", "p50", "p90", "p99", "p999", "max"}, h);
    require_keys(p["resources"]["target"], {"cpu_pct", "rss_max_bytes", "threads_min", "threads_max", "ctx_switches"},
                 "resources.target");
    CHECK(p["resources"]["target"]["live_workers_min"] == 4);
    CHECK(w["ops"].get<uint64_t>() > 0);
  }
  const auto& inj = r["phases"][1]["injections"];
  REQUIRE(inj.size() == 1);
  require_keys(inj[0], {"name", "kind", "mechanism", "params", "verified", "verification", "measured"}, "injection");
  CHECK(inj[0]["verified"] == true);
  CHECK(inj[0]["measured"]["sockets_matching"] == 4);
  CHECK(r["phases"][0]["injections"].empty());

  bool found = false;
  for (const auto& m : r["magnification"]) {
    require_keys(m, {"phase", "baseline", "workload", "p50_x", "p99_x", "throughput_x"}, "magnification");
    if (m["phase"] == "nagle") {
      found = true;
      MESSAGE("nagle p50 magnification: " << m["p50_x"].get<double>() << "x");
      CHECK(m["p50_x"].get<double>() >= 10);
    }
  }
  CHECK(found);
  // Reverted: the stall is gone from recovery. A stalled request waits for the client's delayed
  // ACK, 40 ms at least (TCP_DELACK_MIN): a p50 under half of that has no stall. (Against the
  // baseline's p50, < 3x, this could fail when a test beside it loaded the CPUs in recovery only:
  // a closed loop's p50 follows the CPU it gets.)
  const double nagle_p50 = r["phases"][1]["workloads"]["rr"]["latency_us"]["p50"].get<double>();
  const double recovery_p50 = r["phases"][2]["workloads"]["rr"]["latency_us"]["p50"].get<double>();
  CHECK(nagle_p50 > 20'000);
  CHECK(recovery_p50 < 20'000);
  for (const auto& e : r["expectations"]) {
    require_keys(e, {"expr", "ok", "actual"}, "expectation");
    CHECK(e["ok"] == true);
  }

  const std::string dir = fs::path(path).parent_path();
  const std::string csv = slurp(dir + "/timeseries.csv");
  CHECK(csv.rfind("t_s,phase,rr.ops,rr.p50_us,rr.p99_us,rr.p999_us,rr.errors,target.cpu_pct", 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') >= 4);
  CHECK(csv.find(",nagle,") != std::string::npos);
  // Every second is named by its phase, the run's last (partial) second too.
  {
    std::istringstream rows(csv);
    std::string line;
    std::getline(rows, line);
    int n = 0;
    while (std::getline(rows, line)) {
      ++n;
      const auto a = line.find(','), b = line.find(',', a + 1);
      CHECK_MESSAGE(b > a + 1, "row ", n, " has no phase: ", line);
    }
    CHECK(n >= 4);
  }
  // The terminal table has a row per phase with the magnification beside it.
  bool table_row = false;
  for (const auto& l : f.out) table_row = table_row || (l.rfind("nagle ", 0) == 0 && l.find("×") != std::string::npos);
  CHECK(table_row);
}

TEST_CASE("as the run goes, timeseries rows and finished phases go to disk, and the report has them all") {
  temp_dir tmp;
  std::vector<std::string> argv = {RIG_BINARY};
  for (const auto& a : run_args(quickstart, tmp.path, {{"baseline", "2s"}, {"nagle", "9s"}, {"recovery", "1s"}}))
    argv.push_back(a);
  auto rig = child_process::spawn({.argv = argv, .stderr_path = tmp.path + "/stderr.txt"});
  auto run_dir = [&]() -> std::string {
    for (const auto& d : fs::directory_iterator(tmp.path))
      if (d.is_directory() && fs::exists(d.path() / "timeseries.csv")) return d.path();
    return {};
  };
  auto csv_path = [&] { return run_dir() + "/timeseries.csv"; };
  auto lines_of = [](const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
  };
  // Poll while the run goes: rows of its first seconds come a few seconds after each ends.
  std::vector<std::string> early, spilled;
  while (rig.running() && (early.size() < 3 || spilled.empty())) {
    ::usleep(100'000);
    if (run_dir().empty()) continue;
    early = lines_of(slurp(csv_path()));
    if (fs::exists(run_dir() + "/phases.partial.jsonl")) spilled = lines_of(slurp(run_dir() + "/phases.partial.jsonl"));
  }
  const bool ran_on = rig.running();
  REQUIRE(rig.wait(60'000));
  INFO("stderr: " << slurp(tmp.path + "/stderr.txt"));
  REQUIRE(rig.exit_code() == 0);
  CHECK_MESSAGE(ran_on, "no timeseries row or no finished phase was written before the run ended");
  REQUIRE(early.size() >= 3);  // the header and two rows
  CHECK(early[1].rfind("0,baseline,", 0) == 0);
  // The baseline phase, once summarized, went to disk while nagle ran; at the end it is read
  // back into report.json, and the spill file goes.
  REQUIRE(spilled.size() == 1);
  const auto base = nlohmann::json::parse(spilled[0]);
  CHECK(base["name"] == "baseline");
  CHECK_FALSE(fs::exists(run_dir() + "/phases.partial.jsonl"));
  const auto r = nlohmann::json::parse(slurp(run_dir() + "/report.json"));
  REQUIRE(r["phases"].size() == 3);
  CHECK(r["phases"][0] == base);
  CHECK(r["phases"][0]["workloads"]["rr"]["ops"].get<uint64_t>() > 1000);
  CHECK(r["phases"][0]["resources"]["target"]["samples"].get<int>() >= 5);
  CHECK(r["phases"][1]["workloads"]["rr"]["ops"].get<uint64_t>() > 100);  // nagle: ~40 ms a request

  // The finished file: those same rows first, then one row per second of the run, in order.
  const auto all = lines_of(slurp(csv_path()));
  REQUIRE(all.size() >= 13);  // 12 s of phases
  CHECK(all.size() <= 15);
  for (size_t i = 0; i < early.size(); ++i) CHECK(all[i] == early[i]);
  for (size_t i = 1; i < all.size(); ++i) CHECK(all[i].rfind(std::to_string(i - 1) + ",", 0) == 0);
  CHECK(std::count_if(all.begin(), all.end(), [](const std::string& l) { return l.find(",nagle,") != std::string::npos; }) >= 8);
}

TEST_CASE("Ctrl-C in the nagle phase: report written as interrupted, target stopped") {
  temp_dir tmp;
  const auto f =
      interrupt_rig_in_phase(run_args(quickstart, tmp.path, {{"baseline", "1s"}, {"nagle", "20s"}}), tmp.path, "nagle", SIGINT);
  CHECK(f.code == 130);
  const auto r = f.report();
  CHECK(r["status"] == "interrupted");
  REQUIRE(r["phases"].size() == 2);
  CHECK(r["phases"][1]["completed"] == false);
  CHECK(r["phases"][1]["end_s"].get<double>() < r["phases"][1]["start_s"].get<double>() + 5);
  bool event = false;
  for (const auto& e : r["events"]) event = event || e["kind"] == "interrupted";
  CHECK(event);
  const pid_t target = r["target"]["pid"].get<pid_t>();
  REQUIRE(target > 0);
  CHECK(::kill(target, 0) == -1);
  CHECK(errno == ESRCH);
}

TEST_CASE("SIGTERM in the nagle phase: exit 143, the report says interrupted by SIGTERM, target stopped") {
  temp_dir tmp;
  const auto f = interrupt_rig_in_phase(run_args(quickstart, tmp.path, {{"baseline", "1s"}, {"nagle", "20s"}}),
                                        tmp.path, "nagle", SIGTERM);
  CHECK(f.code == 143);
  const auto r = f.report();
  CHECK(r["status"] == "interrupted");
  bool event = false;
  for (const auto& e : r["events"])
    event = event || (e["kind"] == "interrupted" && e["detail"].get<std::string>().find("SIGTERM") != std::string::npos);
  CHECK(event);
  CHECK(::kill(r["target"]["pid"].get<pid_t>(), 0) == -1);
}

TEST_CASE("a scenario with a typo is refused with exit 2 and its line number") {
  temp_dir tmp;
  std::string text = slurp(quickstart);
  const auto at = text.find("connections = 4");
  REQUIRE(at != std::string::npos);
  text.replace(at, 11, "conections");
  const std::string file = tmp.path + "/typo.toml";
  std::ofstream(file) << text;
  const int line = int(std::count(text.begin(), text.begin() + long(at), '\n')) + 1;
  for (const std::string verb : {"validate", "run"}) {
    std::vector<std::string> args = {verb, file};
    if (verb == "run") args.insert(args.end(), {"--out", tmp.path + "/runs"});
    const auto f = run_rig(args, tmp.path);
    CAPTURE(verb);
    CHECK(f.code == 2);
    CHECK(f.err.find(file + ":" + std::to_string(line) +
                     ":1: unknown key 'conections' in [workloads.rr]; did you mean 'connections'?") !=
          std::string::npos);
  }
  CHECK(!fs::exists(tmp.path + "/runs"));
}

TEST_CASE("CLI: validate OK, list shows option help, bad flags exit 2") {
  temp_dir tmp;
  auto ok = run_rig({"validate", quickstart}, tmp.path);
  CHECK(ok.code == 0);
  REQUIRE(!ok.out.empty());
  CHECK(ok.out[0].find(": OK (1 workload, 1 injector, 3 phases, 4 checks)") != std::string::npos);

  auto list = run_rig({"list", "workloads"}, tmp.path);
  CHECK(list.code == 0);
  bool connections = false;
  for (const auto& l : list.out) connections = connections || (l.find("connections") != std::string::npos &&
                                                               l.find("default 1") != std::string::npos);
  CHECK(connections);

  CHECK(run_rig({"run"}, tmp.path).code == 2);
  CHECK(run_rig({"frobnicate"}, tmp.path).code == 2);
  CHECK(run_rig({"list", "gizmos"}, tmp.path).code == 2);
  const auto bad_set = run_rig({"validate", quickstart, "--set", "workloads.rr.connections=lots"}, tmp.path);
  CHECK(bad_set.code == 2);
  CHECK(bad_set.err.find("--set workloads.rr.connections=lots: 'connections' in [workloads.rr] must be an integer") !=
        std::string::npos);
  const auto doctor = run_rig({"doctor"}, tmp.path);
  CHECK(doctor.code == 0);
  REQUIRE(doctor.out.size() >= 3);
  CHECK(doctor.out[0].rfind("host: ", 0) == 0);
  CHECK(doctor.out[1].find("nodelay") != std::string::npos);
  CHECK(doctor.out[1].find("librig_preload.so") != std::string::npos);
  for (const std::string sub : {"run", "validate", "list", "target", "doctor"}) {
    const auto h = run_rig({sub, "--help"}, tmp.path);
    CAPTURE(sub);
    CHECK(h.code == 0);
    CHECK(!h.out.empty());
  }
}

TEST_CASE("endpoint target: raw PING to a real redis-server, nodelay on the rig's own sockets") {
  temp_dir tmp;
  auto server = rig::testing::redis_server::start(tmp.path);
  if (!server) {
    MESSAGE("skipped: redis-server is not installed (scripts/install-deps.sh installs it)");
    return;
  }
  const int port = server->port;
  const auto f = run_rig({"run", RIG_SOURCE_DIR "/scenarios/redis-ping.toml", "--out", tmp.path, "--set",
                          "target.address=127.0.0.1:" + std::to_string(port), "--set", "phases.baseline.duration=1s",
                          "--set", "phases.rig_nagle.duration=1s"},
                         tmp.path);
  server->proc.stop();
  INFO("stderr: " << f.err);
  REQUIRE(f.code == 0);
  const auto r = nlohmann::json::parse(slurp(report_path(f.out)));
  CHECK(r["target"]["kind"] == "endpoint");
  const auto& base = r["phases"][0]["workloads"];
  MESSAGE("redis PING: " << base["ping"]["throughput_ops_s"].get<double>() << " ops/s closed loop, p50 "
                         << base["ping"]["latency_us"]["p50"].get<double>() << " us");
  CHECK(base["ping"]["ops"].get<uint64_t>() > 500);
  CHECK(base["paced"]["throughput_ops_s"].get<double>() == doctest::Approx(1000).epsilon(0.1));
  const auto& inj = r["phases"][1]["injections"][0];
  CHECK(inj["verified"] == true);
  CHECK(inj["measured"]["sockets_matching"] == 6);  // 4 + 2 connections of the rig
}

TEST_CASE("proxy-toxics.toml: every toxic in turn on the same connections, expectations hold") {
  temp_dir tmp;
  std::vector<std::string> args = {"run", RIG_SOURCE_DIR "/scenarios/proxy-toxics.toml", "--out", tmp.path};
  for (const char* p : {"baseline", "latency", "bandwidth", "slicer", "chained", "blackhole", "reset", "limit",
                        "recovery"})
    args.insert(args.end(), {"--set", std::string("phases.") + p + ".duration=1s"});
  const auto f = run_rig(args, tmp.path);
  INFO("stdout: " << f.stdout_text());
  CHECK(f.code == 0);
  const auto r = nlohmann::json::parse(slurp(report_path(f.out)));
  for (const auto& p : r["phases"])
    for (const auto& i : p["injections"]) {
      CAPTURE(i["name"].get<std::string>());
      CHECK(i["verified"] == true);
      const auto& m = i["measured"];
      // Toxicity is drawn per connection (Toxiproxy's semantics): half_latency (0.5) may spare
      // all 4 connections (1 run in 16), and then it passes no chunk.
      CHECK(m["connections_affected"].get<uint64_t>() + m["connections_spared"].get<uint64_t>() >= 4);
      CHECK((m["chunks"].get<uint64_t>() > 0) == (m["connections_affected"].get<uint64_t>() > 0));
      if (i["name"] != "half_latency") CHECK(m["connections_spared"] == 0);
    }
  const auto& lat = r["phases"][1]["injections"][0]["measured"];
  // The achieved delay is the asked one plus the proxy's own wake-up lateness, which a loaded
  // CI machine makes large (a mean of 2.2 ms was seen): the asked part must be 10 ms ±5%, and
  // the lateness is reported beside it rather than hidden in it.
  INFO("mean added " << lat["mean_added_delay_us"] << " us, mean lateness " << lat["mean_lateness_us"] << " us");
  CHECK(lat["mean_added_delay_us"].get<double>() >= 9500);
  CHECK(lat["mean_added_delay_us"].get<double>() - lat["mean_lateness_us"].get<double>() ==
        doctest::Approx(10000).epsilon(0.05));
  CHECK(r["target"]["proxy_hop"] == "loopback TCP (a reset_peer toxic needs TCP)");
}

TEST_CASE("proxy over socket pairs in rig run: latency added, and nodelay where=workload reaches the proxy's sockets") {
  temp_dir tmp;
  std::ofstream(tmp.path + "/s.toml") << R"(name = "pair-hop"
[target]
kind = "builtin"
[workloads.rr]
kind = "tcp"
connections = 4
threads = 2
rate = "400/s"
[injectors.slow]
kind = "proxy"
toxic = "latency"
latency = "5ms"
[injectors.nagle]
kind = "nodelay"
where = "workload"
[[phases]]
name = "baseline"
duration = "1s"
[[phases]]
name = "slow"
duration = "1s"
inject = ["slow", "nagle"]
)";
  const auto f = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path}, tmp.path);
  INFO("stdout: " << f.stdout_text() << f.err);
  REQUIRE(f.code == 0);
  const auto r = f.report();
  CHECK(r["target"]["proxy_hop"] == "unix socket pairs from workload rr's first thread, loopback TCP from any other");
  const auto& p0 = r["phases"][0]["workloads"]["rr"];
  const auto& p1 = r["phases"][1];
  for (const auto& [kind, n] : p0["errors"].items()) CHECK_MESSAGE(n == 0, kind);
  const double with_ms = p1["workloads"]["rr"]["latency_us"]["p50"].get<double>() / 1e3;
  const double added_ms = with_ms - p0["latency_us"]["p50"].get<double>() / 1e3;
  MESSAGE("latency toxic 5 ms through socket pairs: p50 +" << added_ms << " ms");
  // Every reply of the phase is held 5 ms: its p50 is at least that.
  CHECK(with_ms >= 5);
  // The rest is the hops' cost in one phase against the other: ~0.1 ms idle, stretched by a
  // sanitizer (ASan: 1.1 ms at 1 ms in tests/injectors/proxy_test.cpp) and by load beside the
  // test. So within 5 ms +/- 0.5 ms, or +/- 2 ms in a sanitized build.
  CHECK(std::abs(added_ms - 5) <= (rig::testing::sanitized() ? 2.0 : 0.5));
  const auto& nagle = p1["injections"][1];
  CHECK(nagle["verified"] == true);
  CHECK(nagle["measured"]["proxy"]["sockets"] == 4);      // every connection's socket to the target
  CHECK(nagle["measured"]["workload rr"]["sockets"] == 2);  // the second thread's TCP connections to the proxy
}

TEST_CASE("rig proxy runs the toxic proxy alone in front of rig target") {
  temp_dir tmp;
  auto tgt = child_process::spawn({.argv = {RIG_BINARY, "target"}, .capture_stdout = true,
                                   .stderr_path = tmp.path + "/target.txt"});
  auto line = tgt.read_line(10'000);
  REQUIRE(line);
  const std::string upstream = line->substr(std::string("listening ").size());
  auto px = child_process::spawn({.argv = {RIG_BINARY, "proxy", "--upstream", upstream, "--toxic",
                                           "latency:latency=20ms,stream=downstream"},
                                  .capture_stdout = true, .stderr_path = tmp.path + "/proxy.txt"});
  auto pline = px.read_line(10'000);
  REQUIRE(pline);
  REQUIRE(pline->rfind("listening 127.0.0.1:", 0) == 0);
  const int port = std::atoi(pline->c_str() + pline->rfind(':') + 1);
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  // Five requests in turn: each is held 20 ms (never less), and the fastest shows the toxic acted
  // once, not twice (< 40 ms); one request alone could meet a stall of a loaded machine.
  double fastest = 1e9, slowest = 0;
  uint32_t reply[4] = {};
  for (uint32_t seq = 1; seq <= 5; ++seq) {
    uint32_t req[4] = {0x51474952, 16, 16, seq};  // the built-in protocol's header: magic, sizes, seq
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE(::send(s, req, sizeof req, 0) == 16);
    REQUIRE(::recv(s, reply, sizeof reply, MSG_WAITALL) == 16);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    fastest = std::min(fastest, ms);
    slowest = std::max(slowest, ms);
    CHECK(reply[0] == 0x52474952);
  }
  ::close(s);
  MESSAGE("5 requests through rig proxy with a 20 ms latency toxic: " << fastest << " to " << slowest << " ms");
  CHECK(fastest >= 20);
  CHECK(fastest < 40);
  ::kill(px.pid(), SIGINT);
  REQUIRE(px.wait(5000));
  CHECK(px.exit_code() == 0);
  CHECK(slurp(tmp.path + "/proxy.txt").find("1 connections affected") != std::string::npos);
  tgt.stop();

  const auto bad = run_rig({"proxy", "--upstream", upstream, "--toxic", "latency:latncy=1ms"}, tmp.path);
  CHECK(bad.code == 2);
  CHECK(bad.err.find("--toxic latency:latncy=1ms: unknown key 'latncy' in the toxic; did you mean 'latency'?") !=
        std::string::npos);
  CHECK(run_rig({"proxy", "--upstream", "10.0.0.1:80"}, tmp.path).code == 2);
}

TEST_CASE("rig target runs the built-in target alone and stops on SIGTERM") {
  temp_dir tmp;
  auto c = child_process::spawn({.argv = {RIG_BINARY, "target", "--port", "0", "--set", "workers=2"},
                                 .capture_stdout = true, .stderr_path = tmp.path + "/stderr.txt"});
  auto line = c.read_line(10'000);
  REQUIRE(line);
  CHECK(line->rfind("listening 127.0.0.1:", 0) == 0);
  ::kill(c.pid(), SIGTERM);
  REQUIRE(c.wait(5000));
  CHECK(c.exit_code() == 0);
  CHECK(slurp(tmp.path + "/stderr.txt").find("stopped by") != std::string::npos);

  auto bad = run_rig({"target", "--set", "workerz=2"}, tmp.path);
  CHECK(bad.code == 2);
  CHECK(bad.err.find("unknown key 'workerz'") != std::string::npos);
  CHECK(bad.err.find("did you mean 'workers'") != std::string::npos);
}


TEST_CASE("progress: plain lines with phase i/n, elapsed and the last second when not a terminal, none with --quiet") {
  temp_dir tmp;
  const auto loud = run_rig(run_args(RIG_SOURCE_DIR "/scenarios/quickstart.toml", tmp.path,
                                     {{"baseline", "2s"}, {"nagle", "2s"}, {"recovery", "1s"}}),
                            tmp.path);
  REQUIRE(loud.code == 0);
  auto args = run_args(RIG_SOURCE_DIR "/scenarios/quickstart.toml", tmp.path,
                       {{"baseline", "2s"}, {"nagle", "2s"}, {"recovery", "1s"}});
  args.push_back("--progress");
  args.push_back("1");
  const auto each_second = run_rig(args, tmp.path);
  REQUIRE(each_second.code == 0);
  const std::string text = each_second.stdout_text();
  INFO(text);
  CHECK(text.find("  [1/3] baseline 1/2s (run 1/5s)") != std::string::npos);
  // Each workload's figures are its last whole second, summarized once its threads handed it in.
  CHECK(text.find("  [1/3] baseline 2/2s (run 2/5s)  rr: ") != std::string::npos);
  CHECK(text.find("  [2/3] nagle 1/2s (run 3/5s)  rr: ") != std::string::npos);
  CHECK(text.find("ops/s p99 ") != std::string::npos);
  CHECK(text.find(" errors 0") != std::string::npos);
  CHECK(text.find("\r") == std::string::npos);  // no terminal control when stdout is a pipe
  CHECK(loud.stdout_text().find("[1/3]") == std::string::npos);  // 5 s apart by default: none in 2 s phases

  args.push_back("--quiet");
  args.push_back("--set");
  args.push_back("expect.checks=[\"baseline.rr.errors > 0\", \"nagle.rr.errors == 0\"]");
  const auto quiet = run_rig(args, tmp.path);
  CHECK(quiet.code == 1);
  const std::string q = quiet.stdout_text();
  INFO(q);
  CHECK(q.find("▶") == std::string::npos);
  CHECK(q.find("[1/3]") == std::string::npos);
  CHECK(q.find("phase ") == std::string::npos);  // no table
  CHECK(q.find("FAIL baseline.rr.errors > 0  (actual 0)") != std::string::npos);
  CHECK(q.find("nagle.rr.errors == 0") == std::string::npos);  // passing checks are not listed
  CHECK(q.find("status: checks_failed   report: ") != std::string::npos);  // as the exit code says
}

TEST_CASE("--allow-remote: beyond loopback only when asked (checked without sending anything there)") {
  temp_dir tmp;
  // 192.0.2.1 is TEST-NET-1 (RFC 5737): documentation only, never routed. Nothing here connects to it.
  std::ofstream(tmp.path + "/remote.toml") << R"(name = "remote"
[target]
kind = "endpoint"
address = "192.0.2.1:6379"
[workloads.rr]
kind = "tcp"
request = "PING\r\n"
response_until = "\r\n"
[[phases]]
name = "p"
duration = "1s"
)";
  const auto refused = run_rig({"validate", tmp.path + "/remote.toml"}, tmp.path);
  CHECK(refused.code == 2);
  CHECK(refused.err.find("remote.toml:4:1: 'address' in [target] is 192.0.2.1: rig only sends traffic to loopback "
                         "addresses unless run with --allow-remote") != std::string::npos);
  const auto allowed = run_rig({"validate", tmp.path + "/remote.toml", "--allow-remote"}, tmp.path);
  CHECK(allowed.code == 0);
  CHECK(allowed.stdout_text().find("OK") != std::string::npos);

  const auto proxy_refused = run_rig({"proxy", "--upstream", "192.0.2.1:80"}, tmp.path);
  CHECK(proxy_refused.code == 2);
  CHECK(proxy_refused.err.find("is not a loopback address") != std::string::npos);
  CHECK(proxy_refused.err.find("--allow-remote") != std::string::npos);
  // Allowed, it listens on loopback; no client comes, so it never connects upstream.
  auto px = child_process::spawn({.argv = {RIG_BINARY, "proxy", "--upstream", "192.0.2.1:80", "--allow-remote"},
                                  .capture_stdout = true, .stderr_path = tmp.path + "/proxy.txt"});
  const auto line = px.read_line(10'000);
  REQUIRE(line);
  CHECK(line->rfind("listening 127.0.0.1:", 0) == 0);
  ::kill(px.pid(), SIGTERM);
  CHECK(px.wait(5000));
}

TEST_CASE("without root: rig names the injectors that need it, and require_all = false runs the rest") {
  const std::string setpriv = rig::testing::which("setpriv");
  if (setpriv.empty()) {
    MESSAGE("skipped: no setpriv to drop root with");
    return;
  }
  {
    // nobody must reach the binary: a build under a directory others cannot search cannot run.
    auto probe = child_process::spawn({.argv = {setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                                                "/usr/bin/test", "-x", RIG_BINARY}});
    if (!probe.wait(10'000) || probe.exit_code() != 0) {
      MESSAGE("skipped: user nobody cannot execute " << RIG_BINARY
                                                     << " (a directory above it is not searchable by other users)");
      return;
    }
  }
  temp_dir tmp;
  ::chmod(tmp.path.c_str(), 0777);
  const std::string text = R"(name = "partial"
require_all = REQUIRE_ALL
[target]
kind = "builtin"
[workloads.rr]
kind = "tcp"
connections = 2
rate = "200/s"
[injectors.slow]
kind = "cpu"
scale = "50%"
[injectors.nagle]
kind = "nodelay"
[[phases]]
name = "baseline"
duration = "1s"
[[phases]]
name = "both"
duration = "1s"
inject = ["slow", "nagle"]
)";
  // setpriv drops root for rig itself, through a wrapper the test runs in its place.
  const std::string wrapper = tmp.path + "/rig-as-nobody";
  std::ofstream(wrapper) << "#!/bin/sh\nexec " << setpriv << " --reuid=65534 --regid=65534 --clear-groups "
                         << RIG_BINARY << " \"$@\"\n";
  ::chmod(wrapper.c_str(), 0755);
  auto run_as_nobody = [&](const std::string& require_all) {
    std::string s = text;
    s.replace(s.find("REQUIRE_ALL"), 11, require_all);
    std::ofstream(tmp.path + "/s.toml") << s;
    ::chmod((tmp.path + "/s.toml").c_str(), 0644);
    return rig::testing::run_program({wrapper, "run", tmp.path + "/s.toml", "--out", tmp.path}, tmp.path, 60'000,
                                     {"RIG_STATE_DIR=" + tmp.path + "/state"});
  };

  const auto refused = run_as_nobody("true");
  INFO(refused.stdout_text() << refused.err);
  CHECK(refused.code == 3);
  CHECK(refused.err.find("injector 'slow' cannot run on this host: making cgroups needs root") != std::string::npos);
  CHECK(refused.err.find("require_all = false") != std::string::npos);
  CHECK(refused.err.find("'nagle'") == std::string::npos);  // it needs no root
  CHECK(report_path(refused.out).empty());  // nothing ran

  const auto partial = run_as_nobody("false");
  INFO(partial.stdout_text() << partial.err);
  REQUIRE(partial.code == 0);
  const auto r = partial.report();
  REQUIRE(r.is_object());
  REQUIRE(r["phases"].size() == 2);
  REQUIRE(r["skipped_injectors"].size() == 1);
  CHECK(r["skipped_injectors"][0]["name"] == "slow");
  CHECK(r["skipped_injectors"][0]["kind"] == "cpu");
  CHECK(r["skipped_injectors"][0]["reason"].get<std::string>().find("needs root") != std::string::npos);
  const auto& both = r["phases"][1];
  REQUIRE(both["injections"].size() == 1);  // nagle ran, verified
  CHECK(both["injections"][0]["name"] == "nagle");
  CHECK(both["injections"][0]["verified"] == true);
  bool event = false;
  for (const auto& e : r["events"]) event = event || e["kind"] == "injector_skipped";
  CHECK(event);
  CHECK_FALSE(std::filesystem::exists(tmp.path + "/state"));
}

TEST_CASE("an injection not verified in the target fails the run (exit 1, status unverified) unless its injector may go unverified") {
  temp_dir tmp;
  // The server starts without the shim's control variable: LD_PRELOAD reaches it, the shim
  // cannot answer, and TCP_NODELAY is never forced off in the process that serves.
  const std::string scenario = std::string(R"(name = "unverified"
[target]
kind = "command"
run = ["/bin/sh", "-c", "exec env -u RIG_SHIM_FD )") + RIG_BINARY + R"( target --bind {host} --port {port} --set reply_writes=2"]
[workloads.rr]
kind = "tcp"
connections = 1
rate = "50/s"
timeout = "1s"
[injectors.no_nodelay]
kind = "nodelay"
where = "target"
%s
[[phases]]
name = "baseline"
duration = "1s"
[[phases]]
name = "nagle"
duration = "1s"
inject = ["no_nodelay"]
)";
  auto write = [&](const std::string& extra) {
    std::string s = scenario;
    s.replace(s.find("%s"), 2, extra);
    std::ofstream(tmp.path + "/s.toml") << s;
  };
  write("");
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path, "--quiet"}, tmp.path);
  INFO(run.stdout_text() << run.err);
  CHECK(run.code == 1);
  CHECK(run.stdout_text().find("✗ no_nodelay") != std::string::npos);
  CHECK(run.stdout_text().find("UNVERIFIED not verified in the target: no_nodelay in phase nagle") != std::string::npos);
  CHECK(run.stdout_text().find("status: unverified") != std::string::npos);
  const auto r = run.report();
  CHECK(r["status"] == "unverified");
  CHECK(r["phases"][1]["injections"][0]["verified"] == false);
  // The process that serves is named: the one the shim never answered in.
  CHECK(r["phases"][1]["injections"][0]["verification"].get<std::string>().find(
            fmt::format("not in the process serving the port: rig (pid {})", r["target"]["pid"].get<int>())) !=
        std::string::npos);

  write("may_be_unverified = true");
  const auto accepted = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path, "--quiet"}, tmp.path);
  INFO(accepted.stdout_text() << accepted.err);
  CHECK(accepted.code == 0);
  CHECK(accepted.report()["status"] == "ok");

  write("may_be_unverified = \"yes\"");
  const auto bad = run_rig({"validate", tmp.path + "/s.toml"}, tmp.path);
  CHECK(bad.code == 2);
  CHECK(bad.err.find("'may_be_unverified' in [injectors.no_nodelay] must be true or false") != std::string::npos);
}

// The shim reaches the process that serves, whatever started it: the wrapper execs the server
// (env, taskset, nice, numactl, sh -c exec, a script) or forks it (sh -c without exec). TCP_NODELAY
// off must read back in the server's own sockets and show as Nagle's stall in its replies.
namespace {

void check_shim_reaches_server(const std::vector<std::string>& run, bool wrapper_forks) {
  temp_dir tmp;
  std::string argv;
  for (const auto& a : run) argv += (argv.empty() ? "" : ", ") + nlohmann::json(a).dump();
  std::ofstream(tmp.path + "/s.toml") << "name = \"wrapped\"\n[target]\nkind = \"command\"\nrun = [" << argv << R"(]
[workloads.rr]
kind = "tcp"
connections = 1
rate = "50/s"
timeout = "1s"
[injectors.no_nodelay]
kind = "nodelay"
where = "target"
[[phases]]
name = "baseline"
duration = "600ms"
[[phases]]
name = "nagle"
duration = "600ms"
inject = ["no_nodelay"]
)";
  const auto run_ = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path, "--quiet"}, tmp.path);
  INFO(argv);
  INFO(run_.stdout_text() << run_.err);
  REQUIRE(run_.code == 0);
  const auto r = run_.report();
  CHECK(r["status"] == "ok");
  const auto& inj = r["phases"][1]["injections"][0];
  CHECK(inj["verified"] == true);
  CHECK(inj["measured"]["target"]["serving_processes"] == 1);
  CHECK(inj["measured"]["target"]["serving_sockets"].get<int>() >= 1);
  // The server's process, by its listening socket: the wrapper's own pid when it execs, its child when it forks.
  REQUIRE(r["target"].contains("serving"));
  CHECK(r["target"]["serving"]["process"].get<std::string>().find("rig (pid ") == 0);
  if (wrapper_forks)
    CHECK(r["target"]["serving"]["pid"] != r["target"]["pid"]);
  else
    CHECK(r["target"]["serving"]["pid"] == r["target"]["pid"]);
  // The effect, measured in the replies: the second write of each waits for the client's delayed ACK.
  const double base_p50 = r["phases"][0]["workloads"]["rr"]["latency_us"]["p50"].get<double>();
  const double nagle_p50 = r["phases"][1]["workloads"]["rr"]["latency_us"]["p50"].get<double>();
  CHECK(base_p50 < 5'000);
  CHECK(nagle_p50 > 20'000);
}

const char* kTarget = "{rig} target --bind {host} --port {port} --set reply_writes=2";

}  // namespace

TEST_CASE("the shim reaches the server behind a wrapper that execs it: env, taskset, nice, numactl") {
  const std::vector<std::string> server = {"{rig}", "target", "--bind", "{host}", "--port", "{port}", "--set", "reply_writes=2"};
  auto with = [&](std::vector<std::string> wrapper) {
    wrapper.insert(wrapper.end(), server.begin(), server.end());
    return wrapper;
  };
  check_shim_reaches_server(with({"env", "RIG_WRAPPED=1"}), false);
  check_shim_reaches_server(with({"taskset", "-c", "0"}), false);
  check_shim_reaches_server(with({"nice", "-n", "1"}), false);
  if (find_in_path("numactl").empty())
    MESSAGE("numactl not installed: its form not checked (scripts/install-deps.sh installs it)");
  else
    check_shim_reaches_server(with({"numactl", "--localalloc"}), false);
}

TEST_CASE("the shim reaches the server behind a shell: sh -c exec, a script that execs, and sh -c that forks") {
  temp_dir tmp;
  const std::string script = tmp.path + "/start-server.sh";
  std::ofstream(script) << "#!/bin/sh\n# what a packaged service's start script does\nulimit -n 4096\nexec \"$@\"\n";
  ::chmod(script.c_str(), 0755);
  check_shim_reaches_server({"sh", "-c", std::string("exec ") + kTarget}, false);
  check_shim_reaches_server({script, "{rig}", "target", "--bind", "{host}", "--port", "{port}", "--set", "reply_writes=2"},
                            false);
  check_shim_reaches_server({"sh", "-c", std::string(kTarget) + "; echo server exited"}, true);
}

TEST_CASE("a target of several processes (nginx: a master and 2 workers) is measured whole, its master beside") {
  const std::string bin = rig::testing::which("nginx");
  if (bin.empty()) {
    MESSAGE("skipped: nginx is not installed (scripts/install-deps.sh installs nginx-light)");
    return;
  }
  temp_dir tmp;
  const uint16_t port = rig::testing::free_port();
  const auto files = rig::testing::nginx_files::write(tmp.path, port, 2);
  std::ofstream(tmp.path + "/s.toml") << fmt::format(R"(name = "nginx-workers"
{}[workloads.web]
kind = "http"
connections = 8
path = "/hello"
[[phases]]
name = "load"
duration = "1500ms"
)",
                                                    files.target_toml(bin, port));
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path, "--quiet"}, tmp.path);
  INFO(run.stdout_text() << run.err);
  REQUIRE(run.code == 0);
  const auto r = run.report();
  const auto& t = r["phases"][0]["resources"]["target"];
  INFO(t.dump());
  CHECK(t["processes_max"] == 3);
  // The workers serve: the sum carries their CPU (before, the master's own ~0% was the figure).
  CHECK(t["cpu_pct"].get<double>() > 20);
  REQUIRE(t.contains("main_process"));
  CHECK(t["main_process"]["cpu_pct"].get<double>() < 5);
  CHECK(t["rss_max_bytes"].get<double>() > t["main_process"]["rss_max_bytes"].get<double>());
  CHECK(t["threads_max"].get<int>() >= 3);
  CHECK(r["phases"][0]["workloads"]["web"]["throughput_ops_s"].get<double>() > 1000);
}

TEST_CASE("connections beyond rig's descriptor limit are refused before the run, within it rig raises its own and the target keeps the one given") {
  temp_dir tmp;
  const auto scenario = [&](int connections) {
    return fmt::format(R"(name = "fds"
[target]
kind = "command"
run = ["sh", "-c", "ulimit -Sn > {}/nofile.txt; exec {{rig}} target --port {{port}}"]
[workloads.rr]
kind = "tcp"
connections = {}
rate = "500/s"
timeout = "5s"
[[phases]]
name = "load"
duration = "2s"
)",
                       tmp.path, connections);
  };
  const auto under = [&](const std::string& nofile, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/prlimit", "--nofile=" + nofile, RIG_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return rig::testing::run_program(argv, tmp.path, 60'000);
  };
  if (::access("/usr/bin/prlimit", X_OK) != 0) {
    MESSAGE("skipped: no /usr/bin/prlimit to start rig under a given descriptor limit");
    return;
  }
  // 5,000 connections where rig may have 3,000: refused by validate and by run, nothing run.
  std::ofstream(tmp.path + "/many.toml") << scenario(5000);
  for (const std::string verb : {"validate", "run"}) {
    std::vector<std::string> args = {verb, tmp.path + "/many.toml"};
    if (verb == "run") args.insert(args.end(), {"--out", tmp.path});
    const auto r = under("1024:3000", args);
    INFO(verb << ": " << r.stdout_text() << r.err);
    CHECK(r.code == 2);
    CHECK(r.err.find("many.toml:7") != std::string::npos);  // the line of 'connections'
    CHECK(r.err.find("5,000 connections in all need 5,256 of rig's file descriptors") != std::string::npos);
    CHECK(r.err.find("lets rig have 3,000") != std::string::npos);
    CHECK(r.err.find("use at most 2,744 connections") != std::string::npos);
    CHECK(report_path(r.out).empty());
  }
  // 1,500 where rig was given 512 but may raise to 4,000: every connection works, and the
  // target's shell still sees the 512 it was given (the built-in target raises its own).
  std::ofstream(tmp.path + "/ok.toml") << scenario(1500);
  const auto run = under("512:4000", {"run", tmp.path + "/ok.toml", "--out", tmp.path});
  INFO(run.stdout_text() << run.err);
  REQUIRE(run.code == 0);
  const auto r = run.report();
  const auto& w = r["phases"][0]["workloads"]["rr"];
  CHECK(w["ops"].get<int64_t>() > 500);
  int64_t errors = 0;
  for (const auto& [kind, n] : w["errors"].items()) errors += n.get<int64_t>();
  CHECK(errors == 0);  // given 512 and not raised, connections past ~500 fail with EMFILE
  CHECK(slurp(tmp.path + "/nofile.txt") == "512\n");
}

TEST_CASE("the target's disk writes are its own (/proc/PID/io, its process tree): a baseline that writes never reads 0 B/s") {
  temp_dir tmp;
  // A writer in the target's tree (a child of the shell that execs the server), 4 KiB a write,
  // each durable; the disk injector gives the target's cgroup an io controller, its cap far above.
  std::ofstream(tmp.path + "/s.toml") << fmt::format(R"(name = "writes"
[target]
kind = "command"
run = ["sh", "-c", "dd if=/dev/zero of={}/w bs=4k count=1000000 oflag=dsync 2>/dev/null & exec {{rig}} target --port {{port}}"]
[workloads.rr]
kind = "tcp"
connections = 1
rate = "100/s"
[injectors.disk]
kind = "disk"
write_iops = "100000/s"
[[phases]]
name = "baseline"
duration = "2s"
[[phases]]
name = "capped"
duration = "2s"
inject = ["disk"]
)",
                                                     tmp.path);
  for (int i = 0; i < 3; ++i) {
    const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path}, tmp.path);
    INFO(run.stdout_text() << run.err);
    if (run.code == 3) {
      MESSAGE("skipped: ", run.err);
      return;
    }
    REQUIRE(run.code == 0);
    const auto r = run.report();
    for (const auto& p : r["phases"]) {
      const auto& t = p["resources"]["target"];
      CHECK(t["processes_max"].get<int>() >= 2);  // the server and the writer
      CHECK(t["disk_write_bytes_per_s"].get<double>() > 20 * 1024);
    }
    // The terminal's disk column for the baseline is the target's own figure, not 0 B/s.
    bool row = false;
    for (const auto& l : run.out)
      if (l.rfind("baseline ", 0) == 0 && l.find("/ none") != std::string::npos) {
        row = true;
        CHECK_MESSAGE(l.find(" 0 B/s") == std::string::npos, l);
      }
    CHECK(row);
    std::filesystem::remove(tmp.path + "/w");
  }
}

TEST_CASE("rig run with a fixed port another process holds: exit 3 before anything is made, the holder named") {
  temp_dir tmp;
  rig::testing::silent_listener squatter;
  std::ofstream(tmp.path + "/s.toml") << fmt::format(R"(name = "held"
[target]
kind = "command"
port = {}
run = ["{{rig}}", "target", "--bind", "{{host}}", "--port", "{{port}}"]
[workloads.rr]
kind = "tcp"
[[phases]]
name = "baseline"
duration = "1s"
)",
                                                     squatter.port);
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path + "/runs"}, tmp.path);
  INFO(run.stdout_text() << run.err);
  CHECK(run.code == 3);  // the host's state: not rig's failure (4), not the target's result (1)
  CHECK(run.err.find(fmt::format("the target cannot start on this host: 127.0.0.1:{} is already listened on by ",
                                 squatter.port)) != std::string::npos);
  CHECK(run.err.find(fmt::format("(pid {})", ::getpid())) != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(tmp.path + "/runs"));  // no run directory, no report
}

TEST_CASE("rig run --junit: a testsuite per run, a testcase for the run and one per check, failures with actual values") {
  temp_dir tmp;
  const std::vector<std::pair<std::string, std::string>> short_phases = {{"baseline", "1s"}, {"nagle", "1s"}, {"recovery", "1s"}};
  auto count = [](const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  // Passing: the run and its 4 checks, none failed.
  auto args = run_args(quickstart, tmp.path + "/a", short_phases);
  args.insert(args.end(), {"--quiet", "--junit", tmp.path + "/ok.xml"});
  const auto ok = run_rig(args, tmp.path);
  INFO(ok.stdout_text() << ok.err);
  REQUIRE(ok.code == 0);
  const std::string x = slurp(tmp.path + "/ok.xml");
  INFO(x);
  CHECK(x.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"rig\" tests=\"5\" failures=\"0\" errors=\"0\">", 0) == 0);
  CHECK(x.find("<testsuite name=\"quickstart\" tests=\"5\" failures=\"0\"") != std::string::npos);
  CHECK(x.find("<testcase classname=\"rig.quickstart\" name=\"run\"") != std::string::npos);
  CHECK(x.find("name=\"check: magnification.nagle.rr.p50_x &gt;= 10\"") != std::string::npos);
  CHECK(count(x, "<testcase ") == 5);
  CHECK(count(x, "<failure") == 0);

  // The fix applied: the check that Nagle stalls replies fails, with what was expected and measured.
  args = run_args(quickstart, tmp.path + "/b", short_phases);
  args.insert(args.end(), {"--quiet", "--set", "target.reply_writes=1", "--junit", tmp.path + "/fail.xml"});
  const auto failed = run_rig(args, tmp.path);
  REQUIRE(failed.code == 1);
  const std::string f = slurp(tmp.path + "/fail.xml");
  INFO(f);
  CHECK(f.find("failures=\"0\"") == std::string::npos);
  CHECK(f.find("<failure type=\"check_failed\" message=\"expected magnification.nagle.rr.p50_x &gt;= 10, actual ") !=
        std::string::npos);
  CHECK(f.find("<testcase classname=\"rig.quickstart\" name=\"run\" time=") != std::string::npos);
  CHECK(count(f, "<testcase ") == 5);

  // A scenario rig refuses: one testcase, an error naming the mistake; the exit code stays 2.
  std::ofstream(tmp.path + "/bad.toml") << "name = \"bad\"\n";
  const auto bad = run_rig({"run", tmp.path + "/bad.toml", "--junit", tmp.path + "/bad.xml"}, tmp.path);
  CHECK(bad.code == 2);
  const std::string b = slurp(tmp.path + "/bad.xml");
  INFO(b);
  CHECK(b.find("errors=\"1\"") != std::string::npos);
  CHECK(b.find("<error type=\"error\" message=\"exit 2: ") != std::string::npos);
  CHECK(b.find("missing [target]") != std::string::npos);

  // A file it cannot write: refused before anything runs.
  const auto nowhere = run_rig({"run", quickstart, "--junit", tmp.path + "/no/such/dir/r.xml"}, tmp.path);
  CHECK(nowhere.code == 2);
  CHECK(nowhere.err.find("cannot write --junit " + tmp.path + "/no/such/dir/r.xml") != std::string::npos);
}

// setpriv (like su, runuser, gosu) changes its credentials before it execs the server: setresuid
// with PR_SET_KEEPCAPS, capset on its own thread, then setresgid. A thread of the shim's there
// would fail that setresgid and glibc would abort the program: the shim starts its thread only
// with the process's first TCP socket.
TEST_CASE("a target started through setpriv runs under a shim injector, and the injection reaches it") {
  const std::string setpriv = rig::testing::which("setpriv"), python = rig::testing::which("python3");
  if (setpriv.empty() || python.empty() || ::geteuid() != 0) {
    MESSAGE("skipped: needs root, setpriv and python3 (to start a server as user nobody)");
    return;
  }
  temp_dir tmp;
  std::ofstream(tmp.path + "/s.toml") << fmt::format(R"(name = "setpriv"
[target]
kind = "command"
run = ["{}", "--reuid=65534", "--regid=65534", "--clear-groups", "{}", "-c", """
import http.server as h, sys
class H(h.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(s):
        s.send_response(200); s.send_header("Content-Length", "2"); s.end_headers(); s.wfile.write(b"ok")
    def log_message(s, *a): pass
h.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""", "{{port}}"]
[workloads.web]
kind = "http"
connections = 2
[injectors.nagle]
kind = "nodelay"
where = "target"
[[phases]]
name = "base"
duration = "1s"
[[phases]]
name = "nagle"
duration = "1s"
inject = ["nagle"]
)",
                                                     setpriv, python);
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path}, tmp.path);
  INFO(run.stdout_text() << run.err);
  REQUIRE(run.code == 0);  // before: the target aborted at start (SIGABRT in setpriv's setresgid)
  const auto r = run.report();
  const auto& inj = r["phases"][1]["injections"][0];
  CHECK(inj["verified"] == true);
  CHECK(inj["reverted"] == true);
  CHECK(r["phases"][1]["workloads"]["web"]["ops"].get<uint64_t>() > 0);
}
