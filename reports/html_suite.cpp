// suite.html: a suite's scenarios, each linked to its own report.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/units.hpp"
#include "reports/html_common.hpp"
#include "reports/suite_report.hpp"

namespace rig {

using namespace html;

std::string render_suite_html(const suite_summary& s) {
  const auto failed = s.failed();
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rig suite: " + esc(s.name) +
                  "</title><style>" + std::string(css) + "</style></head><body>\n<h1>Suite " + esc(s.name) + " " +
                  (failed.empty() ? "<span class=\"badge ok\">passed</span>"
                                  : fmt::format("<span class=\"badge bad\">{} of {} failed</span>", failed.size(),
                                                s.rows.size())) +
                  "</h1>\n";
  if (!s.description.empty()) o += "<p class=\"sub\">" + esc(s.description) + "</p>\n";
  o += fmt::format("<p class=\"sub\">{} scenario{}, started {} UTC, {:.1f} s in all; rig {}{}</p>\n", s.rows.size(),
                   s.rows.size() == 1 ? "" : "s", esc(s.started_utc), s.wall_s, esc(s.rig_version),
                   s.filters.empty() && s.skips.empty()
                       ? ""
                       : fmt::format("; tags {}{} ({} left out)", esc(fmt::format("{}", fmt::join(s.filters, ", "))),
                                     s.skips.empty() ? "" : esc(fmt::format(", not {}", fmt::join(s.skips, ", "))),
                                     s.filtered_out.size()));
  o += "<table><tr><th>scenario</th><th>status</th><th>failed checks</th><th>phase · workload</th><th>ops/s</th>"
       "<th>p50</th><th>p99</th><th>p99 ×</th><th>errors</th><th>duration</th><th>report</th></tr>\n";
  for (const auto& r : s.rows) {
    std::string checks;
    for (const auto& c : r.failed_checks)
      checks += fmt::format("<div>{} <span class=\"small\">(actual {})</span></div>", esc(c.expr), esc(c.actual));
    if (!r.why.empty() && !r.passed()) checks += "<div class=\"small\">" + esc(r.why) + "</div>";
    const std::string link =
        r.run_dir.empty() ? "–"
                          : fmt::format("<a href=\"{}/{}\">{}</a>", esc(r.run_dir), r.sweep ? "sweep.html" : "report.html",
                                        r.sweep ? "sweep.html" : "report.html");
    o += fmt::format(
        "<tr><td>{}<div class=\"small\">{}{}</div></td><td><span class=\"badge {}\">{}</span></td><td>{}</td>"
        "<td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">{:.1f} s</td><td>{}</td></tr>\n",
        esc(r.label), esc(r.file), r.tags.empty() ? "" : esc(fmt::format(" · {}", fmt::join(r.tags, ", "))),
        r.passed() ? "ok" : "bad", esc(r.status), checks.empty() ? "–" : checks,
        r.phase.empty() ? "–" : esc(r.phase + " · " + r.workload), thr_text(r.throughput_ops_s), lat_text(r.p50_us),
        lat_text(r.p99_us), esc(format_ratio(r.p99_x)), pct_text(r.errors_pct),
        r.duration_s, link);
  }
  o += "</table>\n<p class=\"small\">Figures: each scenario's last phase, its first workload; p99 × is against the "
       "first phase. Every run's own report is in its directory beside suite.json.</p></body></html>\n";
  return o;
}

}  // namespace rig
