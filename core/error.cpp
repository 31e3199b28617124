#include "core/error.hpp"

#include <algorithm>
#include <cstring>
#include <tuple>

namespace rig {

std::string source_pos::str() const {
  std::string s = file;
  if (line) {
    s += ":" + std::to_string(line);
    if (column) s += ":" + std::to_string(column);
  }
  if (!origin.empty()) s += s.empty() ? origin : ": " + origin;
  return s;
}

std::string diagnostics::str() const {
  std::string s;
  for (const auto& d : items_) {
    if (!s.empty()) s += "\n";
    s += d.str();
  }
  return s;
}

void diagnostics::sort_by_position() {
  std::stable_sort(items_.begin(), items_.end(), [](const diagnostic& a, const diagnostic& b) {
    return std::tie(a.where.line, a.where.column) < std::tie(b.where.line, b.where.column);
  });
}

system_error::system_error(std::string what, int err, std::string hint)
    : std::runtime_error(what + ": " + std::strerror(err) + (hint.empty() ? "" : " (" + hint + ")")), err_(err) {}

void throw_system_error(const std::string& what, int err, std::string hint) {
  throw system_error(what, err, std::move(hint));
}

size_t edit_distance(std::string_view a, std::string_view b) {
  // Damerau-Levenshtein (optimal string alignment): a swapped pair costs one edit.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    const size_t dist = edit_distance(word, c);
    if (dist < best_d) {
      best_d = dist;
      best = c;
    }
  }
  const size_t limit = std::max<size_t>(2, word.size() / 3);
  if (best_d <= limit) return best;
  // A report key written for a check metric: "throughput_ops_s" means "throughput".
  std::string prefix;
  for (const auto& c : candidates)
    if (c.size() >= 4 && c.size() > prefix.size() && word.size() > c.size() && word.substr(0, c.size()) == c &&
        word[c.size()] == '_')
      prefix = c;
  return prefix;
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string n = nearest(word, candidates);
  return n.empty() ? std::string{} : "; did you mean '" + n + "'?";
}

}  // namespace rig
