#include <doctest/doctest.h>
#include <signal.h>

#include "core/process.hpp"
#include "core/proc.hpp"

using namespace rig;

TEST_CASE("a child's stdout lines are read, and stop() ends it by its pid") {
  auto c = child_process::spawn({.argv = {"/bin/sh", "-c", "echo ready; exec sleep 30"}, .capture_stdout = true});
  const pid_t pid = c.pid();
  REQUIRE(pid > 0);
  auto line = c.read_line(5000);
  REQUIRE(line);
  CHECK(*line == "ready");
  CHECK(c.running());
  CHECK(read_proc(pid).has_value());
  c.stop();
  CHECK_FALSE(c.running());
  CHECK(c.exit_description() == "killed by signal 15 (Terminated)");
  CHECK(::kill(pid, 0) == -1);  // reaped: no zombie left
}

TEST_CASE("exit status is reported") {
  auto c = child_process::spawn({.argv = {"/bin/sh", "-c", "exit 3"}});
  for (int i = 0; i < 500 && c.running(); ++i) ::usleep(10'000);
  CHECK(c.exit_description() == "exited with status 3");
}

TEST_CASE("/proc readings of this process are plausible") {
  ::usleep(1000);  // one voluntary context switch at least: a short-lived process may have none yet
  auto s = read_proc(::getpid());
  REQUIRE(s);
  CHECK(s->rss_bytes > 1024 * 1024);
  CHECK(s->threads >= 1);
  CHECK(s->fds >= 3);
  CHECK(s->voluntary_ctx + s->involuntary_ctx > 0);
  CHECK_FALSE(read_proc(999'999'999).has_value());
}
