#include "core/units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <fmt/format.h>

namespace rig {

namespace {

struct unit {
  std::string_view suffix;
  double scale;
};

// Splits "  1.5 ms" into number and suffix; rejects missing numbers and signs.
bool split_number(std::string_view text, double& number, std::string_view& suffix, std::string* why) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' ||
                             text[i] == '_'))
    ++i;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E') && i + 1 < text.size() &&
      (std::isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '-' || text[i + 1] == '+')) {
    i += 2;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  }
  std::string digits;
  for (char c : text.substr(0, i))
    if (c != '_') digits.push_back(c);
  if (digits.empty()) {
    if (why) *why = text.empty() ? "empty value" : (text.front() == '-' ? "negative value" : "no number");
    return false;
  }
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
  if (ec != std::errc() || end != digits.data() + digits.size() || !std::isfinite(number)) {
    if (why) *why = "bad number '" + digits + "'";
    return false;
  }
  suffix = text.substr(i);
  while (!suffix.empty() && suffix.front() == ' ') suffix.remove_prefix(1);
  return true;
}

template <size_t N>
std::string pattern_of(const unit (&units)[N]) {
  std::string alt;
  for (const auto& u : units) {
    alt += alt.empty() ? "" : "|";
    for (char c : std::string_view(u.suffix)) {
      if (std::string_view("\\^$.|?*+()[]{}/").find(c) != std::string_view::npos) alt += '\\';
      alt += c;
    }
  }
  // split_number: digits, '.', '_', an optional exponent; spaces around.
  return "^ *[0-9._]*[0-9][0-9._]*([eE][-+]?[0-9]+)? *(" + alt + ") *$";
}

template <size_t N>
std::optional<double> parse_with(std::string_view text, const unit (&units)[N], std::string_view expected,
                                 std::string* why) {
  double number = 0;
  std::string_view suffix;
  if (!split_number(text, number, suffix, why)) return std::nullopt;
  if (suffix.empty()) {
    if (why) *why = "missing unit (expected " + std::string(expected) + ")";
    return std::nullopt;
  }
  for (const auto& u : units)
    if (suffix == u.suffix) return number * u.scale;
  if (why) *why = "unknown unit '" + std::string(suffix) + "' (expected " + std::string(expected) + ")";
  return std::nullopt;
}

constexpr unit duration_units[] = {{"ns", 1},         {"us", 1e3},  {"µs", 1e3},  {"ms", 1e6},
                                   {"s", 1e9},        {"m", 60e9},  {"min", 60e9}, {"h", 3600e9}};
constexpr unit size_units[] = {{"B", 1},          {"KB", 1e3},         {"KiB", 1024.0},
                               {"MB", 1e6},       {"MiB", 1048576.0},  {"GB", 1e9},
                               {"GiB", 1073741824.0}, {"TB", 1e12},    {"TiB", 1099511627776.0}};
constexpr unit byte_rate_units[] = {
    {"B/s", 1},         {"KB/s", 1e3},          {"KiB/s", 1024.0},  {"MB/s", 1e6},
    {"MiB/s", 1048576.0}, {"GB/s", 1e9},        {"GiB/s", 1073741824.0},
    {"bit/s", 1.0 / 8}, {"Kbit/s", 1e3 / 8},    {"Mbit/s", 1e6 / 8}, {"Gbit/s", 1e9 / 8},
    {"kbit/s", 1e3 / 8}, {"bps", 1.0 / 8},      {"Kbps", 1e3 / 8},  {"Mbps", 1e6 / 8}, {"Gbps", 1e9 / 8}};
constexpr unit op_rate_units[] = {{"/s", 1}, {"/ms", 1e3}, {"/min", 1.0 / 60}, {"/h", 1.0 / 3600},
                                  {"k/s", 1e3}, {"K/s", 1e3}, {"M/s", 1e6}};
constexpr unit percent_units[] = {{"%", 0.01}};

}  // namespace

std::optional<int64_t> parse_duration_ns(std::string_view text, std::string* why) {
  auto v = parse_with(text, duration_units, "ns, us, ms, s, min or h, e.g. \"250ms\"", why);
  if (!v) return std::nullopt;
  if (*v > 9.2e18) {
    if (why) *why = "duration too large";
    return std::nullopt;
  }
  return int64_t(std::llround(*v));
}

std::optional<uint64_t> parse_size_bytes(std::string_view text, std::string* why) {
  auto v = parse_with(text, size_units, "B, KB, KiB, MB, MiB, GB or GiB, e.g. \"64KiB\"", why);
  if (!v) return std::nullopt;
  if (*v > 1.8e19) {
    if (why) *why = "size too large";
    return std::nullopt;
  }
  return uint64_t(std::llround(*v));
}

std::optional<double> parse_op_rate(std::string_view text, std::string* why) {
  return parse_with(text, op_rate_units, "a count per time unit, e.g. \"2000/s\"", why);
}

std::optional<double> parse_byte_rate(std::string_view text, std::string* why) {
  return parse_with(text, byte_rate_units, "bytes or bits per second, e.g. \"10MB/s\" or \"10Mbit/s\"", why);
}

std::optional<double> parse_percent(std::string_view text, std::string* why) {
  return parse_with(text, percent_units, "a percentage, e.g. \"25%\"", why);
}

std::string unit_pattern(std::string_view kind) {
  if (kind == "duration") return pattern_of(duration_units);
  if (kind == "size") return pattern_of(size_units);
  if (kind == "op_rate") return pattern_of(op_rate_units);
  if (kind == "byte_rate") return pattern_of(byte_rate_units);
  if (kind == "percent") return pattern_of(percent_units);
  throw std::invalid_argument("unit_pattern: no unit kind '" + std::string(kind) + "'");
}

std::string format_duration_us(double us) {
  if (std::isnan(us)) return "-";
  if (us < 1000) return fmt::format("{:.1f}us", us);
  if (us < 1e6) return fmt::format("{:.2f}ms", us / 1e3);
  return fmt::format("{:.2f}s", us / 1e6);
}

std::string format_bytes(double bytes) {
  if (bytes < 1024) return fmt::format("{:.0f}B", bytes);
  if (bytes < 1048576) return fmt::format("{:.1f}KiB", bytes / 1024);
  if (bytes < 1073741824.0) return fmt::format("{:.1f}MiB", bytes / 1048576);
  return fmt::format("{:.2f}GiB", bytes / 1073741824.0);
}

std::string format_count(double n) {
  if (std::isnan(n)) return "-";
  std::string digits = fmt::format("{:.0f}", n);
  std::string out;
  const size_t start = (!digits.empty() && digits[0] == '-') ? 1 : 0;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > start && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string format_ratio(double x, int decimals) {
  if (std::isnan(x)) return "–";
  return fmt::format("{:.{}f}×", x, decimals);
}

bool holds(double a, const std::string& op, double b) {
  if (op == "<") return a < b;
  if (op == "<=") return a <= b;
  if (op == ">") return a > b;
  if (op == ">=") return a >= b;
  if (op == "==") return a == b;
  return op == "!=" && a != b;
}

std::string trim(std::string s) {
  while (!s.empty() && s.front() == ' ') s.erase(0, 1);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

bool split_comparison(const std::string& text, std::string& lhs, std::string& op, std::string& rhs) {
  size_t op_at = std::string::npos;
  for (const char* o : {"<=", ">=", "==", "!=", "<", ">"})
    if (auto at = text.find(o); at != std::string::npos && at < op_at) {
      op_at = at;
      op = o;
    }
  if (op_at == std::string::npos) return false;
  if (op_at + 1 < text.size() && text[op_at + 1] == '=' && op.size() == 1) op += '=';
  lhs = trim(text.substr(0, op_at));
  rhs = trim(text.substr(op_at + op.size()));
  return true;
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {  // U+0080-U+009F: C1 controls (CSI among them)
      out += fmt::format("\\u00{:02x}", static_cast<unsigned char>(text[++i]));
    } else {
      out += char(c);
    }
  }
  return out;
}

}  // namespace rig
