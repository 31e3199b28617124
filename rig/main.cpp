#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include "core/bind.hpp"
#include "core/files.hpp"
#include "core/host.hpp"
#include "core/journal.hpp"
#include "core/net.hpp"
#include "core/process.hpp"
#include "core/units.hpp"
#include "core/signals.hpp"
#include "injectors/injector.hpp"
#include "injectors/proxy.hpp"
#include "injectors/proxy_injector.hpp"
#include "reports/html.hpp"
#include "reports/html_common.hpp"
#include "reports/compare_gate.hpp"
#include "reports/export.hpp"
#include "reports/history.hpp"
#include "reports/report_schema.hpp"
#include "reports/junit.hpp"
#include "rig/controller.hpp"
#include "rig/scenario.hpp"
#include "rig/schema.hpp"
#include "rig/repeat.hpp"
#include "rig/suite.hpp"
#include "rig/sweep.hpp"
#include "targets/builtin_service.hpp"
#include "targets/target.hpp"
#include "workloads/helper.hpp"
#include "workloads/workload.hpp"

using namespace rig;

namespace {

std::string option_line(const option_spec& s) {
  std::string meta = std::string(type_name(s.type));
  if (!s.allowed.empty()) {
    meta = "";
    for (auto a : s.allowed) meta += (meta.empty() ? "" : "|") + std::string(a);
  }
  std::string extra;
  if (s.required) extra += " required;";
  else if (!s.default_text.empty()) extra += " default " + std::string(s.default_text) + ";";
  const std::string range = describe_range(s);
  if (!range.empty()) extra += " range " + range + ";";
  if (!extra.empty()) extra.pop_back();
  return fmt::format("    {:<20} {:<22} {}{}\n", s.name, meta, s.help, extra.empty() ? "" : " (" + extra.substr(1) + ")");
}

template <typename Kind>
void list_kinds(const char* title, const std::vector<Kind>& kinds, const char* note = nullptr) {
  std::cout << title << "\n";
  if (note) std::cout << note << "\n";
  for (const auto& k : kinds) {
    std::cout << fmt::format("  {} — {}\n", k.name, k.summary);
    const option_variants* variants = nullptr;
    if constexpr (requires { k.variants; })
      if (k.variants) variants = &k.variants();
    // A variant's keys show under it, not among the kind's own.
    auto in_variant = [&](std::string_view key) {
      for (const auto& v : variants ? variants->cases : std::vector<option_variant>{})
        for (const auto& o : *v.options)
          if (o.name == key) return true;
      return false;
    };
    for (const auto& s : k.options())
      if (!in_variant(s.name)) std::cout << option_line(s);
    for (const auto& v : variants ? variants->cases : std::vector<option_variant>{}) {
      std::cout << fmt::format("    {} = \"{}\" — {}\n", variants->key, v.value, v.summary);
      for (const auto& s : *v.options) std::cout << "  " << option_line(s);
    }
  }
}

// The scenario's own tables: the top level, [[phases]], [expect], [sweep].
void list_sections() {
  std::cout << "scenario\n";
  const std::pair<const char*, const option_table*> sections[] = {
      {"top level — the scenario's name and run-wide settings", &top_options()},
      {"[[phases]] — one table per phase, run in order", &phase_options()},
      {"[expect] — checks over the report; a failing one fails the run (exit 1)", &expect_options()},
      {"[sweep] — the scenario run once per level of one key", &sweep_options()},
  };
  for (const auto& [title, table] : sections) {
    std::cout << "  " << title << "\n";
    for (const auto& s : *table) std::cout << option_line(s);
  }
}

// A suite file's keys (rig suite).
void list_suite_keys() {
  std::cout << "suite file (rig suite)\n  top level — the suite's name and what every scenario in it gets\n";
  for (const auto& s : suite_options()) std::cout << option_line(s);
  std::cout << "  [[scenarios]] — one table per scenario, run in order\n";
  for (const auto& s : suite_entry_options()) std::cout << option_line(s);
}

int cmd_doctor() {
  std::cout << fmt::format("host: {}, {} CPUs, cgroup {}, {}\n", kernel_release(), online_cpus(), cgroup_version(),
                           ::geteuid() == 0 ? "root" : "not root");
  const host_context h{self_exe()};
  for (const auto& k : injector_kinds()) {
    const probe_result p = k.host_probe ? k.host_probe(h) : probe_result{true, "needs nothing from the host"};
    std::cout << fmt::format("  {:<10} {:<13} {}\n", k.name, p.ok ? "available" : "unavailable", p.reason);
  }
  return exit_ok;
}

// "latency:latency=10ms,jitter=1ms,stream=downstream" -> a toxic, checked like a scenario's.
std::shared_ptr<toxic> parse_toxic_flag(const std::string& flag, int index, diagnostics& diags) {
  const auto colon = flag.find(':');
  std::vector<std::string> assignments = {"toxic=" + flag.substr(0, colon)};
  if (colon != std::string::npos) {
    std::string rest = flag.substr(colon + 1);
    for (size_t at = 0; at <= rest.size();) {
      const size_t comma = std::min(rest.find(',', at), rest.size());
      if (comma > at) assignments.push_back(rest.substr(at, comma - at));
      at = comma + 1;
    }
  }
  std::map<std::string, std::string> origins;
  const std::string origin = "--toxic " + flag;
  toml::table t = table_from_assignments(assignments, diags, origins, origin);
  bind_context ctx{"", "the toxic", "", &origins, {"", 0, 0, origin}};
  const size_t before = diags.size();
  const option_values v = bind_options(proxy_options(), t, ctx, diags, {});
  if (diags.size() == before) check_proxy(v, ctx, diags);
  if (diags.size() != before) return nullptr;
  return make_toxic(fmt::format("toxic{}", index), v);
}

int cmd_proxy(const std::string& listen, const std::string& upstream, const std::vector<std::string>& toxics,
              bool allow_remote) {
  std::string lhost, uhost;
  uint16_t lport = 0, uport = 0;
  if (!split_host_port(listen, lhost, lport, true) || !is_loopback(lhost) || !split_host_port(upstream, uhost, uport)) {
    std::cerr << "rig proxy: --listen must be a loopback host:port and --upstream a host:port, e.g. 127.0.0.1:7000\n";
    return exit_usage;
  }
  if (!is_loopback(uhost) && !allow_remote) {
    std::cerr << "rig proxy: --upstream " << upstream
              << " is not a loopback address: rig only sends traffic to loopback unless run with --allow-remote\n";
    return exit_usage;
  }
  for (std::string* h : {&lhost, &uhost})
    if (*h == "localhost") *h = "127.0.0.1";
  diagnostics diags;
  std::vector<std::shared_ptr<toxic>> specs;
  for (size_t i = 0; i < toxics.size(); ++i)
    if (auto t = parse_toxic_flag(toxics[i], int(i + 1), diags)) specs.push_back(std::move(t));
  if (!diags.empty()) {
    std::cerr << diags.str() << "\n";
    return exit_usage;
  }
  block_stop_signals();
  toxic_proxy proxy(1, lhost, lport);
  try {
    proxy.start_for(uhost, uport);
  } catch (const std::exception& e) {
    std::cerr << "rig proxy: " << e.what() << "\n";
    return exit_runtime;
  }
  for (const auto& t : specs) proxy.add_toxic(t);
  std::cout << "listening " << lhost << ":" << proxy.port() << std::endl;
  std::cerr << "rig proxy: " << lhost << ":" << proxy.port() << " -> " << upstream;
  for (const auto& t : specs) std::cerr << "\n  toxic: " << t->str();
  std::cerr << "\nCtrl-C stops it\n";
  wait_stop_signal();
  proxy.stop();
  for (const auto& t : specs) {
    const auto c = t->counters();
    std::cerr << fmt::format("rig proxy: {}: {} connections affected, {} chunks, {} bytes\n", t->str(),
                             c["connections_affected"].get<uint64_t>(), c["chunks"].get<uint64_t>(),
                             c["bytes"].get<uint64_t>());
  }
  return exit_ok;
}

int cmd_validate(const std::string& file, const std::vector<std::string>& sets, bool allow_remote) {
  try {
    const scenario sc = load_scenario(file, sets, allow_remote);
    const size_t curve = sc.sweep.checks.size();
    std::cout << fmt::format("{}: OK ({} workload{}, {} injector{}, {} phase{}, {} check{}{})\n", printable(file),
                             sc.workloads.size(), sc.workloads.size() == 1 ? "" : "s", sc.injectors.size(),
                             sc.injectors.size() == 1 ? "" : "s", sc.phases.size(), sc.phases.size() == 1 ? "" : "s",
                             sc.checks.size(), sc.checks.size() == 1 ? "" : "s",
                             sc.sweep.present ? fmt::format(", a sweep of {} level{} with {} check{} on the curve",
                                                            sc.sweep.labels.size(), sc.sweep.labels.size() == 1 ? "" : "s",
                                                            curve, curve == 1 ? "" : "s")
                                              : "");
    return exit_ok;
  } catch (const input_error& e) {
    std::cerr << printable(e.what()) << "\n";
    return exit_usage;
  }
}

// A --junit path it cannot write fails before the runs, not after them (none given: true).
bool junit_writable(const char* command, const std::string& path) {
  if (path.empty()) return true;
  const std::string why = user_file_refusal(path);  // nothing made or opened: the same checks as the write
  if (why.empty()) return true;
  std::cerr << "rig " << command << ": cannot write --junit " << path << ": " << why << "\n";
  return false;
}

// --junit FILE: the run as JUnit XML (reports/junit.hpp), written whatever the outcome.
int write_junit(const std::string& path, const std::string& name, int code, const std::string& run_dir,
                const std::string& why, const sweep_summary* sweep = nullptr) {
  std::optional<run_report> r;
  std::string error = why;
  if (!run_dir.empty() && !sweep) try {
      r = html::read_run_report(run_dir);
    } catch (const std::exception& e) {
      error = e.what();
    }
  if (!r && !sweep && error.empty())
    error = fmt::format("the run ended with exit {} before its report was written", code);
  if (!write_junit_file(path, {{r ? &*r : nullptr, name, code, error, sweep}}))
    return code == exit_ok ? exit_runtime : code;  // a refused scenario stays exit 2
  return code;
}

int cmd_run(const std::string& file, const std::vector<std::string>& sets, const std::string& out_dir, bool quiet,
            int progress_s, bool allow_remote, bool cleanup_first, const std::string& junit, int repeat,
            const std::string& exact_dir) {
  scenario sc;
  try {
    sc = load_scenario(file, sets, allow_remote);
  } catch (const input_error& e) {
    std::cerr << printable(e.what()) << "\n";
    return junit.empty() ? exit_usage : write_junit(junit, file, exit_usage, "", e.what());
  }
  if (!junit_writable("run", junit)) return exit_usage;
  block_stop_signals();  // before any thread exists: the controller waits for them itself
  run_options o;
  o.out_base = out_dir;
  o.run_dir = exact_dir;
  o.rig_exe = self_exe();
  o.quiet = quiet;
  o.cleanup_first = cleanup_first;
  o.progress_every_s = progress_s;
  if (!exact_dir.empty() && (repeat > 1 || sc.sweep.present)) {
    std::cerr << "rig run: --run-dir names one run's directory; " << (repeat > 1 ? "--repeat" : "a sweep")
              << " makes several: give --out (the directory they go under) instead\n";
    return exit_usage;
  }
  if (repeat > 1 && sc.sweep.present) {
    std::cerr << "rig run: " << file << " is a sweep: its [sweep] repeats = N runs each level N times (not --repeat)\n";
    return exit_usage;
  }
  if (repeat > 1) {
    std::vector<run_report> reports;
    const int code = run_repeat(sc, repeat, o, &reports);
    if (junit.empty()) return code;
    std::vector<junit_run> runs;
    for (size_t i = 0; i < reports.size(); ++i)
      runs.push_back({&reports[i], fmt::format("{} run {}", sc.name, i + 1), exit_of_status(reports[i].status), ""});
    if (reports.empty()) runs.push_back({nullptr, sc.name, code, fmt::format("no run finished (exit {})", code)});
    if (!write_junit_file(junit, runs) && code == exit_ok) return exit_runtime;
    return code;
  }
  if (sc.sweep.present) {
    sweep_summary summary;
    std::string dir;
    o.ran_in = &dir;
    const int code = run_sweep(sc, sets, o, &summary);
    // A sweep refused before its levels (exit 2, 3) has no summary: the refusal is the error.
    const bool summarized = !dir.empty() && code != exit_usage && code != exit_capability;
    return junit.empty() ? code
                         : write_junit(junit, sc.name, code, "",
                                       summarized ? "" : fmt::format("the sweep stopped with exit {}", code),
                                       summarized ? &summary : nullptr);
  }
  std::string ran_in;
  o.ran_in = &ran_in;
  const int code = run_scenario(sc, o);
  return junit.empty() ? code : write_junit(junit, sc.name, code, ran_in, "");
}

int cmd_suite(const suite_request& req, const run_options& base, const std::string& junit, bool dry_run) {
  if (!req.phase_duration.empty()) {
    std::string why;
    const auto ns = parse_duration_ns(req.phase_duration, &why);
    if (!ns || *ns < 100'000'000) {
      std::cerr << "rig suite: --phase-duration " << req.phase_duration << ": "
                << (ns ? "at least 100ms (a phase's shortest)" : why) << "\n";
      return exit_usage;
    }
  }
  suite_plan plan;
  try {
    plan = plan_suite(req);
  } catch (const input_error& e) {
    std::cerr << printable(e.what()) << "\nrig suite: nothing was run (every scenario is checked before the first runs)\n";
    return exit_usage;
  }
  if (dry_run) {
    for (size_t i = 0; i < plan.entries.size(); ++i) {
      const auto& e = plan.entries[i];
      std::cout << fmt::format("[{}/{}] {} — {}{}{}{}\n", i + 1, plan.entries.size(), e.label, e.file,
                               e.tags.empty() ? "" : fmt::format(" [{}]", fmt::join(e.tags, ", ")),
                               e.sets.empty() ? "" : fmt::format(" --set {}", fmt::join(e.sets, " --set ")),
                               e.phase_duration.empty() ? "" : ", every phase " + e.phase_duration);
    }
    std::cout << fmt::format("rig suite: {}: {} scenario{} valid{}{}; nothing run (--dry-run)\n", plan.name,
                             plan.entries.size(), plan.entries.size() == 1 ? "" : "s",
                             plan.filtered_out.empty() ? "" : fmt::format(", {} left out by --filter/--skip", plan.filtered_out.size()),
                             plan.repeat > 1 ? fmt::format(", each to run {} times", plan.repeat) : "");
    return exit_ok;
  }
  if (!junit_writable("suite", junit)) return exit_usage;
  block_stop_signals();
  run_options o = base;
  o.rig_exe = self_exe();
  return run_suite(plan, o, junit);
}

// rig compare A B [--fail-if ...]: two runs side by side, or repeats and sweeps as ratios of
// medians with intervals; exit 1 when a threshold is passed.
int cmd_compare(const std::string& dir_a, const std::string& dir_b, const std::string& html_path,
                const std::vector<std::string>& fail_ifs, const std::string& junit) {
  std::vector<gate_condition> conditions;
  try {
    for (const auto& f : fail_ifs) conditions.push_back(parse_fail_if(f));
  } catch (const input_error& e) {
    std::cerr << "rig compare: " << e.what() << "\n";
    return exit_usage;
  }
  if (!junit_writable("compare", junit)) return exit_usage;  // before the comparison, as run and suite do
  try {
    const run_group a = load_group(dir_a), b = load_group(dir_b);
    const compare_verdict v = compare_groups(a, b, conditions);
    if (a.kind == "run" && b.kind == "run") {
      // Directory names (another user's, through a glob) reach the terminal escaped.
      std::cout << printable(compare_runs(dir_a, dir_b, html_path, conditions.empty() ? "" : verdict_html(v)));
      if (!conditions.empty()) std::cout << "\n" << printable(verdict_text(v, false));
    } else {
      std::cout << printable(verdict_text(v, true)) << "\ncompare.html: "
                << printable(compare_groups_html(verdict_html(v), html_path)) << "\n";
    }
    if (!conditions.empty()) {
      const size_t n = v.regressions();
      std::cout << (n ? fmt::format("rig compare: {} regression{} past the thresholds (exit 1)\n", n, n == 1 ? "" : "s")
                      : fmt::format("rig compare: no regression past the thresholds ({} row{} checked)\n", v.rows.size(),
                                    v.rows.size() == 1 ? "" : "s"));
      if (!junit.empty()) {  // a testsuite: a testcase per row a condition applied to
        run_report gate;
        gate.status = n ? "checks_failed" : "ok";
        gate.expectations = verdict_checks(v, conditions);
        if (!write_junit_file(junit, {{&gate, "rig compare " + dir_a + " " + dir_b, n ? exit_expectations : exit_ok, ""}}))
          return exit_runtime;
      }
      if (n) return exit_expectations;
    } else if (!junit.empty()) {
      std::cerr << "rig compare: --junit needs a --fail-if: without a condition there is nothing to pass or fail\n";
      return exit_usage;
    }
  } catch (const std::exception& e) {  // bad input, or a directory that is not a run, repeat or sweep
    std::cerr << "rig compare: " << printable(e.what()) << "\n";
    return exit_usage;
  }
  return exit_ok;
}

int cmd_history(const std::string& dir, const std::string& scenario, const std::string& out_dir) {
  try {
    const history_summary h = read_history(dir, scenario);
    const std::string out = out_dir.empty() ? dir : out_dir;
    make_user_dirs(out);
    for (const auto& [name, text] : {std::pair{"history.json", to_json(h).dump(2) + "\n"},
                                     std::pair{"history.html", render_history_html(h)}}) {
      write_user_file(out + "/" + name, text);
    }
    std::cout << printable(history_table(h) + fmt::format("\nhistory: {}/history.json\n  open {}/history.html\n", out, out));
    return exit_ok;
  } catch (const std::exception& e) {
    std::cerr << "rig history: " << printable(e.what()) << "\n";
    return exit_usage;
  }
}

int cmd_export(const std::string& run_dir, const std::string& format, const std::string& out_path) {
  try {
    const run_report r = html::read_run_report(run_dir);
    if (format == "openmetrics") {
      const std::string text = openmetrics_text(r);
      if (out_path.empty() || out_path == "-") {
        std::cout << text;
      } else {
        write_user_file(out_path, text);
        std::cerr << "rig export: " << out_path << "\n";
      }
      return exit_ok;
    }
    for (const auto& f : export_hdr_logs(run_dir, r, out_path))
      std::cout << f << "\n";
    return exit_ok;
  } catch (const std::exception& e) {
    std::cerr << "rig export: " << e.what() << "\n";
    return exit_usage;
  }
}

int cmd_target(const std::string& bind, int port, const std::string& control, const std::vector<std::string>& sets) {
  diagnostics diags;
  std::map<std::string, std::string> origins;
  toml::table t = table_from_assignments(sets, diags, origins);
  t.insert_or_assign("port", int64_t(port));
  bind_context ctx{"rig target", "the built-in target", "", &origins, {}};
  const option_values v = bind_options(builtin_options(), t, ctx, diags, {});
  if (!diags.empty()) {
    std::cerr << diags.str() << "\n";
    return exit_usage;
  }
  block_stop_signals();
  builtin_config cfg = builtin_config::from(v);
  cfg.bind = bind;
  builtin_service svc(cfg);
  try {
    svc.start();
    if (!control.empty()) svc.serve_control(control);
  } catch (const std::exception& e) {
    std::cerr << "rig target: " << e.what() << "\n";
    return exit_runtime;
  }
  std::cout << "listening " << bind << ":" << svc.port() << std::endl;
  std::cerr << "rig target: pid " << getpid() << " serving " << bind << ":" << svc.port()
            << (control.empty() ? "" : " control " + control) << "; Ctrl-C stops it\n";
  const int sig = wait_stop_signal();
  svc.stop();
  const auto c = svc.counters();
  std::cerr << fmt::format("rig target: stopped by {}; {} requests, {} rejected\n", strsignal(sig), c.requests,
                           c.rejected);
  return exit_ok;
}

// Undoes what killed rigs left behind, from their journals.
int cmd_cleanup() {
  try {
    if (stale_journals().empty()) {
      std::cout << "rig cleanup: nothing to undo (no journal of a dead rig in " << state_dir() << ")\n";
      return exit_ok;
    }
    return cleanup_stale_journals(std::cout) ? exit_ok : exit_runtime;
  } catch (const std::exception& e) {
    std::cerr << "rig cleanup: " << e.what() << "\n";
    return exit_runtime;
  }
}

}  // namespace

// Every command's arguments, as CLI11 fills them.
struct cli_args {
  std::string file, out_dir = "runs", control, run_dir_exact;
  std::vector<std::string> sets;
  int port = 0;
  bool quiet = false, allow_remote = false, cleanup_first = false;
  int progress_s = 5;
  std::string what;
  std::string listen = "127.0.0.1:0", upstream;
  std::vector<std::string> toxic_flags;
  std::string run_dir;
  std::string run_a, run_b, compare_out = "compare.html", compare_junit;
  std::string bind_addr = "127.0.0.1";
  std::string junit;
  std::vector<std::string> paths, filters, skips;
  std::string phase_duration;
  bool dry_run = false, report_schema = false;
  std::string format, export_out, history_dir, history_out, scenario_name;
  int repeat = 1, suite_repeat = 0;
  std::vector<std::string> fail_ifs;
};

struct cli_commands {
  CLI::App *run, *suite, *export_, *history, *validate, *list, *proxy, *report, *compare, *schema, *doctor, *cleanup, *workload_helper, *target;
};

cli_commands define_commands(CLI::App& app, cli_args& a) {
  cli_commands c{};
  c.run = app.add_subcommand("run", "run a scenario and write its report under runs/");
  c.run->add_option("file", a.file, "scenario file (TOML)")->required();
  c.run->add_option("--set", a.sets, "override a scenario key, e.g. --set workloads.rr.rate=1000/s "
                                     "or --set phases.nagle.duration=2s (repeatable)");
  c.run->add_option("--out", a.out_dir, "directory the run directory is created in")->capture_default_str();
  c.run->add_option("--run-dir", a.run_dir_exact,
                    "the run directory itself, made by rig (refused if it exists), instead of a stamped one under "
                    "--out: so CI knows where report.json is");
  const char* remote_help = "allow an endpoint target (or proxy upstream) beyond loopback; by default rig sends "
                            "traffic only to loopback and to the network namespaces it makes";
  c.run->add_flag("--allow-remote", a.allow_remote, remote_help);
  c.run->add_flag("--cleanup-first", a.cleanup_first,
                    "undo what a killed rig left on this host first (as `rig cleanup`), when its journal proves that rig "
                  "dead; without it such a run refuses with exit 5");
  c.run->add_option("--junit", a.junit,
                    "also write the run as JUnit XML to this file (a testcase for the run, one per check), for CI "
                    "test reporters");
  c.run->add_option("--repeat", a.repeat,
                    "run it N times: each a run directory inside runs/<stamp>-NAME-repeat/, and repeat.json with each "
                    "figure's median and spread (what a noise-aware rig compare reads)")
      ->check(CLI::Range(1, 1000));
  c.run->add_flag("-q,--quiet", a.quiet, "no progress or tables: only warnings, failed checks and the status line (for CI)");
  c.run->add_option("--progress", a.progress_s, "seconds between progress lines when stdout is not a terminal")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();

  c.suite = app.add_subcommand("suite", "run scenarios one after another as one gate: a summary table, suite.json, "
                                        "suite.html, exit 1 naming those that failed");
  c.suite->add_option("paths", a.paths,
                      "scenario files, directories of them (their *.toml), or suite files ([[scenarios]] entries)")
      ->required();
  c.suite->add_option("--set", a.sets, "override a key in every scenario (as for run; repeatable)");
  c.suite->add_option("--phase-duration", a.phase_duration,
                      "every phase of every scenario this long, e.g. 1s (a short smoke run)");
  c.suite->add_option("--filter", a.filters, "run only the scenarios with this tag (repeatable: any of them)");
  c.suite->add_option("--skip", a.skips, "leave out the scenarios with this tag (repeatable), e.g. --skip external");
  c.suite->add_option("--repeat", a.suite_repeat,
                      "run each scenario N times (a --repeat directory each) and judge its checks on the median of the "
                      "runs: a gate that holds on a noisy host (overrides the suite file's repeat)")
      ->check(CLI::Range(1, 100));
  c.suite->add_option("--junit", a.junit, "also write JUnit XML: a testsuite per scenario, a testcase per check");
  c.suite->add_option("--out", a.out_dir, "directory the suite's directory is created in")->capture_default_str();
  c.suite->add_flag("--dry-run", a.dry_run, "check every scenario and list what would run, in order; run nothing");
  c.suite->add_flag("--allow-remote", a.allow_remote, remote_help);
  c.suite->add_flag("--cleanup-first", a.cleanup_first, "as for run: undo a killed rig's changes before the first scenario");
  c.suite->add_flag("-q,--quiet", a.quiet, "each run only says its warnings, failed checks and status line");
  c.suite->add_option("--progress", a.progress_s, "seconds between progress lines when stdout is not a terminal")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();

  c.validate = app.add_subcommand("validate", "check a scenario; print OK or every error");
  c.validate->add_option("file", a.file, "scenario file (TOML)")->required();
  c.validate->add_option("--set", a.sets, "override a scenario key (as for run)");
  c.validate->add_flag("--allow-remote", a.allow_remote, remote_help);

  c.list = app.add_subcommand("list", "list the scenario's sections and the target, workload and injector kinds, with their keys");
  c.list->add_option("what", a.what, "scenario | suite | targets | workloads | injectors (default: all)")
      ->check(CLI::IsMember({"scenario", "suite", "targets", "workloads", "injectors"}));

  c.proxy = app.add_subcommand("proxy", "run rig's toxic proxy on its own");
  c.proxy->add_option("--listen", a.listen, "loopback host:port to listen on")->capture_default_str();
  c.proxy->add_option("--upstream", a.upstream, "loopback host:port of the server")->required();
  c.proxy->add_option("--toxic", a.toxic_flags,
                        "a toxic, e.g. latency:latency=10ms,jitter=1ms,stream=downstream (repeat to chain)");
  c.proxy->add_flag("--allow-remote", a.allow_remote, remote_help);

  c.report = app.add_subcommand("report", "write RUN_DIR/report.html again from the run's report.json and timeseries.csv");
  c.report->add_option("run_dir", a.run_dir, "a run directory (runs/<stamp>-<scenario>)")->required();

  c.compare = app.add_subcommand("compare", "each phase of RUN_B beside RUN_A with ratios (before/after a fix); "
                                            "--fail-if makes it a gate");
  c.compare->add_option("run_a", a.run_a, "the run before: a run, a --repeat or a sweep directory")->required();
  c.compare->add_option("run_b", a.run_b, "the run after (the same kind)")->required();
  c.compare->add_option("--fail-if", a.fail_ifs,
                        "exit 1 when B/A of a figure is past a ratio, e.g. \"p99 > 1.20x\", \"throughput < 0.90x\", "
                        "\"nagle.rr.p99 > 1.5x\" (repeatable); with repeats on both sides, only when the whole 95% "
                        "interval is past it; errors_pct is held to B's own share in percent, \"errors_pct > 1\"");
  c.compare->add_option("--out", a.compare_out, "where to write the HTML comparison")->capture_default_str();
  c.compare->add_option("--junit", a.compare_junit,
                        "also write JUnit XML: a testcase per row a --fail-if applies to, failed with A, B and B/A");

  c.export_ = app.add_subcommand("export", "a run's figures for other tools: HdrHistogram interval logs, OpenMetrics text");
  c.export_->add_option("run_dir", a.run_dir, "a run directory (runs/<stamp>-<scenario>)")->required();
  c.export_->add_option("--format", a.format,
                        "hdr-log: an HdrHistogram interval log per workload, a line per second (HistogramLogProcessor "
                        "reads it); openmetrics: the phase figures as OpenMetrics text (Prometheus textfile collector, "
                        "Pushgateway)")
      ->required()
      ->check(CLI::IsMember({"hdr-log", "openmetrics"}));
  c.export_->add_option("--out", a.export_out,
                        "hdr-log: the directory the logs go in (default: the run directory's export/); openmetrics: "
                        "the file (default: stdout)");

  c.history = app.add_subcommand("history", "many runs of one scenario over time (one a release): each phase's p50, p99 "
                                            "and throughput as a trend with its spread, history.html");
  c.history->add_option("dir", a.history_dir,
                        "a directory whose subdirectories are runs, --repeat directories, or directories of runs")
      ->required();
  c.history->add_option("--scenario", a.scenario_name, "the scenario, when DIR holds runs of several");
  c.history->add_option("--out", a.history_out, "where history.html and history.json go (default: DIR)");

  c.schema = app.add_subcommand("schema", "print a JSON Schema of the scenario language (for TOML editors)");
  c.schema->add_flag("--report", a.report_schema, "the JSON Schema of report.json instead (what a consumer may rely on)");

  c.doctor = app.add_subcommand("doctor", "which injectors work on this host, and why not");
  c.cleanup = app.add_subcommand("cleanup", "undo what a killed rig left on the host (cgroups, processes, namespaces, files), from its journal");

  // Hidden: a workload's helper process in the target's cgroup (workloads/helper.hpp).
  c.workload_helper = app.add_subcommand("__workload", "")->group("");

  c.target = app.add_subcommand("target", "run the built-in target on its own");
  c.target->add_option("--bind", a.bind_addr, "address to listen on")->capture_default_str();
  c.target->add_option("--port", a.port, "TCP port (0 picks a free one)")->capture_default_str();
  c.target->add_option("--set", a.sets, "a built-in target key, e.g. --set reply_writes=2 (see rig list targets)");
  c.target->add_option("--control", a.control, "unix socket for the control channel ('@name': abstract)");

  return c;
}

// A key given twice with --set on one command line is refused: which one holds is easy to
// misread. (A suite's own `set`, an entry's, then the command line's do layer, the last winning:
// docs/scenarios.md.)
bool sets_once(const char* command, const std::vector<std::string>& sets) {
  std::map<std::string, std::string> seen;
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    if (eq == std::string::npos) continue;  // the scenario loader says what is wrong with it
    const auto [it, fresh] = seen.emplace(s.substr(0, eq), s);
    if (!fresh) {
      std::cerr << fmt::format("rig {}: --set {} is given twice (--set {}, then --set {}): give each key once\n",
                               command, it->first, it->second, s);
      return false;
    }
  }
  return true;
}

// The command given, run; its exit code.
int dispatch(const cli_commands& c, const cli_args& a) {
  try {
    if (*c.workload_helper) return run_workload_helper();
    for (const auto& [given, name] : {std::pair{c.run, "run"}, {c.suite, "suite"}, {c.validate, "validate"},
                                      {c.target, "target"}})
      if (*given && !sets_once(name, a.sets)) return exit_usage;
    if (*c.run) return cmd_run(a.file, a.sets, a.out_dir, a.quiet, a.progress_s, a.allow_remote, a.cleanup_first, a.junit, a.repeat, a.run_dir_exact);
    if (*c.suite) {
      run_options o;
      o.out_base = a.out_dir;
      o.quiet = a.quiet;
      o.cleanup_first = a.cleanup_first;
      o.progress_every_s = a.progress_s;
      return cmd_suite({a.paths, a.sets, a.filters, a.skips, a.phase_duration, a.suite_repeat, a.allow_remote}, o,
                       a.junit, a.dry_run);
    }
    if (*c.validate) return cmd_validate(a.file, a.sets, a.allow_remote);
    if (*c.target) return cmd_target(a.bind_addr, a.port, a.control, a.sets);
    if (*c.schema) {
      std::cout << (a.report_schema ? report_schema() : scenario_schema()).dump(2) << "\n";
      return exit_ok;
    }
    if (*c.doctor) return cmd_doctor();
    if (*c.history) return cmd_history(a.history_dir, a.scenario_name, a.history_out);
    if (*c.export_) return cmd_export(a.run_dir, a.format, a.export_out);
    if (*c.compare) return cmd_compare(a.run_a, a.run_b, a.compare_out, a.fail_ifs, a.compare_junit);
    if (*c.report) {
      try {
        std::cout << printable(write_html_report(a.run_dir)) << "\n";
      } catch (const std::exception& e) {
        std::cerr << "rig report: " << printable(e.what()) << "\n";
        return exit_usage;
      }
      return exit_ok;
    }
    if (*c.cleanup) return cmd_cleanup();
    if (*c.proxy) return cmd_proxy(a.listen, a.upstream, a.toxic_flags, a.allow_remote);
    if (*c.list) {
      if (a.what.empty() || a.what == "scenario") list_sections();
      if (a.what.empty() || a.what == "suite") list_suite_keys();
      if (a.what.empty() || a.what == "targets") list_kinds("targets", target_kinds());
      if (a.what.empty() || a.what == "workloads") list_kinds("workloads", workload_kinds());
      if (a.what.empty() || a.what == "injectors")
        list_kinds("injectors", injector_kinds(),
                   "(every injector also takes may_be_unverified = true: an injection of it that is not verified in "
                   "the target then does not fail the run; by default it does, exit 1, status unverified)");
      return exit_ok;
    }
  } catch (const input_error& e) {
    std::cerr << printable(e.what()) << "\n";
    return exit_usage;
  } catch (const std::exception& e) {
    std::cerr << "rig: " << e.what() << "\n";
    return exit_runtime;
  }
  return exit_usage;
}

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  raise_fd_limit();  // for thousands of connections; what rig starts gets the limit rig was given
  CLI::App app{"rig — a fault-injection and load-magnification test rig.\n"
               "Runs a workload against a target while injectors exaggerate one condition,\n"
               "and reports latency and resources phase by phase."};
  app.require_subcommand(1);
  app.set_version_flag("--version", RIG_VERSION);
  cli_args args;
  const cli_commands commands = define_commands(app, args);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "rig: " << e.what() << "\n";
    if (const auto* sub = app.get_subcommands().empty() ? nullptr : app.get_subcommands().front())
      std::cerr << "see: rig " << sub->get_name() << " --help\n";
    else
      std::cerr << "see: rig --help\n";
    return exit_usage;
  }
  return dispatch(commands, args);
}
