#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rig {

// Units are always written ("250ms", "64KiB", "10MB/s", "10Mbit/s", "2000/s", "25%").
// Each parser returns the value in base units (ns, bytes, per second, fraction) or
// nullopt with `why` saying what was expected.
std::optional<int64_t> parse_duration_ns(std::string_view text, std::string* why = nullptr);
std::optional<uint64_t> parse_size_bytes(std::string_view text, std::string* why = nullptr);
std::optional<double> parse_op_rate(std::string_view text, std::string* why = nullptr);     // ops/s
std::optional<double> parse_byte_rate(std::string_view text, std::string* why = nullptr);   // bytes/s
std::optional<double> parse_percent(std::string_view text, std::string* why = nullptr);     // 0..1

// A regular expression (ECMAScript, as JSON Schema uses) that matches exactly the texts the
// parser of `kind` reads: duration, size, op_rate, byte_rate or percent. For editors.
std::string unit_pattern(std::string_view kind);

// Spaces off both ends.
std::string trim(std::string s);
// "<lhs> <op> <rhs>" split at the earliest comparison operator (<=, >=, ==, !=, <, >; the longer
// one where two start at the same place), both sides trimmed; false when there is none.
bool split_comparison(const std::string& text, std::string& lhs, std::string& op, std::string& rhs);
// `a op b` for an operator split_comparison found; false for any other op.
bool holds(double a, const std::string& op, double b);

// A text read from a file (a report's names, a scenario's description), safe to print: control
// characters other than newline and tab (an escape sequence, a carriage return, a C1 control)
// become visible escapes ("\x1b", "\u009b"), so no file can drive the terminal that shows it.
std::string printable(std::string_view text);

// Human-readable forms for terminal output.
// No value (NaN) is "-" for a duration or a count.
std::string format_duration_us(double us);    // "87.0us", "44.1ms", "1.20s"
std::string format_bytes(double bytes);       // "512B", "64.0KiB", "1.5MiB"
std::string format_count(double n);           // "12,345"
std::string format_ratio(double x, int decimals = 1);  // "3.5×"; "–" when there is no value (NaN)

}  // namespace rig
