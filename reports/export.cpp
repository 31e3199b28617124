#include "reports/export.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <optional>
#include <sstream>

#include "core/files.hpp"
#include "core/hdr_codec.hpp"
#include "reports/html_common.hpp"

namespace rig {

namespace {

// Each interval line's histogram decodes; throws naming the line that does not.
void check_log(const std::string& path, const std::string& text) {
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.empty() || line[0] == '#' || line[0] == '"') continue;
    const size_t comma = line.rfind(',');
    std::string why;
    if (comma == std::string::npos || !hdr_decode(line.substr(comma + 1), &why))
      throw std::runtime_error(fmt::format("{}:{}: not an interval with a histogram ({})", path, n, why));
  }
}

std::string label(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\' || c == '"') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

}  // namespace

std::vector<std::string> export_hdr_logs(const std::string& run_dir, const run_report& r, const std::string& out_dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  for (const auto& p : r.phases)
    for (const auto& w : p.workloads)
      if (std::find(names.begin(), names.end(), w.name) == names.end()) names.push_back(w.name);
  if (names.empty()) throw std::runtime_error(run_dir + ": the run has no workload figures to export");
  // Read through the run directory's descriptor, written through the output's.
  const directory run = html::open_run_dir(run_dir);
  std::optional<directory> out;
  if (out_dir.empty()) {
    out = run.make_subdir("export");
    if (!out) out = directory::open(run_dir + "/export");
  } else {
    make_user_dirs(out_dir);
    out = directory::open(out_dir);
  }
  std::vector<std::string> written;
  for (const auto& w : names) {
    const std::string src = w + ".latency.hlog";
    // A regular file within its cap, never through a link (a FIFO there cannot block).
    std::string log = run.read_input_if_present(src, hlog_input).value_or("");
    std::string from = run_dir + "/" + src;
    if (log.empty()) {  // an older run: an interval per phase, from report.json
      from = run_dir + "/report.json (its phases' histograms, as a log)";
      const double start = r.phases.front().start_wall - r.phases.front().start_s;
      log = hdr_log_header(start, fmt::format("rig: scenario {}, workload {}: latency per phase, ns (from report.json)",
                                              r.scenario_name, w));
      for (const auto& p : r.phases) {
        const workload_phase_result* x = p.workload(w);
        if (!x) continue;
        const auto h = x->hdr.find("latency");
        if (h == x->hdr.end())
          throw std::runtime_error(fmt::format("{}: no {} and no histograms in report.json (a run from before rig "
                                               "wrote them): nothing to export for workload {}",
                                               run_dir, src, w));
        log += hdr_log_line(p.start_s, p.end_s - p.start_s, x->latency.count ? x->latency.max : 0, h->second);
      }
    }
    check_log(from, log);
    const std::string name = r.scenario_name + "-" + w + ".latency.hlog";
    out->write_file(name, log);
    written.push_back(out->path() + "/" + name);
  }
  return written;
}

std::string openmetrics_text(const run_report& r) {
  std::string o;
  auto family = [&](const char* name, const char* type, const char* unit, const char* help) {
    o += fmt::format("# TYPE {} {}\n", name, type);
    if (*unit) o += fmt::format("# UNIT {} {}\n", name, unit);
    o += fmt::format("# HELP {} {}\n", name, help);
  };
  auto labels = [&](const phase_result& p, const workload_phase_result& w, const std::string& extra = "") {
    return fmt::format("{{scenario=\"{}\",phase=\"{}\",workload=\"{}\"{}}}", label(r.scenario_name), label(p.name),
                       label(w.name), extra);
  };
  auto each = [&](auto f) {
    for (const auto& p : r.phases)
      for (const auto& w : p.workloads) f(p, w);
  };
  family("rig_latency_seconds", "gauge", "seconds",
         "Latency of successful replies from the intended send time, by quantile (rig's phase figures).");
  each([&](const phase_result& p, const workload_phase_result& w) {
    if (!w.latency.count) return;
    for (const auto& [q, v] : {std::pair{"0.5", w.latency.p50}, {"0.9", w.latency.p90}, {"0.99", w.latency.p99},
                               {"0.999", w.latency.p999}, {"1", w.latency.max}})
      o += fmt::format("rig_latency_seconds{} {:.9g}\n", labels(p, w, fmt::format(",quantile=\"{}\"", q)), v / 1e6);
  });
  family("rig_throughput_ops_per_second", "gauge", "", "Successful operations per second in the phase.");
  each([&](const phase_result& p, const workload_phase_result& w) {
    o += fmt::format("rig_throughput_ops_per_second{} {:.9g}\n", labels(p, w), w.throughput_ops_s);
  });
  family("rig_ops", "counter", "", "Successful operations in the phase.");
  each([&](const phase_result& p, const workload_phase_result& w) {
    o += fmt::format("rig_ops_total{} {}\n", labels(p, w), w.ops);
  });
  family("rig_errors", "counter", "", "Failed operations in the phase, by kind.");
  each([&](const phase_result& p, const workload_phase_result& w) {
    for (const auto& [kind, n] : w.errors)
      o += fmt::format("rig_errors_total{} {}\n", labels(p, w, fmt::format(",kind=\"{}\"", label(kind))), n);
  });
  family("rig_errors_ratio", "gauge", "ratio", "Share of the phase's requests that failed (0 to 1).");
  each([&](const phase_result& p, const workload_phase_result& w) {
    if (!std::isnan(w.errors_pct)) o += fmt::format("rig_errors_ratio{} {:.9g}\n", labels(p, w), w.errors_pct / 100);
  });
  family("rig_magnification_ratio", "gauge", "ratio", "A phase's figure against the same workload's in the first phase.");
  for (const auto& m : r.magnification)
    for (const auto& [fig, v] : {std::pair{"p50", m.p50_x}, {"p99", m.p99_x}, {"throughput", m.throughput_x}})
      if (!std::isnan(v))
        o += fmt::format("rig_magnification_ratio{{scenario=\"{}\",phase=\"{}\",workload=\"{}\",figure=\"{}\"}} {:.9g}\n",
                         label(r.scenario_name), label(m.phase), label(m.workload), fig, v);
  family("rig_run_ok", "gauge", "", "1 when the run's status is ok (every injection verified, every check held).");
  o += fmt::format("rig_run_ok{{scenario=\"{}\",status=\"{}\"}} {}\n", label(r.scenario_name), label(r.status),
                   r.status == "ok" ? 1 : 0);
  return o + "# EOF\n";
}

}  // namespace rig
