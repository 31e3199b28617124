#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <chrono>
#include <thread>

#include "core/clock.hpp"
#include "core/proc.hpp"
#include "core/sampler.hpp"

using namespace rig;

TEST_CASE("sampler: samples in time order, read from the last one before a time, and forgotten before it") {
  sampler smp(::getpid(), nullptr, 20 * ns_per_ms);
  smp.start();
  for (int i = 0; i < 8; ++i) {  // on-demand samples beside the sampler thread's, as at phase boundaries
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    smp.sample_now();
  }
  smp.stop();
  const auto everything = [&] { return smp.samples_from(INT64_MIN); };  // from before the first one: all
  const auto all = everything();
  // 8 on demand, and the thread's own: one at start, then one per 20 ms for the ~480 ms, ~24.
  // 5 of them is what the checks below need, and holds unless the thread's wake-ups are each
  // ~100 ms late (24 would need them on time, which a loaded machine does not give).
  REQUIRE(all.size() >= 8 + 5);
  CHECK(std::is_sorted(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.t_ns < b.t_ns; }));
  CHECK(all.front().self.has_value());  // the rig's own process was read

  // From the last sample before t on; before the first sample, all of them.
  const size_t mid = all.size() / 2;
  const int64_t t = all[mid].t_ns + 1;
  const auto from = smp.samples_from(t);
  REQUIRE(from.size() == all.size() - mid);
  CHECK(from.front().t_ns == all[mid].t_ns);
  CHECK(from.back().t_ns == all.back().t_ns);
  CHECK(smp.samples_from(all.front().t_ns - 1).size() == all.size());

  // Forgetting before t keeps exactly what samples_from(t) reads; again, it changes nothing.
  smp.forget_before(t);
  const auto kept = everything();
  REQUIRE(kept.size() == from.size());
  CHECK(kept.front().t_ns == all[mid].t_ns);
  smp.forget_before(t);
  CHECK(everything().size() == kept.size());
  smp.forget_before(all.front().t_ns);  // nothing before the first kept one
  CHECK(everything().size() == kept.size());
}

TEST_CASE("read_text_file: a whole /proc file, and for a file that is not there nullopt with errno, never a throw") {
  const auto self = read_text_file("/proc/self/stat");
  REQUIRE(self.has_value());
  CHECK(self->find(')') != std::string::npos);
  errno = 0;
  CHECK_FALSE(read_text_file("/proc/self/no-such-file").has_value());
  CHECK(errno == ENOENT);
  // A process that has exited and been reaped: its /proc files are gone, and so are its stat fields.
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK_FALSE(read_text_file("/proc/" + std::to_string(child) + "/stat").has_value());
  CHECK_FALSE(stat_fields(child).has_value());
}
