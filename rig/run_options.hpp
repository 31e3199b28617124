#pragma once
// How `rig run` was asked to run, and what its exit code says.
#include <ostream>
#include <string>

namespace rig {

struct run_options {
  std::string out_base = "runs";  // run directories go under this
  std::string rig_exe;            // the binary that serves `rig target`
  std::ostream* out = nullptr;    // progress and summary (stdout when null)
  bool quiet = false;             // only warnings, failed checks and the status line (for CI)
  int progress_every_s = 5;       // when stdout is not a terminal: a plain progress line this often
  std::string* ran_in = nullptr;  // set to the run directory once it exists
  // A killed rig's changes still on the host: undo them first (as `rig cleanup` does) when its
  // journal proves it dead, instead of refusing with exit_stale_state.
  bool cleanup_first = false;
};

// Exit codes of `rig run` (DESIGN.md).
enum exit_code : int {
  exit_ok = 0,
  exit_expectations = 1,
  exit_usage = 2,
  exit_capability = 3,
  exit_runtime = 4,
  exit_stale_state = 5,  // the host still holds a killed rig's changes: `rig cleanup`, or --cleanup-first
};

}  // namespace rig
