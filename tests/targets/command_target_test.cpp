// The command target on real programs: ready by port or by log line, a clear error with the
// program's last output when it never becomes ready or dies first, and SIGTERM then SIGKILL.
#include <doctest/doctest.h>
#include <signal.h>

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
