#pragma once
#include <bit>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <vector>

namespace rig {

// Log-linear latency histogram (HdrHistogram layout): 3 significant digits over
// 1 us .. 1 h, values in nanoseconds. Recording is a clamp, a clz and an increment.
// Values outside the range are clamped to it and counted, never dropped.
class histogram {
 public:
  static constexpr int64_t lowest_ns = 1'000;                 // 1 us
  static constexpr int64_t highest_ns = 3'600'000'000'000;    // 1 h

  histogram() = default;  // empty and compact: nothing allocated until the first record

  void record(int64_t ns) {
    if (counts_.empty()) [[unlikely]] expand();
    if (ns < lowest_ns) [[unlikely]] {
      ns = lowest_ns;
      ++underflows_;
    } else if (ns > highest_ns) [[unlikely]] {
      ns = highest_ns;
      ++overflows_;
    }
    ++counts_[index_of(ns)];
    ++total_;
    sum_ += ns;
    if (ns < min_) min_ = ns;
    if (ns > max_) max_ = ns;
  }

  void merge(const histogram& other);
  void reset();
  // Compact: only the buckets that hold samples are kept (a closed phase's histogram: a few
  // KiB instead of the full 270 KiB table). record() expands it again when needed.
  void compact();
  bool is_compact() const { return counts_.empty(); }
  // Lossless and sparse ([index, count] pairs), for a helper process handing over its figures.
  nlohmann::json to_wire() const;
  static histogram from_wire(const nlohmann::json& j);

  uint64_t count() const { return total_; }
  uint64_t underflows() const { return underflows_; }
  uint64_t overflows() const { return overflows_; }
  int64_t min() const { return total_ ? min_ : 0; }
  int64_t max() const { return total_ ? max_ : 0; }
  double mean() const { return total_ ? double(sum_) / double(total_) : 0.0; }

  // Value at percentile p (0..100): the highest value equivalent to the recorded value of
  // rank ceil(p/100 * count), so it never under-reports; clamped to the exact max.
  int64_t percentile(double p) const;
  // Samples recorded below `ns` (whole buckets: exact to the histogram's 3 digits).
  uint64_t count_below(int64_t ns) const;

  // Bucket geometry, exposed for tests and the interval-log writer.
  static constexpr int sub_bucket_half_magnitude = 10;        // 1024: 3 significant digits
  static constexpr int64_t sub_bucket_count = 2048;
  static int index_of(int64_t v) {
    const int bucket = 64 - std::countl_zero(uint64_t(v) | uint64_t(sub_bucket_count - 1)) -
                       (sub_bucket_half_magnitude + 1);
    const int64_t sub = v >> bucket;
    return int(((bucket + 1) << sub_bucket_half_magnitude) + (sub - (sub_bucket_count / 2)));
  }
  static int64_t lowest_equivalent(int index);
  static int64_t highest_equivalent(int index);
  static int counts_length();

  // A histogram from its non-empty buckets (index order), as a decoder reads them: min and
  // max are their buckets' edges and the sum their midpoints' (exact to 3 digits).
  static histogram from_buckets(const std::vector<std::pair<uint32_t, uint64_t>>& buckets);
  // Calls f(index, count) for each non-empty bucket in index order until f returns false.
  template <class F>
  void visit(F f) const {
    if (!counts_.empty()) {
      for (size_t i = 0; i < counts_.size(); ++i)
        if (counts_[i] && !f(int(i), counts_[i])) return;
    } else {
      for (const auto& [i, c] : sparse_)
        if (!f(int(i), c)) return;
    }
  }

 private:
  void expand();
  std::vector<uint64_t> counts_;                       // dense: every bucket (empty when compact)
  std::vector<std::pair<uint32_t, uint64_t>> sparse_;  // compact: the non-empty buckets, by index
  uint64_t total_ = 0, underflows_ = 0, overflows_ = 0;
  int64_t sum_ = 0;  // ns; overflows only after ~292 years of summed latency
  int64_t min_ = INT64_MAX, max_ = 0;
};

}  // namespace rig
