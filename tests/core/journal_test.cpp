// The journal of host changes, replayed by `rig cleanup` after the rig that wrote it died
// without undoing them: a process killed with its whole group, a file removed, cpufreq files
// written back. (The cgroup and namespace lines are replayed for real in the e2e crash tests.)
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <sstream>

#include "../helpers.hpp"
#include "core/cpufreq.hpp"
#include "core/journal.hpp"
#include "core/process.hpp"

using namespace rig;
using rig::testing::slurp;
using rig::testing::temp_dir;
namespace fs = std::filesystem;

namespace {

// RIG_STATE_DIR set for this test only.
struct private_state_dir {
  std::string path;
  explicit private_state_dir(const std::string& p) : path(p) { ::setenv("RIG_STATE_DIR", p.c_str(), 1); }
  ~private_state_dir() { ::unsetenv("RIG_STATE_DIR"); }
};

// A killed rig: SIGKILL, with no destructor and no revert.
[[noreturn]] void killed() {
  ::kill(::getpid(), SIGKILL);
  _exit(9);
}

// Runs fn (which ends with killed()) in a forked child. Returns the child's pid (reaped).
template <class F>
pid_t die_after(F fn) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    try {
      fn();
    } catch (...) {
      _exit(3);
    }
    _exit(4);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFSIGNALED(status));
  return pid;
}

bool alive(pid_t pid) { return process_start_time(pid) != 0; }

}  // namespace

TEST_CASE("journal: a killed rig's cpufreq files are written back by replay, max before min, and the speed") {
  temp_dir tmp;
  private_state_dir state(tmp.path + "/state");
  const std::string d = tmp.path + "/cpu0/cpufreq";
  fs::create_directories(d);
  std::ofstream(d + "/cpuinfo_max_freq") << "3000000\n";
  std::ofstream(d + "/cpuinfo_min_freq") << "800000\n";
  std::ofstream(d + "/scaling_max_freq") << "2800000\n";
  std::ofstream(d + "/scaling_min_freq") << "2000000\n";
  std::ofstream(d + "/scaling_governor") << "userspace\n";
  std::ofstream(d + "/scaling_setspeed") << "2500000\n";

  const pid_t dead = die_after([&] {
    cpufreq_pin pin(tmp.path);
    pin.pin({0}, 1'000'000);
    killed();
  });
  CHECK(slurp(d + "/scaling_max_freq") == "1000000");  // what the killed rig left
  CHECK(slurp(d + "/scaling_setspeed") == "1000000");

  const auto stale = stale_journals();
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].pid == dead);
  REQUIRE(stale[0].pending.size() == 3);
  const auto r = replay(stale[0]);
  INFO(fmt::format("{}", fmt::join(r.lines, "\n")));
  CHECK(r.complete);
  REQUIRE(r.lines.size() == 3);
  CHECK(r.lines[0].find("scaling_max_freq: \"2800000\" written back") != std::string::npos);
  CHECK(r.lines[1].find("scaling_min_freq: \"2000000\" written back") != std::string::npos);
  CHECK(r.lines[2].find("scaling_setspeed: \"2500000\" written back") != std::string::npos);
  CHECK(slurp(d + "/scaling_max_freq") == "2800000");
  CHECK(slurp(d + "/scaling_min_freq") == "2000000");
  CHECK(slurp(d + "/scaling_setspeed") == "2500000");
  CHECK_FALSE(fs::exists(state.path));  // the journal and the state directory went
  CHECK(stale_journals().empty());
}

TEST_CASE("journal: a killed rig's process survives SIGTERM and SIGHUP, and replay kills it with its group") {
  temp_dir tmp;
  private_state_dir state(tmp.path + "/state");
  // The killed "rig" starts a journaled shell that starts a grandchild, then stops itself (as
  // the pause injector leaves a target). Both ignore the SIGTERM the rig's death sends and the
  // SIGHUP (with SIGCONT) the kernel sends a stopped group that loses its parent.
  const std::string pids = tmp.path + "/pids";
  die_after([&] {
    auto c = child_process::spawn(
        {.argv = {"/bin/sh", "-c", "trap '' HUP TERM; sleep 300 & echo $$ $! > " + pids + "; kill -STOP $$; wait"},
         .journaled = true});
    for (int i = 0; i < 200 && slurp(pids).find('\n') == std::string::npos; ++i) ::usleep(10'000);
    killed();
  });
  pid_t shell = 0, grandchild = 0;
  std::istringstream(slurp(pids)) >> shell >> grandchild;
  REQUIRE(shell > 0);
  REQUIRE(grandchild > 0);
  ::usleep(100'000);
  CHECK(alive(shell));  // what a killed rig leaves on the host
  CHECK(alive(grandchild));

  auto stale = stale_journals();
  REQUIRE(stale.size() == 1);
  REQUIRE(stale[0].pending.size() == 1);
  CHECK(stale[0].pending[0] == fmt::format("process {} {}", shell, process_start_time(shell)));
  // A line whose start time is not the live process's: that pid was reused, and is spared.
  auto reused = stale[0];
  reused.pending = {fmt::format("process {} {}", ::getpid(), process_start_time(::getpid()) + 1)};
  const auto spared = replay(reused);
  REQUIRE(spared.lines.size() == 1);
  CHECK(spared.lines[0].find("already gone") != std::string::npos);
  CHECK(alive(::getpid()));

  const auto r = replay(stale[0]);
  INFO(fmt::format("{}", fmt::join(r.lines, "\n")));
  CHECK(r.complete);
  CHECK(r.lines[0] == fmt::format("process {}: killed", shell));
  CHECK_FALSE(alive(shell));
  CHECK_FALSE(alive(grandchild));
  CHECK(stale_journals().empty());
}

TEST_CASE("journal: a file line is removed by replay, an unknown line is left alone and keeps the journal") {
  temp_dir tmp;
  private_state_dir state(tmp.path + "/state");
  const std::string f = tmp.path + "/fp-1.sock";
  die_after([&] {
    journal::self().record("file " + f);
    std::ofstream(f) << "x";
    journal::self().record("frobnicate something");
    killed();
  });
  auto stale = stale_journals();
  REQUIRE(stale.size() == 1);
  const auto r = replay(stale[0]);
  REQUIRE(r.lines.size() == 2);
  CHECK(r.lines[0] == "unknown journal line, left alone: frobnicate something");
  CHECK(r.lines[1] == "file " + f + ": removed");
  CHECK_FALSE(fs::exists(f));
  CHECK_FALSE(r.complete);
  CHECK(fs::exists(stale[0].path));  // kept, for a person to read
}

TEST_CASE("journal: a rig that undoes its changes leaves no journal, and a forked child does not write into it") {
  temp_dir tmp;
  private_state_dir state(tmp.path + "/state");
  auto c = child_process::spawn({.argv = {"/bin/sleep", "30"}, .journaled = true});
  const std::string mine = journal::self().path();
  CHECK(slurp(mine).find(fmt::format("process {} ", c.pid())) == 0);
  die_after([&] {
    journal::self().record("file /nonexistent/child-only");
    killed();
  });
  CHECK(slurp(mine).find("child-only") == std::string::npos);
  c.stop();
  CHECK_FALSE(fs::exists(mine));
  // The child's own journal is stale; replaying it finds its file already gone.
  const auto stale = stale_journals();
  REQUIRE(stale.size() == 1);
  CHECK(replay(stale[0]).complete);
  CHECK_FALSE(fs::exists(state.path));
}
