#pragma once
// TOML to option values: binding a table against an option table, --set assignments, and
// values written back as TOML. The one header that brings toml++ in: kinds' own headers
// (option tables, checks) do not need it.
#include <map>
#include <optional>
#include <utility>
#include <string>
#include <string_view>
#include <toml++/toml.h>
#include <vector>

#include "core/options.hpp"

namespace rig {

// toml++ follows a dotted key ([a.b.c], a.b.c = 1) one level of recursion per part: 50,000
// parts in a 100 KB file overflowed the stack (rig died of SIGSEGV). The first line with more
// than max_toml_dots dots outside strings and numbers, and how many, before a text is parsed.
constexpr size_t max_toml_dots = 128;
std::optional<std::pair<uint32_t, size_t>> toml_too_deep(std::string_view text);

// A value as --set writes it: strings (and unit-bearing text) quoted, numbers and booleans bare.
std::string toml_literal(opt_type type, const std::string& text);

// A TOML node's position in `file`, for errors.
source_pos pos_of(const std::string& file, const toml::source_region& r);
// Where a key is, for errors: its line and column, or the --set text that gave it.
source_pos locate(const bind_context& ctx, std::string_view key, const toml::source_region& region);

// Binds a TOML table against a table of options. Every problem goes to `diags`; keys in
// `envelope` (e.g. "kind") belong to the caller and are skipped.
option_values bind_options(const option_table& table, const toml::table& input, const bind_context& ctx,
                           diagnostics& diags, const std::vector<std::string_view>& envelope = {"kind"});

// Parses key=value pairs (values as TOML, else as strings) into a table, for --set.
// Errors name "--set <assignment>", or `origin` when given (e.g. "--toxic latency:...").
toml::table table_from_assignments(const std::vector<std::string>& assignments, diagnostics& diags,
                                   std::map<std::string, std::string>& origins, const std::string& origin = {});
// Parses one "value" the way --set does: a TOML value, or a bare string.
toml::node_view<toml::node> parse_assigned_value(std::string_view text, toml::table& holder);

}  // namespace rig
