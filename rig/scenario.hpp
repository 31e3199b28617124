#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/options.hpp"
#include "rig/expect.hpp"

namespace rig {

// A [target], [workloads.NAME] or [injectors.NAME] table after both decode passes:
// the envelope (kind) and the kind's own options.
struct kind_decl {
  std::string name;
  std::string kind;
  option_values opts;
  source_pos where;
  bool may_be_unverified = false;  // injectors: an injection not verified in the target does not fail the run
};

struct phase_decl {
  std::string name;
  int64_t duration_ns = 0;
  std::vector<std::string> inject;
  source_pos where;
};

// The --set assignments that make every phase `duration` long (a duration as written, "1s").
std::vector<std::string> every_phase_lasts(const std::vector<phase_decl>& phases, const std::string& duration);

// [sweep]: the scenario run once per level of one parameter (an injector's or a workload's),
// each level `repeats` times; the measured phase's figures make the response curve.
struct sweep_decl {
  bool present = false;
  std::string section;  // "injectors" or "workloads"
  std::string name;     // which injector or workload
  std::string param;    // which of its keys
  std::vector<std::string> labels;    // each level as written ("5ms", "4")
  std::vector<std::string> literals;  // each as a TOML value for --set ("\"5ms\"", "4")
  int repeats = 1;
  bool baseline = false;  // an injector sweep: first a level with the injector not applied
  double knee_factor = 2;
  std::string phase;      // the measured phase (default: the last)
  int64_t phase_duration_ns = 0;  // every phase this long (0: as the phases say)
  opt_type param_type = opt_type::string;  // the swept key's type: how a level reads as a number
  std::vector<sweep_check> checks;         // [sweep] expect: on the curve
  bool levels_may_fail = false;            // a level's own failed [expect] checks do not fail the sweep
  source_pos where;
  // The --set assignments that make one level's run (index -1: the baseline).
  std::vector<std::string> overrides_for(int level, const std::vector<struct phase_decl>& phases) const;
};

struct scenario {
  std::string file, name, description, source_text;
  int64_t seed = 0;
  std::vector<std::string> tags;  // for `rig suite --filter TAG`
  bool require_all = true;  // false: injectors this host cannot run are skipped, not fatal
  kind_decl target;
  std::vector<kind_decl> workloads, injectors;
  std::vector<phase_decl> phases;
  std::vector<check_expr> checks;
  std::vector<std::string> overrides;  // the --set assignments applied
  bool allow_remote = false;           // --allow-remote: an endpoint beyond loopback was accepted
  sweep_decl sweep;

  const kind_decl* injector(const std::string& name) const;
};

// Names become file and directory names (the run directory "<stamp>-<name>", a sweep's levels
// in it): at most 64 characters keeps them well inside NAME_MAX (255).
constexpr size_t max_name_length = 64;
// 1 to max_name_length letters, digits, '_' or '-' (names, tags).
bool valid_name(const std::string& s);
// What valid_name asks, for messages: "1 to 64 letters, digits, '_' or '-'".
std::string name_rule();
// Each tag that is not a valid name, said at `where`.
void check_tags(const std::vector<std::string>& tags, const source_pos& where, diagnostics& diags);

// The keys of the scenario itself, of each [[phases]] entry and of [expect].
const option_table& top_options();
const option_table& phase_options();
const option_table& expect_options();
const option_table& sweep_options();

// Loads and validates; throws input_error holding every problem found.
scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {},
                       bool allow_remote = false);
// with_sweep false: the [sweep] table is ignored (one level's run of a sweep).
scenario parse_scenario(const std::string& text, const std::string& file,
                        const std::vector<std::string>& overrides = {}, bool with_sweep = true,
                        bool allow_remote = false);

}  // namespace rig
