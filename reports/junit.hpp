#pragma once
// JUnit XML, the form GitLab, Jenkins and GitHub test reporters read: a run is a testsuite,
// and within it one testcase for the run itself (its injections verified and reverted, the
// report written) and one per [expect] check, each failure with its actual value.
#include <string>

#include "reports/report.hpp"

namespace rig {

// A run rig could not finish or read back: `why` is the error, `exit_code` rig's exit.
struct junit_run {
  const run_report* report = nullptr;  // null: no report.json to read
  std::string name;                    // the testsuite's name; empty: the report's scenario name
  int exit_code = 0;
  std::string why;                     // when there is no report: what went wrong
  const struct sweep_summary* sweep = nullptr;  // a sweep: its own testcase and one per check on the curve
};

std::string junit_xml(const std::vector<junit_run>& runs);
// Writes it to `path`; false (said on stderr) when the file cannot be written.
bool write_junit_file(const std::string& path, const std::vector<junit_run>& runs);

}  // namespace rig
