#pragma once
// SVG line charts for the HTML pages: series on a time (or level) axis, phases shaded,
// latency on a log axis, at most html_max_points points per series.
#include <string>
#include <utility>
#include <vector>

namespace rig::html {

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


extern const char* const palette[8];

std::string fmt_plain(double v);
std::string fmt_latency(double us);  // axis ticks on decades: "1 µs" .. "1 s"
std::string fmt_mib(double bytes);
std::string fmt_pct(double v);

std::string svg_chart(chart c);

}  // namespace rig::html
