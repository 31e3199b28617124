#include "rig/run_outcome.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <iostream>

#include "core/units.hpp"
#include "reports/html.hpp"
#include "rig/expect.hpp"
#include "rig/run_options.hpp"

namespace rig {

namespace {

// "no successful reply, 3,971 errors (error_reply 3,971)" or "no request was tried".
std::string no_reply_text(const workload_phase_result& w) {
  const uint64_t n = w.error_total();
  if (n == 0) return "no request was tried";
  std::string kinds;
  for (const auto& [k, c] : w.errors)
    if (c) kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", k, format_count(double(c)));
  return fmt::format("no successful reply, {} error{} ({})", format_count(double(n)), n == 1 ? "" : "s", kinds);
}

// A check on the workload's outcome in that phase ("baseline.get.errors_pct > 99", "p.w.ops == 0",
// "capped.mem.counts.helper_died == 1"): the scenario expects it to get no reply there.
bool errors_expected(const scenario& sc, const std::string& phase, const std::string& workload) {
  for (const auto& c : sc.checks)
    if (c.path.size() >= 3 && c.path[0] == phase && c.path[1] == workload &&
        (c.path[2] == "errors" || c.path[2] == "errors_pct" || c.path[2] == "error_latency" ||
         c.path[2] == "rejected_latency" || c.path[2] == "status" || c.path[2] == "ops" || c.path[2] == "counts"))
      return true;
  return false;
}

}  // namespace

void phase_warnings(run_report& rep) {
  for (size_t p = 0; p < rep.phases.size(); ++p) {
    const auto& ph = rep.phases[p];
    for (const auto& w : ph.workloads) {
      if (p > 0 && w.ops == 0)
        rep.warnings.push_back(fmt::format("phase {}: workload {}: {}", ph.name, w.name, no_reply_text(w)));
      // An open loop whose connections (one request in flight each) cannot carry what was due:
      // the requests queue in rig, and the latency is rig's queue as much as the target's.
      const auto& d = rep.workloads.contains(w.name) ? rep.workloads[w.name] : nlohmann::json();
      const double seconds = ph.end_s - ph.start_s;
      if (!d.is_object() || d.value("load_model", nlohmann::json::object()).value("loop", "") != "open" ||
          !d.value("params", nlohmann::json::object()).contains("connections") || w.service.count == 0 ||
          w.due == 0 || !(seconds > 0) || !(w.service.mean > 0))
        continue;
      const double conns = d["params"]["connections"].get<double>(), offered = double(w.due) / seconds,
                   carry = conns * 1e6 / w.service.mean;
      if (offered <= 0.9 * carry) continue;
      rep.warnings.push_back(fmt::format(
          "phase {}: workload {}'s {} connection{} (one request in flight each) carry at most {}/s at its mean "
          "service time {}, and {}/s were due: over 90% busy, requests waited in rig (send lag p50 {}); {} "
          "connections would carry it",
          ph.name, w.name, conns, conns == 1 ? "" : "s", format_count(carry), format_duration_us(w.service.mean),
          format_count(offered), w.send_lag.count ? format_duration_us(w.send_lag.p50) : "-",
          format_count(std::ceil(offered * w.service.mean / 1e6 / 0.7))));
    }
  }
}

void judge(run_report& rep, const scenario& sc, const std::string& target_death) {
  if (rep.status != "ok") return;
  bool death_expected = false;
  for (const auto& c : sc.checks) death_expected = death_expected || expects_target_death(c);
  bool expectations_ok = true;
  const auto j = to_json(rep);
  for (const auto& c : sc.checks) {
    const auto o = evaluate_check(c, j);
    rep.expectations.push_back({c.text, o.ok, o.actual});
    expectations_ok = expectations_ok && o.ok;
  }
  // Every magnification divides by the first phase: a workload that got no reply there has no
  // baseline, and a run that says ok with nothing answered is not a result.
  if (!rep.phases.empty())
    for (const auto& w : rep.phases.front().workloads)
      if (w.ops == 0 && !errors_expected(sc, rep.phases.front().name, w.name)) {
        rep.expectations.push_back(
            {fmt::format("{} answers in the {} phase", w.name, rep.phases.front().name), false, no_reply_text(w)});
        expectations_ok = false;
      }
  // A process of the target's tree killed by a signal (a worker's SIGSEGV) fails the run as the
  // target's death does, unless a check counts crashes (events.crash, PHASE.target.crashes).
  bool crashes_expected = false;
  for (const auto& c : sc.checks)
    crashes_expected = crashes_expected || (c.path.size() == 2 && c.path[0] == "events" && c.path[1] == "crash") ||
                       (c.path.size() >= 3 && c.path[1] == "target" && c.path[2] == "crashes");
  std::vector<std::string> crashes;
  for (const auto& e : rep.events)
    if (e.kind == "crash") crashes.push_back(e.detail);
  if (!crashes.empty() && !crashes_expected) {
    const size_t shown = std::min<size_t>(crashes.size(), 3);
    rep.expectations.push_back(
        {"no process of the target crashes", false,
         fmt::format("{} crash{}: {}{}", crashes.size(), crashes.size() == 1 ? "" : "es",
                     fmt::join(crashes.begin(), crashes.begin() + long(shown), "; "),
                     crashes.size() > shown ? "; ..." : "")});
    expectations_ok = false;
  }
  if (!target_death.empty() && !death_expected) {
    rep.expectations.push_back({"the target runs until the run ends", false, target_death});
    expectations_ok = false;
  }
  std::string unverified;
  for (const auto& ph : rep.phases)
    for (const auto& i : ph.injections)
      if (!i.verified && !sc.injector(i.name)->may_be_unverified)
        unverified += fmt::format("{}{} in phase {}", unverified.empty() ? "" : ", ", i.name, ph.name);
  if (!unverified.empty()) {
    rep.status = "unverified";
    rep.failure = "not verified in the target: " + unverified +
                  " (the figures of those phases do not show that fault; may_be_unverified = true on an injector "
                  "accepts it)";
  } else if (!expectations_ok) {
    rep.status = "checks_failed";
  }
}

int write_and_say(run_report& rep, const directory& run_dir, bool remove_spill, const run_console& con,
                  int interrupted_by) {
  std::string not_written;
  try {
    run_dir.write_file("report.json", to_json(rep).dump(2) + "\n");
    if (remove_spill) run_dir.remove(phase_store::spill_name);  // all in report.json now
  } catch (const std::exception& e) {
    not_written = e.what();
    rep.status = "failed";
  }
  std::string html;
  if (not_written.empty()) {
    try {
      html = write_html_report(run_dir);
    } catch (const std::exception& e) {
      std::cerr << "rig: report.html not written: " << e.what() << "\n";
    }
  }
  auto& out = con.out;
  con.chatty << "\n" << terminal_summary(rep, con.tty);
  if (con.quiet) {  // quiet keeps what a person must see: warnings and failed checks
    for (const auto& ph : rep.phases)
      for (const auto& w : ph.workloads)
        if (!w.generator_warning.empty()) out << fmt::format("! {} {}: {}\n", ph.name, w.name, w.generator_warning);
    for (const auto& w : rep.warnings) out << "! " << w << "\n";
    for (const auto& e : rep.expectations)
      if (!e.ok) out << fmt::format("FAIL {}  (actual {})\n", e.expr, e.actual);
  }
  if (rep.status == "unverified") out << "UNVERIFIED " << rep.failure << "\n";
  if (rep.status == "failed" && !rep.failure.empty()) out << "FAILED " << rep.failure << "\n";
  if (!not_written.empty())
    out << fmt::format("\nstatus: failed   report.json not written: {}\n", not_written);
  else if (const std::string now = run_dir.current_path(); now != run_dir.path())
    // Moved mid-run (a name put in its place leads elsewhere): where the files rig wrote are.
    out << fmt::format("\nstatus: {}   report: {}/report.json\n  (the run directory was moved from {} during the "
                       "run; that name no longer leads to it)\n",
                       rep.status, now, run_dir.path());
  else
    out << fmt::format("\nstatus: {}   report: {}/report.json{}\n", rep.status, rep.run_dir,
                       html.empty() ? "" : "\n  open " + html);
  out.flush();

  if (interrupted_by) return 128 + interrupted_by;
  if (rep.status == "failed") return exit_runtime;
  if (rep.status == "unverified" || rep.status == "checks_failed") return exit_expectations;
  return exit_ok;
}

}  // namespace rig
