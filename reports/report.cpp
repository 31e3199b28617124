#include "reports/report.hpp"

#include "reports/report_schema.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <type_traits>

#include "core/units.hpp"
#include "reports/phase_table.hpp"

namespace rig {

latency_summary latency_summary::of(const histogram& h) {
  latency_summary s;
  s.count = h.count();
  if (!s.count) return s;
  s.min = double(h.min()) / 1e3;
  s.mean = h.mean() / 1e3;
  s.p50 = double(h.percentile(50)) / 1e3;
  s.p90 = double(h.percentile(90)) / 1e3;
  s.p99 = double(h.percentile(99)) / 1e3;
  s.p999 = double(h.percentile(99.9)) / 1e3;
  s.max = double(h.max()) / 1e3;
  return s;
}

uint64_t latency_summary::samples_for(double percentile) {
  return uint64_t(std::llround(10.0 / (1.0 - percentile / 100.0)));
}

std::vector<std::string> latency_summary::low_confidence() const {
  std::vector<std::string> out;
  if (!count) return out;  // no value at all: nothing to qualify
  for (const auto& [name, q] : {std::pair{"p50", 50.0}, {"p90", 90.0}, {"p99", 99.0}, {"p999", 99.9}})
    if (count < samples_for(q)) out.push_back(name);
  return out;
}

const workload_phase_result* phase_result::workload(const std::string& w) const {
  for (const auto& x : workloads)
    if (x.name == w) return &x;
  return nullptr;
}

const phase_result* run_report::phase(const std::string& p) const {
  for (const auto& x : phases)
    if (x.name == p) return &x;
  return nullptr;
}

uint64_t workload_phase_result::error_total() const {
  uint64_t n = 0;
  for (const auto& [k, v] : errors) n += v;
  return n;
}

std::vector<magnification_row> compute_magnification(const std::vector<phase_result>& phases) {
  std::vector<magnification_row> out;
  if (phases.empty()) return out;
  const auto& base = phases.front();
  // No value, not 0x, where either side has none: a phase without one successful reply has no
  // latency to compare (a dead service is not "faster").
  auto ratio = [](double a, double b) { return b > 0 && !std::isnan(a) ? a / b : NAN; };
  for (size_t i = 1; i < phases.size(); ++i)
    for (const auto& w : phases[i].workloads)
      for (const auto& b : base.workloads)
        if (b.name == w.name && b.latency.count > 0) {
          const bool answered = w.latency.count > 0;
          out.push_back({phases[i].name, base.name, w.name, answered ? ratio(w.latency.p50, b.latency.p50) : NAN,
                         answered ? ratio(w.latency.p99, b.latency.p99) : NAN,
                         ratio(w.throughput_ops_s, b.throughput_ops_s)});
        }
  return out;
}

nlohmann::json figure(double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); }

namespace {

nlohmann::json to_json(const latency_summary& s) {
  nlohmann::json j = {{"count", s.count}};
  for (const auto& [k, v] : {std::pair{"min", s.min}, {"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99},
                             {"p999", s.p999}, {"max", s.max}})
    j[k] = s.count ? figure(v) : nlohmann::json();  // no samples, no figure
  j["low_confidence"] = s.low_confidence();
  return j;
}

// Reads report.json's keys back. Strict (a phase rig spilled and reads again): a key that is
// missing is an error. Tolerant (a report for the renderers, perhaps an older rig's or a
// hand-made one): a missing key reads as empty or no figure. A value of the wrong type is an
// error either way.
struct json_reader {
  bool strict = true;
  const nlohmann::json& at(const nlohmann::json& j, const char* k) const {
    static const nlohmann::json none;
    if (strict) return j.at(k);
    return j.is_object() && j.contains(k) ? j[k] : none;
  }
  // A text comes back printable (core/units.hpp): a report's names reach terminals.
  template <class T>
  T get(const nlohmann::json& j, const char* k, T otherwise = T{}) const {
    const auto& v = at(j, k);
    if constexpr (std::is_same_v<T, std::string>) return v.is_null() ? otherwise : printable(v.get<std::string>());
    else return v.is_null() ? otherwise : v.get<T>();
  }
  // null (or absent, when tolerant): no figure. Anything but a number or null is refused: a
  // string or a negative count read as 0 would pass a gate it should fail.
  double figure(const nlohmann::json& j, const char* k, double none = NAN, bool non_negative = false) const {
    const auto& v = at(j, k);
    if (v.is_null()) return none;
    if (!v.is_number()) throw std::runtime_error(fmt::format("'{}' is {}, not a number or null", k, v.type_name()));
    const double x = v.get<double>();
    if (non_negative && !(x >= 0)) throw std::runtime_error(fmt::format("'{}' is {}: it cannot be negative", k, x));
    return x;
  }
};

// A latency group: with samples, every figure a number of microseconds, never negative; without
// (count 0), no figure.
latency_summary latency_from_json(const nlohmann::json& j, const json_reader& rd) {
  latency_summary s;
  s.count = rd.get<uint64_t>(j, "count");
  for (auto [k, f] : {std::pair{"min", &latency_summary::min}, {"mean", &latency_summary::mean},
                      {"p50", &latency_summary::p50}, {"p90", &latency_summary::p90}, {"p99", &latency_summary::p99},
                      {"p999", &latency_summary::p999}, {"max", &latency_summary::max}}) {
    const double v = rd.figure(j, k, NAN, true);
    if (s.count > 0 && std::isnan(v) && (rd.strict || (j.is_object() && j.contains(k))))
      throw std::runtime_error(fmt::format("'{}' is null beside {} samples", k, s.count));
    s.*f = s.count > 0 && !std::isnan(v) ? v : 0.0;
  }
  return s;
}

phase_result read_phase(const nlohmann::json& j, const std::vector<std::string>& workload_order, const json_reader& rd) {
  phase_result p;
  p.name = rd.get<std::string>(j, "name");
  p.start_s = rd.figure(j, "start_s", 0);
  p.end_s = rd.figure(j, "end_s", 0);
  p.start_wall = rd.figure(j, "start_wall_s", 0);
  p.end_wall = rd.figure(j, "end_wall_s", 0);
  p.completed = rd.get<bool>(j, "completed", !rd.strict);
  for (const auto& i : rd.at(j, "injections")) {
    injection_result r{rd.get<std::string>(i, "name"), rd.get<std::string>(i, "kind"), rd.get<std::string>(i, "mechanism"),
                       rd.get<nlohmann::json>(i, "params", nlohmann::json::object()), rd.get<bool>(i, "verified"),
                       rd.get<std::string>(i, "verification"),
                       rd.get<nlohmann::json>(i, "measured", nlohmann::json::object())};
    if (i.contains("reverted") && i["reverted"].is_boolean()) r.reverted = i["reverted"].get<bool>();
    r.revert = printable(i.value("revert", ""));
    p.injections.push_back(std::move(r));
  }
  const auto& wl = rd.at(j, "workloads");
  for (const auto& name : workload_order) {
    const auto& x = wl.at(name);
    workload_phase_result w;
    w.name = printable(name);
    w.ops = rd.get<uint64_t>(x, "ops");
    w.due = rd.get<uint64_t>(x, "due", 0);
    w.not_sent = rd.get<uint64_t>(x, "not_sent", 0);
    w.unfinished = rd.get<uint64_t>(x, "unfinished", 0);
    w.errors = rd.get<std::map<std::string, uint64_t>>(x, "errors");
    w.throughput_ops_s = rd.figure(x, "throughput_ops_s", rd.strict ? 0 : NAN, true);
    w.latency = latency_from_json(rd.at(x, "latency_us"), rd);
    w.service = latency_from_json(rd.at(x, "service_us"), rd);
    w.send_lag = latency_from_json(rd.at(x, "send_lag_us"), rd);
    w.error_latency = latency_from_json(rd.at(x, "error_latency_us"), rd);
    w.rejected_latency = latency_from_json(rd.at(x, "rejected_latency_us"), rd);
    w.all_latency = latency_from_json(rd.at(x, "all_latency_us"), rd);
    w.errors_pct = rd.figure(x, "errors_pct", NAN, true);
    if (std::isnan(w.errors_pct) && !rd.strict) w.errors_pct = errors_pct_of(w.error_total(), w.ops);  // an older report
    const auto& g = rd.at(x, "generator");
    w.late_sends = rd.get<uint64_t>(g, "late_sends");
    w.generator_warning = rd.get<std::string>(g, "warning");
    if (x.contains("status")) w.status = x.at("status").get<std::map<std::string, uint64_t>>();
    if (x.contains("counts")) w.counts = x.at("counts").get<std::map<std::string, uint64_t>>();
    if (x.contains("histograms") && x.at("histograms").is_object())
      for (const char* k : {"latency", "service", "send_lag"})
        if (x.at("histograms").contains(k)) w.hdr[k] = x.at("histograms").at(k).get<std::string>();
    p.workloads.push_back(std::move(w));
  }
  p.resources = rd.get<nlohmann::json>(j, "resources", nlohmann::json::object());
  return p;
}

}  // namespace

nlohmann::json to_json(const phase_result& p) {
  using nlohmann::json;
  json inj = json::array();
  for (const auto& i : p.injections)
    inj.push_back({{"name", i.name}, {"kind", i.kind}, {"mechanism", i.mechanism}, {"params", i.params},
                   {"verified", i.verified}, {"verification", i.verification}, {"measured", i.measured},
                   {"reverted", i.reverted ? json(*i.reverted) : json()}, {"revert", i.revert}});
  json wl = json::object();
  for (const auto& w : p.workloads) {
    wl[w.name] = {{"ops", w.ops},
                  {"due", w.due},
                  {"not_sent", w.not_sent},
                  {"unfinished", w.unfinished},
                  {"errors", w.errors},
                  {"throughput_ops_s", w.throughput_ops_s},
                  {"latency_us", to_json(w.latency)},
                  {"service_us", to_json(w.service)},
                  {"send_lag_us", to_json(w.send_lag)},
                  {"error_latency_us", to_json(w.error_latency)},
                  {"rejected_latency_us", to_json(w.rejected_latency)},
                  {"all_latency_us", to_json(w.all_latency)},
                  {"errors_pct", figure(w.errors_pct)},
                  {"generator", {{"late_sends", w.late_sends},
                                 {"late_share", w.ops ? double(w.late_sends) / double(w.ops) : 0.0},
                                 {"limited", !w.generator_warning.empty()},
                                 {"warning", w.generator_warning}}}};
    if (!w.status.empty()) wl[w.name]["status"] = w.status;
    if (!w.counts.empty()) wl[w.name]["counts"] = w.counts;
    if (!w.hdr.empty()) {
      json h = {{"encoding", "HdrHistogram V2 compressed, base64"}, {"unit", "ns"}};
      for (const auto& [k, v] : w.hdr) h[k] = v;
      wl[w.name]["histograms"] = h;
    }
  }
  return {{"name", p.name},
          {"start_s", p.start_s},
          {"end_s", p.end_s},
          {"start_wall_s", p.start_wall},
          {"end_wall_s", p.end_wall},
          {"completed", p.completed},
          {"injections", inj},
          {"workloads", wl},
          {"resources", p.resources}};
}

phase_result phase_from_json(const nlohmann::json& j, const std::vector<std::string>& workload_order) {
  return read_phase(j, workload_order, json_reader{true});
}

run_report report_from_json(const nlohmann::json& j) {
  const json_reader rd{false};
  if (!j.is_object()) throw std::runtime_error("not a JSON object");
  run_report r;
  r.rig_version = rd.get<std::string>(j, "rig_version");
  r.status = rd.get<std::string>(j, "status", "?");
  const auto& sc = rd.at(j, "scenario");
  r.scenario_name = rd.get<std::string>(sc, "name");
  r.scenario_file = rd.get<std::string>(sc, "file");
  r.seed = rd.get<int64_t>(sc, "seed", 0);
  r.sets = rd.get<std::vector<std::string>>(sc, "sets", {});
  r.description = rd.get<std::string>(sc, "description");
  r.failure = rd.get<std::string>(j, "failure");
  r.host = rd.get<nlohmann::json>(j, "host", nlohmann::json::object());
  r.target = rd.get<nlohmann::json>(j, "target", nlohmann::json::object());
  r.workloads = rd.get<nlohmann::json>(j, "workloads", nlohmann::json::object());
  for (const auto& p : rd.at(j, "phases")) {
    std::vector<std::string> order;  // the phase's own workloads, in report.json's (name) order
    for (const auto& [w, _] : rd.at(p, "workloads").items()) order.push_back(w);
    r.phases.push_back(read_phase(p, order, rd));
  }
  for (const auto& m : rd.at(j, "magnification"))
    r.magnification.push_back({rd.get<std::string>(m, "phase"), rd.get<std::string>(m, "baseline"),
                               rd.get<std::string>(m, "workload"), rd.figure(m, "p50_x"), rd.figure(m, "p99_x"),
                               rd.figure(m, "throughput_x")});
  for (const auto& e : rd.at(j, "events"))
    r.events.push_back({rd.figure(e, "t_s", 0), rd.get<std::string>(e, "kind"), rd.get<std::string>(e, "detail")});
  for (const auto& e : rd.at(j, "expectations"))
    r.expectations.push_back({rd.get<std::string>(e, "expr"), rd.get<bool>(e, "ok"), rd.get<std::string>(e, "actual")});
  r.skipped_injectors = rd.get<nlohmann::json>(j, "skipped_injectors", nlohmann::json::array());
  r.warnings = rd.get<std::vector<std::string>>(j, "warnings", {});
  return r;
}

nlohmann::json to_json(const run_report& r) {
  using nlohmann::json;
  json phases = json::array();
  for (const auto& p : r.phases) phases.push_back(to_json(p));
  json mag = json::array();
  for (const auto& m : r.magnification)
    mag.push_back({{"phase", m.phase}, {"baseline", m.baseline}, {"workload", m.workload}, {"p50_x", figure(m.p50_x)},
                   {"p99_x", figure(m.p99_x)}, {"throughput_x", figure(m.throughput_x)}});
  json events = json::array();
  for (const auto& e : r.events) events.push_back({{"t_s", e.t_s}, {"kind", e.kind}, {"detail", e.detail}});
  json expectations = json::array();
  for (const auto& e : r.expectations) expectations.push_back({{"expr", e.expr}, {"ok", e.ok}, {"actual", e.actual}});
  json j = {{"report_version", report_version},
            {"rig_version", r.rig_version},
            {"status", r.status},
            {"scenario",
             {{"name", r.scenario_name}, {"file", r.scenario_file}, {"description", r.description}, {"seed", r.seed},
              {"sets", r.sets}}},
            {"host", r.host},
            {"target", r.target},
            {"workloads", r.workloads},
            {"phases", phases},
            {"magnification", mag},
            {"events", events},
            {"expectations", expectations}};
  if (!r.failure.empty()) j["failure"] = r.failure;
  if (!r.skipped_injectors.empty()) j["skipped_injectors"] = r.skipped_injectors;
  j["warnings"] = r.warnings;
  return j;
}

csv_writer::csv_writer(unique_fd file, const std::string& path, const std::vector<std::string>& columns)
    : path_(path), out_(std::move(file)) {
  if (!out_) throw std::runtime_error("cannot write " + path);
  row(columns);
}

void csv_writer::row(const std::vector<std::string>& cells) {
  for (size_t i = 0; i < cells.size(); ++i) out_ << (i ? "," : "") << cells[i];
  out_ << "\n" << std::flush;
  if (!out_) throw std::runtime_error("cannot write " + path_);
}

namespace {

struct term_style {
  const char *bold, *red, *green, *reset;
};

// Usage against caps, for phases whose target ran in a cgroup of the run's.
std::string cgroup_lines(const run_report& r, size_t pw, const term_style& st) {
  const char* bold = st.bold;
  const char* reset = st.reset;
  std::string s;
  bool any_cgroup = false;
  for (const auto& p : r.phases) any_cgroup = any_cgroup || p.resources.contains("cgroup");
  if (any_cgroup) {
    s += fmt::format("\n{}{:<{}}  {:>22}  {:>6}  {:>16}  {:>11}  {:>24}  {:>10}  {:>14}  {:>12}{}\n", bold, "target",
                     pw, "memory used / cap", "OOM", "CPUs used / cap", "throttled", "disk writes / cap", "ops/CPU-s",
                     "RSS growth/op", "CPU wait/s", reset);
    for (const auto& p : r.phases) {
      if (!p.resources.contains("cgroup")) continue;
      const auto& c = p.resources["cgroup"];
      auto cap = [](const nlohmann::json& v, auto fmt_one) { return v.is_null() ? std::string("none") : fmt_one(v); };
      std::string mem = "-", oom = "-", cpu = "-", thr = "-";
      if (c.contains("memory_used_max_bytes"))
        mem = format_bytes(c["memory_used_max_bytes"].get<double>()) + " / " +
              cap(c["memory_cap_bytes"], [](const auto& v) { return format_bytes(v.template get<double>()); });
      if (c.contains("oom_kills")) oom = std::to_string(c["oom_kills"].get<int64_t>());
      if (c.contains("cpu_used_cpus"))
        cpu = fmt::format("{:.2f} / {}", c["cpu_used_cpus"].get<double>(),
                          cap(c["cpu_cap_cpus"], [](const auto& v) { return fmt::format("{:.2f}", v.template get<double>()); }));
      if (c.contains("cpu_throttled_s")) thr = fmt::format("{:.2f}s", c["cpu_throttled_s"].get<double>());
      const auto& t = p.resources.value("target", nlohmann::json::object());
      const std::string growth =
          t.contains("rss_growth_per_op_bytes") ? format_bytes(t["rss_growth_per_op_bytes"].get<double>()) : "-";
      const std::string per_cpu_s = t.contains("ops_per_cpu_s") ? format_count(t["ops_per_cpu_s"].get<double>()) : "-";
      // Run-queue wait: how long per second its threads were runnable but had no CPU.
      const std::string wait = t.contains("run_queue_wait_ms_per_s") && t["run_queue_wait_ms_per_s"].is_number()
                                   ? format_duration_us(t["run_queue_wait_ms_per_s"].get<double>() * 1e3)
                                   : "-";
      // Disk writes against the cap in force: operations/s where only operations are capped (the
      // io controller's count), else bytes/s: the target's own (/proc/PID/io, which its
      // writeback counts in; cgroup v1 gives the flusher's writeback to the root cgroup).
      std::string disk = "-";
      if (c.contains("io_write_bytes_per_s")) {
        const auto& capj = c["io_cap"];
        const bool ops = capj.is_object() && capj["write_iops"].get<int64_t>() && !capj["write_bps"].get<int64_t>();
        const bool own = t.contains("disk_write_bytes_per_s") && t["disk_write_bytes_per_s"].is_number();
        const double bytes_s =
            own ? t["disk_write_bytes_per_s"].get<double>() : c["io_write_bytes_per_s"].get<double>();
        const std::string used =
            ops ? fmt::format("{:.0f}/s", c["io_write_ops_per_s"].get<double>()) : format_bytes(bytes_s) + "/s";
        std::string limit = "none";
        if (capj.is_object() && ops) limit = fmt::format("{}/s", capj["write_iops"].get<int64_t>());
        else if (capj.is_object() && capj["write_bps"].get<int64_t>())
          limit = format_bytes(capj["write_bps"].get<double>()) + "/s";
        disk = used + " / " + limit;
      }
      s += fmt::format("{:<{}}  {:>22}  {:>6}  {:>16}  {:>11}  {:>24}  {:>10}  {:>14}  {:>12}\n", p.name, pw, mem, oom,
                       cpu, thr, disk, per_cpu_s, growth, wait);
    }
  }
  return s;
}

// What was injected and undone, what happened, what was checked.
std::string injection_lines(const run_report& r, const term_style& st) {
  const char* bold = st.bold;
  const char* red = st.red;
  const char* green = st.green;
  const char* reset = st.reset;
  std::string s;
  bool any_injection = false;
  for (const auto& p : r.phases) any_injection = any_injection || !p.injections.empty();
  if (any_injection) {
    s += fmt::format("\n{}injections{}\n", bold, reset);
    for (const auto& p : r.phases)
      for (const auto& i : p.injections) {
        s += fmt::format("  {}: {} ({}) via {}\n    {}{}{} {}\n", p.name, i.name, i.kind, i.mechanism,
                         i.verified ? green : red, i.verified ? "verified" : "NOT VERIFIED", reset, i.verification);
        if (i.measured.contains("summary")) s += fmt::format("    measured {}\n", i.measured["summary"].get<std::string>());
        if (i.reverted)
          s += fmt::format("    {}{}{} {}\n", *i.reverted ? green : red, *i.reverted ? "reverted" : "NOT REVERTED", reset,
                           i.revert);
      }
  }
  if (!r.events.empty()) {
    s += fmt::format("\n{}events{}\n", bold, reset);
    for (const auto& e : r.events) s += fmt::format("  {:>7.2f}s  {}: {}\n", e.t_s, e.kind, e.detail);
  }
  if (!r.expectations.empty()) {
    s += fmt::format("\n{}expectations{}\n", bold, reset);
    for (const auto& e : r.expectations)
      s += fmt::format("  {}{}{}  {}  (actual {})\n", e.ok ? green : red, e.ok ? "pass" : "FAIL", reset, e.expr,
                       e.actual);
  }
  return s;
}

}  // namespace

std::string terminal_summary(const run_report& r, bool color) {
  const term_style st = color ? term_style{"\033[1m", "\033[31m", "\033[32m", "\033[0m"} : term_style{"", "", "", ""};
  const char *bold = st.bold, *red = st.red, *reset = st.reset;
  std::string s;
  size_t pw = 5, ww = 8;
  for (const auto& p : r.phases) {
    pw = std::max(pw, p.name.size());
    for (const auto& w : p.workloads) ww = std::max(ww, w.name.size());
  }
  s += fmt::format("{}{:<{}}  {:<{}}  {:>10}  {:>9}  {:>9}  {:>9}  {:>7}  {:>7}  {:>8}  {:>8}{}\n", bold, "phase", pw,
                   "workload", ww, "ops/s", "p50", "p99", "p99.9", "errors", "failed", "p50 ×", "p99 ×", reset);
  // A percentile from fewer samples than it needs is marked, and the mark explained below.
  bool marked = false;
  auto cell = [&](const latency_cell& c) -> std::string {
    if (c.text.empty()) return "-";
    marked = marked || c.low;
    return c.low ? c.text + "*" : c.text;
  };
  for (const auto& row : phase_rows(r)) {
    const auto& p = *row.phase;
    const auto& w = *row.workload;
    const bool failing = w.error_total() > 0;
    s += fmt::format("{:<{}}  {:<{}}  {:>10}  {:>9}  {:>9}  {:>9}  {}{:>7}  {:>7}{}  {}{:>8}  {:>8}{}{}\n", p.name, pw,
                     w.name, ww, row.throughput, cell(row.p50), cell(row.p99), cell(row.p999), failing ? red : "",
                     row.errors, row.failed.empty() ? "-" : row.failed, failing ? reset : "", row.loud ? bold : "",
                     row.p50_x, row.p99_x, row.loud ? reset : "", p.completed ? "" : "  (cut short)");
  }
  if (marked)
    s += fmt::format("* from fewer replies than the percentile needs (p50 {}, p99 {}, p99.9 {}): low confidence\n",
                     latency_summary::samples_for(50), format_count(double(latency_summary::samples_for(99))),
                     format_count(double(latency_summary::samples_for(99.9))));
  for (const auto& p : r.phases)
    for (const auto& w : p.workloads)
      if (!w.generator_warning.empty())
        s += fmt::format("{}! {} {}: {}{}\n", red, p.name, w.name, w.generator_warning, reset);
  for (const auto& w : r.warnings) s += fmt::format("{}! {}{}\n", red, w, reset);
  s += cgroup_lines(r, pw, st) + injection_lines(r, st);
  return s;
}

}  // namespace rig
