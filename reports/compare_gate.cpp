#include "reports/compare_gate.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/draw.h"
#include "core/error.hpp"
#include "core/units.hpp"
#include "reports/html_common.hpp"

namespace rig {

namespace {

[[noreturn]] void refuse(const std::string& text, size_t at, const std::string& why) {
  throw input_error(fmt::format("--fail-if \"{}\": at character {}: {}", text, at + 1, why));
}

// The 2.5th and 97.5th percentiles of median(B*)/median(A*) over resamples of each side's runs.
std::pair<double, double> bootstrap(const std::vector<double>& a, const std::vector<double>& b, int resamples,
                                    uint64_t seed) {
  draw_stream rng(rig_stream_seed(seed, "compare.bootstrap", 0));
  std::vector<double> ratios, sa(a.size()), sb(b.size());
  for (int i = 0; i < resamples; ++i) {
    for (auto& x : sa) x = a[rng.below(a.size())];
    for (auto& x : sb) x = b[rng.below(b.size())];
    const double ma = spread_stat::of(sa).median;
    if (ma > 0) ratios.push_back(spread_stat::of(sb).median / ma);
  }
  if (ratios.size() < size_t(resamples) / 2) return {NAN, NAN};
  std::sort(ratios.begin(), ratios.end());
  const auto at = [&](double q) { return ratios[std::min(ratios.size() - 1, size_t(q * double(ratios.size())))]; };
  return {at(0.025), at(0.975)};
}

// The condition names this row's figure, phase and workload ("" or "*": any).
bool names_row(const gate_condition& c, const ratio_row& r) {
  return c.figure == r.figure && (c.phase.empty() || c.phase == "*" || c.phase == r.phase) &&
         (c.workload.empty() || c.workload == "*" || c.workload == r.workload);
}
bool applies(const gate_condition& c, const ratio_row& r) { return !c.absolute && names_row(c, r); }
bool applies_absolute(const gate_condition& c, const ratio_row& r) { return c.absolute && names_row(c, r); }

// Past the threshold: the whole interval when there is one, else the ratio itself.
bool past(const gate_condition& c, const ratio_row& r) {
  const bool up = c.op[0] == '>';
  return holds(std::isnan(r.lo) ? r.ratio : (up ? r.lo : r.hi), c.op, c.ratio);
}

std::string ratio_text(double v) { return std::isnan(v) ? "-" : format_ratio(v, 2); }

std::string interval_text(const ratio_row& r) {
  return std::isnan(r.lo) ? "-" : fmt::format("[{:.2f}×, {:.2f}×]", r.lo, r.hi);
}

std::string row_name(const ratio_row& r) {
  return (r.level.empty() ? "" : "[" + r.level + "] ") + r.phase + "." + r.workload + "." + r.figure;
}

std::string describe(const run_group& g) {
  const size_t n = g.runs.size();
  if (g.kind == "run") return g.dir + " (one run)";
  return fmt::format("{} ({}, {} run{})", g.dir, g.kind, n, n == 1 ? "" : "s");
}

}  // namespace

gate_condition parse_fail_if(const std::string& text) {
  gate_condition c;
  c.text = text;
  std::string lhs, rhs;
  if (!split_comparison(text, lhs, c.op, rhs))
    refuse(text, 0, "expected FIGURE > RATIOx or FIGURE < RATIOx, e.g. \"p99 > 1.20x\"");
  const size_t op_at = text.find(c.op);
  if (c.op == "==" || c.op == "!=") refuse(text, op_at, "a gate compares with >, >=, < or <= (a ratio is never exactly equal)");
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    const size_t dot = lhs.find('.', at);
    parts.push_back(lhs.substr(at, dot - at));
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  if (parts.size() != 1 && parts.size() != 3)
    refuse(text, 0, "expected FIGURE or PHASE.WORKLOAD.FIGURE ('*' for every phase or workload) before the comparison");
  c.figure = parts.back();
  if (parts.size() == 3) {
    c.phase = parts[0];
    c.workload = parts[1];
  }
  std::vector<std::string> figs = group_figures();
  figs.push_back("errors_pct");
  if (std::find(figs.begin(), figs.end(), c.figure) == figs.end())
    refuse(text, lhs.rfind(c.figure),
           fmt::format("no figure '{}' (figures: p50, p90, p99, p999, mean, max, throughput, errors_pct){}", c.figure,
                       did_you_mean(c.figure, figs)));
  const size_t rhs_at = text.find(rhs, op_at);
  if (c.figure == "errors_pct") {
    c.absolute = true;
    if (!rhs.empty() && rhs.back() == '%') rhs.pop_back();
    char* end = nullptr;
    c.limit = std::strtod(rhs.c_str(), &end);
    if (rhs.empty() || *end != '\0' || !(c.limit >= 0 && c.limit <= 100))
      refuse(text, rhs_at,
             "errors_pct is held to a share of B's requests in percent, 0 to 100 (e.g. errors_pct > 1), not a ratio "
             "to A (whose share is often 0)");
    return c;
  }
  if (rhs.empty() || (rhs.back() != 'x' && rhs.back() != 'X'))
    refuse(text, rhs_at, "the threshold is a ratio of B to A written with an x, e.g. 1.20x");
  rhs.pop_back();
  char* end = nullptr;
  c.ratio = std::strtod(rhs.c_str(), &end);
  if (rhs.empty() || *end != '\0' || !(c.ratio > 0) || !std::isfinite(c.ratio))
    refuse(text, rhs_at, "the ratio must be a positive number, e.g. 1.20x");
  return c;
}

size_t compare_verdict::regressions() const {
  return size_t(std::count_if(rows.begin(), rows.end(), [](const ratio_row& r) { return !r.failed.empty(); }));
}

compare_verdict compare_groups(const run_group& a, const run_group& b, const std::vector<gate_condition>& conditions,
                               int resamples) {
  if ((a.kind == "sweep") != (b.kind == "sweep"))
    throw input_error(fmt::format("{} is a {} and {} a {}: compare a sweep with a sweep, runs or repeats with each other",
                                  a.dir, a.kind, b.dir, b.kind));
  compare_verdict v;
  v.a_desc = describe(a);
  v.b_desc = describe(b);
  // The rows: every (level, phase, workload) of A, in A's order. One that B lacks (not run, cut
  // short, an injection not verified) is compared too: it has no value in B.
  const std::vector<group_key> keys = group_keys(a);
  std::vector<std::string> phases, workloads;
  for (const auto& k : keys) {
    if (std::find(phases.begin(), phases.end(), k.phase) == phases.end()) phases.push_back(k.phase);
    if (std::find(workloads.begin(), workloads.end(), k.workload) == workloads.end()) workloads.push_back(k.workload);
  }
  for (const auto& c : conditions) {
    if (!c.phase.empty() && c.phase != "*" && std::find(phases.begin(), phases.end(), c.phase) == phases.end())
      throw input_error(fmt::format("--fail-if \"{}\": no phase '{}' in {}{}", c.text, c.phase, a.dir,
                                    did_you_mean(c.phase, phases)));
    if (!c.workload.empty() && c.workload != "*" &&
        std::find(workloads.begin(), workloads.end(), c.workload) == workloads.end())
      throw input_error(fmt::format("--fail-if \"{}\": no workload '{}' in {}{}", c.text, c.workload, a.dir,
                                    did_you_mean(c.workload, workloads)));
  }
  std::vector<std::string> figures;
  for (const auto& c : conditions)
    if (std::find(figures.begin(), figures.end(), c.figure) == figures.end()) figures.push_back(c.figure);
  if (figures.empty()) figures = {"p50", "p99", "throughput"};
  bool intervals = false;
  uint64_t seed = 1;
  for (const auto& k : keys)
    for (const auto& f : figures) {
      ratio_row r{k.level, k.phase, k.workload, f};
      const auto va = figure_values(a, k, f), vb = figure_values(b, k, f);
      r.n_a = va.size();
      r.n_b = vb.size();
      r.a = spread_stat::of(va).median;
      r.b = spread_stat::of(vb).median;
      bool applicable = false;
      for (const auto& c : conditions) applicable = applicable || names_row(c, r);
      if (!conditions.empty() && !applicable) continue;
      const bool a_whole = std::any_of(a.runs.begin(), a.runs.end(), [&](const group_run& x) {
        return x.level == k.level && whole_phase(x.report, k.phase, k.workload);
      });
      if (!a_whole) {  // no baseline to hold B to: a gate that cannot decide does not pass
        r.note = "A has no whole phase with its injections verified here: nothing to compare B with";
        for (const auto& c : conditions)
          if (applies(c, r)) r.failed.push_back(c.text);
      } else if (va.empty()) {
        r.note = "A has no value (nothing answered): no ratio";
      } else if (vb.empty()) {  // nothing measured where A measured: never a pass
        r.note = "B has no value where A has one: nothing answered, or the phase did not run whole with its "
                 "injections verified";
        for (const auto& c : conditions)
          if (applies(c, r)) r.failed.push_back(c.text);
      } else if (!(r.a > 0)) {
        r.note = "A is 0: no ratio";
      } else {
        r.ratio = r.b / r.a;
        if (va.size() >= 2 && vb.size() >= 2) {
          std::tie(r.lo, r.hi) = bootstrap(va, vb, resamples, seed++);
          intervals = true;
        }
        for (const auto& c : conditions)
          if (applies(c, r) && past(c, r)) r.failed.push_back(c.text);
      }
      for (const auto& c : conditions)  // B's own share: A need not have one
        if (applies_absolute(c, r)) {
          if (vb.empty()) {
            r.note = "B tried no request here: no share to hold to the limit";
            r.failed.push_back(c.text);
          } else if (holds(r.b, c.op, c.limit)) {
            r.failed.push_back(c.text);
          }
        }
      v.rows.push_back(std::move(r));
    }
  v.method = intervals ? fmt::format("B/A is the ratio of the medians over the runs, with its 95% interval from a "
                                     "bootstrap over the repeats ({} resamples of each side's runs); a regression "
                                     "only when the whole interval is past the threshold",
                                     resamples)
                       : "B/A is the ratio of the figures (one run a side: no interval, so noise is not accounted "
                         "for; `rig run --repeat N` on both sides gives a noise-aware decision)";
  return v;
}

std::string verdict_text(const compare_verdict& v, bool rows_too) {
  std::string o = fmt::format("A: {}\nB: {}\n{}\n", v.a_desc, v.b_desc, v.method);
  if (rows_too) {
    o += fmt::format("\n{:<34} {:>7} {:>12} {:>12} {:>8} {:>18}\n", "[level] phase.workload.figure", "runs", "A", "B", "B/A",
                     "95% interval");
    for (const auto& r : v.rows)
      o += fmt::format("{:<34} {:>7} {:>12} {:>12} {:>8} {:>18}{}\n", row_name(r), fmt::format("{}/{}", r.n_a, r.n_b),
                       figure_text(r.figure, r.a), figure_text(r.figure, r.b), ratio_text(r.ratio), interval_text(r),
                       !r.failed.empty() ? "  REGRESSION" : r.note.empty() ? "" : "  (" + r.note + ")");
  }
  for (const auto& r : v.rows)
    for (const auto& c : r.failed)
      o += fmt::format("FAIL {}: {} {}{} (A {}, B {}){}\n", c, row_name(r), ratio_text(r.ratio),
                       std::isnan(r.lo) ? "" : ", 95% interval " + interval_text(r), figure_text(r.figure, r.a),
                       figure_text(r.figure, r.b), r.note.empty() ? "" : "; " + r.note);
  return o;
}

std::vector<expectation_row> verdict_checks(const compare_verdict& v, const std::vector<gate_condition>& conditions) {
  std::vector<expectation_row> out;
  for (const auto& r : v.rows)
    for (const auto& c : conditions) {
      if (!names_row(c, r)) continue;
      const bool failed = std::find(r.failed.begin(), r.failed.end(), c.text) != r.failed.end();
      out.push_back({fmt::format("{} at {}", c.text, row_name(r)), !failed,
                     fmt::format("A {}, B {}, B/A {}{}{}", figure_text(r.figure, r.a), figure_text(r.figure, r.b),
                                 ratio_text(r.ratio), std::isnan(r.lo) ? "" : ", 95% interval " + interval_text(r),
                                 r.note.empty() ? "" : "; " + r.note)});
    }
  return out;
}

std::string verdict_html(const compare_verdict& v) {
  using html::esc;
  std::string o = "<h2>Ratios and thresholds</h2><p class=\"small\">" + esc(v.method) +
                  "</p><table><tr><th>level</th><th>phase</th><th>workload</th><th>figure</th><th>runs A/B</th>"
                  "<th>A</th><th>B</th><th>B/A</th><th>95% interval</th><th></th></tr>\n";
  for (const auto& r : v.rows)
    o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}/{}</td><td class=\"n\">{}</td>"
                     "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>\n",
                     esc(r.level), esc(r.phase), esc(r.workload), esc(r.figure), r.n_a, r.n_b, esc(figure_text(r.figure, r.a)),
                     esc(figure_text(r.figure, r.b)), esc(ratio_text(r.ratio)), esc(interval_text(r)),
                     !r.failed.empty() ? "<span class=\"badge bad\">" + esc(r.failed.front()) + "</span>"
                                       : esc(r.note));
  return o + "</table>\n";
}

}  // namespace rig
