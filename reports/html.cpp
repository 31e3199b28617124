#include "reports/html.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <tuple>

#include "core/proc.hpp"
#include "core/units.hpp"

namespace rig {

namespace {

using nlohmann::json;
constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();

std::string esc(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  return o;
}

// j[key] when it is there, else an empty value of the same shape: a reference that stays valid.
const json& member(const json& j, const char* key, bool array = false) {
  static const json empty_object = json::object(), empty_array = json::array();
  if (j.is_object() && j.contains(key)) return j[key];
  return array ? empty_array : empty_object;
}

double num(const json& j, const char* key, double otherwise = nan_v) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return otherwise;
  return j[key].get<double>();
}

// ---- the time series, by column ----

struct columns {
  const timeseries_table& t;
  std::vector<double> x() const { return get("t_s"); }
  bool has(const std::string& name) const {
    return std::find(t.columns.begin(), t.columns.end(), name) != t.columns.end();
  }
  std::vector<double> get(const std::string& name) const {
    const auto it = std::find(t.columns.begin(), t.columns.end(), name);
    std::vector<double> out;
    if (it == t.columns.end()) return out;
    const size_t at = size_t(it - t.columns.begin());
    for (const auto& r : t.rows) {
      double v = nan_v;
      if (at < r.size() && !r[at].empty()) {
        try {
          v = std::stod(r[at]);
        } catch (const std::exception&) {
        }
      }
      out.push_back(v);
    }
    return out;
  }
  bool any(const std::string& name) const {
    for (double v : get(name))
      if (!std::isnan(v)) return true;
    return false;
  }
};

// ---- charts ----

struct series {
  std::string name, color;
  std::vector<double> xs, ys;
  const char* dash = "";  // stroke-dasharray
  bool peak = false;      // downsampled by the bucket's maximum (tails), else its mean
  std::vector<double> lo, hi;  // the spread at each point (error bars), when there is one
};

struct band {
  double from, to;
  std::string label;
  bool injected;
};

struct chart {
  std::string id, title, y_unit;
  bool log_y = false;
  double x_max = 1;
  std::vector<band> bands;
  std::vector<series> lines;
  std::string (*format_y)(double) = nullptr;
  // A categorical x axis (a sweep's levels at 0, 1, ...) instead of time, and marked levels.
  std::vector<std::string> x_labels;
  std::string x_title = "time since the run started (s)";
  std::vector<std::pair<double, std::string>> markers;
};

const char* palette[] = {"#2563eb", "#dc2626", "#059669", "#7c3aed", "#d97706", "#0891b2", "#be185d", "#4b5563"};

double nice_step(double span, int ticks) {
  const double raw = span / ticks, p = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

std::string fmt_plain(double v) {
  if (std::fabs(v) >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (std::fabs(v) >= 1e4) return fmt::format("{:.3g}k", v / 1e3);
  return fmt::format("{:g}", v);
}
// Axis ticks of the log latency axis fall on decades: "1 µs" .. "100 ms", "1 s".
std::string fmt_latency(double us) {
  if (us >= 1e6) return fmt::format("{:g} s", us / 1e6);
  if (us >= 1e3) return fmt::format("{:g} ms", us / 1e3);
  return fmt::format("{:g} µs", us);
}
std::string fmt_mib(double b) { return format_bytes(b); }
std::string fmt_pct(double v) { return fmt::format("{:g}%", v); }

// At most html_max_points points: buckets of consecutive seconds, each by its maximum (a
// latency tail must not be averaged away) or its mean.
void downsample(series& s) {
  const size_t n = s.xs.size();
  if (n <= html_max_points) return;
  const size_t per = (n + html_max_points - 1) / html_max_points;
  std::vector<double> xs, ys;
  for (size_t i = 0; i < n; i += per) {
    double acc = s.peak ? -INFINITY : 0, cnt = 0;
    for (size_t k = i; k < std::min(n, i + per); ++k) {
      if (std::isnan(s.ys[k])) continue;
      acc = s.peak ? std::max(acc, s.ys[k]) : acc + s.ys[k];
      ++cnt;
    }
    xs.push_back(s.xs[i]);
    ys.push_back(cnt == 0 ? nan_v : (s.peak ? acc : acc / cnt));
  }
  s.xs = std::move(xs);
  s.ys = std::move(ys);
}

std::string svg_chart(chart c) {
  const double W = 1000, H = 280, L = 78, R = 170, T = 30, B = 40;
  const double pw = W - L - R, ph = H - T - B;
  double lo = INFINITY, hi = -INFINITY;
  for (auto& s : c.lines) {
    downsample(s);
    for (double y : s.ys)
      if (!std::isnan(y) && (!c.log_y || y > 0)) {
        lo = std::min(lo, y);
        hi = std::max(hi, y);
      }
  }
  for (const auto& s : c.lines)  // the spread counts toward the range
    for (const auto* v : {&s.lo, &s.hi})
      for (double y : *v)
        if (!std::isnan(y) && (!c.log_y || y > 0)) {
          lo = std::min(lo, y);
          hi = std::max(hi, y);
        }
  std::string o = fmt::format(
      "<figure class=\"chart\" id=\"{}\"><figcaption>{}</figcaption>"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" "
      "aria-label=\"{}\">",
      esc(c.id), esc(c.title), W, H, W, H, esc(c.title));
  if (!std::isfinite(lo)) {
    o += fmt::format("<text x=\"{}\" y=\"{}\" class=\"empty\">no data recorded</text></svg></figure>", W / 2, H / 2);
    return o;
  }
  double y0, y1;
  if (c.log_y) {
    y0 = std::pow(10, std::floor(std::log10(lo)));
    y1 = std::pow(10, std::ceil(std::log10(hi)));
    if (y1 <= y0) y1 = y0 * 10;
  } else {
    y0 = std::min(0.0, lo);
    y1 = hi <= y0 ? y0 + 1 : hi * 1.08;
  }
  const bool levels = !c.x_labels.empty();
  auto X = [&](double x) {
    if (levels) return L + pw * (x + 0.5) / double(c.x_labels.size());
    return L + pw * std::clamp(x / c.x_max, 0.0, 1.0);
  };
  auto Y = [&](double y) {
    const double f = c.log_y ? (std::log10(std::max(y, y0)) - std::log10(y0)) / (std::log10(y1) - std::log10(y0))
                             : (y - y0) / (y1 - y0);
    return T + ph * (1 - std::clamp(f, 0.0, 1.0));
  };
  // Phases: shaded bands, injected ones tinted, named along the top.
  for (size_t i = 0; i < c.bands.size(); ++i) {
    const auto& b = c.bands[i];
    o += fmt::format("<rect class=\"phase{}\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\"/>",
                     b.injected ? " injected" : (i % 2 ? " odd" : ""), X(b.from), T, std::max(0.5, X(b.to) - X(b.from)), ph);
    o += fmt::format("<text class=\"phase-label\" x=\"{:.1f}\" y=\"{}\">{}</text>", X(b.from) + 3, T - 8, esc(b.label));
  }
  // Axes, grid and ticks with units.
  const auto fy = c.format_y ? c.format_y : &fmt_plain;
  if (c.log_y) {
    for (double v = y0; v <= y1 * 1.0001; v *= 10)
      o += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/><text class=\"tick y\" "
                       "x=\"{}\" y=\"{:.1f}\">{}</text>",
                       L, L + pw, Y(v), Y(v), L - 6, Y(v) + 4, esc(fy(v)));
  } else {
    const double step = nice_step(y1 - y0, 5);
    for (double v = std::ceil(y0 / step) * step; v <= y1; v += step)
      o += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/><text class=\"tick y\" "
                       "x=\"{}\" y=\"{:.1f}\">{}</text>",
                       L, L + pw, Y(v), Y(v), L - 6, Y(v) + 4, esc(fy(v)));
  }
  if (levels) {
    for (size_t i = 0; i < c.x_labels.size(); ++i)
      o += fmt::format("<text class=\"tick x\" x=\"{:.1f}\" y=\"{}\">{}</text>", X(double(i)), T + ph + 16,
                       esc(c.x_labels[i]));
  } else {
    const double xstep = nice_step(c.x_max, 10);
    for (double v = 0; v <= c.x_max + 1e-9; v += xstep)
      o += fmt::format("<text class=\"tick x\" x=\"{:.1f}\" y=\"{}\">{:g}</text>", X(v), T + ph + 16, v);
  }
  o += fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{}\">{}</text>", L + pw / 2, H - 4, esc(c.x_title));
  for (const auto& [x, label] : c.markers)
    o += fmt::format("<line class=\"marker\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\"/>"
                     "<text class=\"marker-label\" x=\"{3:.1f}\" y=\"{4}\">{5}</text>",
                     X(x), T, T + ph, X(x) + 4, T + 14, esc(label));
  o += fmt::format("<text class=\"axis-label\" transform=\"translate(14 {}) rotate(-90)\">{}{}</text>", T + ph / 2,
                   esc(c.y_unit), c.log_y ? " (log)" : "");
  o += fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>", L, T, pw, ph);
  // The series: a polyline per unbroken run of values; the legend on the right.
  for (size_t si = 0; si < c.lines.size(); ++si) {
    const auto& s = c.lines[si];
    size_t points = 0;
    std::string body;
    std::string run;
    auto flush = [&] {
      if (!run.empty()) body += "<polyline points=\"" + run + "\"/>";
      run.clear();
    };
    for (size_t i = 0; i < s.xs.size(); ++i) {
      if (std::isnan(s.ys[i]) || (c.log_y && s.ys[i] <= 0)) {
        flush();
        continue;
      }
      run += fmt::format("{}{:.1f},{:.1f}", run.empty() ? "" : " ", X(s.xs[i]), Y(s.ys[i]));
      ++points;
    }
    flush();
    for (size_t i = 0; i < s.lo.size() && i < s.hi.size() && i < s.xs.size(); ++i)  // spread: min to max
      if (!std::isnan(s.lo[i]) && !std::isnan(s.hi[i]) && (!c.log_y || s.lo[i] > 0))
        body += fmt::format("<line class=\"spread\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\"/>",
                            X(s.xs[i]), Y(s.lo[i]), Y(s.hi[i]));
    if (levels)
      for (size_t i = 0; i < s.xs.size(); ++i)
        if (!std::isnan(s.ys[i]) && (!c.log_y || s.ys[i] > 0))
          body += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>", X(s.xs[i]), Y(s.ys[i]), s.color);
    o += fmt::format("<g class=\"series\" data-name=\"{}\" data-points=\"{}\" stroke=\"{}\"{}>{}</g>", esc(s.name),
                     points, s.color, *s.dash ? fmt::format(" stroke-dasharray=\"{}\"", s.dash) : "", body);
    const double ly = T + 8 + 18 * double(si);
    o += fmt::format("<line class=\"legend-line\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\"{}/>"
                     "<text class=\"legend\" x=\"{}\" y=\"{}\">{}</text>",
                     L + pw + 12, L + pw + 36, ly, ly, s.color,
                     *s.dash ? fmt::format(" stroke-dasharray=\"{}\"", s.dash) : "", L + pw + 42, ly + 4, esc(s.name));
  }
  return o + "</svg></figure>\n";
}

// ---- tables ----

std::string cell_latency(const json& lat, const char* k) {
  const double v = num(lat, k);
  if (std::isnan(v) || num(lat, "count", 0) == 0) return "–";
  const json& low = member(lat, "low_confidence", true);
  if (low.is_array() && std::find(low.begin(), low.end(), k) != low.end())
    return fmt::format("{}<span class=\"low\" title=\"from {} replies: too few for this percentile, low "
                       "confidence\">*</span>",
                       format_duration_us(v), format_count(num(lat, "count", 0)));
  return format_duration_us(v);
}

std::string errors_text(const json& errors) {
  std::string s;
  uint64_t total = 0;
  for (const auto& [k, v] : errors.items())
    if (v.is_number() && v.get<uint64_t>() > 0) {
      total += v.get<uint64_t>();
      s += fmt::format("{}{} {}", s.empty() ? "" : ", ", format_count(v.get<double>()), k);
    }
  return total == 0 ? "0" : s;
}

std::string params_text(const json& p) {
  std::string s;
  if (!p.is_object()) return s;
  for (const auto& [k, v] : p.items()) s += fmt::format("{}{} = {}", s.empty() ? "" : ", ", k, v.dump());
  return s;
}

const char* css = R"(
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

// The share of requests that failed, in percent (computed from the counts for reports that
// predate errors_pct); NaN when the workload tried nothing there.
double err_pct(const json* w) {
  if (!w) return nan_v;
  if (w->contains("errors_pct")) return num(*w, "errors_pct");
  double n = 0;
  for (const auto& [k, v] : member(*w, "errors").items())
    if (v.is_number()) n += v.get<double>();
  const double tried = n + num(*w, "ops", 0);
  return tried > 0 ? 100 * n / tried : nan_v;
}
// B's error share rose by a percentage point or more: worth a flag beside any latency change.
bool err_rise(const json* a, const json* b) {
  const double x = err_pct(a), y = err_pct(b);
  return !std::isnan(y) && y >= (std::isnan(x) ? 0 : x) + 1;
}
std::string pct_text(double v) { return std::isnan(v) ? "–" : fmt::format("{:.2f}%", v); }

}  // namespace

timeseries_table read_csv(const std::string& path) { return parse_csv(read_text_file(path).value_or("")); }

timeseries_table parse_csv(const std::string& text) {
  timeseries_table t;
  std::istringstream in(text);
  std::string line;
  auto split = [](const std::string& l) {
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream s(l);
    while (std::getline(s, cell, ',')) cells.push_back(cell);
    if (!l.empty() && l.back() == ',') cells.emplace_back();
    return cells;
  };
  if (std::getline(in, line)) t.columns = split(line);
  while (std::getline(in, line))
    if (!line.empty()) t.rows.push_back(split(line));
  return t;
}

std::string render_html(const json& r, const timeseries_table& ts, const std::string& scenario_text) {
  const columns cols{ts};
  const json& phases = r.contains("phases") ? r["phases"] : json::array();
  const std::string name = r.contains("scenario") ? r["scenario"].value("name", "") : "";
  const std::string status = r.value("status", "?");
  double x_max = 1;
  for (const auto& p : phases) x_max = std::max(x_max, num(p, "end_s", 0));
  for (double x : cols.x())
    if (!std::isnan(x)) x_max = std::max(x_max, x + 1);
  std::vector<band> bands;
  for (const auto& p : phases)
    bands.push_back({num(p, "start_s", 0), num(p, "end_s", 0), p.value("name", ""),
                     p.contains("injections") && !p["injections"].empty()});
  std::vector<std::string> workloads;
  if (r.contains("workloads"))
    for (const auto& [w, _] : r["workloads"].items()) workloads.push_back(w);
  const auto xs = cols.x();

  std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  o += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  o += "<title>rig: " + esc(name) + "</title><style>" + std::string(css) + "</style></head><body>\n";
  const bool ok = status == "ok";
  o += fmt::format("<h1>{} <span class=\"badge {}\">{}</span></h1>\n", esc(name), ok ? "ok" : "bad", esc(status));
  if (r.contains("scenario") && !r["scenario"].value("description", "").empty())
    o += "<p class=\"sub\">" + esc(r["scenario"]["description"].get<std::string>()) + "</p>\n";
  if (r.contains("failure")) o += "<p><span class=\"badge bad\">failure</span> " + esc(r["failure"].get<std::string>()) + "</p>\n";

  // What ran, where: enough for someone else to rerun it.
  o += "<dl class=\"facts\">";
  auto fact = [&](const std::string& k, const std::string& v) {
    if (!v.empty()) o += "<dt>" + esc(k) + "</dt><dd>" + esc(v) + "</dd>";
  };
  fact("scenario file", r.contains("scenario") ? r["scenario"].value("file", "") : "");
  fact("rig", r.value("rig_version", ""));
  if (r.contains("host"))
    for (const auto& [k, v] : r["host"].items()) fact("host " + k, v.is_string() ? v.get<std::string>() : v.dump());
  if (r.contains("target")) {
    fact("target", r["target"].value("kind", "") + (r["target"].contains("params") ? " — " + params_text(r["target"]["params"]) : ""));
  }
  for (const auto& w : workloads)
    fact("workload " + w, r["workloads"][w].value("kind", "") + " — " + params_text(r["workloads"][w].value("params", json::object())));
  o += "</dl>\n";

  // Expectations first: the verdict a campaign gates on.
  if (r.contains("expectations") && !r["expectations"].empty()) {
    o += "<h2>Expectations</h2><table><tr><th></th><th>check</th><th>actual</th></tr>";
    for (const auto& e : r["expectations"])
      o += fmt::format("<tr><td><span class=\"badge {}\">{}</span></td><td><code>{}</code></td><td>{}</td></tr>",
                       e.value("ok", false) ? "ok" : "bad", e.value("ok", false) ? "pass" : "FAIL",
                       esc(e.value("expr", "")), esc(e.value("actual", "")));
    o += "</table>\n";
  }

  // The phases at a glance, each against the first.
  o += "<h2>Phases</h2><table><tr><th>phase</th><th>workload</th><th>ops/s</th><th>p50</th><th>p99</th><th>p99.9</th>"
       "<th>errors</th><th>failed</th><th>p50 ×</th><th>p99 ×</th><th>throughput ×</th></tr>";
  for (const auto& p : phases) {
    if (!p.contains("workloads")) continue;
    for (const auto& [w, d] : p["workloads"].items()) {
      std::string p50x, p99x, tx;
      for (const auto& m : r.value("magnification", json::array()))
        if (m.value("phase", "") == p.value("name", "") && m.value("workload", "") == w) {
          p50x = format_ratio(num(m, "p50_x"));
          p99x = format_ratio(num(m, "p99_x"));
          tx = format_ratio(num(m, "throughput_x"), 2);
        }
      const json& lat = d.value("latency_us", json::object());
      o += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                       "<td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                       "<td class=\"n\">{}</td></tr>",
                       esc(p.value("name", "")), esc(w), format_count(num(d, "throughput_ops_s", 0)),
                       cell_latency(lat, "p50"), cell_latency(lat, "p99"), cell_latency(lat, "p999"),
                       esc(errors_text(d.value("errors", json::object()))), pct_text(err_pct(&d)), p50x, p99x, tx);
      const auto& g = d.value("generator", json::object());
      if (g.value("limited", false))
        o += "<tr><td></td><td colspan=\"9\"><span class=\"badge warn\">generator</span> " + esc(g.value("warning", "")) +
             "</td></tr>";
    }
  }
  o += "</table>\n";

  // Charts on one time axis, phases shaded and named.
  o += "<h2>Over time</h2>\n";
  {
    chart lat{"latency", "Latency per second: p50, p99, p99.9 (from the intended send time)", "latency", true, x_max, bands};
    lat.format_y = &fmt_latency;
    const char* dashes[] = {"", "6 3", "2 3"};
    const char* pcts[] = {"p50", "p99", "p999"};
    const char* labels[] = {"p50", "p99", "p99.9"};
    for (size_t wi = 0; wi < workloads.size(); ++wi)
      for (int k = 0; k < 3; ++k) {
        const std::string col = workloads[wi] + "." + pcts[k] + "_us";
        if (!cols.has(col)) continue;
        series s{workloads[wi] + " " + labels[k], workloads.size() == 1 ? palette[k] : palette[wi % 8], xs, cols.get(col)};
        s.dash = dashes[k];  // p99 dashed, p99.9 dotted: visible where the two coincide
        s.peak = k > 0;
        lat.lines.push_back(std::move(s));
      }
    o += svg_chart(lat);
    chart thr{"throughput", "Throughput and errors per second", "per second", false, x_max, bands};
    for (size_t wi = 0; wi < workloads.size(); ++wi) {
      if (cols.has(workloads[wi] + ".ops"))
        thr.lines.push_back({workloads[wi] + " ops/s", palette[(2 * wi) % 8], xs, cols.get(workloads[wi] + ".ops")});
      if (cols.has(workloads[wi] + ".errors")) {
        series e{workloads[wi] + " errors/s", palette[(2 * wi + 1) % 8], xs, cols.get(workloads[wi] + ".errors"), "4 3"};
        thr.lines.push_back(std::move(e));
      }
    }
    o += svg_chart(thr);
    chart mem{"memory", "Target memory against its cap", "bytes", false, x_max, bands};
    mem.format_y = &fmt_mib;
    if (cols.any("target.rss_bytes")) mem.lines.push_back({"target RSS", palette[0], xs, cols.get("target.rss_bytes")});
    if (cols.any("cgroup.memory_bytes"))
      mem.lines.push_back({"cgroup used", palette[2], xs, cols.get("cgroup.memory_bytes")});
    if (cols.any("cgroup.memory_cap_bytes"))
      mem.lines.push_back({"cgroup cap", palette[1], xs, cols.get("cgroup.memory_cap_bytes"), "6 3"});
    if (!mem.lines.empty()) o += svg_chart(mem);
    chart cpu{"cpu", "CPU: target and rig against the target's quota (100% = one CPU)", "CPU", false, x_max, bands};
    cpu.format_y = &fmt_pct;
    if (cols.any("target.cpu_pct")) cpu.lines.push_back({"target", palette[0], xs, cols.get("target.cpu_pct")});
    if (cols.any("rig.cpu_pct")) cpu.lines.push_back({"rig", palette[7], xs, cols.get("rig.cpu_pct"), "2 3"});
    if (cols.any("cgroup.cpu_cap_pct"))
      cpu.lines.push_back({"quota", palette[1], xs, cols.get("cgroup.cpu_cap_pct"), "6 3"});
    if (!cpu.lines.empty()) o += svg_chart(cpu);
    chart iops{"io", "Target disk operations per second against the caps (its cgroup)", "operations/s", false, x_max, bands};
    for (const auto& [col, label, color, dash] :
         {std::tuple{"cgroup.io_read_ops_s", "reads/s", 0, ""}, std::tuple{"cgroup.io_write_ops_s", "writes/s", 2, ""},
          std::tuple{"cgroup.io_read_iops_cap", "read cap", 1, "6 3"}, std::tuple{"cgroup.io_write_iops_cap", "write cap", 4, "6 3"}})
      if (cols.any(col)) iops.lines.push_back({label, palette[color], xs, cols.get(col), dash});
    if (!iops.lines.empty()) o += svg_chart(iops);
    chart bps{"io-bytes", "Target disk bytes per second against the caps (its cgroup)", "bytes/s", false, x_max, bands};
    bps.format_y = &fmt_mib;
    for (const auto& [col, label, color, dash] :
         {std::tuple{"cgroup.io_read_bytes_s", "read", 0, ""}, std::tuple{"cgroup.io_write_bytes_s", "written", 2, ""},
          std::tuple{"cgroup.io_read_bps_cap", "read cap", 1, "6 3"}, std::tuple{"cgroup.io_write_bps_cap", "write cap", 4, "6 3"}})
      if (cols.any(col)) bps.lines.push_back({label, palette[color], xs, cols.get(col), dash});
    if (!bps.lines.empty()) o += svg_chart(bps);
    chart th{"workers", "Target OS threads (/proc/PID/task) and live workers", "count", false, x_max, bands};
    if (cols.any("target.threads")) th.lines.push_back({"OS threads", palette[3], xs, cols.get("target.threads")});
    if (cols.any("target.live_workers"))
      th.lines.push_back({"live workers", palette[2], xs, cols.get("target.live_workers")});
    if (!th.lines.empty()) o += svg_chart(th);
    chart q{"queue", "Target queue depth", "requests waiting", false, x_max, bands};
    if (cols.any("target.queue_depth")) q.lines.push_back({"queue depth", palette[4], xs, cols.get("target.queue_depth")});
    if (!q.lines.empty()) o += svg_chart(q);
  }

  // Injections: what was asked, how, what was read back and what it did.
  bool any_injection = false;
  for (const auto& p : phases) any_injection = any_injection || !p.value("injections", json::array()).empty();
  if (any_injection) {
    o += "<h2>Injections</h2><table><tr><th>phase</th><th>injector</th><th>mechanism</th><th>params</th>"
         "<th>verified (read back)</th><th>measured</th><th>reverted (read back)</th></tr>";
    for (const auto& p : phases)
      for (const auto& i : p.value("injections", json::array())) {
        const json& m = i.value("measured", json::object());
        o += fmt::format("<tr><td>{}</td><td>{} <span class=\"small\">({})</span></td><td>{}</td><td class=\"small\">{}</td>"
                         "<td><span class=\"badge {}\">{}</span> {}</td><td>{}</td><td>{}</td></tr>",
                         esc(p.value("name", "")), esc(i.value("name", "")), esc(i.value("kind", "")),
                         esc(i.value("mechanism", "")), esc(params_text(i.value("params", json::object()))),
                         i.value("verified", false) ? "ok" : "bad", i.value("verified", false) ? "✓" : "✗",
                         esc(i.value("verification", "")),
                         esc(m.contains("summary") && m["summary"].is_string() ? m["summary"].get<std::string>() : ""),
                         !i.contains("reverted") || !i["reverted"].is_boolean()
                             ? std::string("–")
                             : fmt::format("<span class=\"badge {}\">{}</span> {}", i["reverted"].get<bool>() ? "ok" : "bad",
                                           i["reverted"].get<bool>() ? "✓" : "✗", esc(i.value("revert", ""))));
      }
    o += "</table>\n";
  }

  // Resources per phase, usage beside caps.
  o += "<h2>Resources by phase</h2><table><tr><th>phase</th><th>target CPU</th><th>RSS max</th><th>threads</th>"
       "<th>run-queue wait</th><th>live workers</th><th>queue max</th><th>cgroup memory (max / cap)</th>"
       "<th>cgroup CPUs (used / cap)</th><th>OOM kills</th><th>rig CPU</th></tr>";
  for (const auto& p : phases) {
    const json& res = p.value("resources", json::object());
    const json& t = res.value("target", json::object());
    const json& cg = res.value("cgroup", json::object());
    const json& self = res.value("rig", json::object());
    auto opt = [](double v, auto f) { return std::isnan(v) ? std::string("–") : f(v); };
    const std::string live = std::isnan(num(t, "live_workers_start"))
                                 ? "–"
                                 : fmt::format("{:g} → {:g}", num(t, "live_workers_start"), num(t, "live_workers_end"));
    const std::string threads = std::isnan(num(t, "threads_min"))
                                    ? "–"
                                    : fmt::format("{:g}–{:g}", num(t, "threads_min"), num(t, "threads_max"));
    const double cap = num(cg, "memory_cap_bytes");
    const std::string memcg = std::isnan(num(cg, "memory_used_max_bytes"))
                                  ? "–"
                                  : format_bytes(num(cg, "memory_used_max_bytes")) + " / " +
                                        (std::isnan(cap) ? "none" : format_bytes(cap));
    const double cpucap = num(cg, "cpu_cap_cpus");
    const std::string cpucg = std::isnan(num(cg, "cpu_used_cpus"))
                                  ? "–"
                                  : fmt::format("{:.2f} / {}", num(cg, "cpu_used_cpus"),
                                                std::isnan(cpucap) ? "none" : fmt::format("{:.2f}", cpucap));
    o += fmt::format(
        "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
        "<td class=\"n\">{}</td></tr>",
        esc(p.value("name", "")), opt(num(t, "cpu_pct"), [](double v) { return fmt::format("{:.1f}%", v); }),
        opt(num(t, "rss_max_bytes"), [](double v) { return format_bytes(v); }), threads,
        opt(num(t, "run_queue_wait_ms_per_s"), [](double v) { return fmt::format("{:.1f} ms/s", v); }), live,
        opt(num(t, "queue_depth_max"), [](double v) { return fmt::format("{:g}", v); }), memcg, cpucg,
        opt(num(cg, "oom_kills"), [](double v) { return fmt::format("{:g}", v); }),
        opt(num(self, "cpu_pct"), [](double v) { return fmt::format("{:.1f}%", v); }));
  }
  o += "</table>\n";

  if (r.contains("events") && !r["events"].empty()) {
    o += "<h2>Events</h2><table><tr><th>at</th><th>kind</th><th>detail</th></tr>";
    for (const auto& e : r["events"])
      o += fmt::format("<tr><td class=\"n\">{:.2f} s</td><td>{}</td><td>{}</td></tr>", num(e, "t_s", 0),
                       esc(e.value("kind", "")), esc(e.value("detail", "")));
    o += "</table>\n";
  }
  if (!scenario_text.empty()) o += "<h2>Scenario as run</h2><pre>" + esc(scenario_text) + "</pre>\n";
  o += "<p class=\"small\">Written by rig " + esc(r.value("rig_version", "")) +
       ". The figures are in report.json and timeseries.csv beside this file; charts show at most " +
       std::to_string(html_max_points) + " points per series (a bucket's maximum for p99 and p99.9, its mean otherwise).</p>\n";
  o += "</body></html>\n";
  return o;
}

namespace {

json read_report(const directory& run_dir) {
  const auto text = run_dir.read_file("report.json");
  if (!text)
    throw std::runtime_error("no report.json in " + run_dir.path() + " (is it a run directory written by `rig run`?)");
  // rig writes report.json at most 8 levels deep; a hand-made one nested thousands deep must be
  // refused here, not followed down until the stack runs out.
  constexpr int max_depth = 64;
  const auto depth_limit = [&](int depth, json::parse_event_t, json&) {
    if (depth > max_depth)
      throw std::runtime_error(fmt::format("nested more than {} levels deep (rig writes at most 8)", max_depth));
    return true;
  };
  try {
    return json::parse(*text, depth_limit);
  } catch (const std::exception& e) {
    throw std::runtime_error(run_dir.path() + "/report.json: not a report rig can read: " + e.what());
  }
}

directory open_run_dir(const std::string& run_dir) {
  try {
    return directory::open(run_dir);
  } catch (const std::exception& e) {
    throw std::runtime_error("no report.json in " + run_dir + " (" + e.what() + ")");
  }
}

json read_report(const std::string& run_dir) { return read_report(open_run_dir(run_dir)); }

// One row of the comparison: a phase and workload present in both runs, or in one.
struct compare_row {
  std::string phase, workload;
  const json* a = nullptr;  // the workload's figures in the phase, per run
  const json* b = nullptr;
};

std::vector<compare_row> compare_rows(const json& a, const json& b) {
  std::vector<compare_row> rows;
  auto find = [](const json& r, const std::string& phase, const std::string& w) -> const json* {
    for (const auto& p : member(r, "phases", true))
      if (p.value("name", "") == phase && member(p, "workloads").contains(w)) return &p["workloads"][w];
    return nullptr;
  };
  for (const json* r : {&a, &b})
    for (const auto& p : member(*r, "phases", true))
      for (const auto& [w, _] : member(p, "workloads").items()) {
        const std::string ph = p.value("name", "");
        bool seen = false;
        for (const auto& row : rows) seen = seen || (row.phase == ph && row.workload == w);
        if (!seen) rows.push_back({ph, w, find(a, ph, w), find(b, ph, w)});
      }
  return rows;
}

double lat(const json* w, const char* k) {
  if (!w || num((*w)["latency_us"], "count", 0) == 0) return nan_v;
  return num((*w)["latency_us"], k);
}
double thr(const json* w) { return w ? num(*w, "throughput_ops_s") : nan_v; }
std::string ratio(double a, double b) {
  if (std::isnan(a) || std::isnan(b) || a <= 0) return "–";
  return fmt::format("{:.2f}×", b / a);
}
std::string lat_text(double v) { return std::isnan(v) ? "–" : format_duration_us(v); }
std::string thr_text(double v) { return std::isnan(v) ? "–" : format_count(v); }

}  // namespace

std::string compare_runs(const std::string& dir_a, const std::string& dir_b, const std::string& html_path) {
  const json a = read_report(dir_a), b = read_report(dir_b);
  const auto rows = compare_rows(a, b);
  // The terminal: one line per phase x workload, A then B then B/A.
  size_t pw = 5, ww = 8;
  for (const auto& r : rows) {
    pw = std::max(pw, r.phase.size());
    ww = std::max(ww, r.workload.size());
  }
  std::string t = fmt::format("A: {}\nB: {}\n\n", dir_a, dir_b);
  t += fmt::format("{:<{}}  {:<{}}  {:>9} {:>9} {:>7}  {:>9} {:>9} {:>7}  {:>9} {:>9} {:>7}  {:>7} {:>9}\n", "phase", pw,
                   "workload", ww, "ops/s A", "B", "B/A", "p50 A", "B", "B/A", "p99 A", "B", "B/A", "err% A", "B");
  // Each row's cells, formatted once for both the terminal and compare.html.
  struct cells {
    std::string ops_a, ops_b, ops_x, p50_a, p50_b, p50_x, p99_a, p99_b, p99_x, p999_a, p999_b, err_a, err_b;
  };
  std::vector<cells> rc;
  for (const auto& r : rows)
    rc.push_back({thr_text(thr(r.a)), thr_text(thr(r.b)), ratio(thr(r.a), thr(r.b)), lat_text(lat(r.a, "p50")),
                  lat_text(lat(r.b, "p50")), ratio(lat(r.a, "p50"), lat(r.b, "p50")), lat_text(lat(r.a, "p99")),
                  lat_text(lat(r.b, "p99")), ratio(lat(r.a, "p99"), lat(r.b, "p99")), lat_text(lat(r.a, "p999")),
                  lat_text(lat(r.b, "p999")), pct_text(err_pct(r.a)),
                  pct_text(err_pct(r.b)) + (err_rise(r.a, r.b) ? " ▲" : "")});
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const auto& c = rc[i];
    t += fmt::format("{:<{}}  {:<{}}  {:>9} {:>9} {:>7}  {:>9} {:>9} {:>7}  {:>9} {:>9} {:>7}  {:>7} {:>9}{}{}\n", r.phase,
                     pw, r.workload, ww, c.ops_a, c.ops_b, c.ops_x, c.p50_a, c.p50_b, c.p50_x, c.p99_a, c.p99_b, c.p99_x,
                     c.err_a, c.err_b, !r.a ? "  (only in B)" : !r.b ? "  (only in A)" : "",
                     err_rise(r.a, r.b) ? "  ← more requests fail in B" : "");
  }
  // compare.html: the same table, and A's and B's per-second latency on one time axis.
  const timeseries_table ta = read_csv(dir_a + "/timeseries.csv"), tb = read_csv(dir_b + "/timeseries.csv");
  const columns ca{ta}, cb{tb};
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rig compare</title><style>" +
                  std::string(css) + "</style></head><body>\n<h1>rig compare</h1>\n<dl class=\"facts\">";
  for (const auto& [label, dir, r] : {std::tuple{"A", dir_a, &a}, std::tuple{"B", dir_b, &b}})
    o += fmt::format("<dt>{}</dt><dd>{} — {} <span class=\"badge {}\">{}</span></dd>", label, esc(dir),
                     esc(r->contains("scenario") ? (*r)["scenario"].value("name", "") : ""),
                     r->value("status", "") == "ok" ? "ok" : "bad", esc(r->value("status", "?")));
  o += "</dl>\n<h2>Phases, B against A</h2><table><tr><th>phase</th><th>workload</th><th>ops/s A</th><th>ops/s B</th>"
       "<th>B/A</th><th>p50 A</th><th>p50 B</th><th>B/A</th><th>p99 A</th><th>p99 B</th><th>B/A</th><th>p99.9 A</th>"
       "<th>p99.9 B</th><th>failed A</th><th>failed B</th></tr>";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& c = rc[i];
    o += "<tr><td>" + esc(rows[i].phase) + "</td><td>" + esc(rows[i].workload) + "</td>";
    for (const std::string* v : {&c.ops_a, &c.ops_b, &c.ops_x, &c.p50_a, &c.p50_b, &c.p50_x, &c.p99_a, &c.p99_b,
                                 &c.p99_x, &c.p999_a, &c.p999_b, &c.err_a, &c.err_b})
      o += "<td class=\"n\">" + *v + "</td>";
    o += "</tr>";
  }
  o += "</table>\n<h2>Over time</h2>\n";
  double x_max = 1;
  for (const auto* x : {&ca, &cb})
    for (double v : x->x())
      if (!std::isnan(v)) x_max = std::max(x_max, v + 1);
  std::vector<band> bands;  // A's phases
  for (const auto& p : member(a, "phases", true))
    bands.push_back({num(p, "start_s", 0), num(p, "end_s", 0), "A: " + p.value("name", ""),
                     !p.value("injections", json::array()).empty()});
  std::vector<std::string> workloads;
  for (const json* r : {&a, &b})
    for (const auto& [w, _] : member(*r, "workloads").items())
      if (std::find(workloads.begin(), workloads.end(), w) == workloads.end()) workloads.push_back(w);
  chart lat_chart{"latency", "p99 per second, A (solid) and B (dashed), phases of A shaded", "latency", true, x_max, bands};
  lat_chart.format_y = &fmt_latency;
  chart thr_chart{"throughput", "Throughput per second, A (solid) and B (dashed)", "per second", false, x_max, bands};
  for (size_t wi = 0; wi < workloads.size(); ++wi) {
    const std::string& w = workloads[wi];
    for (const auto& [label, cols, dash] : {std::tuple{"A", &ca, ""}, std::tuple{"B", &cb, "6 3"}}) {
      if (cols->has(w + ".p99_us")) {
        series s{std::string(label) + " " + w + " p99", palette[wi % 8], cols->x(), cols->get(w + ".p99_us"), dash};
        s.peak = true;
        lat_chart.lines.push_back(std::move(s));
      }
      if (cols->has(w + ".ops"))
        thr_chart.lines.push_back({std::string(label) + " " + w + " ops/s", palette[wi % 8], cols->x(), cols->get(w + ".ops"), dash});
    }
  }
  o += svg_chart(lat_chart) + svg_chart(thr_chart);
  o += "<p class=\"small\">Ratios are B/A: below 1× B is faster (latency) or slower (throughput).</p></body></html>\n";
  std::ofstream out(html_path);
  if (!out) throw std::runtime_error("cannot write " + html_path);
  out << o;
  return t + "\nB/A below 1×: B's latency is lower, or its throughput is. Charts: " + html_path + "\n";
}

std::string render_sweep_html(const json& sw) {
  const json& levels = member(sw, "levels", true);
  std::vector<std::string> labels;
  for (const auto& l : levels) labels.push_back(l.value("label", ""));
  std::vector<std::string> workloads;
  for (const auto& l : levels)
    for (const auto& [w, _] : member(l, "workloads").items())
      if (std::find(workloads.begin(), workloads.end(), w) == workloads.end()) workloads.push_back(w);
  const std::string title = sw.value("scenario", "") + ": " + sw.value("param", "") + " swept";
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rig sweep: " + esc(title) +
                  "</title><style>" + std::string(css) + "</style></head><body>\n<h1>" + esc(title) + "</h1>\n";
  o += fmt::format("<p class=\"sub\">{} level{}, {} run{} each; figures of phase <b>{}</b>: the median of the runs, "
                   "the bars their spread (min to max). The knee: the first level where every run's p99 exceeds {:g}× the "
                   "first level's median.</p>\n",
                   levels.size(), levels.size() == 1 ? "" : "s", sw.value("repeats", 1), sw.value("repeats", 1) == 1 ? "" : "s",
                   esc(sw.value("phase", "")), num(sw, "knee_factor", 2));
  auto stat = [](const json& l, const std::string& w, const char* metric, const char* which) {
    return num(member(member(member(l, "workloads"), w.c_str()), metric), which);
  };
  for (const auto& w : workloads) {
    const json& knee = member(member(sw, "knee"), w.c_str());
    std::vector<std::pair<double, std::string>> markers;
    if (knee.contains("index")) markers.push_back({knee["index"].get<double>(), "knee"});
    chart lat{"latency-" + w, "Workload " + w + ": latency against " + sw.value("param", ""), "latency", true, 1, {}};
    lat.format_y = &fmt_latency;
    lat.x_labels = labels;
    lat.x_title = sw.value("param", "");
    lat.markers = markers;
    const char* pcts[] = {"p50_us", "p99_us", "p999_us"};
    const char* names[] = {"p50", "p99", "p99.9"};
    const char* dashes[] = {"", "6 3", "2 3"};
    for (int k = 0; k < 3; ++k) {
      series s{w + " " + names[k], palette[k], {}, {}, dashes[k]};
      for (size_t i = 0; i < levels.size(); ++i) {
        s.xs.push_back(double(i));
        s.ys.push_back(stat(levels[i], w, pcts[k], "median"));
        s.lo.push_back(stat(levels[i], w, pcts[k], "min"));
        s.hi.push_back(stat(levels[i], w, pcts[k], "max"));
      }
      lat.lines.push_back(std::move(s));
    }
    o += svg_chart(lat);
    chart thr{"throughput-" + w, "Workload " + w + ": throughput and errors against " + sw.value("param", ""), "per second",
              false, 1, {}};
    thr.x_labels = labels;
    thr.x_title = sw.value("param", "");
    thr.markers = markers;
    series t{w + " ops/s", palette[0]}, e{w + " errors/s", palette[1], {}, {}, "4 3"};
    for (size_t i = 0; i < levels.size(); ++i) {
      t.xs.push_back(double(i));
      t.ys.push_back(stat(levels[i], w, "throughput_ops_s", "median"));
      t.lo.push_back(stat(levels[i], w, "throughput_ops_s", "min"));
      t.hi.push_back(stat(levels[i], w, "throughput_ops_s", "max"));
      e.xs.push_back(double(i));
      e.ys.push_back(stat(levels[i], w, "errors_per_s", "median"));
    }
    thr.lines.push_back(std::move(t));
    thr.lines.push_back(std::move(e));
    o += svg_chart(thr);
  }
  chart cpu{"cpu", "Target CPU against " + sw.value("param", "") + " (100% = one CPU)", "CPU", false, 1, {}};
  cpu.format_y = &fmt_pct;
  cpu.x_labels = labels;
  cpu.x_title = sw.value("param", "");
  series c{"target CPU", palette[3]};
  for (size_t i = 0; i < levels.size(); ++i) {
    c.xs.push_back(double(i));
    c.ys.push_back(num(member(member(levels[i], "target"), "cpu_pct"), "median"));
  }
  cpu.lines.push_back(std::move(c));
  o += svg_chart(cpu);
  o += "<h2>Levels</h2><table><tr><th>level</th><th>workload</th><th>ops/s</th><th>p50</th><th>p99</th><th>p99 spread</th>"
       "<th>p99.9</th><th>errors/s</th><th>target CPU</th><th>runs</th></tr>";
  for (size_t i = 0; i < levels.size(); ++i)
    for (const auto& w : workloads) {
      const bool is_knee = member(member(sw, "knee"), w.c_str()).value("index", -1) == int(i);
      o += fmt::format("<tr><td>{}{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                       "<td class=\"n\">{} – {}</td><td class=\"n\">{}</td><td class=\"n\">{:.1f}</td><td class=\"n\">{}</td>"
                       "<td class=\"small\">{}</td></tr>",
                       esc(labels[i]), is_knee ? " <span class=\"badge bad\">knee</span>" : "", esc(w),
                       thr_text(stat(levels[i], w, "throughput_ops_s", "median")), lat_text(stat(levels[i], w, "p50_us", "median")),
                       lat_text(stat(levels[i], w, "p99_us", "median")), lat_text(stat(levels[i], w, "p99_us", "min")),
                       lat_text(stat(levels[i], w, "p99_us", "max")), lat_text(stat(levels[i], w, "p999_us", "median")),
                       std::isnan(stat(levels[i], w, "errors_per_s", "median")) ? 0.0 : stat(levels[i], w, "errors_per_s", "median"),
                       std::isnan(num(member(member(levels[i], "target"), "cpu_pct"), "median"))
                           ? std::string("–")
                           : fmt::format("{:.1f}%", num(member(member(levels[i], "target"), "cpu_pct"), "median")),
                       esc(std::to_string(member(levels[i], "runs", true).size()) + " run(s)"));
    }
  o += "</table>\n<p class=\"small\">Each run's own report.html is in its directory beside sweep.json.</p></body></html>\n";
  return o;
}

std::string write_html_report(const directory& run_dir) {
  const json r = read_report(run_dir);
  run_dir.write_file("report.html", render_html(r, parse_csv(run_dir.read_file("timeseries.csv").value_or("")),
                                                run_dir.read_file("scenario.toml").value_or("")));
  return run_dir.path() + "/report.html";
}

std::string write_html_report(const std::string& run_dir) { return write_html_report(open_run_dir(run_dir)); }

}  // namespace rig
