#include "reports/svg_chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/units.hpp"
#include "reports/html.hpp"
#include "reports/html_common.hpp"

namespace rig::html {

const char* const palette[8] = {"#2563eb", "#dc2626", "#059669", "#7c3aed", "#d97706", "#0891b2", "#be185d", "#4b5563"};

static double nice_step(double span, int ticks) {
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
static void downsample(series& s) {
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

}  // namespace rig::html
