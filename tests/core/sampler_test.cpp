#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/clock.hpp"
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
  const auto all = smp.samples();
  REQUIRE(all.size() > 20);
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
  const auto kept = smp.samples();
  REQUIRE(kept.size() == from.size());
  CHECK(kept.front().t_ns == all[mid].t_ns);
  smp.forget_before(t);
  CHECK(smp.samples().size() == kept.size());
  smp.forget_before(all.front().t_ns);  // nothing before the first kept one
  CHECK(smp.samples().size() == kept.size());
}
