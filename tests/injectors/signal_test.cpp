// pause, kill and noise against real processes: a plain child, and the real rig with its
// built-in target.
#include <doctest/doctest.h>
#include <signal.h>

#include <fstream>
#include <thread>

#include "../helpers.hpp"
#include "core/journal.hpp"
#include "core/cgroup.hpp"
#include "core/clock.hpp"
#include "injectors/resource_injectors.hpp"
#include "injectors/signal_injectors.hpp"

using namespace rig;
using rig::testing::bind_text;
using rig::testing::run_args;
using rig::testing::run_rig;
using rig::testing::slurp;
using rig::testing::temp_dir;

namespace {

char state_of(pid_t pid) {
  const std::string s = slurp("/proc/" + std::to_string(pid) + "/stat");
  return s[s.rfind(')') + 2];
}

std::string pause_and_kill_scenario(const std::string& checks) {
  return R"(name = "signals"
[target]
kind = "builtin"
[workloads.rr]
kind = "tcp"
connections = 2
rate = "500/s"
timeout = "1s"
[injectors.freeze]
kind = "pause"
period = "1s"
pause_for = "300ms"
[injectors.crash]
kind = "kill"
at = "500ms"
[[phases]]
name = "baseline"
duration = "1s"
[[phases]]
name = "frozen"
duration = "2s"
inject = ["freeze"]
[[phases]]
name = "crash"
duration = "3s"
inject = ["crash"]
[[phases]]
name = "never"
duration = "1s"
)" + checks;
}

}  // namespace

TEST_CASE("pause: the process is stopped at once, read back, continued on schedule, never left stopped") {
  auto child = child_process::spawn({.argv = {"/bin/sleep", "30"}});
  run_context ctx;
  ctx.target_kind = "command";
  ctx.target_started = true;
  ctx.target_pid = child.pid();
  auto inj = make_pause(bind_text(pause_options(), "period = \"200ms\"\npause_for = \"50ms\"\n"));
  REQUIRE(inj->probe(ctx).ok);
  inj->apply(ctx);
  const auto v = inj->verify(ctx);
  INFO(v.text);
  CHECK(v.ok);
  // Continued on schedule: between the first pause's end (50 ms) and the next one (200 ms) the
  // child is seen running (sleeping in nanosleep). Looked for from 60 ms to 190 ms after apply,
  // so a pauser or a reader late by a scheduler's slice on a loaded machine still finds it.
  const int64_t applied = mono_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  char between = state_of(child.pid());
  while (between != 'S' && mono_ns() - applied < 190 * ns_per_ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    between = state_of(child.pid());
  }
  CHECK(between == 'S');
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto m = inj->measure(ctx);
  CHECK(m["pauses"].get<int>() >= 3);
  CHECK(m["paused_s"].get<double>() == doctest::Approx(0.05 * m["pauses"].get<int>()).epsilon(0.5));
  const auto u = inj->revert(ctx);
  CHECK(u.ok);
  CHECK(u.text.find("read back running again") != std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(state_of(child.pid()) == 'S');  // running (sleeping in nanosleep), not stopped
  child.stop();
}

TEST_CASE("pause: as many pauses as begin within the phase, none begun as it ends") {
  auto child = child_process::spawn({.argv = {"/bin/sleep", "30"}});
  run_context ctx;
  ctx.target_kind = "command";
  ctx.target_started = true;
  ctx.target_pid = child.pid();
  ctx.phase_duration_ns = 500 * ns_per_ms;  // pauses at 0, 200 and 400 ms
  auto inj = make_pause(bind_text(pause_options(), "period = \"200ms\"\npause_for = \"50ms\"\n"));
  inj->apply(ctx);
  CHECK(inj->verify(ctx).ok);
  std::this_thread::sleep_for(std::chrono::milliseconds(900));  // past the phase: no fourth, fifth
  const auto m = inj->measure(ctx);
  CHECK(m["pauses"].get<int>() == 3);
  CHECK(m["summary"].get<std::string>().rfind("3 pauses", 0) == 0);
  inj->revert(ctx);
  CHECK(state_of(child.pid()) != 'T');
  child.stop();
}

TEST_CASE("pause and kill in a run: the pause shows as latency, the kill as the target's exit, expected by the checks") {
  temp_dir tmp;
  std::ofstream(tmp.path + "/s.toml")
      << pause_and_kill_scenario("[expect]\nchecks = [\"events.target_exit >= 1\", \"frozen.rr.latency.p99 > 200ms\"]\n");
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path}, tmp.path);
  INFO(run.stdout_text() << run.err);
  CHECK(run.code == 0);
  const auto r = run.report();
  CHECK(r["status"] == "ok");
  const auto& frozen = r["phases"][1];
  CHECK(frozen["injections"][0]["verified"] == true);
  CHECK(frozen["injections"][0]["measured"]["pauses"].get<int>() == 2);  // 2 s, one a second: not a third as it ends
  const auto& crash = r["phases"][2];
  CHECK(crash["completed"] == false);
  CHECK(crash["injections"][0]["measured"]["sent"] == true);
  CHECK(crash["injections"][0]["measured"]["sent_at_s"].get<double>() == doctest::Approx(0.5).epsilon(0.1));
  CHECK(r["phases"].size() == 3);  // "never" did not run
  bool exit_event = false;
  for (const auto& e : r["events"])
    exit_event = exit_event || (e["kind"] == "target_exit" &&
                                e["detail"].get<std::string>().find("killed by signal 9") != std::string::npos);
  CHECK(exit_event);
  const auto& death = r["target"]["death"];
  CHECK(death["cause"] == "signal");
  CHECK(death["signal"] == "SIGKILL");
  CHECK(death["phase"] == "crash");
  // Seen when the child's SIGCHLD arrives, not at the next poll: the phase loop waits up to
  // 200 ms for a signal, so a death left to the poll is seen 0-200 ms late. Woken by SIGCHLD it
  // is seen after the loop's current round of work (collecting figures, writing the timeseries):
  // a few ms, several times that under a sanitizer on a loaded machine; 50 ms, 100 ms there.
  const double sent_s = crash["start_s"].get<double>() + crash["injections"][0]["measured"]["sent_at_s"].get<double>();
  CHECK(death["t_s"].get<double>() - sent_s > -0.01);
  CHECK(death["t_s"].get<double>() - sent_s < (rig::testing::sanitized() ? 0.1 : 0.05));
  const pid_t target = r["target"]["pid"].get<pid_t>();
  CHECK(::kill(target, 0) == -1);
}

TEST_CASE("a kill no check expects: exit 1 with the death as a failed check, the report written") {
  temp_dir tmp;
  std::ofstream(tmp.path + "/s.toml") << pause_and_kill_scenario("");
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path}, tmp.path);
  CHECK(run.code == 1);
  CHECK(run.stdout_text().find("status: checks_failed") != std::string::npos);
  const auto r = run.report();
  CHECK(r["status"] == "checks_failed");
  CHECK(r["expectations"].back()["actual"].get<std::string>().find("during phase crash") != std::string::npos);
}

TEST_CASE("pause_for must be shorter than period, and kill signals are named") {
  temp_dir tmp;
  std::string text = pause_and_kill_scenario("");
  text.replace(text.find("pause_for = \"300ms\""), 19, "pause_for = \"2s\"");
  text.replace(text.find("at = \"500ms\""), 12, "at = \"500ms\"\nsignal = \"SIGKIL\"");
  std::ofstream(tmp.path + "/s.toml") << text;
  const auto run = run_rig({"validate", tmp.path + "/s.toml"}, tmp.path);
  CHECK(run.code == 2);
  CHECK(run.err.find("'pause_for' in [injectors.freeze] (2s) must be shorter than 'period' (1s)") != std::string::npos);
  CHECK(run.err.find("SIGKILL") != std::string::npos);  // did you mean
}


TEST_CASE("a target that exits by itself mid-run: cause exit with its status, errors counted, what it started stopped") {
  temp_dir tmp;
  // A wrapper shell that starts the real server, and exits with status 3 after a while,
  // leaving the server it started behind: rig stops that too (the target's process group).
  // 2.5 s: the 1 s baseline starts once the server accepts, which a sanitized server on a loaded
  // machine can take most of a second to do; the wrapper must exit after the baseline.
  std::ofstream(tmp.path + "/s.toml") << R"(name = "exits"
[target]
kind = "command"
run = ["/bin/sh", "-c", ")" RIG_BINARY R"( target --port {port} & echo $! > )" + tmp.path + R"(/server.pid; sleep 2.5; exit 3"]
ready = "tcp"
[workloads.rr]
kind = "tcp"
connections = 2
rate = "200/s"
timeout = "500ms"
[[phases]]
name = "baseline"
duration = "1s"
[[phases]]
name = "after"
duration = "5s"
)";
  const auto run = run_rig({"run", tmp.path + "/s.toml", "--out", tmp.path}, tmp.path);
  INFO(run.stdout_text() << run.err);
  CHECK(run.code == 1);  // no check expected it: a failed check
  const auto r = run.report();
  REQUIRE(r.is_object());
  CHECK(r["status"] == "checks_failed");
  const auto& death = r["target"]["death"];
  CHECK(death["cause"] == "exit");
  CHECK(death["exit_code"] == 3);
  CHECK_FALSE(death.contains("signal"));
  CHECK(death["phase"] == "after");
  REQUIRE(r["phases"].size() == 2);
  const auto& after = r["phases"][1];
  CHECK(after["completed"] == false);
  CHECK(after["end_s"].get<double>() - after["start_s"].get<double>() < 4);  // at most ~1.5 s of it: not the whole 5 s
  CHECK(after["workloads"]["rr"]["ops"].get<int64_t>() > 0);
  const pid_t server = std::stoi(slurp(tmp.path + "/server.pid"));
  CHECK(process_start_time(server) == 0);  // the server the wrapper left was stopped with the run's cgroup
}
