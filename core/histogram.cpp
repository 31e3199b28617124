#include "core/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <nlohmann/json.hpp>

namespace rig {

namespace {
int bucket_count_for_range() {
  int64_t smallest_untrackable = histogram::sub_bucket_count;
  int buckets = 1;
  while (smallest_untrackable <= histogram::highest_ns) {
    smallest_untrackable <<= 1;
    ++buckets;
  }
  return buckets;
}
}  // namespace

int histogram::counts_length() {
  static const int length = (bucket_count_for_range() + 1) << sub_bucket_half_magnitude;
  return length;
}

int64_t histogram::lowest_equivalent(int index) {
  int bucket = (index >> sub_bucket_half_magnitude) - 1;
  int64_t sub = (index & ((1 << sub_bucket_half_magnitude) - 1)) + sub_bucket_count / 2;
  if (bucket < 0) {
    sub -= sub_bucket_count / 2;
    bucket = 0;
  }
  return sub << bucket;
}

int64_t histogram::highest_equivalent(int index) {
  const int64_t low = lowest_equivalent(index);
  const int bucket = 64 - std::countl_zero(uint64_t(low) | uint64_t(sub_bucket_count - 1)) -
                     (sub_bucket_half_magnitude + 1);
  return low + (int64_t(1) << bucket) - 1;
}

void histogram::expand() {
  counts_.assign(size_t(counts_length()), 0);
  for (const auto& [i, c] : sparse_) counts_[i] = c;
  std::vector<std::pair<uint32_t, uint64_t>>().swap(sparse_);
}

void histogram::compact() {
  if (counts_.empty()) return;
  std::vector<std::pair<uint32_t, uint64_t>> kept;
  for (size_t i = 0; i < counts_.size(); ++i)
    if (counts_[i]) kept.emplace_back(uint32_t(i), counts_[i]);
  sparse_ = std::move(kept);
  std::vector<uint64_t>().swap(counts_);  // the table's memory goes back (`= {}` would keep it)
}

nlohmann::json histogram::to_wire() const {
  nlohmann::json buckets = nlohmann::json::array();
  visit([&](int i, uint64_t c) {
    buckets.push_back({i, c});
    return true;
  });
  return {{"buckets", buckets}, {"total", total_}, {"underflows", underflows_}, {"overflows", overflows_},
          {"sum", sum_},        {"min", min_},     {"max", max_}};
}

histogram histogram::from_wire(const nlohmann::json& j) {
  histogram h;  // compact, as it came
  for (const auto& b : j.at("buckets")) {
    const size_t i = b.at(0).get<size_t>();
    if (i >= size_t(counts_length()) || (!h.sparse_.empty() && i <= h.sparse_.back().first))
      throw std::out_of_range("histogram: bucket index out of order or range");
    h.sparse_.emplace_back(uint32_t(i), b.at(1).get<uint64_t>());
  }
  h.total_ = j.at("total").get<uint64_t>();
  h.underflows_ = j.at("underflows").get<uint64_t>();
  h.overflows_ = j.at("overflows").get<uint64_t>();
  h.sum_ = j.at("sum").get<int64_t>();
  h.min_ = j.at("min").get<int64_t>();
  h.max_ = j.at("max").get<int64_t>();
  return h;
}

histogram histogram::from_buckets(const std::vector<std::pair<uint32_t, uint64_t>>& buckets) {
  histogram h;
  for (const auto& [i, c] : buckets) {
    if (i >= uint32_t(counts_length()) || (!h.sparse_.empty() && i <= h.sparse_.back().first))
      throw std::out_of_range("histogram: bucket index out of order or range");
    if (!c) continue;
    h.sparse_.emplace_back(i, c);
    h.total_ += c;
    h.sum_ += int64_t(c) * ((lowest_equivalent(int(i)) + highest_equivalent(int(i))) / 2);
  }
  if (h.total_) {
    h.min_ = lowest_equivalent(int(h.sparse_.front().first));
    h.max_ = highest_equivalent(int(h.sparse_.back().first));
  }
  return h;
}

void histogram::merge(const histogram& other) {
  if (!counts_.empty()) {
    other.visit([&](int i, uint64_t c) {
      counts_[size_t(i)] += c;
      return true;
    });
  } else {  // compact stays compact: the two bucket lists joined by index
    std::vector<std::pair<uint32_t, uint64_t>> joined;
    size_t a = 0;
    other.visit([&](int i, uint64_t c) {
      for (; a < sparse_.size() && sparse_[a].first < uint32_t(i); ++a) joined.push_back(sparse_[a]);
      if (a < sparse_.size() && sparse_[a].first == uint32_t(i))
        joined.emplace_back(uint32_t(i), sparse_[a++].second + c);
      else
        joined.emplace_back(uint32_t(i), c);
      return true;
    });
    joined.insert(joined.end(), sparse_.begin() + std::ptrdiff_t(a), sparse_.end());
    sparse_ = std::move(joined);
  }
  total_ += other.total_;
  underflows_ += other.underflows_;
  overflows_ += other.overflows_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void histogram::reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  sparse_.clear();
  total_ = underflows_ = overflows_ = 0;
  sum_ = 0;
  min_ = INT64_MAX;
  max_ = 0;
}

int64_t histogram::percentile(double p) const {
  if (total_ == 0) return 0;
  p = std::clamp(p, 0.0, 100.0);
  uint64_t rank = uint64_t(std::ceil(p / 100.0 * double(total_)));
  rank = std::clamp<uint64_t>(rank, 1, total_);
  uint64_t seen = 0;
  int64_t at = max_;
  visit([&](int i, uint64_t c) {
    seen += c;
    if (seen < rank) return true;
    at = std::clamp(highest_equivalent(i), min_, max_);
    return false;
  });
  return at;
}

uint64_t histogram::count_below(int64_t ns) const {
  uint64_t n = 0;
  visit([&](int i, uint64_t c) {
    if (highest_equivalent(i) >= ns) return false;
    n += c;
    return true;
  });
  return n;
}

}  // namespace rig
