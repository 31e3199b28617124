#include "reports/junit.hpp"

#include <fmt/format.h>

#include "core/files.hpp"
#include <iostream>

#include "reports/html_common.hpp"
#include "reports/sweep_report.hpp"

namespace rig {

namespace {

struct testcase {
  std::string name;
  double time_s = 0;
  std::string failure_type, failure_message, detail;  // empty type: passed
};

// A check, a run's or a sweep's: failed with what was expected and what was found.
testcase check_case(const expectation_row& e) {
  return {"check: " + e.expr, 0, e.ok ? "" : "check_failed",
          e.ok ? "" : fmt::format("expected {}, actual {}", e.expr, e.actual), ""};
}

// The run itself: it passes when every injection was verified and reverted and rig finished.
testcase run_case(const run_report& r, int exit_code) {
  testcase t{"run", 0, "", "", ""};
  if (!r.phases.empty()) t.time_s = r.phases.back().end_s;
  std::string detail;
  for (const auto& p : r.phases)
    for (const auto& i : p.injections) {
      if (!i.verified) detail += fmt::format("{}: {} ({}) not verified: {}\n", p.name, i.name, i.kind, i.verification);
      if (i.reverted && !*i.reverted)
        detail += fmt::format("{}: {} ({}) not reverted: {}\n", p.name, i.name, i.kind, i.revert);
    }
  if (r.status == "ok" || r.status == "checks_failed") {
    if (detail.empty()) return t;  // the checks' own cases say whether they held
  }
  t.failure_type = r.status;
  t.failure_message = fmt::format("status {} (exit {}){}", r.status, exit_code, r.failure.empty() ? "" : ": " + r.failure);
  t.detail = detail;
  return t;
}

// A sweep: it passes when every level ran, every injection was verified and no level failed its
// own checks (unless levels_may_fail); then a testcase per check on the curve.
std::vector<testcase> sweep_cases(const sweep_summary& s, int exit_code) {
  std::vector<testcase> cases;
  testcase t{"sweep", 0, "", "", ""};
  std::string detail;
  for (const auto& l : s.levels)
    for (const auto& f : l.check_failures) detail += fmt::format("{} = {}: {}\n", s.param, l.label, f);
  const bool levels_failed = s.levels_fail();
  if (s.status == "failed" || s.status == "interrupted" || levels_failed) {
    t.failure_type = s.status;
    t.failure_message = fmt::format("status {} (exit {}){}", s.status, exit_code,
                                    levels_failed ? ": a level failed its own checks" : "");
    t.detail = detail;
  }
  cases.push_back(t);
  for (const auto& e : s.expectations) cases.push_back(check_case(e));
  return cases;
}

std::string suite(const std::string& name, const std::vector<testcase>& cases, bool error) {
  size_t failures = 0;
  double time = 0;
  for (const auto& c : cases) {
    failures += !c.failure_type.empty();
    time += c.time_s;
  }
  std::string o = fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" time=\"{:.3f}\">\n",
                              html::esc(name), cases.size(), error ? 0 : failures, error ? failures : 0, time);
  for (const auto& c : cases) {
    o += fmt::format("    <testcase classname=\"rig.{}\" name=\"{}\" time=\"{:.3f}\"", html::esc(name),
                     html::esc(c.name), c.time_s);
    if (c.failure_type.empty()) {
      o += "/>\n";
      continue;
    }
    o += fmt::format(">\n      <{} type=\"{}\" message=\"{}\">{}</{}>\n    </testcase>\n", error ? "error" : "failure",
                     html::esc(c.failure_type), html::esc(c.failure_message), html::esc(c.detail),
                     error ? "error" : "failure");
  }
  return o + "  </testsuite>\n";
}

}  // namespace

std::string junit_xml(const std::vector<junit_run>& runs) {
  std::string body;
  size_t tests = 0, failures = 0, errors = 0;
  for (const auto& run : runs) {
    std::vector<testcase> cases;
    bool error = false;
    std::string name = run.name;
    if (run.sweep) {
      cases = sweep_cases(*run.sweep, run.exit_code);
    } else if (!run.report) {
      // rig could not run it (invalid, refused by the host) or its report is unreadable.
      cases.push_back({"run", 0, "error", fmt::format("exit {}: {}", run.exit_code, run.why), run.why});
      error = true;
    } else {
      const run_report& r = *run.report;
      if (name.empty()) name = r.scenario_name;
      cases.push_back(run_case(r, run.exit_code));
      for (const auto& e : r.expectations) cases.push_back(check_case(e));
    }
    tests += cases.size();
    for (const auto& c : cases) (error ? errors : failures) += !c.failure_type.empty();
    body += suite(name, cases, error);
  }
  return fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"rig\" tests=\"{}\" failures=\"{}\" "
                     "errors=\"{}\">\n{}</testsuites>\n",
                     tests, failures, errors, body);
}

bool write_junit_file(const std::string& path, const std::vector<junit_run>& runs) {
  try {
    write_user_file(path, junit_xml(runs));  // never through a link another user put there
    return true;
  } catch (const std::exception& e) {
    std::cerr << "rig: cannot write --junit " << path << ": " << e.what() << "\n";
    return false;
  }
}

}  // namespace rig
