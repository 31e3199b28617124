#include "reports/html_common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/files.hpp"
#include "core/units.hpp"

namespace rig::html {

std::string esc(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) switch (const char c = s[i]; c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default:
        // XML 1.0 (JUnit files) has no place for other control characters: they become a space,
        // and so do the C1 controls (U+0080-U+009F, "\xc2\x80".."\xc2\x9f" in UTF-8).
        if (static_cast<unsigned char>(c) == 0xc2 && i + 1 < s.size() &&
            static_cast<unsigned char>(s[i + 1]) >= 0x80 && static_cast<unsigned char>(s[i + 1]) <= 0x9f) {
          o += ' ';
          ++i;
        } else {
          o += (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') || c == 0x7f ? ' ' : c;
        }
    }
  return o;
}

double num(const json& j, const char* key, double otherwise) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return otherwise;
  return j[key].get<double>();
}

std::string params_text(const json& p) {
  std::string s;
  if (!p.is_object()) return s;
  for (const auto& [k, v] : p.items()) s += fmt::format("{}{} = {}", s.empty() ? "" : ", ", k, v.dump());
  return s;
}

const char* const css = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#111827;margin:24px auto;max-width:1240px;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #e5e7eb;padding-bottom:4px}
.sub{color:#4b5563;margin:0 0 12px}.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;font-size:12px}
.ok{background:#dcfce7;color:#166534}.bad{background:#fee2e2;color:#991b1b}.warn{background:#fef3c7;color:#92400e}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}th,td{border-bottom:1px solid #e5e7eb;padding:4px 10px;text-align:left;vertical-align:top}
th{background:#f9fafb;font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums}
dl.facts{display:grid;grid-template-columns:max-content auto;gap:2px 14px;margin:6px 0}dl.facts dt{color:#6b7280}dl.facts dd{margin:0}
figure.chart{margin:10px 0 18px}figure.chart figcaption{font-weight:600;margin-bottom:2px}
svg{max-width:100%;height:auto;font-size:11px}svg .frame{fill:none;stroke:#9ca3af}svg .grid{stroke:#eef0f3}
svg .phase{fill:#ffffff}svg .phase.odd{fill:#f3f4f6}svg .phase.injected{fill:#fff1db}
svg .phase-label{fill:#374151;font-weight:600}svg .tick{fill:#4b5563}svg .tick.y{text-anchor:end}svg .tick.x{text-anchor:middle}
svg .axis-label{fill:#374151;text-anchor:middle}svg .series polyline{fill:none;stroke-width:1.6}svg .legend-line{stroke-width:2}
svg .legend{fill:#111827}svg .spread{stroke-width:1.2;stroke-dasharray:none}svg .marker{stroke:#b91c1c;stroke-width:1.5;stroke-dasharray:5 3}svg .marker-label{fill:#b91c1c;font-weight:600}svg .empty{fill:#9ca3af;text-anchor:middle}
pre{background:#f9fafb;border:1px solid #e5e7eb;padding:10px;overflow:auto;font-size:12px}
.small{color:#6b7280;font-size:12px}.low{color:#b45309;cursor:help}
)";

std::string expectations_table(const std::vector<expectation_row>& checks, const std::string& title) {
  if (checks.empty()) return "";
  std::string o = "<h2>" + esc(title) + "</h2><table><tr><th></th><th>check</th><th>actual</th></tr>";
  for (const auto& e : checks)
    o += fmt::format("<tr><td><span class=\"badge {}\">{}</span></td><td><code>{}</code></td><td>{}</td></tr>",
                     e.ok ? "ok" : "bad", e.ok ? "pass" : "FAIL", esc(e.expr), esc(e.actual));
  return o + "</table>\n";
}

std::string pct_text(double v) { return std::isnan(v) ? "–" : fmt::format("{:.2f}%", v); }

std::string lat_text(double v) { return std::isnan(v) ? "–" : format_duration_us(v); }
std::string thr_text(double v) { return std::isnan(v) ? "–" : format_count(v); }

json parse_json_limited(const std::string& text, const std::string& what) {
  // rig writes its JSON at most 8 levels deep; a hand-made file nested thousands deep must be
  // refused here, not followed down until the stack runs out.
  constexpr int max_depth = 64;
  const auto depth_limit = [&](int depth, json::parse_event_t, json&) {
    if (depth > max_depth)
      throw std::runtime_error(fmt::format("nested more than {} levels deep (rig writes at most 8)", max_depth));
    return true;
  };
  try {
    return json::parse(text, depth_limit);
  } catch (const std::exception& e) {
    throw std::runtime_error(what + ": not a file rig can read: " + e.what());
  }
}

json read_report(const directory& run_dir) {
  // A regular file of at most 64 MiB, not through a link: a FIFO, /dev/zero or 300 MB is refused.
  const auto text = run_dir.read_input_if_present("report.json", report_input);
  if (!text)
    throw std::runtime_error("no report.json in " + run_dir.path() + " (is it a run directory written by `rig run`?)");
  return parse_json_limited(*text, run_dir.path() + "/report.json");
}

directory open_run_dir(const std::string& run_dir) {
  try {
    return directory::open(run_dir);
  } catch (const std::exception& e) {
    throw std::runtime_error("no report.json in " + run_dir + " (" + e.what() + ")");
  }
}


run_report read_run_report(const directory& run_dir) {
  const json j = read_report(run_dir);
  try {
    return report_from_json(j);
  } catch (const std::exception& e) {
    throw std::runtime_error(run_dir.path() + "/report.json: not a report rig can read: " + e.what());
  }
}

run_report read_run_report(const std::string& run_dir) { return read_run_report(open_run_dir(run_dir)); }

}  // namespace rig::html
