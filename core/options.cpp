#include "core/options.hpp"

#include <deque>
#include <mutex>

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/units.hpp"

namespace rig {

std::optional<double> option_number(opt_type t, std::string_view text, std::string* why) {
  switch (t) {
    case opt_type::duration:
      if (auto v = parse_duration_ns(text, why)) return double(*v);
      return std::nullopt;
    case opt_type::size:
      if (auto v = parse_size_bytes(text, why)) return double(*v);
      return std::nullopt;
    case opt_type::op_rate: return parse_op_rate(text, why);
    case opt_type::byte_rate: return parse_byte_rate(text, why);
    case opt_type::percent: return parse_percent(text, why);
    case opt_type::integer:
    case opt_type::real: {
      const std::string s(text);
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (end != s.c_str() && *end == '\0' && std::isfinite(v)) return v;
      if (why) *why = "expected a number";
      return std::nullopt;
    }
    default:
      if (why) *why = fmt::format("a {} has no numeric value", type_name(t));
      return std::nullopt;
  }
}

std::string_view type_name(opt_type t) {
  switch (t) {
    case opt_type::boolean: return "boolean";
    case opt_type::integer: return "integer";
    case opt_type::real: return "number";
    case opt_type::string: return "string";
    case opt_type::strings: return "list of strings";
    case opt_type::string_map: return "table of strings";
    case opt_type::duration: return "duration";
    case opt_type::size: return "size";
    case opt_type::op_rate: return "rate";
    case opt_type::byte_rate: return "bandwidth";
    case opt_type::percent: return "percentage";
  }
  return "?";
}

std::string_view unit_hint(opt_type t) {
  switch (t) {
    case opt_type::duration: return "e.g. \"250ms\"";
    case opt_type::size: return "e.g. \"64KiB\"";
    case opt_type::op_rate: return "e.g. \"2000/s\"";
    case opt_type::byte_rate: return "e.g. \"10MB/s\" or \"10Mbit/s\"";
    case opt_type::percent: return "e.g. \"25%\"";
    default: return "";
  }
}

std::string format_base(opt_type t, double v) {
  switch (t) {
    case opt_type::duration: return format_duration_us(v / 1e3);
    case opt_type::size: return format_bytes(v);
    case opt_type::op_rate: return fmt::format("{:g}/s", v);
    case opt_type::byte_rate: return format_bytes(v) + "/s";
    case opt_type::percent: return fmt::format("{:g}%", v * 100);
    case opt_type::integer: return fmt::format("{:.0f}", v);
    default: return fmt::format("{:g}", v);
  }
}

std::string describe_range(const option_spec& s) {
  const bool lo = std::isfinite(s.min), hi = std::isfinite(s.max);
  if (lo && hi) return format_base(s.type, s.min) + " .. " + format_base(s.type, s.max);
  if (lo) return ">= " + format_base(s.type, s.min);
  if (hi) return "<= " + format_base(s.type, s.max);
  return "";
}

bool option_values::is_set(std::string_view name) const {
  auto it = entries_.find(name);
  return it != entries_.end() && it->second.given;
}

const option_values::entry& option_values::at(std::string_view name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw std::logic_error("option '" + std::string(name) + "' has no value");
  return it->second;
}

void option_values::set(std::string name, value v, std::string text, source_pos where, bool given) {
  entries_[std::move(name)] = entry{std::move(v), std::move(text), std::move(where), given};
}

std::vector<std::string> option_values::given_keys() const {
  std::vector<std::string> out;
  for (const auto& [k, e] : entries_)
    if (e.given) out.push_back(k);
  return out;
}

nlohmann::json option_values::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, entry] : entries_) {
    // Named references: clang 14 cannot capture structured bindings (the fuzz build).
    const auto& k = key;
    const auto& e = entry;
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) {
            // Unit-bearing values keep the text the user wrote ("250ms").
            if (!e.text.empty() && !std::isdigit(static_cast<unsigned char>(e.text.back())))
              j[k] = e.text;
            else
              j[k] = v;
          } else {
            j[k] = v;
          }
        },
        e.v);
  }
  return j;
}

nlohmann::json option_values::to_wire() const {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [k, e] : entries_) {
    nlohmann::json v;
    std::visit([&](const auto& x) { v = x; }, e.v);
    j.push_back({{"key", k},
                 {"type", e.v.index()},
                 {"value", v},
                 {"text", e.text},
                 {"where", {e.where.file, e.where.line, e.where.column, e.where.origin}},
                 {"given", e.given}});
  }
  return j;
}

namespace {
template <size_t I = 0>
option_values::value value_from_wire(size_t type, const nlohmann::json& v) {
  if constexpr (I < std::variant_size_v<option_values::value>) {
    if (type == I) return v.get<std::variant_alternative_t<I, option_values::value>>();
    return value_from_wire<I + 1>(type, v);
  } else {
    throw std::runtime_error("option wire form: unknown value type " + std::to_string(type));
  }
}
}  // namespace

option_values option_values::from_wire(const nlohmann::json& j) {
  option_values o;
  for (const auto& e : j) {
    const auto& w = e.at("where");
    o.set(e.at("key").get<std::string>(), value_from_wire(e.at("type").get<size_t>(), e.at("value")),
          e.at("text").get<std::string>(),
          source_pos{w.at(0).get<std::string>(), w.at(1).get<uint32_t>(), w.at(2).get<uint32_t>(),
                     w.at(3).get<std::string>()},
          e.at("given").get<bool>());
  }
  return o;
}

option_table merge_variants(const option_table& common, const option_variants& variants) {
  // The joined help texts live as long as the tables that point at them: for the program.
  static std::mutex mu;
  static std::deque<std::string> texts;
  std::lock_guard lk(mu);
  option_table out = common;
  for (auto& o : out)
    if (o.name == variants.key) {
      o.allowed.clear();
      for (const auto& c : variants.cases) o.allowed.push_back(c.value);
    }
  std::map<std::string_view, std::string> help;  // key -> "latency: ...; slicer: ..."
  for (const auto& c : variants.cases)
    for (const auto& o : *c.options) {
      std::string& h = help[o.name];
      h += (h.empty() ? "" : "; ") + std::string(c.value) + ": " + std::string(o.help);
      if (std::none_of(out.begin(), out.end(), [&](const option_spec& x) { return x.name == o.name; })) {
        out.push_back(o);
        out.back().required = false;
      }
    }
  for (auto& o : out)
    if (auto h = help.find(o.name); h != help.end()) o.help = texts.emplace_back(h->second);
  return out;
}

void check_variant(const option_values& v, const option_variants& variants, const bind_context& ctx,
                   diagnostics& diags) {
  if (!v.has(variants.key)) return;
  const std::string& chosen = v.str(variants.key);
  const option_table* own = nullptr;
  std::vector<std::string_view> others;  // keys some other variant takes
  for (const auto& c : variants.cases) {
    if (c.value == chosen) own = c.options;
    for (const auto& o : *c.options)
      if (std::find(others.begin(), others.end(), o.name) == others.end()) others.push_back(o.name);  // shared: once
  }
  if (!own) return;  // not one of the values: binding said so
  std::vector<std::string> takes;
  for (const auto& o : *own) takes.emplace_back(o.name);
  for (std::string_view k : others)
    if (v.is_set(k) && std::find(takes.begin(), takes.end(), k) == takes.end()) {
      diags.add(v.where(k), fmt::format("'{}' in {} does not apply to {} '{}' (it takes: {})", k, ctx.section,
                                        variants.key, chosen, fmt::join(takes, ", ")));
    }
  for (const auto& o : *own)
    if (o.required && !v.has(o.name))
      diags.add(ctx.table_pos, fmt::format("{} '{}' in {} needs '{}'", variants.key, chosen, ctx.section, o.name));
}

}  // namespace rig
