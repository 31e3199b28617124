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

namespace {

// The plot's geometry: the SVG's size, the margins, the y range, and where a value lands.
struct plot {
  static constexpr double W = 1000, H = 280, L = 78, R = 170, T = 30, B = 40;
  static constexpr double pw = W - L - R, ph = H - T - B;
  const chart& c;
  double y0 = 0, y1 = 1;
  bool levels() const { return !c.x_labels.empty(); }
  double X(double x) const {
    if (levels()) return L + pw * (x + 0.5) / double(c.x_labels.size());
    return L + pw * std::clamp(x / c.x_max, 0.0, 1.0);
  }
  double Y(double y) const {
    const double f = c.log_y ? (std::log10(std::max(y, y0)) - std::log10(y0)) / (std::log10(y1) - std::log10(y0))
                             : (y - y0) / (y1 - y0);
    return T + ph * (1 - std::clamp(f, 0.0, 1.0));
  }
  bool shown(double y) const { return !std::isnan(y) && (!c.log_y || y > 0); }
};

// The values' range, the spread included; lo is infinite when there is none to draw.
std::pair<double, double> value_range(const chart& c) {
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& s : c.lines)
    for (const auto* v : {&s.ys, &s.lo, &s.hi})
      for (double y : *v)
        if (!std::isnan(y) && (!c.log_y || y > 0)) {
          lo = std::min(lo, y);
          hi = std::max(hi, y);
        }
  return {lo, hi};
}

// Phases: shaded bands, injected ones tinted, named along the top.
std::string bands(const plot& p) {
  std::string o;
  for (size_t i = 0; i < p.c.bands.size(); ++i) {
    const auto& b = p.c.bands[i];
    o += fmt::format("<rect class=\"phase{}\" x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\"/>",
                     b.injected ? " injected" : (i % 2 ? " odd" : ""), p.X(b.from), plot::T,
                     std::max(0.5, p.X(b.to) - p.X(b.from)), plot::ph);
    o += fmt::format("<text class=\"phase-label\" x=\"{:.1f}\" y=\"{}\">{}</text>", p.X(b.from) + 3, plot::T - 8,
                     esc(b.label));
  }
  return o;
}

// Axes, grid and ticks with units, the markers, the frame.
std::string axes(const plot& p) {
  const chart& c = p.c;
  constexpr double L = plot::L, T = plot::T, pw = plot::pw, ph = plot::ph;
  std::string o;
  const auto fy = c.format_y ? c.format_y : &fmt_plain;
  auto y_tick = [&](double v) {
    o += fmt::format("<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\"/><text class=\"tick y\" "
                     "x=\"{}\" y=\"{:.1f}\">{}</text>",
                     L, L + pw, p.Y(v), p.Y(v), L - 6, p.Y(v) + 4, esc(fy(v)));
  };
  if (c.log_y) {
    for (double v = p.y0; v <= p.y1 * 1.0001; v *= 10) y_tick(v);
  } else {
    const double step = nice_step(p.y1 - p.y0, 5);
    for (double v = std::ceil(p.y0 / step) * step; v <= p.y1; v += step) y_tick(v);
  }
  if (p.levels()) {
    for (size_t i = 0; i < c.x_labels.size(); ++i)
      o += fmt::format("<text class=\"tick x\" x=\"{:.1f}\" y=\"{}\">{}</text>", p.X(double(i)), T + ph + 16,
                       esc(c.x_labels[i]));
  } else {
    const double xstep = nice_step(c.x_max, 10);
    for (double v = 0; v <= c.x_max + 1e-9; v += xstep)
      o += fmt::format("<text class=\"tick x\" x=\"{:.1f}\" y=\"{}\">{:g}</text>", p.X(v), T + ph + 16, v);
  }
  o += fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{}\">{}</text>", L + pw / 2, plot::H - 4, esc(c.x_title));
  for (const auto& [x, label] : c.markers)
    o += fmt::format("<line class=\"marker\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\"/>"
                     "<text class=\"marker-label\" x=\"{3:.1f}\" y=\"{4}\">{5}</text>",
                     p.X(x), T, T + ph, p.X(x) + 4, T + 14, esc(label));
  o += fmt::format("<text class=\"axis-label\" transform=\"translate(14 {}) rotate(-90)\">{}{}</text>", T + ph / 2,
                   esc(c.y_unit), c.log_y ? " (log)" : "");
  return o + fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>", L, T, pw, ph);
}

// One series: a polyline per unbroken run of values, its spread and level points; its legend
// entry on the right.
std::string series_svg(const plot& p, const series& s, size_t index) {
  size_t points = 0;
  std::string body, run;
  auto flush = [&] {
    if (!run.empty()) body += "<polyline points=\"" + run + "\"/>";
    run.clear();
  };
  for (size_t i = 0; i < s.xs.size(); ++i) {
    if (!p.shown(s.ys[i])) {
      flush();
      continue;
    }
    run += fmt::format("{}{:.1f},{:.1f}", run.empty() ? "" : " ", p.X(s.xs[i]), p.Y(s.ys[i]));
    ++points;
  }
  flush();
  for (size_t i = 0; i < s.lo.size() && i < s.hi.size() && i < s.xs.size(); ++i)  // spread: min to max
    if (!std::isnan(s.lo[i]) && !std::isnan(s.hi[i]) && (!p.c.log_y || s.lo[i] > 0))
      body += fmt::format("<line class=\"spread\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1:.1f}\" y2=\"{2:.1f}\"/>",
                          p.X(s.xs[i]), p.Y(s.lo[i]), p.Y(s.hi[i]));
  if (p.levels())
    for (size_t i = 0; i < s.xs.size(); ++i)
      if (p.shown(s.ys[i]))
        body += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>", p.X(s.xs[i]), p.Y(s.ys[i]),
                            s.color);
  const std::string dash = *s.dash ? fmt::format(" stroke-dasharray=\"{}\"", s.dash) : "";
  std::string o = fmt::format("<g class=\"series\" data-name=\"{}\" data-points=\"{}\" stroke=\"{}\"{}>{}</g>",
                              esc(s.name), points, s.color, dash, body);
  const double ly = plot::T + 8 + 18 * double(index), lx = plot::L + plot::pw;
  return o + fmt::format("<line class=\"legend-line\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\"{}/>"
                         "<text class=\"legend\" x=\"{}\" y=\"{}\">{}</text>",
                         lx + 12, lx + 36, ly, ly, s.color, dash, lx + 42, ly + 4, esc(s.name));
}

}  // namespace

std::string svg_chart(chart c) {
  for (auto& s : c.lines) downsample(s);
  const auto [lo, hi] = value_range(c);
  std::string o = fmt::format(
      "<figure class=\"chart\" id=\"{}\"><figcaption>{}</figcaption>"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\" "
      "aria-label=\"{}\">",
      esc(c.id), esc(c.title), plot::W, plot::H, plot::W, plot::H, esc(c.title));
  if (!std::isfinite(lo))
    return o + fmt::format("<text x=\"{}\" y=\"{}\" class=\"empty\">no data recorded</text></svg></figure>",
                           plot::W / 2, plot::H / 2);
  plot p{c};
  if (c.log_y) {
    p.y0 = std::pow(10, std::floor(std::log10(lo)));
    p.y1 = std::pow(10, std::ceil(std::log10(hi)));
    if (p.y1 <= p.y0) p.y1 = p.y0 * 10;
  } else {
    p.y0 = std::min(0.0, lo);
    p.y1 = hi <= p.y0 ? p.y0 + 1 : hi * 1.08;
  }
  o += bands(p) + axes(p);
  for (size_t si = 0; si < c.lines.size(); ++si) o += series_svg(p, c.lines[si], si);
  return o + "</svg></figure>\n";
}

}  // namespace rig::html
