#pragma once
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/error.hpp"

namespace rig {

// One declaration per key drives TOML binding, validation, `rig list` and defaults
// (fio's option tables).
enum class opt_type { boolean, integer, real, string, strings, string_map, duration, size, op_rate, byte_rate, percent };

struct option_spec {
  std::string_view name;
  opt_type type;
  std::string_view default_text;  // empty: no default (the key is optional unless required)
  std::string_view help;
  double min = -std::numeric_limits<double>::infinity();  // in base units: ns, bytes, 1/s, fraction
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string_view> allowed = {};
  bool required = false;
};

using option_table = std::vector<option_spec>;

std::string_view type_name(opt_type t);
// Written text as a number in the type's base units (ns, bytes, 1/s, fraction; integers and
// reals as themselves); nullopt with `why` when it is not one, or the type has none (strings).
std::optional<double> option_number(opt_type t, std::string_view text, std::string* why = nullptr);
std::string format_base(opt_type t, double v);  // a number in base units, written with its unit ("5.00ms")    // "duration", "size", ...
std::string_view unit_hint(opt_type t);    // "e.g. \"250ms\""
std::string describe_range(const option_spec& s);  // "1 .. 100000", "" when unbounded

class option_values {
 public:
  using string_map = std::map<std::string, std::string>;
  using value = std::variant<bool, int64_t, double, std::string, std::vector<std::string>, string_map>;

  bool has(std::string_view name) const { return entries_.find(name) != entries_.end(); }
  bool is_set(std::string_view name) const;  // given in the input, not defaulted
  bool boolean(std::string_view name) const { return std::get<bool>(at(name).v); }
  int64_t integer(std::string_view name) const { return std::get<int64_t>(at(name).v); }
  int64_t duration_ns(std::string_view name) const { return std::get<int64_t>(at(name).v); }
  uint64_t bytes(std::string_view name) const { return uint64_t(std::get<int64_t>(at(name).v)); }
  double real(std::string_view name) const { return std::get<double>(at(name).v); }
  double per_second(std::string_view name) const { return std::get<double>(at(name).v); }
  double fraction(std::string_view name) const { return std::get<double>(at(name).v); }
  const std::string& str(std::string_view name) const { return std::get<std::string>(at(name).v); }
  const std::vector<std::string>& strings(std::string_view name) const {
    return std::get<std::vector<std::string>>(at(name).v);
  }
  const string_map& map(std::string_view name) const { return std::get<string_map>(at(name).v); }
  const std::string& text(std::string_view name) const { return at(name).text; }  // as written
  source_pos where(std::string_view name) const { return at(name).where; }

  void set(std::string name, value v, std::string text, source_pos where, bool given);
  std::vector<std::string> given_keys() const;  // keys written by the user, in name order
  nlohmann::json to_json() const;                // every key, unit-bearing values as written
  // Lossless (values, texts, positions), for a helper process that runs a workload from them.
  nlohmann::json to_wire() const;
  static option_values from_wire(const nlohmann::json& j);

 private:
  struct entry {
    value v;
    std::string text;
    source_pos where;
    bool given = false;
  };
  const entry& at(std::string_view name) const;
  std::map<std::string, entry, std::less<>> entries_;
};

// Where the input came from, for error positions. `overrides` maps a dotted key path to
// the command-line text that set it ("--set workloads.rr.rate=1000/s").
struct bind_context {
  std::string file;
  std::string section;  // as the user sees it: "[workloads.rr]"
  std::string path;     // dotted path of the table: "workloads.rr"
  const std::map<std::string, std::string>* overrides = nullptr;
  source_pos table_pos;  // for missing-key errors
  bool allow_remote = false;  // --allow-remote: addresses beyond loopback are the user's explicit choice
};

// A key whose value picks a variant with keys of its own (the proxy injector's toxic).
struct option_variant {
  std::string_view value;       // "latency"
  std::string_view summary;
  const option_table* options;  // its own keys
};
struct option_variants {
  std::string_view key;  // "toxic"
  std::vector<option_variant> cases;
};

// The table a variant-taking kind binds against: `common` (whose `key` entry gets the
// variants' values as its allowed ones), then each variant's keys once. A key several
// variants share is required by none here and carries each one's help ("slicer: ...;
// slow_close: ...").
option_table merge_variants(const option_table& common, const option_variants& variants);
// What merge_variants cannot say: a key that belongs to another variant, or one the chosen
// variant requires and the input lacks.
void check_variant(const option_values& v, const option_variants& variants, const bind_context& ctx,
                   diagnostics& diags);

// A kind by name in a registry (target, workload and injector kinds all have .name).
template <typename Kind>
const Kind* find_kind(const std::vector<Kind>& kinds, std::string_view name) {
  for (const auto& k : kinds)
    if (k.name == name) return &k;
  return nullptr;
}

}  // namespace rig
