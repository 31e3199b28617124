// The command target on real programs: ready by port or by log line, a clear error with the
// program's last output when it never becomes ready or dies first, and SIGTERM then SIGKILL.
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <signal.h>

#include <filesystem>
#include <thread>

#include "../helpers.hpp"
#include "core/clock.hpp"
#include "targets/command_target.hpp"

using namespace rig;
using rig::testing::temp_dir;

namespace {

command_target make(const std::string& toml) {
  return command_target(rig::testing::bind_text(command_options(), toml));
}

target_env env_in(const temp_dir& dir) {
  target_env env;
  env.run_dir = dir.path;
  env.rig_exe = RIG_BINARY;
  return env;
}

bool pid_gone(pid_t pid) { return ::kill(pid, 0) == -1 && errno == ESRCH; }

// What start() threw, or empty.
std::string start_error(command_target& t, const target_env& env) {
  try {
    t.start(env);
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("ready = tcp: {port} and {host} substituted, ready once the port accepts, stopped by SIGTERM") {
  temp_dir tmp;
  auto t = make(R"(run = ["{rig}", "target", "--bind", "{host}", "--port", "{port}"])");
  t.start(env_in(tmp));
  REQUIRE(t.pid().has_value());
  CHECK(t.port() != 0);
  CHECK(t.host() == "127.0.0.1");
  auto fd = rig::testing::connect_loopback(t.port());  // REQUIREs the connect: it listens where it was told
  CHECK(fd.get() >= 0);
  const nlohmann::json d = t.describe();
  CHECK(d["argv"][5] == std::to_string(t.port()));
  const pid_t pid = *t.pid();
  t.stop();
  CHECK(pid_gone(pid));
  CHECK(t.died().value().how == "exited with status 0");  // rig target exits cleanly on SIGTERM
}

TEST_CASE("ready_log: start returns when the output matches, not before") {
  temp_dir tmp;
  auto t = make(R"(run = ["sh", "-c", "echo booting; sleep 0.4; echo 'listening on {port}, ready'; exec sleep 30"]
ready_log = "listening on [0-9]+, ready")");
  const int64_t t0 = mono_ns();
  t.start(env_in(tmp));
  const double waited_s = double(mono_ns() - t0) / 1e9;
  CHECK(waited_s >= 0.4);
  CHECK(waited_s < 3.0);
  CHECK_FALSE(t.died().has_value());
  const pid_t pid = *t.pid();
  t.stop();
  CHECK(pid_gone(pid));
}

TEST_CASE("never ready: the error says why, within ready_timeout, with the program's last output, and the program is stopped") {
  temp_dir tmp;
  auto t = make(R"(run = ["sh", "-c", "echo 'config loaded from /etc/x.conf'; exec sleep 30"]
ready_timeout = "300ms")");
  const int64_t t0 = mono_ns();
  const std::string err = start_error(t, env_in(tmp));
  const double took_s = double(mono_ns() - t0) / 1e9;
  INFO(err);
  CHECK(err.find("not ready within 0.3s") != std::string::npos);
  CHECK(err.find("never accepted a connection") != std::string::npos);
  CHECK(err.find("config loaded from /etc/x.conf") != std::string::npos);
  CHECK(took_s < 2.5);  // the timeout, plus SIGTERM ending sleep at once
  REQUIRE(t.pid().has_value());
  CHECK(pid_gone(*t.pid()));

  auto by_log = make(R"(run = ["sh", "-c", "echo starting; exec sleep 30"]
ready_log = "accepting connections"
ready_timeout = "200ms")");
  const std::string log_err = start_error(by_log, env_in(tmp));
  CHECK(log_err.find("never matched /accepting connections/") != std::string::npos);
  CHECK(log_err.find("starting") != std::string::npos);
}

TEST_CASE("a program that exits before it is ready: its exit status and stderr in the error") {
  temp_dir tmp;
  auto t = make(R"(run = ["sh", "-c", "echo 'fatal: bad option --frobnicate' >&2; exit 3"]
ready_timeout = "5s")");
  const int64_t t0 = mono_ns();
  const std::string err = start_error(t, env_in(tmp));
  INFO(err);
  CHECK(err.find("exited with status 3 before it was ready") != std::string::npos);
  CHECK(err.find("fatal: bad option --frobnicate") != std::string::npos);
  CHECK(double(mono_ns() - t0) / 1e9 < 2.0);  // noticed at once, not after ready_timeout
}

TEST_CASE("a program that prints nothing and exits: its exit status, and its empty output said as such") {
  temp_dir tmp;
  auto t = make(R"(run = ["sh", "-c", "exit 7"])");
  const std::string err = start_error(t, env_in(tmp));
  INFO(err);
  CHECK(err.find("exited with status 7 before it was ready") != std::string::npos);
  CHECK(err.find("last output:\n(nothing: " + tmp.path + "/target.log is empty)") != std::string::npos);
}

TEST_CASE("a program that ignores SIGTERM is killed after stop_timeout") {
  temp_dir tmp;
  // SIG_IGN survives exec, so sleep itself ignores SIGTERM.
  auto t = make(R"(run = ["sh", "-c", "trap '' TERM; echo up; exec sleep 30"]
ready_log = "up"
stop_timeout = "300ms")");
  t.start(env_in(tmp));
  const pid_t pid = *t.pid();
  const int64_t t0 = mono_ns();
  t.stop();
  const double took_s = double(mono_ns() - t0) / 1e9;
  CHECK(took_s >= 0.3);
  CHECK(took_s < 2.0);
  CHECK(pid_gone(pid));
  CHECK(t.died().value().how == "killed by signal 9 (Killed)");
  CHECK(t.died().value().signal == SIGKILL);
}

TEST_CASE("env is given to the program beside the rig's environment") {
  temp_dir tmp;
  auto t = make(R"(run = ["sh", "-c", "echo \"mode=$RIG_TEST_MODE path_set=${PATH:+yes}\"; exec sleep 30"]
ready_log = "mode=\\w+ path_set=yes"
env = { RIG_TEST_MODE = "magnified" })");
  t.start(env_in(tmp));
  CHECK(rig::testing::slurp(tmp.path + "/target.log").find("mode=magnified path_set=yes") != std::string::npos);
  t.stop();
}

TEST_CASE("a fixed port another process already listens on is refused before the target starts, naming the holder") {
  temp_dir tmp;
  rig::testing::silent_listener squatter;
  auto t = make(fmt::format(R"(run = ["{{rig}}", "target", "--bind", "{{host}}", "--port", "{{port}}"]
port = {})",
                            squatter.port));
  const std::string err = start_error(t, env_in(tmp));
  INFO(err);
  CHECK(err.find(fmt::format("127.0.0.1:{} is already listened on by ", squatter.port)) != std::string::npos);
  CHECK(err.find(fmt::format("(pid {})", ::getpid())) != std::string::npos);
  CHECK(err.find("leave 'port' out of [target]") != std::string::npos);
  CHECK_FALSE(t.pid().has_value());  // nothing was started
}

TEST_CASE("a port that accepts but is held by a process outside the target is refused, naming the holder") {
  temp_dir tmp;
  const uint16_t port = rig::testing::free_port();
  // The target never listens; once it has started, another process (this test) takes its port.
  std::thread squat([&] {
    for (int i = 0; i < 1000 && !std::filesystem::exists(tmp.path + "/started"); ++i) ::usleep(2000);
    rig::testing::silent_listener l(port);
    ::usleep(3'000'000);
  });
  auto t = make(fmt::format(R"(run = ["sh", "-c", "touch {}/started; exec sleep 30"]
port = {}
ready_timeout = "2s")",
                            tmp.path, port));
  const std::string err = start_error(t, env_in(tmp));
  squat.join();
  INFO(err);
  CHECK(err.find(fmt::format("127.0.0.1:{} accepts connections, but no process of the target listens there", port)) !=
        std::string::npos);
  CHECK(err.find(fmt::format("(pid {})", ::getpid())) != std::string::npos);
  REQUIRE(t.pid().has_value());
  CHECK(pid_gone(*t.pid()));  // the target rig started is stopped
}

TEST_CASE("behind a wrapper that forks, the serving process is the one holding the port: measured, described, and its exit is the target's death") {
  temp_dir tmp;
  auto t = make(R"(run = ["sh", "-c", "timeout 1 {rig} target --bind {host} --port {port}; exec sleep 30"])");
  t.start(env_in(tmp));
  const pid_t serving = *t.pid();
  const nlohmann::json d = t.describe();
  INFO(d.dump());
  CHECK(d["pid"].get<pid_t>() != serving);  // rig started sh
  CHECK(d["serving"]["pid"] == serving);
  CHECK(d["serving"]["process"].get<std::string>().find("rig") == 0);
  CHECK(t.serving_pids() == std::vector<pid_t>{serving});
  CHECK_FALSE(t.died().has_value());
  // timeout ends the server 1 s after it started: seen within 10 s (a sanitized server's exit,
  // with its leak check, on a loaded machine takes a while; 3 s was close).
  std::optional<exit_info> died;
  for (int i = 0; i < 1000 && !died; ++i) {
    ::usleep(10'000);
    died = t.died();
  }
  REQUIRE(died.has_value());  // timeout ended the server after 1 s; sh sleeps on
  CHECK(died->how.find(fmt::format("the serving process rig (pid {}) exited", serving)) == 0);
  const pid_t wrapper = d["pid"].get<pid_t>();
  CHECK_FALSE(pid_gone(wrapper));
  t.stop();
  CHECK(pid_gone(wrapper));
}
