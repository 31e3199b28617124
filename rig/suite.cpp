#include "rig/suite.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

#include "core/bind.hpp"
#include "core/clock.hpp"
#include "core/files.hpp"
#include "core/units.hpp"
#include "reports/html_common.hpp"
#include "reports/junit.hpp"
#include "reports/suite_report.hpp"
#include "rig/controller.hpp"
#include "rig/expect.hpp"
#include "rig/repeat.hpp"
#include "rig/sweep.hpp"

namespace rig {

namespace fs = std::filesystem;

const option_table& suite_options() {
  static const option_table t = {
      {.name = "name", .type = opt_type::string, .default_text = "\"suite\"",
       .help = "the suite's name; names its directory under runs/"},
      {.name = "description", .type = opt_type::string, .default_text = "\"\"", .help = "what this suite gates, in one line"},
      {.name = "set", .type = opt_type::strings, .default_text = "[]",
       .help = "--set assignments applied to every scenario of the suite, e.g. [\"seed=7\"]"},
      {.name = "phase_duration", .type = opt_type::duration, .default_text = "",
       .help = "every phase of every scenario this long (a short smoke run of long scenarios)", .min = 100e6,
       .max = 7 * 24 * 3600e9},
      {.name = "repeat", .type = opt_type::integer, .default_text = "1",
       .help = "run each scenario this many times and judge its checks on the median of the runs (a gate on a noisy "
               "host); --repeat overrides it",
       .min = 1, .max = 100},
  };
  return t;
}

const option_table& suite_entry_options() {
  static const option_table t = {
      {.name = "file", .type = opt_type::string, .default_text = "",
       .help = "the scenario file (or a directory, or another suite file), relative to this file", .required = true},
      {.name = "name", .type = opt_type::string, .default_text = "",
       .help = "the name this entry goes by in the suite (default: the scenario's name)"},
      {.name = "set", .type = opt_type::strings, .default_text = "[]", .help = "--set assignments for this entry"},
      {.name = "tags", .type = opt_type::strings, .default_text = "[]",
       .help = "tags added to the scenario's own, for --filter"},
  };
  return t;
}

namespace {

// Walks the paths into scenario files, each with the overrides and tags that reach it, and
// loads every one; every problem found goes to diags.
class suite_planner {
 public:
  explicit suite_planner(const suite_request& req) : req_(req) {}

  suite_plan plan() {
    for (const auto& p : req_.paths) add_path(p, {"", 0, 0, "rig suite " + p}, {}, {}, "", "", 0);
    if (found_.empty() && diags_.empty()) diags_.add({"", 0, 0, "rig suite"}, "no scenario found in the paths given");
    for (auto& f : found_) load(f);
    filter();
    if (req_.repeat > 0) plan_.repeat = req_.repeat;
    if (!diags_.empty()) throw input_error(diags_);
    return std::move(plan_);
  }

 private:
  struct pending {
    std::string file, name, phase_duration;
    std::vector<std::string> sets, tags;
    source_pos at;
  };

  void add_path(const std::string& path, const source_pos& at, const std::vector<std::string>& sets,
                const std::vector<std::string>& tags, const std::string& name, const std::string& phase_duration,
                int depth) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) {
      diags_.add(at, fmt::format("{}: no such file or directory", path));
      return;
    }
    if (fs::is_directory(st)) {
      std::vector<std::string> files;
      for (const auto& e : fs::directory_iterator(path, ec))
        if (e.path().extension() == ".toml" && e.is_regular_file()) files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
      if (files.empty()) diags_.add(at, fmt::format("{}: a directory with no .toml file", path));
      for (const auto& f : files) add_file(f, at, sets, tags, "", phase_duration, depth);
      return;
    }
    add_file(path, at, sets, tags, name, phase_duration, depth);
  }

  // A suite file (a top-level `scenarios`) expands; anything else is a scenario, loaded later.
  void add_file(const std::string& file, const source_pos& at, const std::vector<std::string>& sets,
                const std::vector<std::string>& tags, const std::string& name, const std::string& phase_duration,
                int depth) {
    if (found_.size() >= max_suite_entries) {
      if (!too_many_)
        diags_.add(at, fmt::format("more than {} scenarios in the suite: rig runs at most {} in one suite (split it)",
                                   max_suite_entries, max_suite_entries));
      too_many_ = true;
      return;
    }
    std::string text;
    try {
      text = read_input_file(file, scenario_input);  // a regular file of at most 1 MiB: not /dev/zero, not a FIFO
    } catch (const input_error& e) {
      diags_.add(at, e.what());
      return;
    }
    try {
      if (!toml_too_deep(text)) {  // else never parsed here: the scenario loader says what is wrong
        toml::table doc = toml::parse(text, file);
        if (doc.contains("scenarios")) return add_suite_file(file, doc, at, sets, phase_duration, depth);
      }
    } catch (const toml::parse_error&) {  // the scenario loader says what is wrong with it
    }
    found_.push_back({file, name, phase_duration, sets, tags, at});
  }

  void add_suite_file(const std::string& file, const toml::table& doc, const source_pos& at,
                      const std::vector<std::string>& outer_sets, const std::string& outer_duration, int depth) {
    const std::string key = fs::weakly_canonical(file).string();
    if (std::find(open_.begin(), open_.end(), key) != open_.end()) {
      diags_.add(at, fmt::format("{} lists itself (through {} suite files)", file, open_.size()));
      return;
    }
    if (depth > 8) {
      diags_.add(at, fmt::format("{} is a suite nested {} deep: suites may be nested at most 8 deep", file, depth + 1));
      return;
    }
    open_.push_back(key);
    std::map<std::string, std::string> origins;
    const bind_context top{file, "the suite", "", &origins, {file, 1, 1, {}}};
    const option_values v = bind_options(suite_options(), doc, top, diags_, {"scenarios"});
    if (depth == 0 && first_suite_) {  // the first suite file named on the command line names the suite
      first_suite_ = false;
      if (v.is_set("name")) plan_.name = v.str("name");
      if (v.is_set("description")) plan_.description = printable(v.str("description"));
      if (v.is_set("repeat")) plan_.repeat = int(v.integer("repeat"));
      if (!valid_name(plan_.name))
        diags_.add(v.where("name"), fmt::format("'name' must be {} (it names the suite's directory)", name_rule()));
    }
    std::vector<std::string> sets = outer_sets;
    if (v.has("set"))
      for (const auto& s : v.strings("set")) sets.push_back(s);
    const std::string duration = v.is_set("phase_duration") ? v.text("phase_duration") : outer_duration;
    const fs::path base = fs::path(file).parent_path();
    const toml::array* list = doc.get("scenarios")->as_array();
    if (!list || (!list->empty() && !list->is_array_of_tables())) {
      diags_.add(pos_of(file, doc.get("scenarios")->source()),
                 "'scenarios' must be [[scenarios]] tables, each with a file = \"...\"");
    } else {
      for (size_t i = 0; i < list->size() && !too_many_; ++i) {
        const toml::table& e = *list->get(i)->as_table();
        const source_pos where = pos_of(file, e.source());
        const bind_context ctx{file, fmt::format("[[scenarios]] #{}", i + 1), "", &origins, where};
        const size_t before = diags_.size();
        const option_values ev = bind_options(suite_entry_options(), e, ctx, diags_, {});
        if (diags_.size() != before) continue;
        std::vector<std::string> entry_sets = sets;
        for (const auto& s : ev.strings("set")) entry_sets.push_back(s);
        const std::string name = ev.is_set("name") ? ev.str("name") : "";
        if (!name.empty() && !valid_name(name))
          diags_.add(ev.where("name"), fmt::format("'name' must be {}", name_rule()));
        check_tags(ev.strings("tags"), ev.where("tags"), diags_);
        const fs::path target = fs::path(ev.str("file")).is_absolute() ? fs::path(ev.str("file")) : base / ev.str("file");
        add_path(target.lexically_normal().string(), ev.where("file"), entry_sets, ev.strings("tags"), name, duration,
                 depth + 1);
      }
    }
    open_.pop_back();
  }

  void load(const pending& f) {
    std::vector<std::string> sets = f.sets;
    sets.insert(sets.end(), req_.sets.begin(), req_.sets.end());
    const std::string duration = !req_.phase_duration.empty() ? req_.phase_duration : f.phase_duration;
    try {
      scenario sc = load_scenario(f.file, sets, req_.allow_remote);
      std::vector<std::string> run_sets = sets;
      if (!duration.empty()) {  // every phase this long: its names are known now
        for (auto& s : every_phase_lasts(sc.phases, duration)) run_sets.push_back(std::move(s));
        sc = load_scenario(f.file, run_sets, req_.allow_remote);
      }
      suite_entry e{f.name.empty() ? sc.name : f.name, f.file, sets, duration, run_sets, sc.tags, std::move(sc)};
      for (const auto& t : f.tags)
        if (std::find(e.tags.begin(), e.tags.end(), t) == e.tags.end()) e.tags.push_back(t);
      std::string label = e.label;
      for (int n = 2; std::any_of(plan_.entries.begin(), plan_.entries.end(),
                                  [&](const suite_entry& o) { return o.label == label; });
           ++n)
        label = fmt::format("{}-{}", e.label, n);
      e.label = label;
      plan_.entries.push_back(std::move(e));
    } catch (const input_error& err) {
      for (const auto& d : err.diags().items()) diags_.add(d.where, d.message);
      if (err.diags().empty()) diags_.add(f.at, err.what());
      if (!f.at.file.empty()) diags_.add(f.at, fmt::format("{} (listed here) is not a valid scenario: see above", f.file));
    }
  }

  // --filter keeps the scenarios with any of its tags, then --skip drops those with any of its.
  void filter() {
    plan_.filters = req_.filters;
    plan_.skips = req_.skips;
    if ((req_.filters.empty() && req_.skips.empty()) || !diags_.empty()) return;
    std::vector<std::string> known;
    for (const auto& e : plan_.entries)
      for (const auto& t : e.tags)
        if (std::find(known.begin(), known.end(), t) == known.end()) known.push_back(t);
    for (const auto& [flag, tags] : {std::pair{"--filter ", &req_.filters}, std::pair{"--skip ", &req_.skips}})
      for (const auto& t : *tags)
        if (std::find(known.begin(), known.end(), t) == known.end())
          diags_.add({"", 0, 0, flag + t},
                     fmt::format("no scenario of the suite has tag '{}'{}; tags: {}", t, did_you_mean(t, known),
                                 known.empty() ? "none (a scenario's `tags = [...]`, or a suite entry's)"
                                               : fmt::format("{}", fmt::join(known, ", "))));
    const auto has_any = [](const suite_entry& e, const std::vector<std::string>& tags) {
      return std::any_of(e.tags.begin(), e.tags.end(),
                         [&](const std::string& t) { return std::find(tags.begin(), tags.end(), t) != tags.end(); });
    };
    std::vector<suite_entry> kept;
    for (auto& e : plan_.entries) {
      if ((req_.filters.empty() || has_any(e, req_.filters)) && !has_any(e, req_.skips)) kept.push_back(std::move(e));
      else plan_.filtered_out.push_back(e.label);
    }
    plan_.entries = std::move(kept);
  }

  const suite_request& req_;
  diagnostics diags_;
  suite_plan plan_;
  std::vector<pending> found_;
  std::vector<std::string> open_;  // suite files being expanded (a loop is refused)
  bool first_suite_ = true;
  bool too_many_ = false;  // past max_suite_entries: said once, the rest not read
};

// One scenario of the suite, run: its row, and what its junit testsuite is made from.
struct entry_outcome {
  suite_row row;
  std::optional<run_report> report;
  sweep_summary sweep;
  bool summarized = false;  // a sweep that ran its levels (one refused at once wrote no summary)
};

suite_row row_of(const suite_entry& e) {
  suite_row row;
  row.label = e.label;
  row.file = e.file;
  row.tags = e.tags;
  row.sets = e.sets;
  row.phase_duration = e.phase_duration;
  row.sweep = e.sc.sweep.present;
  return row;
}

// What to do about a scenario refused before it ran ("" for any other exit).
std::string refusal_why(int code) {
  if (code == exit_stale_state)
    return "refused: the host still holds a killed rig's changes; run `rig cleanup` (it says what it undid), or the "
           "suite again with --cleanup-first";
  if (code == exit_capability)
    return "refused: this host cannot run it (the suite's output names the injector and why; `rig doctor` lists what "
           "each needs)";
  if (code == exit_usage) return "refused: the scenario is not valid here (the suite's output names the file, line and key)";
  return "";
}

// A scenario's repeats as one verdict (rig suite --repeat N): its [expect] checks on the median
// of the runs' figures; anything else that failed in a run (an injection not verified, a run
// that failed or was interrupted, an implicit check: the target dying, a workload answering
// nothing in the first phase) fails it, naming the run. The row's figures are the medians, and
// their spread; the outcome's report (what JUnit reads) is the first run's with these checks.
void judge_repeats(entry_outcome& o, const scenario& sc, std::vector<run_report>& reports, int repeat, int code) {
  suite_row& row = o.row;
  row.repeats = repeat;
  std::vector<std::string> problems;
  std::string worst;  // interrupted, then failed, then unverified
  const auto rank = [](const std::string& s) { return s == "interrupted" ? 3 : s == "failed" ? 2 : s == "unverified" ? 1 : 0; };
  std::vector<expectation_row> checks;
  for (size_t i = 0; i < reports.size(); ++i) {
    const run_report& r = reports[i];
    if (rank(r.status) > 0) {
      if (rank(r.status) > rank(worst)) worst = r.status;
      suite_row one;
      fill_row(one, r);
      problems.push_back(fmt::format("run {}: {}{}", i + 1, r.status, one.why.empty() ? "" : ": " + one.why));
    }
    for (const auto& e : r.expectations)
      if (!e.ok && std::none_of(sc.checks.begin(), sc.checks.end(), [&](const check_expr& c) { return c.text == e.expr; }))
        checks.push_back({fmt::format("{} (run {})", e.expr, i + 1), false, e.actual});
  }
  if (int(reports.size()) < repeat)
    problems.push_back(fmt::format("{} of {} runs left no report (exit {})", repeat - int(reports.size()), repeat, code));
  if (!reports.empty()) {
    std::vector<nlohmann::json> docs;
    for (const auto& r : reports) docs.push_back(to_json(r));
    for (const auto& c : sc.checks) {
      const auto m = evaluate_check_median(c, docs);
      checks.push_back({c.text, m.ok, m.actual});
    }
  }
  for (const auto& c : checks)
    if (!c.ok) row.failed_checks.push_back(c);
  row.status = code == 130 || code == 143             ? "interrupted"
               : !worst.empty()                         ? worst
               : int(reports.size()) < repeat           ? "failed"
               : !row.failed_checks.empty()             ? "checks_failed"
                                                        : "ok";
  row.exit_code = code == 130 || code == 143 ? code : exit_of_status(row.status);
  row.why = fmt::format("{}", fmt::join(problems, "; "));
  // The key figures: each run's, their median and range.
  std::map<std::string, std::vector<double>> each;
  for (const auto& r : reports) {
    suite_row one;
    fill_row(one, r);
    if (row.phase.empty()) {
      row.phase = one.phase;
      row.workload = one.workload;
    }
    for (const auto& [k, v] : one.figure_values()) each[k].push_back(v);
  }
  for (auto& [k, v] : each) row.spread[k] = spread_stat::of(v);
  row.set_figures_from_spread();
  if (!reports.empty()) {
    o.report = std::move(reports.front());
    o.report->expectations = std::move(checks);
    o.report->status = row.status;
    o.report->failure = row.why;
  }
}

entry_outcome run_entry(const suite_entry& e, run_options ro, const std::string& suite_dir, int repeat) {
  entry_outcome o{row_of(e), {}, {}, false};
  suite_row& row = o.row;
  ro.out_base = suite_dir;
  std::string ran_in;
  ro.ran_in = &ran_in;
  const int64_t t0 = mono_ns();
  if (repeat > 1 && !row.sweep) {
    std::vector<run_report> reports;
    const int code = run_repeat(e.sc, repeat, ro, &reports);
    row.duration_s = double(mono_ns() - t0) / 1e9;
    row.exit_code = code;
    row.status = status_of_exit(code);
    if (ran_in.empty() || reports.empty()) {  // refused before a run finished: what to do about it
      row.why = refusal_why(code);
      if (!ran_in.empty()) row.run_dir = fs::path(ran_in).filename().string();
      return o;
    }
    row.run_dir = fs::path(ran_in).filename().string();
    judge_repeats(o, e.sc, reports, repeat, code);
    if (o.report) o.report->run_dir = ran_in;
    return o;
  }
  const int code = row.sweep ? run_sweep(e.sc, e.run_sets, ro, &o.sweep) : run_scenario(e.sc, ro);
  row.duration_s = double(mono_ns() - t0) / 1e9;
  row.exit_code = code;
  row.status = status_of_exit(code);
  if (ran_in.empty()) {  // refused before a run directory was made: what to do about it
    row.why = refusal_why(code);
    return o;
  }
  row.run_dir = fs::path(ran_in).filename().string();
  if (row.sweep) {
    o.summarized = code != exit_usage && code != exit_capability;
    if (o.summarized) fill_row(row, o.sweep);  // its status as the sweep's exit says it
    return o;
  }
  try {
    o.report = html::read_run_report(ran_in);
    o.report->run_dir = ran_in;
    fill_row(row, *o.report);
  } catch (const std::exception& ex) {
    row.why = ex.what();
    if (code == exit_ok) {  // no report to read: not a pass, and the status says so as the exit does
      row.exit_code = exit_runtime;
      row.status = status_of_exit(exit_runtime);
    }
  }
  return o;
}

// --junit: a testsuite per scenario; false when the file could not be written.
bool write_suite_junit(const std::string& path, const std::vector<entry_outcome>& outcomes) {
  std::vector<junit_run> runs;
  for (const auto& o : outcomes) {
    const suite_row& r = o.row;
    std::string why = r.why;
    if (why.empty() && !r.passed())
      why = r.status == "not_run" ? "not run: the suite was interrupted before it" : "exit " + std::to_string(r.exit_code);
    runs.push_back({o.report ? &*o.report : nullptr, r.label, r.exit_code, why, o.summarized ? &o.sweep : nullptr});
  }
  return write_junit_file(path, runs);
}

}  // namespace

suite_plan plan_suite(const suite_request& req) { return suite_planner(req).plan(); }

int run_suite(const suite_plan& plan, const run_options& opts, const std::string& junit) {
  std::ostream& out = opts.out ? *opts.out : std::cout;
  const directory suite_dir = make_run_dir(opts.out_base, name_with_kind(plan.name, "suite"));
  suite_summary sum;
  sum.rig_version = RIG_VERSION;
  sum.name = plan.name;
  sum.description = plan.description;
  sum.dir = suite_dir.path();
  sum.started_utc = format_utc(std::time(nullptr), "%Y-%m-%d %H:%M:%S");
  sum.filters = plan.filters;
  sum.skips = plan.skips;
  sum.filtered_out = plan.filtered_out;
  const size_t n = plan.entries.size();
  out << fmt::format("rig suite: {} — {} scenario{}{}{}, in {}\n", plan.name, n, n == 1 ? "" : "s",
                     plan.filtered_out.empty() ? "" : fmt::format(" ({} left out by --filter/--skip)", plan.filtered_out.size()),
                     plan.repeat > 1 ? fmt::format(", each {} times (checks on the medians)", plan.repeat) : "",
                     sum.dir);
  out.flush();
  std::vector<entry_outcome> outcomes;
  const int64_t start = mono_ns();
  int interrupted = 0;
  for (size_t i = 0; i < n; ++i) {
    const suite_entry& e = plan.entries[i];
    if (interrupted) {  // the rest is not_run
      outcomes.push_back({row_of(e), {}, {}, false});
      continue;
    }
    out << fmt::format("\n[{}/{}] {} — {}{}{}\n", i + 1, n, e.label, e.file,
                       e.sets.empty() ? "" : fmt::format(" --set {}", fmt::join(e.sets, " --set ")),
                       e.phase_duration.empty() ? "" : ", every phase " + e.phase_duration);
    out.flush();
    run_options ro = opts;
    ro.cleanup_first = opts.cleanup_first && i == 0;
    outcomes.push_back(run_entry(e, ro, sum.dir, plan.repeat));
    const suite_row& row = outcomes.back().row;
    out << fmt::format("[{}/{}] {}: {} (exit {}) in {:.1f} s\n", i + 1, n, e.label, row.status, row.exit_code,
                       row.duration_s);
    out.flush();
    if (row.exit_code == 130 || row.exit_code == 143) interrupted = row.exit_code;
  }
  for (const auto& o : outcomes) sum.rows.push_back(o.row);
  sum.wall_s = double(mono_ns() - start) / 1e9;
  const auto failed = sum.failed();
  sum.exit_code = interrupted ? interrupted : failed.empty() ? exit_ok : exit_expectations;
  bool written = true;
  try {
    suite_dir.write_file("suite.json", to_json(sum).dump(2) + "\n");
    suite_dir.write_file("suite.html", render_suite_html(sum));
  } catch (const std::exception& ex) {
    std::cerr << "rig suite: " << ex.what() << "\n";
    written = false;
  }
  if (!junit.empty()) written = write_suite_junit(junit, outcomes) && written;
  out << "\n" << suite_table(sum);
  out << fmt::format("\nsuite: {}/suite.json\n  open {}/suite.html\n", sum.dir, sum.dir);
  if (failed.empty() && !interrupted) {
    out << fmt::format("rig suite: all {} passed in {:.1f} s\n", n, sum.wall_s);
  } else {
    std::vector<std::string> names;
    for (const auto* r : failed) names.push_back(fmt::format("{} ({})", r->label, r->status));
    out << fmt::format("rig suite: {} of {} failed: {}\n", failed.size(), n, fmt::join(names, ", "));
    size_t shortened = 0;
    for (const auto* r : failed) shortened += !r->failed_checks.empty() && !r->phase_duration.empty();
    if (shortened)
      out << fmt::format("  {} of them failed checks with every phase shortened (phase_duration): a check that counts "
                         "events may need the phases' written lengths; run {} at full length before calling it a "
                         "regression\n",
                         shortened, shortened == 1 ? "it" : "them");
  }
  out.flush();
  if (!written && sum.exit_code == exit_ok) return exit_runtime;
  return sum.exit_code;
}

}  // namespace rig
