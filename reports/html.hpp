#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "reports/report.hpp"

namespace rig {

// report.html: one self-contained file (inline SVG drawn here, inline CSS, no script, no
// network) from what a run wrote: report.json, timeseries.csv and scenario.toml.
std::string render_html(const run_report& report, const timeseries_table& timeseries,
                        const std::string& scenario_text);
std::string render_html(const nlohmann::json& report, const timeseries_table& timeseries,
                        const std::string& scenario_text);  // report.json as written, read by report_from_json

timeseries_table read_run_csv(const std::string& run_dir);
timeseries_table parse_csv(const std::string& text);

// Reads RUN_DIR/report.json (required), timeseries.csv and scenario.toml (if there) and
// writes RUN_DIR/report.html; returns its path. Throws naming the file that is missing or bad.
std::string write_html_report(const directory& run_dir);
std::string write_html_report(const std::string& run_dir);

// `rig compare RUN_A RUN_B`: each phase and workload of B beside A (matched by name) with
// the ratios B/A, as terminal text (returned) and as compare.html written to html_path.
// `extra_html`: a section placed after the table (the --fail-if verdict).
std::string compare_runs(const std::string& dir_a, const std::string& dir_b, const std::string& html_path,
                         const std::string& extra_html = "");
// compare.html for repeats or sweeps: the verdict's section alone; returns the path.
std::string compare_groups_html(const std::string& section, const std::string& html_path);

// sweep.html: the response curve of a sweep (sweep.json as rig/sweep.cpp writes it): each
// level's median with its spread, the knee marked.
struct sweep_summary;
std::string render_sweep_html(const sweep_summary& sweep);

// Charts never carry more points per series than this: a one-hour run stays a few hundred KiB.
constexpr size_t html_max_points = 1200;

}  // namespace rig
