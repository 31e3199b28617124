#pragma once
// How `rig run` was asked to run, and what its exit code says.
#include <ostream>
#include <string>

namespace rig {

struct run_options {
  std::string out_base = "runs";  // run directories go under this
  std::string run_dir;            // --run-dir: exactly this directory (made; refused if it exists), not a stamped one
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

// What an exit code says without a report (a suite's row): ok, checks_failed (exit 1: a failed
// check or an unverified injection), invalid, refused (the host cannot run it), stale_state,
// interrupted, failed.
inline std::string status_of_exit(int code) {
  switch (code) {
    case exit_ok: return "ok";
    case exit_expectations: return "checks_failed";
    case exit_usage: return "invalid";
    case exit_capability: return "refused";
    case exit_stale_state: return "stale_state";
    case 130:
    case 143: return "interrupted";
    default: return "failed";
  }
}

// The exit code report.json's status stands for.
inline int exit_of_status(const std::string& status) {
  if (status == "ok") return exit_ok;
  if (status == "checks_failed" || status == "unverified") return exit_expectations;
  if (status == "interrupted") return 130;
  return exit_runtime;
}

}  // namespace rig
