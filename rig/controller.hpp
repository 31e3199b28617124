#pragma once
#include <ostream>
#include <string>

#include "core/directory.hpp"
#include "rig/scenario.hpp"

namespace rig {

struct run_options {
  std::string out_base = "runs";  // run directories go under this
  std::string rig_exe;            // the binary that serves `rig target`
  std::ostream* out = nullptr;    // progress and summary (stdout when null)
  bool quiet = false;             // only warnings, failed checks and the status line (for CI)
  int progress_every_s = 5;       // when stdout is not a terminal: a plain progress line this often
  std::string* ran_in = nullptr;  // set to the run directory once it exists
  // require_all = false: the injectors found unable to run here ({name, kind, reason}); the
  // scenario given has them taken out already.
  nlohmann::json skipped_injectors = nlohmann::json::array();
  // A killed rig's changes still on the host: undo them first (as `rig cleanup` does) when its
  // journal proves it dead, instead of refusing with exit_stale_state.
  bool cleanup_first = false;
};

// runs/<UTC stamp>-<name>, made now (a suffix when that exists), held by its descriptor.
directory make_run_dir(const std::string& base, const std::string& name);

// Exit codes of `rig run` (DESIGN.md).
enum exit_code : int {
  exit_ok = 0,
  exit_expectations = 1,
  exit_usage = 2,
  exit_capability = 3,
  exit_runtime = 4,
  exit_stale_state = 5,  // the host still holds a killed rig's changes: `rig cleanup`, or --cleanup-first
};

// Undoes the changes of killed rigs from their journals, saying what was done to `out`; true
// when every one was undone (a journal that was not is kept, and named).
bool cleanup_stale_journals(std::ostream& out);

// Runs a validated scenario end to end and returns the process exit code. SIGINT and
// SIGTERM must be blocked in every thread before this is called: the controller waits
// for them itself and then reverts, stops the target and writes the partial report.
int run_scenario(const scenario& sc, const run_options& opts);

}  // namespace rig
