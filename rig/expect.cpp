#include "rig/expect.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <sstream>

#include "core/units.hpp"
#include "reports/sweep_report.hpp"
#include "rig/phase_figures.hpp"
#include "workloads/recorder.hpp"

namespace rig {

namespace {

const std::vector<std::string> latency_groups = {"latency",       "service",          "send_lag",
                                                 "error_latency", "rejected_latency", "all_latency"};
const std::vector<std::string> latency_stats = {"min", "mean", "p50", "p90", "p99", "p999", "max"};
const std::vector<std::string> error_kinds = [] {
  std::vector<std::string> v;
  for (size_t i = 0; i < error_kind_count; ++i) v.push_back(error_kind_name(error_kind(i)));
  return v;
}();
const std::vector<std::string> status_classes = {"1xx", "2xx", "3xx", "4xx", "5xx"};
const std::vector<std::string> workload_metrics = {
    "latency", "service", "send_lag",   "error_latency", "rejected_latency", "all_latency",
    "ops",     "throughput", "errors", "errors_pct",    "status",           "late_sends", "counts"};
const std::vector<std::string> ratio_metrics = {"p50_x", "p99_x", "throughput_x"};
// What report.json's events can be; "events.<kind>" counts them.
const std::vector<std::string> event_kinds = {"target_exit", "oom_kill", "memory_limit", "phases_skipped",
                                              "interrupted", "cleanup_failed", "errors_began", "crash"};


std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

enum class unit_kind { duration_us, count, rate, ratio, bytes, percent, plain };

unit_kind kind_of(const std::vector<std::string>& path) {
  if (path[0] == "magnification") return unit_kind::ratio;
  if (path[0] == "events") return unit_kind::count;
  if (path.size() >= 3 && (path[1] == "target" || path[1] == "cgroup")) {
    const auto& k = path[2];
    if (k.ends_with("_bytes")) return unit_kind::bytes;
    return unit_kind::plain;
  }
  const auto& m = path[2];
  if (contains(latency_groups, m)) return unit_kind::duration_us;
  if (m == "throughput") return unit_kind::rate;
  if (m == "errors_pct") return unit_kind::percent;
  return unit_kind::count;
}

std::optional<double> parse_rhs(unit_kind k, const std::string& text, std::string& why) {
  char* end = nullptr;
  const double plain = std::strtod(text.c_str(), &end);
  const bool is_plain = end != text.c_str() && *end == '\0';
  switch (k) {
    case unit_kind::duration_us:
      if (auto ns = parse_duration_ns(text, &why)) return double(*ns) / 1e3;
      return std::nullopt;
    case unit_kind::rate:
      if (is_plain) return plain;
      return parse_op_rate(text, &why);
    case unit_kind::bytes:
      if (is_plain) return plain;
      if (auto b = parse_size_bytes(text, &why)) return double(*b);
      return std::nullopt;
    case unit_kind::percent:
      if (is_plain) return plain;
      if (auto f = parse_percent(text, &why)) return *f * 100;
      return std::nullopt;
    default:
      if (is_plain) return plain;
      why = "expected a plain number";
      return std::nullopt;
  }
}

std::string format_actual(unit_kind k, double v) {
  switch (k) {
    case unit_kind::duration_us: return format_duration_us(v);
    case unit_kind::rate: return fmt::format("{:.1f}/s", v);
    case unit_kind::ratio: return fmt::format("{:.3g}×", v);
    case unit_kind::bytes: return format_bytes(v);
    case unit_kind::percent: return fmt::format("{:.2f}%", v);
    default: return fmt::format("{:g}", v);
  }
}

}  // namespace

std::optional<check_expr> parse_check(const std::string& text, const source_pos& where,
                                      const std::vector<std::string>& phases,
                                      const std::vector<std::string>& workloads, diagnostics& diags) {
  auto fail = [&](const std::string& msg) {
    diags.add(where, "check \"" + text + "\": " + msg);
    return std::optional<check_expr>{};
  };
  check_expr c;
  c.text = text;
  c.where = where;
  std::string lhs;
  if (!split_comparison(text, lhs, c.op, c.rhs_text))
    return fail("expected '<path> <op> <value>' with op one of < <= > >= == !=");
  c.path = split(lhs, '.');
  if (!c.path.empty() && c.path[0] == "events") {
    if (c.path.size() != 2 || !contains(event_kinds, c.path[1]))
      return fail(fmt::format("expected events.<kind>, a count, with kind one of: {}", fmt::join(event_kinds, ", ")) +
                  (c.path.size() == 2 ? did_you_mean(c.path[1], event_kinds) : ""));
  } else if (c.path.size() < 3) {
    return fail("path '" + lhs + "' is too short, e.g. \"nagle.rr.latency.p50\"");
  }

  if (c.path[0] == "events") {
    // checked above
  } else if (c.path[0] == "magnification") {
    if (c.path.size() != 4) return fail("expected magnification.<phase>.<workload>.<p50_x|p99_x|throughput_x>");
    if (!contains(phases, c.path[1]))
      return fail("no phase '" + c.path[1] + "'" + did_you_mean(c.path[1], phases));
    if (!contains(workloads, c.path[2]))
      return fail("no workload '" + c.path[2] + "'" + did_you_mean(c.path[2], workloads));
    if (!contains(ratio_metrics, c.path[3]))
      return fail("unknown ratio '" + c.path[3] + "'" + did_you_mean(c.path[3], ratio_metrics));
  } else {
    std::vector<std::string> first = phases;
    first.push_back("magnification");
    if (!contains(phases, c.path[0])) return fail("no phase '" + c.path[0] + "'" + did_you_mean(c.path[0], first));
    if (c.path[1] == "target" || c.path[1] == "cgroup") {
      if (c.path.size() != 3)
        return fail("expected <phase>." + c.path[1] + ".<resource>, e.g. \"" +
                    (c.path[1] == "target" ? "overflow.target.rejected" : "capped.cgroup.memory_used_max_bytes") +
                    "\"");
      const auto& known = c.path[1] == "target" ? target_figure_names() : cgroup_figure_names();
      if (!contains(known, c.path[2]))
        return fail(fmt::format("no {} figure '{}'", c.path[1], c.path[2]) + did_you_mean(c.path[2], known));
    } else {
      std::vector<std::string> second = workloads;
      second.push_back("target");
      second.push_back("cgroup");
      if (!contains(workloads, c.path[1]))
        return fail("no workload '" + c.path[1] + "'" + did_you_mean(c.path[1], second));
      const auto& m = c.path[2];
      if (!contains(workload_metrics, m))
        return fail("unknown metric '" + m + "'" + did_you_mean(m, workload_metrics));
      if (contains(latency_groups, m)) {
        if (c.path.size() != 4 || !contains(latency_stats, c.path[3]))
          return fail("expected " + m + ".<min|mean|p50|p90|p99|p999|max>" +
                      (c.path.size() == 4 ? did_you_mean(c.path[3], latency_stats) : ""));
      } else if (m == "errors") {
        if (c.path.size() > 4 || (c.path.size() == 4 && !contains(error_kinds, c.path[3])))
          return fail(fmt::format("expected errors or errors.<{}>", fmt::join(error_kinds, "|")) +
                      (c.path.size() == 4 ? did_you_mean(c.path[3], error_kinds) : ""));
      } else if (m == "status") {
        if (c.path.size() != 4 || !contains(status_classes, c.path[3]))
          return fail(fmt::format("expected status.<{}>", fmt::join(status_classes, "|")) +
                      (c.path.size() == 4 ? did_you_mean(c.path[3], status_classes) : ""));
      } else if (m == "counts") {
        const auto& names = workload_count_names();
        if (c.path.size() != 4 || !contains(names, c.path[3]))
          return fail(fmt::format("expected counts.<{}>", fmt::join(names, "|")) +
                      (c.path.size() == 4 ? did_you_mean(c.path[3], names) : ""));
      } else if (c.path.size() != 3) {
        return fail("'" + m + "' takes no further part");
      }
    }
  }
  std::string why;
  auto v = parse_rhs(kind_of(c.path), c.rhs_text, why);
  if (!v) return fail("value '" + c.rhs_text + "': " + why);
  c.rhs = *v;
  return c;
}

namespace {

// A check's figure in one report, or why it has none.
struct check_reading {
  std::optional<double> value;
  std::string no_value = "no value (the phase did not run or recorded nothing)";
  std::string qualifier;  // said beside a value that stands on few samples
  std::string lagged;     // said beside a failed check when the generator limited the phase
};

check_reading read_check(const check_expr& c, const nlohmann::json& report) {
  using nlohmann::json;
  const auto& p = c.path;
  check_reading r;
  auto& actual = r.value;
  auto& no_value = r.no_value;
  auto& qualifier = r.qualifier;
  auto& lagged = r.lagged;
  auto find_phase = [&](const std::string& name) -> const json* {
    for (const auto& ph : report.at("phases"))
      if (ph.at("name") == name) return &ph;
    return nullptr;
  };
  if (p[0] == "events") {
    double n = 0;
    for (const auto& e : report.at("events"))
      if (e.at("kind") == p[1]) ++n;
    actual = n;
  } else if (p[0] == "magnification") {
    for (const auto& m : report.at("magnification"))
      if (m.at("phase") == p[1] && m.at("workload") == p[2]) {
        if (m.at(p[3]).is_number()) actual = m.at(p[3]).get<double>();
        else no_value = fmt::format("no value (phase {} has no successful reply of {} to compare)", p[1], p[2]);
      }
  } else if (const json* ph = find_phase(p[0])) {
    if (p[1] == "target" || p[1] == "cgroup") {
      const auto& t = (*ph)["resources"][p[1]];
      if (t.is_object() && t.contains(p[2]) && t[p[2]].is_number()) actual = t[p[2]].get<double>();
    } else if (ph->at("workloads").contains(p[1])) {
      const auto& w = ph->at("workloads").at(p[1]);
      const auto& m = p[2];
      // A phase where rig's own generator fell behind: a failing figure may be rig's, and is said so.
      if (w.contains("generator") && w["generator"].value("limited", false) && m != "late_sends")
        lagged = fmt::format("; rig's generator lagged in phase {} ({} late sends): the figure may be rig's, not the "
                             "target's",
                             p[0], w["generator"].value("late_sends", uint64_t(0)));
      if (contains(latency_groups, m)) {
        const auto& l = w.at(m + "_us");
        const uint64_t n = l.at("count").get<uint64_t>();
        if (n > 0 && l.at(p[3]).is_number()) actual = l.at(p[3]).get<double>();
        else no_value = fmt::format("no value (phase {} has no {} of {})", p[0],
                                    m == "error_latency"      ? "error reply"
                                    : m == "rejected_latency" ? "rejected request"
                                    : m == "all_latency"      ? "request sent"
                                    : m == "send_lag"         ? "late send"
                                                              : "successful reply",
                                    p[1]);
        const auto low = l.value("low_confidence", nlohmann::json::array());
        if (std::find(low.begin(), low.end(), p[3]) != low.end())
          qualifier = fmt::format(" (from {} replies: low confidence)", n);
      } else if (m == "ops") {
        actual = w.at("ops").get<double>();
      } else if (m == "throughput") {
        actual = w.at("throughput_ops_s").get<double>();
      } else if (m == "errors_pct") {
        if (w.at("errors_pct").is_number()) actual = w.at("errors_pct").get<double>();
        else no_value = fmt::format("no value (phase {}: {} tried nothing)", p[0], p[1]);
      } else if (m == "errors") {
        double n = 0;
        for (const auto& [k, v] : w.at("errors").items())
          if (p.size() == 3 || k == p[3]) n += v.get<double>();
        actual = n;
      } else if (m == "status") {
        actual = w.contains("status") ? w["status"].value(p[3], 0.0) : 0.0;
      } else if (m == "counts") {  // a tally the workload never made in the phase is 0 of it
        actual = w.contains("counts") ? w["counts"].value(p[3], 0.0) : 0.0;
      } else if (m == "late_sends") {
        actual = w.at("generator").at("late_sends").get<double>();
      }
    }
  }
  return r;
}

}  // namespace

check_outcome evaluate_check(const check_expr& c, const nlohmann::json& report) {
  const auto r = read_check(c, report);
  if (!r.value) return {false, r.no_value + r.lagged};
  const bool ok = holds(*r.value, c.op, c.rhs);
  return {ok, format_actual(kind_of(c.path), *r.value) + r.qualifier + (ok ? "" : r.lagged)};
}

check_outcome evaluate_check_median(const check_expr& c, const std::vector<nlohmann::json>& reports) {
  std::vector<double> values;
  std::string no_value;
  size_t lagged = 0;
  for (const auto& report : reports) {
    const auto r = read_check(c, report);
    if (r.value) values.push_back(*r.value);
    else if (no_value.empty()) no_value = r.no_value;
    lagged += !r.lagged.empty();
  }
  const size_t n = reports.size();
  // A run without the figure (nothing answered) is no sample of it: the median is of every run or none.
  if (values.size() < n || n == 0)
    return {false, fmt::format("no value in {} of {} runs: {}", n - values.size(), n, no_value)};
  const spread_stat s = spread_stat::of(values);
  const bool ok = holds(s.median, c.op, c.rhs);
  const unit_kind k = kind_of(c.path);
  std::string text = fmt::format("{} (median of {} runs: {} to {})", format_actual(k, s.median), n,
                                 format_actual(k, s.min), format_actual(k, s.max));
  if (!ok && lagged)
    text += fmt::format("; rig's generator lagged in {} of the {} runs: the figure may be rig's, not the target's",
                        lagged, n);
  return {ok, text};
}


namespace {

const std::vector<std::string> sweep_selectors = {"knee", "level", "all", "max", "min"};
// A sweep check's figure name -> sweep.json's metric, and how its value is written.
const std::vector<std::pair<std::string, std::string>> sweep_metrics = {
    {"p50", "p50_us"}, {"p99", "p99_us"}, {"p999", "p999_us"}, {"throughput", "throughput_ops_s"},
    {"errors", "errors_per_s"}};
const std::vector<std::pair<std::string, std::string>> sweep_target_metrics = {{"cpu_pct", "cpu_pct"},
                                                                               {"rss_max", "rss_max_bytes"}};

unit_kind sweep_unit(const std::string& metric) {
  if (metric.ends_with("_us")) return unit_kind::duration_us;
  if (metric == "throughput_ops_s" || metric == "errors_per_s") return unit_kind::rate;
  if (metric == "rss_max_bytes") return unit_kind::bytes;
  if (metric == "cpu_pct") return unit_kind::percent;
  return unit_kind::plain;
}

std::vector<std::string> names_of(const std::vector<std::pair<std::string, std::string>>& m) {
  std::vector<std::string> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

}  // namespace

std::optional<sweep_check> parse_sweep_check(const std::string& text, const source_pos& where,
                                             const std::vector<std::string>& labels,
                                             const std::vector<std::string>& workloads, opt_type param_type,
                                             diagnostics& diags) {
  auto fail = [&](const std::string& msg) {
    diags.add(where, "[sweep] check \"" + text + "\": " + msg);
    return std::optional<sweep_check>{};
  };
  sweep_check c;
  c.text = text;
  c.where = where;
  std::string lhs;
  if (!split_comparison(text, lhs, c.op, c.rhs_text))
    return fail("expected '<path> <op> <value>' with op one of < <= > >= == !=");
  std::string rest;
  if (lhs.rfind("level[", 0) == 0) {
    const size_t close = lhs.find(']');
    if (close == std::string::npos || close + 1 >= lhs.size() || lhs[close + 1] != '.')
      return fail("expected level[LEVEL].<workload>.<figure>, e.g. level[2000/s].rr.p99");
    c.selector = "level";
    c.level = trim(lhs.substr(6, close - 6));
    if (c.level.size() >= 2 && (c.level.front() == '"' || c.level.front() == '\'') && c.level.back() == c.level.front())
      c.level = c.level.substr(1, c.level.size() - 2);
    if (!contains(labels, c.level))
      return fail(fmt::format("no level '{}'{} (levels: {})", c.level, did_you_mean(c.level, labels),
                              fmt::join(labels, ", ")));
    rest = lhs.substr(close + 2);
  } else {
    const size_t dot = lhs.find('.');
    c.selector = lhs.substr(0, dot);
    if (!contains(sweep_selectors, c.selector) || dot == std::string::npos)
      return fail(fmt::format("expected knee., level[LEVEL]., all., max. or min. first{}",
                              did_you_mean(c.selector, sweep_selectors)));
    rest = lhs.substr(dot + 1);
  }
  const std::vector<std::string> parts = split(rest, '.');
  std::vector<std::string> owners = workloads;
  owners.push_back("target");
  if (parts.size() != 2) return fail("expected <workload>.<figure> after the selector, e.g. all.rr.errors");
  c.workload = parts[0];
  if (!contains(owners, c.workload)) return fail("no workload '" + c.workload + "'" + did_you_mean(c.workload, owners));
  if (c.selector == "knee") {
    if (c.workload == "target" || parts[1] != "level")
      return fail("expected knee.<workload>.level: the level where that workload's p99 turns");
    c.metric = "level";
    std::string why;
    const auto v = option_number(param_type, c.rhs_text, &why);
    if (!v) return fail(fmt::format("value '{}': {} (a level of the swept key, {})", c.rhs_text, why, unit_hint(param_type)));
    c.rhs = *v;
    return c;
  }
  const auto& table = c.workload == "target" ? sweep_target_metrics : sweep_metrics;
  for (const auto& [name, metric] : table)
    if (name == parts[1]) c.metric = metric;
  if (c.metric.empty())
    return fail(fmt::format("no figure '{}' of {} (figures: {}){}", parts[1], c.workload, fmt::join(names_of(table), ", "),
                            did_you_mean(parts[1], names_of(table))));
  std::string why;
  const auto v = parse_rhs(sweep_unit(c.metric), c.rhs_text, why);
  if (!v) return fail("value '" + c.rhs_text + "': " + why);
  c.rhs = *v;
  return c;
}

check_outcome evaluate_sweep_check(const sweep_check& c, const sweep_summary& s, opt_type param_type) {
  if (c.selector == "knee") {
    const auto k = s.knee.find(c.workload);
    if (k == s.knee.end()) {
      // The curve never turned: all the sweep shows is that the knee lies beyond its last level
      // L. "knee > X" holds only where that says so (X below L); a bound past L is not shown.
      std::optional<double> last;
      if (!s.levels.empty()) last = option_number(param_type, s.levels.back().label);
      const bool ok = last && ((c.op == ">" && *last >= c.rhs) || (c.op == ">=" && *last >= c.rhs) ||
                               (c.op == "!=" && *last >= c.rhs));
      const std::string upto = s.levels.empty() ? "-" : s.levels.back().label;
      return {ok, fmt::format("no knee (p99 stayed within {:g}× up to {}){}", s.knee_factor, upto,
                              ok || !last ? "" : ": the knee is above " + upto + ", which does not show " + c.text)};
    }
    const auto v = option_number(param_type, k->second.level);
    if (!v) return {false, fmt::format("knee at '{}', not a number", k->second.level)};
    return {holds(*v, c.op, c.rhs), fmt::format("knee at {}", k->second.level)};
  }
  const unit_kind u = sweep_unit(c.metric);
  auto figure = [&](const sweep_level& l) {
    if (c.workload != "target") return l.at(c.workload, c.metric).median;
    return (c.metric == "cpu_pct" ? l.target_cpu_pct : l.target_rss_max_bytes).median;
  };
  const auto at = [&](const sweep_level& l, double v) { return fmt::format("{} at {}", format_actual(u, v), l.label); };
  if (c.selector == "level") {
    for (const auto& l : s.levels)
      if (l.label == c.level || (l.baseline && c.level == "baseline")) {
        const double v = figure(l);
        if (std::isnan(v)) return {false, fmt::format("no value at {} (no run of the level has it)", l.label)};
        return {holds(v, c.op, c.rhs), format_actual(u, v)};
      }
    return {false, "no value (level " + c.level + " did not run)"};
  }
  if (s.levels.empty()) return {false, "no value (no level ran)"};
  const sweep_level* pick = nullptr;  // all: the first that fails, else the one nearest failing; max/min: the extreme
  double pv = NAN;
  for (const auto& l : s.levels) {
    const double v = figure(l);
    if (std::isnan(v)) {
      if (c.selector == "all") return {false, fmt::format("no value at {} (no run of the level has it)", l.label)};
      continue;
    }
    if (c.selector == "all") {
      if (!holds(v, c.op, c.rhs)) return {false, at(l, v)};
      const bool worse = !pick || ((c.op == "<" || c.op == "<=") ? v > pv : (c.op == ">" || c.op == ">=") ? v < pv : false);
      if (worse) pick = &l, pv = v;
    } else if (!pick || (c.selector == "max" ? v > pv : v < pv)) {
      pick = &l, pv = v;
    }
  }
  if (!pick) return {false, "no value (no level has it)"};
  if (c.selector == "all")
    return {true, c.op == "==" || c.op == "!="
                      ? fmt::format("{} (all {} levels hold)", at(*pick, pv), s.levels.size())
                      : fmt::format("{} (all {} levels hold; the nearest to failing shown)", at(*pick, pv), s.levels.size())};
  return {holds(pv, c.op, c.rhs), at(*pick, pv)};
}

}  // namespace rig
