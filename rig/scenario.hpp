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
};

struct phase_decl {
  std::string name;
  int64_t duration_ns = 0;
  std::vector<std::string> inject;
  source_pos where;
};

struct scenario {
  std::string file, name, description, source_text;
  int64_t seed = 0;
  kind_decl target;
  std::vector<kind_decl> workloads, injectors;
  std::vector<phase_decl> phases;
  std::vector<check_expr> checks;
  std::vector<std::string> overrides;  // the --set assignments applied

  const kind_decl* injector(const std::string& name) const;
};

// The keys of the scenario itself, of each [[phases]] entry and of [expect].
const option_table& top_options();
const option_table& phase_options();
const option_table& expect_options();

// Loads and validates; throws input_error holding every problem found.
scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});
scenario parse_scenario(const std::string& text, const std::string& file,
                        const std::vector<std::string>& overrides = {});

}  // namespace rig
