// rig's failpoint library in this process (the C++ header over the static library), and its
// control channel against a real C program linked with the shared library.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.hpp"
#include "core/draw.h"
#include "core/failpoint_channel.hpp"
#include "core/process.hpp"
#include "rig_failpoint.hpp"

using namespace rig;

namespace {

// Arms `name` for the test and leaves every failpoint off afterwards, pass or fail.
struct armed {
  armed(const char* name, const char* spec) {
    char err[256] = "";
    REQUIRE_MESSAGE(rig_fp_set(name, spec, err, sizeof err) == 0, err);
  }
  ~armed() { rig_fp_disarm_all(); }
};

int hit(const char* /*unused*/) { return RIG_FAILPOINT("test.point"); }

rig_fp_state state_of(const char* name) {
  rig_fp_state s{};
  REQUIRE(rig_fp_state_of(name, &s) == 0);
  return s;
}

std::string set_error(const char* spec) {
  char err[256] = "";
  if (rig_fp_set("test.bad", spec, err, sizeof err) == 0) return "";
  return err;
}

}  // namespace

TEST_CASE("failpoint disarmed: no hit counted, nothing fires, the armed count is zero") {
  rig_fp_disarm_all();
  CHECK(rig_fp_armed_count == 0);
  for (int i = 0; i < 1000; ++i) CHECK(hit("") == 0);
  rig_fp_state s{};
  if (rig_fp_state_of("test.point", &s) == 0) CHECK(s.fired == 0);
}

TEST_CASE("failpoint action throw: RIG_FAILPOINT throws rig::failpoint_error naming the point") {
  armed a("test.point", "throw");
  CHECK(rig_fp_armed_count == 1);
  const auto before = state_of("test.point");
  CHECK_THROWS_WITH_AS(hit(""), "failpoint test.point fired", failpoint_error);
  const auto after = state_of("test.point");
  CHECK(after.hits == before.hits + 1);
  CHECK(after.fired == before.fired + 1);
}

TEST_CASE("failpoint action error: the point returns the errno asked (by name or number)") {
  {
    armed a("test.point", "error errno=ENOSPC");
    CHECK(hit("") == ENOSPC);
  }
  {
    armed a("test.point", "error");
    CHECK(hit("") == EIO);  // the default
  }
  armed a("test.point", "error errno=28");
  CHECK(hit("") == 28);
  CHECK(state_of("test.point").error == 28);
}

TEST_CASE("failpoint action delay: each fired hit stalls for the delay and then goes on") {
  armed a("test.point", "delay delay=30ms");
  const int64_t t0 = mono_ns();
  CHECK(hit("") == 0);
  const double ms = double(mono_ns() - t0) / 1e6;
  CHECK(ms >= 30);
  CHECK(ms < 300);
  CHECK(state_of("test.point").delay_ns == 30'000'000);
}

TEST_CASE("failpoint action abort: the process aborts (SIGABRT) at the point") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::signal(SIGABRT, SIG_DFL);  // the test runner's crash handler must not catch it
    char err[64];
    rig_fp_set("test.abort", "abort", err, sizeof err);
    RIG_FAILPOINT("test.abort");
    ::_exit(0);  // not reached when the failpoint works
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
}

TEST_CASE("failpoint probability: p=0.05 fires 5% of 200,000 hits (within 5 sigma) and 0 never and 1 always") {
  {
    armed a("test.point", "error p=0.05");
    const auto before = state_of("test.point");
    int fired = 0;
    for (int i = 0; i < 200'000; ++i) fired += hit("") != 0;
    // Binomial(200000, 0.05): mean 10,000, sigma 97.5.
    CHECK(fired > 10'000 - 490);
    CHECK(fired < 10'000 + 490);
    const auto after = state_of("test.point");
    CHECK(after.hits - before.hits == 200'000);
    CHECK(after.fired - before.fired == uint64_t(fired));
  }
  {
    armed a("test.point", "error p=0");
    int fired = 0;
    for (int i = 0; i < 10'000; ++i) fired += hit("") != 0;
    CHECK(fired == 0);
  }
  armed a("test.point", "error p=100%");
  int fired = 0;
  for (int i = 0; i < 10'000; ++i) fired += hit("") != 0;
  CHECK(fired == 10'000);
}

TEST_CASE("failpoint seed: the same seed fires on the same hit numbers, from any thread, with no clock in the draw") {
  // The n-th hit since the spec was set fires by the n-th draw of (seed, name) (core/draw.h).
  const auto pattern = [](const char* spec, int hits) {
    armed a("test.point", spec);
    std::vector<bool> fired;
    for (int i = 0; i < hits; ++i) fired.push_back(hit("") != 0);
    return fired;
  };
  const auto a = pattern("error p=0.3 seed=42", 2000);
  CHECK(state_of("test.point").seed == 42);
  CHECK(pattern("error p=0.3 seed=42", 2000) == a);  // set again: the sequence starts again
  const auto b = pattern("error p=0.3 seed=43", 2000);
  CHECK(b != a);
  // Exactly the documented draws: hit n fires when draw n is below p * 2^64.
  const uint64_t stream = rig_stream_seed(42, "test.point", 0);
  size_t agree = 0;
  for (size_t n = 0; n < a.size(); ++n) agree += a[n] == (double(rig_draw(stream, n)) < 0.3 * 18446744073709551616.0);
  CHECK(agree == a.size());
  // Four threads making the 2,000 hits between them fire exactly as often as one thread did:
  // which thread makes hit n varies from run to run, whether hit n fires does not.
  const auto fires = std::count(a.begin(), a.end(), true);
  armed again("test.point", "error p=0.3 seed=42");
  std::atomic<int> fired{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) fired += hit("") != 0;
    });
  for (auto& t : threads) t.join();
  CHECK(fired == fires);
  // Binomial(2000, 0.3): mean 600, sigma 20.5; 5 sigma either way for both seeds.
  CHECK(std::abs(double(fires) - 600) < 5 * 20.5);
  CHECK(std::abs(double(std::count(b.begin(), b.end(), true)) - 600) < 5 * 20.5);
  CHECK(set_error("error seed=-1").find("not a number") != std::string::npos);
}

TEST_CASE("failpoint count: fires exactly count times, then the point goes on as if off") {
  armed a("test.point", "error count=10");
  int fired = 0;
  for (int i = 0; i < 1000; ++i) fired += hit("") != 0;
  CHECK(fired == 10);
  CHECK(state_of("test.point").count == 10);
}

TEST_CASE("failpoint configuration text: RIG_FAILPOINTS form, and bad specs refused with the reason") {
  char err[256] = "";
  REQUIRE(rig_fp_configure(" test.a=delay delay=1ms count=2 ; test.b=error errno=EAGAIN p=0.5", err, sizeof err) == 0);
  const auto a = state_of("test.a");
  CHECK(a.action == RIG_FP_DELAY);
  CHECK(a.delay_ns == 1'000'000);
  CHECK(a.count == 2);
  const auto b = state_of("test.b");
  CHECK(b.action == RIG_FP_ERROR);
  CHECK(b.error == EAGAIN);
  CHECK(b.probability == 0.5);
  CHECK(rig_fp_armed_count == 2);
  char text[1024];
  rig_fp_describe(text, sizeof text);
  const auto parsed = parse_failpoint_stats(text);
  CHECK(parsed.at("test.b").action == "error");
  CHECK(parsed.at("test.b").probability == 0.5);
  CHECK(parsed.at("test.a").delay_ns == 1'000'000);
  rig_fp_disarm_all();
  CHECK(rig_fp_armed_count == 0);

  CHECK(set_error("explode").find("'explode' is not an action") != std::string::npos);
  CHECK(set_error("throw pp=0.5").find("unknown key 'pp' (p, count, delay, errno, seed)") != std::string::npos);
  CHECK(set_error("throw p=1.5").find("not a probability") != std::string::npos);
  CHECK(set_error("delay").find("needs delay=DURATION") != std::string::npos);
  CHECK(set_error("delay delay=5").find("not a duration with a unit") != std::string::npos);
  CHECK(set_error("error errno=EWHAT").find("not an errno") != std::string::npos);
  CHECK(set_error("throw count=-1").find("not a count") != std::string::npos);
  CHECK(rig_fp_configure("test.c throw", err, sizeof err) != 0);
  CHECK(std::string(err).find("is not NAME=ACTION") != std::string::npos);
  CHECK(rig_fp_armed_count == 0);  // nothing was armed by the refused specs
}

TEST_CASE("failpoint channel: a C target linked with librig_failpoint.so is armed, read back and counted") {
  failpoint_channel ch;
  auto c = child_process::spawn({.argv = {FAILPOINT_TARGET}, .capture_stdout = true, .env = {ch.environment()}});
  REQUIRE(c.read_line(5000) == std::optional<std::string>("ready"));
  REQUIRE(ch.await_processes(3000) == 1);
  auto r = ch.request("set c.loop error errno=ENOSPC p=0.5");
  REQUIRE(r.size() == 1);
  CHECK(r[0].ok);
  CHECK(r[0].pid == c.pid());
  // One hit a millisecond: 200 hits take ~0.2 s, longer on a loaded machine; waited for, up to 10 s.
  auto s = ch.stats().at("c.loop");
  for (const int64_t until = mono_ns() + 10 * ns_per_s; s.hits < 200 && mono_ns() < until; s = ch.stats().at("c.loop"))
    ::usleep(20'000);
  CHECK(s.action == "error");
  CHECK(s.error == ENOSPC);
  REQUIRE(s.hits >= 200);
  // Binomial(n, 0.5): mean n/2, sigma sqrt(n)/2; 5 sigma (n = 200: 100 +/- 35).
  const double n = double(s.hits);
  CHECK(double(s.fired) >= n / 2 - 5 * std::sqrt(n) / 2);
  CHECK(double(s.fired) <= n / 2 + 5 * std::sqrt(n) / 2);
  // A bad command gets the library's own reason back.
  r = ch.request("set c.loop explode");
  REQUIRE(r.size() == 1);
  CHECK(!r[0].ok);
  CHECK(r[0].text.find("'explode' is not an action") != std::string::npos);
  // Off again: hits go on, fires stop.
  REQUIRE(ch.request("set c.loop off").at(0).ok);
  const auto off = ch.stats().at("c.loop");
  ::usleep(100'000);
  const auto later = ch.stats().at("c.loop");
  CHECK(later.fired == off.fired);
}

TEST_CASE("failpoint channel: each process of a forking target connects, and stats sum them") {
  failpoint_channel ch;
  auto c = child_process::spawn({.argv = {FAILPOINT_TARGET, "fork"}, .capture_stdout = true, .env = {ch.environment()}});
  REQUIRE(c.read_line(5000));
  const int64_t until = mono_ns() + 5 * ns_per_s;
  while (ch.await_processes(100) < 2 && mono_ns() < until) ::usleep(20'000);
  REQUIRE(ch.processes() == 2);
  // At most 100 fires in each process: the sum reaches 200 only when both fired. Waited for (a
  // hit a millisecond each: ~0.1 s, longer on a loaded machine), up to 10 s.
  const auto r = ch.request("set c.loop error count=100");
  REQUIRE(r.size() == 2);
  CHECK(r[0].pid != r[1].pid);
  for (const int64_t until = mono_ns() + 10 * ns_per_s; ch.stats().at("c.loop").fired < 200 && mono_ns() < until;)
    ::usleep(20'000);
  CHECK(ch.stats().at("c.loop").fired == 200);
  const auto each = ch.request("stats");
  REQUIRE(each.size() == 2);
  for (const auto& p : each) CHECK(parse_failpoint_stats(p.text).at("c.loop").fired == 100);
}  // the forked process dies with its parent (PR_SET_PDEATHSIG)

TEST_CASE("failpoint channel: its socket lives in rig's state dir, and both are gone with it") {
  const std::string base = std::filesystem::temp_directory_path() / ("rig-state-" + std::to_string(::getpid()));
  ::setenv("RIG_STATE_DIR", base.c_str(), 1);
  std::string path;
  {
    failpoint_channel ch;
    path = ch.path();
    CHECK(path.rfind(base + "/fp-", 0) == 0);
    CHECK(std::filesystem::is_socket(path));
  }
  ::unsetenv("RIG_STATE_DIR");
  CHECK(!std::filesystem::exists(path));
  CHECK(!std::filesystem::exists(base));  // it made the directory, so it removed it
}

TEST_CASE("failpoint channel: a target that never connects leaves it empty, and asking does not hang") {
  failpoint_channel ch;
  auto c = child_process::spawn({.argv = {"/bin/sleep", "30"}, .env = {ch.environment()}});
  const int64_t t0 = mono_ns();
  CHECK(ch.await_processes(300) == 0);
  CHECK(ch.request("stats").empty());
  CHECK(ch.stats().empty());
  CHECK(double(mono_ns() - t0) / 1e6 < 1000);
}

TEST_CASE("failpoint channel: a target that dies is dropped without SIGPIPE or a hang") {
  failpoint_channel ch;
  auto c = child_process::spawn({.argv = {FAILPOINT_TARGET}, .capture_stdout = true, .env = {ch.environment()}});
  REQUIRE(c.read_line(5000));
  REQUIRE(ch.await_processes(3000) == 1);
  REQUIRE(ch.request("set c.loop error").size() == 1);
  ::kill(c.pid(), SIGKILL);
  REQUIRE(c.wait(5000));
  const int64_t t0 = mono_ns();
  CHECK(ch.request("set c.loop off").empty());
  CHECK(ch.processes() == 0);
  CHECK(double(mono_ns() - t0) / 1e6 < 1000);
}

TEST_CASE("failpoint channel: when rig's end closes, what it armed is disarmed in the target") {
  std::optional<failpoint_channel> ch(std::in_place);
  const std::string env = ch->environment();
  auto c = child_process::spawn({.argv = {FAILPOINT_TARGET}, .capture_stdout = true, .env = {env}});
  REQUIRE(c.read_line(5000));
  REQUIRE(ch->await_processes(3000) == 1);
  REQUIRE(ch->request("set c.loop error").at(0).ok);
  ::usleep(300'000);
  ch.reset();  // rig's side gone (as when rig dies)
  // The target lives on (a closed channel is not fatal) and its error count stops growing. It
  // prints the count every 100 hits; armed (p = 1) every hit fires, so two lines in a row differ
  // by 100 until the target has seen the channel close, and are equal after. Read until two are
  // equal (the target's channel thread may be slow to run on a loaded machine), up to 10 s.
  long a = -1, previous = -2;
  for (const int64_t until = mono_ns() + 10 * ns_per_s; mono_ns() < until;) {
    auto line = c.read_line(1000);
    long n = -1;
    if (!line || std::sscanf(line->c_str(), "errors=%ld", &n) != 1) continue;
    if (n == previous) {
      a = n;
      break;
    }
    previous = n;
  }
  CHECK(a > 0);
  auto errors_now = [&] {
    long n = -1;
    while (auto line = c.read_line(0)) std::sscanf(line->c_str(), "errors=%ld", &n);  // the latest line
    return n;
  };
  ::usleep(300'000);
  const long b = errors_now();
  CHECK(b == a);
  CHECK(c.running());
}

TEST_CASE("failpoint start configuration: RIG_FAILPOINTS arms a C target at load, and a bad one is named on stderr") {
  auto c = child_process::spawn({.argv = {FAILPOINT_TARGET}, .capture_stdout = true,
                                 .env = {"RIG_FAILPOINTS=c.loop=error count=3"}});
  REQUIRE(c.read_line(5000) == std::optional<std::string>("ready"));
  long errors = -1;
  for (int i = 0; i < 3; ++i)  // three lines: 300 hits, long past the 3 fires
    if (auto line = c.read_line(2000)) std::sscanf(line->c_str(), "errors=%ld", &errors);
  CHECK(errors == 3);

  const std::string err_path = std::filesystem::temp_directory_path() / ("fp-stderr-" + std::to_string(::getpid()));
  auto bad = child_process::spawn({.argv = {FAILPOINT_TARGET}, .capture_stdout = true, .stderr_path = err_path,
                                   .env = {"RIG_FAILPOINTS=c.loop=throw pp=0.5"}});
  REQUIRE(bad.read_line(5000) == std::optional<std::string>("ready"));  // it runs on, with nothing armed
  bad.stop();
  std::ifstream in(err_path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove(err_path);
  CHECK(text.find("rig failpoint: RIG_FAILPOINTS: c.loop: unknown key 'pp' (p, count, delay, errno, seed)") != std::string::npos);
}
