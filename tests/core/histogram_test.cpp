#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <malloc.h>
#include <random>

#include <nlohmann/json.hpp>

#include "../helpers.hpp"
#include "core/hdr_codec.hpp"
#include "core/histogram.hpp"

using rig::histogram;
using rig::base64_decode;
using rig::base64_encode;
using rig::hdr_decode;
using rig::hdr_encode;

namespace {
// Exact percentile with the histogram's rank rule: the value of rank ceil(p/100 * n).
int64_t exact(std::vector<int64_t>& sorted, double p) {
  auto rank = size_t(std::ceil(p / 100.0 * double(sorted.size())));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}
}  // namespace

TEST_CASE("percentiles of 10^6 random values are within 0.1% of the exact ones") {
  std::mt19937_64 rng(7);
  // Log-uniform from 1 us to 1 h covers every bucket of the range.
  std::uniform_real_distribution<double> exponent(std::log(1e3), std::log(3.6e12));
  std::vector<int64_t> values(1'000'000);
  histogram h;
  for (auto& v : values) {
    v = int64_t(std::exp(exponent(rng)));
    h.record(v);
  }
  std::sort(values.begin(), values.end());
  for (double p : {0.1, 1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 100.0}) {
    const double want = double(exact(values, p));
    const double got = double(h.percentile(p));
    CAPTURE(p);
    CHECK(std::abs(got - want) / want <= 0.001);
    CHECK(got >= want);  // never under-reports
  }
  CHECK(h.count() == values.size());
  CHECK(h.min() == values.front());
  CHECK(h.max() == values.back());
}

TEST_CASE("a narrow cluster keeps its percentiles apart") {
  histogram h;
  for (int i = 0; i < 1000; ++i) h.record(42'000'000 + i * 6'000);  // 42 ms .. 48 ms
  CHECK(h.percentile(50) == doctest::Approx(45'000'000).epsilon(0.002));
  CHECK(h.percentile(10) < h.percentile(90));
  CHECK(h.percentile(90) == doctest::Approx(47'400'000).epsilon(0.002));
}

TEST_CASE("merge equals recording everything into one histogram") {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> d(11.0, 1.5);
  histogram a, b, all;
  for (int i = 0; i < 200'000; ++i) {
    const auto v = int64_t(d(rng));
    (i % 3 ? a : b).record(v);
    all.record(v);
  }
  a.merge(b);
  CHECK(a.count() == all.count());
  CHECK(a.min() == all.min());
  CHECK(a.max() == all.max());
  CHECK(a.mean() == doctest::Approx(all.mean()));
  for (double p : {1.0, 50.0, 99.0, 99.9, 100.0}) CHECK(a.percentile(p) == all.percentile(p));
}

TEST_CASE("values outside 1 us .. 1 h are clamped and counted, not dropped") {
  histogram h;
  h.record(0);
  h.record(500);
  h.record(histogram::highest_ns * 2);
  h.record(5'000);
  CHECK(h.count() == 4);
  CHECK(h.underflows() == 2);
  CHECK(h.overflows() == 1);
  CHECK(h.min() == histogram::lowest_ns);
  CHECK(h.max() == histogram::highest_ns);
  CHECK(h.percentile(100) == histogram::highest_ns);
}

TEST_CASE("bucket geometry: every index maps back to a range that holds its values") {
  for (int64_t v : {int64_t(1000), int64_t(2047), int64_t(2048), int64_t(123'456), int64_t(44'000'000),
                    histogram::highest_ns}) {
    const int i = histogram::index_of(v);
    CAPTURE(v);
    CHECK(i >= 0);
    CHECK(i < histogram::counts_length());
    CHECK(histogram::lowest_equivalent(i) <= v);
    CHECK(histogram::highest_equivalent(i) >= v);
    CHECK(double(histogram::highest_equivalent(i) - histogram::lowest_equivalent(i)) <= double(v) / 1000.0 + 1);
  }
}

TEST_CASE("an empty histogram reports zeros") {
  histogram h;
  CHECK(h.count() == 0);
  CHECK(h.percentile(99) == 0);
  CHECK(h.mean() == 0);
}

TEST_CASE("the wire form is lossless: percentiles, extremes, clamp counts and the mean come back the same") {
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> d(11.0, 2.0);
  histogram h;
  for (int i = 0; i < 50'000; ++i) h.record(int64_t(d(rng)));
  h.record(10);                         // an underflow (lognormal draws give more)
  h.record(histogram::highest_ns * 2);  // an overflow
  const histogram back = histogram::from_wire(nlohmann::json::parse(h.to_wire().dump()));
  CHECK(back.count() == h.count());
  CHECK(h.underflows() > 0);
  CHECK(back.underflows() == h.underflows());
  CHECK(back.overflows() == 1);
  CHECK(back.min() == h.min());
  CHECK(back.max() == h.max());
  CHECK(back.mean() == h.mean());
  for (double p : {0.0, 1.0, 50.0, 99.0, 99.99, 100.0}) CHECK(back.percentile(p) == h.percentile(p));
  CHECK(histogram::from_wire(histogram().to_wire()).count() == 0);
}

TEST_CASE("compact keeps only the non-empty buckets: the same figures, merges in every mix, records again") {
  std::mt19937_64 rng(13);
  std::lognormal_distribution<double> d(12.0, 1.2);
  histogram a, b, all;
  CHECK(a.is_compact());  // a new histogram allocates nothing
  for (int i = 0; i < 100'000; ++i) {
    const auto v = int64_t(d(rng));
    (i % 2 ? a : b).record(v);
    all.record(v);
  }
  CHECK_FALSE(a.is_compact());
  histogram dense_a = a;
  a.compact();
  CHECK(a.is_compact());
  for (double p : {0.0, 1.0, 50.0, 99.0, 99.9, 100.0}) CHECK(a.percentile(p) == dense_a.percentile(p));
  CHECK(a.count_below(200'000) == dense_a.count_below(200'000));
  CHECK(a.to_wire() == dense_a.to_wire());
  // compact + dense, compact + compact, dense + compact, empty compact + either: all equal `all`.
  histogram m1 = a;
  m1.merge(b);
  CHECK(m1.is_compact());
  histogram b_compact = b;
  b_compact.compact();
  histogram m2 = a;
  m2.merge(b_compact);
  histogram m3 = b;
  m3.merge(a);
  CHECK_FALSE(m3.is_compact());
  histogram m4;
  m4.merge(a);
  m4.merge(b);
  for (const auto* m : {&m1, &m2, &m3, &m4}) {
    CHECK(m->count() == all.count());
    CHECK(m->to_wire() == all.to_wire());
    for (double p : {1.0, 50.0, 99.0, 99.9}) CHECK(m->percentile(p) == all.percentile(p));
  }
  // A late sample expands it again.
  m1.record(5'000'000);
  CHECK_FALSE(m1.is_compact());
  CHECK(m1.count() == all.count() + 1);
  // The wire form comes back compact; bad bucket lists are refused.
  const auto back = histogram::from_wire(all.to_wire());
  CHECK(back.is_compact());
  CHECK(back.percentile(99) == all.percentile(99));
  auto bad = all.to_wire();
  bad["buckets"].push_back({0, 1});  // out of order
  CHECK_THROWS_AS(histogram::from_wire(bad), std::out_of_range);
}

TEST_CASE("compact gives the full table's memory back to the allocator") {
  if (rig::testing::sanitized_skip("the sanitizer's allocator does not report to mallinfo2")) return;
  auto in_use = [] {
    const struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;  // heap chunks in use + mmapped blocks
  };
  const size_t table_bytes = size_t(histogram::counts_length()) * sizeof(uint64_t);
  histogram h;
  const size_t before = in_use();
  h.record(1'000'000);
  const size_t dense = in_use();
  CHECK(dense - before >= table_bytes);
  h.compact();
  CHECK(in_use() < before + 4096);  // one bucket kept; the table is gone
  CHECK(h.count() == 1);
}

TEST_CASE("HdrHistogram's compressed V2 form: the header bytes, and every bucket back the same") {
  histogram h;
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> d(11, 1.5);
  for (int i = 0; i < 200000; ++i) h.record(int64_t(d(rng)));
  h.record(42);              // clamped to 1 us
  h.record(int64_t(5e12));   // clamped to 1 h
  const std::string text = hdr_encode(h);
  // "HISTFAAA": the compressed V2 cookie 0x1c849314, what HdrHistogram's own logs start with.
  CHECK(text.rfind("HISTFAAA", 0) == 0);
  const auto raw = base64_decode(text);
  REQUIRE(raw);
  CHECK(uint8_t((*raw)[0]) == 0x1c);
  CHECK(uint8_t((*raw)[3]) == 0x14);
  std::string why;
  const auto back = hdr_decode(text, &why);
  REQUIRE_MESSAGE(back, why);
  CHECK(back->count() == h.count());
  for (double p : {0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0})
    CHECK_MESSAGE(histogram::index_of(back->percentile(p)) == histogram::index_of(h.percentile(p)), "p", p);
  std::vector<std::pair<int, uint64_t>> a, b;
  h.visit([&](int i, uint64_t c) { return a.emplace_back(i, c), true; });
  back->visit([&](int i, uint64_t c) { return b.emplace_back(i, c), true; });
  CHECK(a == b);
  // Empty, and not an encoding at all.
  const auto empty = hdr_decode(hdr_encode(histogram{}));
  REQUIRE(empty);
  CHECK(empty->count() == 0);
  CHECK_FALSE(hdr_decode("not base64 !"));
  CHECK_FALSE(hdr_decode(base64_encode("HIST but not one")));
  const std::string bytes("any\0bytes\xff", 10);
  CHECK(base64_decode(base64_encode(bytes)) == bytes);
}
