#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <string>

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

TEST_CASE("inherited fds land on their numbers even when one's target is another's source, close-on-exec cleared") {
  int a[2], b[2];
  REQUIRE(::pipe2(a, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(b, O_CLOEXEC) == 0);
  // Swap: a's write end goes to b's write end's number and the other way round.
  auto c = child_process::spawn({.argv = {"/bin/sh", "-c", "echo A >&" + std::to_string(b[1]) + "; echo B >&" +
                                                                 std::to_string(a[1])},
                                 .inherit_fds = {{a[1], b[1]}, {b[1], a[1]}}});
  REQUIRE(c.wait(5000));
  ::close(a[1]);
  ::close(b[1]);
  char buf[8] = {};
  CHECK(::read(a[0], buf, sizeof buf) == 2);
  CHECK(std::string(buf, 2) == "A\n");  // written to b[1]'s number, which held a's pipe
  CHECK(::read(b[0], buf, sizeof buf) == 2);
  CHECK(std::string(buf, 2) == "B\n");
  ::close(a[0]);
  ::close(b[0]);
}
