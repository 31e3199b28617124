#pragma once
// What the HTML pages share: escaping, reading report.json's figures (tolerating reports that
// predate a key), the time series by column, the style sheet, cell texts.
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/directory.hpp"
#include "reports/report.hpp"

namespace rig::html {

using nlohmann::json;
constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();

// Text for HTML and XML: markup characters as entities, control characters as spaces.
std::string esc(std::string_view s);
double num(const json& j, const char* key, double otherwise = nan_v);

// The time series, by column.
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


extern const char* const css;

std::string params_text(const json& p);
// The checks, each passed or failed with its actual value ("" when there are none): the verdict
// a campaign gates on, so pages show it first.
std::string expectations_table(const std::vector<expectation_row>& checks, const std::string& title = "Expectations");
std::string pct_text(double v);
std::string lat_text(double v);
std::string thr_text(double v);

// JSON rig wrote (report.json, repeat.json, sweep.json), refused naming `what` when malformed or
// nested deeper than rig writes.
json parse_json_limited(const std::string& text, const std::string& what);
// A run directory's report.json, refused (naming the file) when missing, malformed or nested
// deeper than rig writes.
json read_report(const directory& run_dir);
directory open_run_dir(const std::string& run_dir);
// The same, typed (report_from_json), a key of the wrong type refused naming the file.
run_report read_run_report(const directory& run_dir);
run_report read_run_report(const std::string& run_dir);

}  // namespace rig::html
