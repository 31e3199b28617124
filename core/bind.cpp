#include "core/bind.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "core/units.hpp"

namespace rig {

std::string toml_literal(opt_type type, const std::string& text) {
  if (type == opt_type::boolean || type == opt_type::integer || type == opt_type::real) return text;
  std::ostringstream out;
  out << toml::value<std::string>(text);
  return out.str();
}

namespace {

std::vector<std::string> allowed_strings(const option_spec& s) {
  return {s.allowed.begin(), s.allowed.end()};
}

std::string join_allowed(const option_spec& s) {
  std::string out;
  for (auto a : s.allowed) out += (out.empty() ? "" : ", ") + std::string(a);
  return out;
}

struct converted {
  option_values::value v;
  std::string text;
};

// Converts one TOML node according to its spec; pushes a diagnostic and returns nullopt on error.
std::optional<converted> convert(const option_spec& s, const toml::node& node, const std::string& where_key,
                                 const source_pos& pos, diagnostics& diags) {
  auto fail = [&](const std::string& msg) {
    diags.add(pos, msg);
    return std::optional<converted>{};
  };
  auto range_check = [&](double base) -> bool {
    if (std::isnan(base)) {  // compares false with any bound: it would pass a range check
      diags.add(pos, fmt::format("{} is nan, not a number; must be {}", where_key, describe_range(s)));
      return false;
    }
    if (base < s.min || base > s.max) {
      diags.add(pos, fmt::format("{} is out of range; must be {}", where_key, describe_range(s)));
      return false;
    }
    return true;
  };
  switch (s.type) {
    case opt_type::boolean:
      if (!node.is_boolean()) return fail(where_key + " must be true or false");
      return converted{*node.value<bool>(), *node.value<bool>() ? "true" : "false"};
    case opt_type::integer: {
      if (!node.is_integer()) return fail(where_key + " must be an integer");
      const int64_t v = *node.value<int64_t>();
      if (!range_check(double(v))) return std::nullopt;
      return converted{v, std::to_string(v)};
    }
    case opt_type::real: {
      if (!node.is_number()) return fail(where_key + " must be a number");
      const double v = *node.value<double>();
      if (!range_check(v)) return std::nullopt;
      return converted{v, fmt::format("{:g}", v)};
    }
    case opt_type::string: {
      if (!node.is_string()) return fail(where_key + " must be a string");
      std::string v = *node.value<std::string>();
      if (!s.allowed.empty()) {
        bool ok = false;
        for (auto a : s.allowed) ok = ok || a == v;
        if (!ok)
          return fail(fmt::format("{} = '{}' is not one of {}{}", where_key, v, join_allowed(s),
                                  did_you_mean(v, allowed_strings(s))));
      }
      return converted{v, v};
    }
    case opt_type::strings: {
      const auto* arr = node.as_array();
      if (!arr) return fail(where_key + " must be a list of strings, e.g. [\"a\", \"b\"]");
      std::vector<std::string> out;
      std::string text;
      for (const auto& el : *arr) {
        if (!el.is_string()) return fail(where_key + " must hold only strings");
        out.push_back(*el.value<std::string>());
        text += (text.empty() ? "" : ",") + out.back();
      }
      return converted{out, text};
    }
    case opt_type::string_map: {
      const auto* tbl = node.as_table();
      if (!tbl) return fail(where_key + " must be a table of strings, e.g. { KEY = \"value\" }");
      option_values::string_map out;
      std::string text;
      for (auto&& [k, v] : *tbl) {
        if (!v.is_string()) return fail(where_key + ": '" + std::string(k.str()) + "' must be a string");
        out[std::string(k.str())] = *v.value<std::string>();
        text += (text.empty() ? "" : ",") + std::string(k.str()) + "=" + out[std::string(k.str())];
      }
      return converted{out, text};
    }
    default: {
      if (node.is_number())
        return fail(fmt::format("{} needs a unit: write it as a string, {}", where_key, unit_hint(s.type)));
      if (!node.is_string())
        return fail(fmt::format("{} must be a {} string, {}", where_key, type_name(s.type), unit_hint(s.type)));
      const std::string text = *node.value<std::string>();
      std::string why;
      auto base = option_number(s.type, text, &why);
      if (!base) return fail(fmt::format("{} = \"{}\": {}", where_key, text, why));
      if (!range_check(*base)) return std::nullopt;
      if (s.type == opt_type::duration || s.type == opt_type::size)
        return converted{int64_t(std::llround(*base)), text};
      return converted{*base, text};
    }
  }
}

}  // namespace

source_pos pos_of(const std::string& file, const toml::source_region& r) {
  return {file, uint32_t(r.begin.line), uint32_t(r.begin.column), {}};
}

source_pos locate(const bind_context& ctx, std::string_view key, const toml::source_region& region) {
  source_pos pos{ctx.file, uint32_t(region.begin.line), uint32_t(region.begin.column), {}};
  if (ctx.overrides) {
    auto it = ctx.overrides->find(ctx.path.empty() ? std::string(key) : ctx.path + "." + std::string(key));
    if (it != ctx.overrides->end()) pos = source_pos{ctx.file, 0, 0, it->second};
  }
  return pos;
}

option_values bind_options(const option_table& table, const toml::table& input, const bind_context& ctx,
                           diagnostics& all_diags, const std::vector<std::string_view>& envelope) {
  option_values out;
  diagnostics diags;  // sorted into source order before they join the caller's
  struct merge_on_exit {
    diagnostics& from;
    diagnostics& to;
    ~merge_on_exit() {
      from.sort_by_position();
      for (const auto& d : from.items()) to.add(d.where, d.message);
    }
  } merge{diags, all_diags};
  std::vector<std::string> names;
  for (const auto& s : table) names.emplace_back(s.name);
  std::vector<std::string> present;  // given, even if its value was refused: no "missing key" for it

  for (auto&& [key, node] : input) {
    const std::string k(key.str());
    bool skip = false;
    for (auto e : envelope) skip = skip || e == k;
    if (skip) continue;
    const source_pos pos = locate(ctx, k, key.source());
    const option_spec* spec = nullptr;
    for (const auto& s : table)
      if (s.name == k) spec = &s;
    if (!spec) {
      std::vector<std::string> candidates = names;
      for (auto e : envelope) candidates.emplace_back(e);
      diags.add(pos, fmt::format("unknown key '{}' in {}{}", k, ctx.section, did_you_mean(k, candidates)));
      continue;
    }
    present.push_back(k);
    const std::string where_key = fmt::format("'{}' in {}", k, ctx.section);
    if (auto c = convert(*spec, node, where_key, pos, diags)) out.set(k, std::move(c->v), std::move(c->text), pos, true);
  }

  for (const auto& s : table) {
    if (out.has(s.name) || std::find(present.begin(), present.end(), s.name) != present.end()) continue;
    if (s.required) {
      diags.add(ctx.table_pos, fmt::format("missing key '{}' in {} ({})", s.name, ctx.section, s.help));
      continue;
    }
    if (s.default_text.empty()) continue;
    // Defaults go through the same conversion as input, so a bad default is caught by tests.
    toml::table holder;
    auto node = parse_assigned_value(s.default_text, holder);
    diagnostics default_diags;
    if (auto c = convert(s, *node.node(), std::string(s.name), {}, default_diags))
      out.set(std::string(s.name), std::move(c->v), std::move(c->text), ctx.table_pos, false);
    else
      throw std::logic_error("bad default for option '" + std::string(s.name) + "': " + default_diags.str());
  }
  return out;
}

std::optional<std::pair<uint32_t, size_t>> toml_too_deep(std::string_view text) {
  uint32_t line = 1;
  bool in_basic = false, in_literal = false;  // inside a multi-line string ("""...""" or '''...''')
  for (size_t i = 0; i < text.size();) {
    const size_t end = std::min(text.find('\n', i), text.size());
    const std::string_view l = text.substr(i, end - i);
    size_t dots = 0;
    char quote = 0;
    for (size_t k = 0; k < l.size(); ++k) {
      const char c = l[k];
      if (l.compare(k, 3, "\"\"\"") == 0 && !in_literal && !quote) {
        in_basic = !in_basic;
        k += 2;
        continue;
      }
      if (l.compare(k, 3, "\'\'\'") == 0 && !in_basic && !quote) {
        in_literal = !in_literal;
        k += 2;
        continue;
      }
      if (in_basic || in_literal) continue;
      if (quote) {
        if (c == '\\' && quote == '"') ++k;  // an escaped character
        else if (c == quote) quote = 0;
        continue;
      }
      if (c == '#') break;
      if (c == '"' || c == '\'') quote = c;
      // A dot between two digits is a number's (1.5, 00:00:00.5), not a key's.
      else if (c == '.' && !(k > 0 && k + 1 < l.size() && std::isdigit(static_cast<unsigned char>(l[k - 1])) &&
                              std::isdigit(static_cast<unsigned char>(l[k + 1]))))
        ++dots;
    }
    if (dots > max_toml_dots) return std::pair{line, dots};
    i = end + 1;
    ++line;
  }
  return std::nullopt;
}

toml::node_view<toml::node> parse_assigned_value(std::string_view text, toml::table& holder) {
  if (toml_too_deep(text)) {  // kept as the text it is: never parsed
    holder = toml::table{};
    holder.insert_or_assign("v", std::string(text));
    return holder["v"];
  }
  try {
    holder = toml::parse("v = " + std::string(text));
    if (holder.contains("v")) return holder["v"];
  } catch (const toml::parse_error&) {
  }
  holder = toml::table{};
  holder.insert_or_assign("v", std::string(text));
  return holder["v"];
}

toml::table table_from_assignments(const std::vector<std::string>& assignments, diagnostics& diags,
                                   std::map<std::string, std::string>& origins, const std::string& origin) {
  toml::table out;
  for (const auto& a : assignments) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0) {
      diags.add({"", 0, 0, origin.empty() ? "--set " + a : origin}, "expected key=value in '" + a + "'");
      continue;
    }
    const std::string key = a.substr(0, eq);
    toml::table holder;
    auto node = parse_assigned_value(a.substr(eq + 1), holder);
    origins[key] = origin.empty() ? "--set " + a : origin;
    node.node()->visit([&](auto& n) { out.insert_or_assign(key, n); });
  }
  return out;
}

}  // namespace rig
