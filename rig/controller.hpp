#pragma once
#include <ostream>
#include <string>

#include "core/directory.hpp"
#include "rig/run_options.hpp"
#include "rig/scenario.hpp"

namespace rig {

// runs/<UTC stamp>-<name>, made now (a suffix when that exists), held by its descriptor.
directory make_run_dir(const std::string& base, const std::string& name);
// The directory name of a sweep, suite or repeat of `name`: NAME-KIND, or NAME when it ends with KIND.
inline std::string name_with_kind(const std::string& name, const std::string& kind) {
  return name.ends_with(kind) ? name : name + "-" + kind;
}

// Undoes the changes of killed rigs from their journals, saying what was done to `out`; true
// when every one was undone (a journal that was not is kept, and named).
bool cleanup_stale_journals(std::ostream& out);

// Runs a validated scenario end to end and returns the process exit code. SIGINT and
// SIGTERM must be blocked in every thread before this is called: the controller waits
// for them itself and then reverts, stops the target and writes the partial report.
int run_scenario(const scenario& sc, const run_options& opts);

}  // namespace rig
