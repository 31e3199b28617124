#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <thread>

#include "core/clock.hpp"
#include "core/sampler.hpp"

using namespace rig;

TEST_CASE("sampler: samples in time order, and thinning keeps each second's first and last before the cut, all after it") {
  sampler smp(::getpid(), nullptr, 20 * ns_per_ms);
  const int64_t origin = mono_ns();
  smp.start();
  for (int i = 0; i < 12; ++i) {  // on-demand samples beside the sampler thread's, as at phase boundaries
    std::this_thread::sleep_for(std::chrono::milliseconds(125));
    smp.sample_now();
  }
  smp.stop();
  const auto before = smp.samples();
  REQUIRE(before.size() > 40);
  CHECK(std::is_sorted(before.begin(), before.end(), [](const auto& a, const auto& b) { return a.t_ns < b.t_ns; }));
  CHECK(before.front().self.has_value());  // the rig's own process was read

  // From the last sample before t on.
  const int64_t t = before[before.size() / 2].t_ns + 1;
  const auto from = smp.samples_from(t);
  REQUIRE(!from.empty());
  CHECK(from.front().t_ns == before[before.size() / 2].t_ns);
  CHECK(from.back().t_ns == before.back().t_ns);

  const int64_t cut = origin + ns_per_s + 400 * ns_per_ms;  // mid-second
  smp.thin(cut, origin, ns_per_s);
  const auto after = smp.samples();
  std::map<int64_t, std::vector<int64_t>> slots_before, slots_after;  // second -> sample times below the cut
  size_t kept_after_cut = 0, all_after_cut = 0;
  for (const auto& s : before)
    if (s.t_ns < cut) slots_before[(s.t_ns - origin) / ns_per_s].push_back(s.t_ns);
    else ++all_after_cut;
  for (const auto& s : after)
    if (s.t_ns < cut) slots_after[(s.t_ns - origin) / ns_per_s].push_back(s.t_ns);
    else ++kept_after_cut;
  CHECK(kept_after_cut == all_after_cut);  // nothing at or after the cut goes
  REQUIRE(slots_before.size() == slots_after.size());
  for (const auto& [slot, times] : slots_before) {
    const auto& kept = slots_after[slot];
    CHECK(kept.front() == times.front());
    // The second the cut falls in keeps its last sample before the cut only if it is the second's last.
    if (slot < (cut - origin) / ns_per_s) {
      CHECK(kept.back() == times.back());
      CHECK(kept.size() == std::min<size_t>(times.size(), 2));
    } else {
      CHECK(kept.size() == 1);
    }
  }
  CHECK(after.size() < before.size());
  // Thinning again changes nothing: the firsts and lasts stay firsts and lasts.
  smp.thin(cut, origin, ns_per_s);
  CHECK(smp.samples().size() == after.size());
}
