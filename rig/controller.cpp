#include "rig/controller.hpp"

#include <unistd.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <optional>

#include "core/clock.hpp"
#include "core/files.hpp"
#include "core/host.hpp"
#include "core/journal.hpp"
#include "rig/phase_loop.hpp"
#include "rig/phase_store.hpp"
#include "rig/run_outcome.hpp"
#include "rig/run_plan.hpp"
#include "rig/run_wiring.hpp"
#include "rig/timeseries.hpp"

#ifndef RIG_VERSION
#define RIG_VERSION "0.0.0"
#endif

namespace rig {

namespace {

std::string utc_stamp() { return format_utc(std::time(nullptr), "%Y%m%dT%H%M%SZ"); }


nlohmann::json host_facts() {
  std::string os;
  std::ifstream rel("/etc/os-release");
  for (std::string line; std::getline(rel, line);)
    if (line.rfind("PRETTY_NAME=", 0) == 0) os = line.substr(13, line.size() - 14);
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return {{"kernel", kernel_release()}, {"cpus", online_cpus()}, {"cgroup", cgroup_version()},
          {"os", os},                   {"hostname", name}};
}


std::string pinned_path(const directory& d) { return fmt::format("/proc/{}/fd/{}", ::getpid(), d.fd()); }

// A rig killed mid-run left changes on this host: they are undone first, or the run refuses.
// 0: go on.
int undo_killed_rigs_first(const run_options& opts) {
  try {
    const auto stale = stale_journals();
    if (stale.empty()) return exit_ok;
    if (!opts.cleanup_first) {
      const auto& j = stale[0];
      std::cerr << fmt::format(
          "rig: a previous rig (pid {}) was killed before it undid its changes to this host ({}: {}); run `rig "
          "cleanup` first, or `rig run --cleanup-first` (exit {})\n",
          j.pid, j.path, j.problem.empty() ? j.pending.back().text : j.problem, int(exit_stale_state));
      return exit_stale_state;
    }
    if (!cleanup_stale_journals(std::cerr)) {
      std::cerr << "rig: not every change of a killed rig could be undone (above); nothing was run\n";
      return exit_stale_state;
    }
    return exit_ok;
  } catch (const std::exception& e) {
    std::cerr << "rig: " << e.what() << "\n";
    return exit_runtime;
  }
}

// The report as it begins: the scenario, the host, the injectors left out; the scenario as run
// copied into the run directory.
run_report start_report(const run_plan& plan, const directory& run_dir) {
  const scenario& sc = plan.sc;
  run_report rep;
  rep.rig_version = RIG_VERSION;
  rep.skipped_injectors = plan.skipped;
  for (const auto& s : plan.skipped)
    rep.events.push_back({0, "injector_skipped",
                          fmt::format("{} ({}) left out, require_all = false: {}", s["name"].get<std::string>(),
                                      s["kind"].get<std::string>(), s["reason"].get<std::string>())});
  rep.scenario_name = sc.name;
  rep.scenario_file = sc.file;
  rep.description = sc.description;
  rep.seed = sc.seed;
  rep.sets = sc.overrides;
  rep.host = host_facts();
  rep.run_dir = run_dir.path();
  std::string copy = sc.source_text;
  if (!sc.overrides.empty()) {  // the file as written: the run is this file with these overrides
    std::string again = "rig run scenario.toml";
    for (const auto& o : sc.overrides) again += " --set '" + o + "'";
    copy += "\n# This run overrode keys of the file above; to run it again as it ran:\n#   " + again + "\n";
  }
  for (const auto& o : sc.overrides) copy += "# --set " + o + "\n";
  run_dir.write_file("scenario.toml", copy);
  return rep;
}

}  // namespace

bool cleanup_stale_journals(std::ostream& out) {
  bool all = true;
  for (const auto& j : stale_journals()) {
    if (j.problem.empty())
      out << fmt::format("rig cleanup: rig pid {} ({}), {} change{} left:\n", j.pid, j.path, j.pending.size(),
                         j.pending.size() == 1 ? "" : "s");
    const auto undone = replay(j);
    for (const auto& line : undone.lines) out << "  " << line << "\n";
    all = all && undone.complete;
    if (!undone.complete)
      out << "  not everything was undone; the journal stays (" << j.path
          << "): `rig cleanup` tries again, and a record it refused needs a person to look at it\n";
  }
  return all;
}

directory make_run_dir(const std::string& base, const std::string& name) {
  make_user_dirs(base);
  const directory parent = directory::open(base);
  const std::string stem = utc_stamp() + "-" + name;
  for (int i = 0;; ++i)
    if (auto d = parent.make_subdir(i ? fmt::format("{}.{}", stem, i) : stem)) return std::move(*d);
}

// --run-dir DIR: that directory, made now (its parents as needed). One that exists is refused:
// rig writes only into a directory it made.
directory make_exact_run_dir(const std::string& path) {
  const std::filesystem::path p = std::filesystem::absolute(path).lexically_normal();
  const std::string name = p.filename().string();
  if (name.empty() || name == "." || name == "..")
    throw std::runtime_error("--run-dir " + path + ": name the directory to make, e.g. runs/ci-" + "1234");
  make_user_dirs(p.parent_path().string());
  const directory parent = directory::open(p.parent_path().string());
  if (auto d = parent.make_subdir(name)) return std::move(*d);
  throw std::runtime_error("--run-dir " + path + " exists: rig writes a run only into a directory it makes");
}

int run_scenario(const scenario& given, const run_options& opts) {
  std::ostream& out = opts.out ? *opts.out : std::cout;
  std::ostream null_out(nullptr);  // --quiet: what only a person watching wants goes nowhere
  const run_console con{out, opts.quiet ? null_out : out, opts.out == nullptr && isatty(STDOUT_FILENO), opts.quiet,
                        opts.progress_every_s};
  if (const int code = undo_killed_rigs_first(opts)) return code;

  // Build and probe everything first: a refusal exits 3 before the host is touched.
  auto planned = plan_run(given, opts, std::cerr);
  if (const int* code = std::get_if<int>(&planned)) return *code;
  run_plan& plan = *std::get<std::unique_ptr<run_plan>>(planned);
  const scenario& sc = plan.sc;

  // Every file of the run is made through the directory's descriptor, and what other
  // processes open there goes through its /proc path, so a directory swapped for a link
  // mid-run redirects nothing.
  std::optional<directory> made;
  try {
    made.emplace(opts.run_dir.empty() ? make_run_dir(opts.out_base, sc.name) : make_exact_run_dir(opts.run_dir));
  } catch (const std::exception& e) {  // before anything ran: nothing to undo
    std::cerr << "rig run: " << e.what() << "\n";
    return exit_usage;
  }
  const directory& run_dir = *made;
  run_report rep = start_report(plan, run_dir);
  if (opts.ran_in) *opts.ran_in = rep.run_dir;
  plan.ctx.run_dir = rep.run_dir;  // what the shim reads back from a descriptor's link: the real path

  int64_t total_ns = 0;
  for (const auto& p : sc.phases) total_ns += p.duration_ns;
  con.chatty << fmt::format("rig {}: {} — {} phase{}, {:.1f}s\n", RIG_VERSION, sc.name, sc.phases.size(),
                            sc.phases.size() == 1 ? "" : "s", double(total_ns) / 1e9);
  if (!sc.description.empty()) con.chatty << "  " << sc.description << "\n";
  con.chatty.flush();

  // In a memfd, so a workload run by a helper process in the target's cgroup sees the phases change.
  shared_clock_cell clock_cell = shared_clock_cell::create();
  run_clock clock(clock_cell.cell());
  window_sink windows;
  const run_recording rec{clock, windows, clock_cell, pinned_path(run_dir)};
  const int64_t run_start = mono_ns();
  const double run_start_wall = wall_s();
  clock.start_ns = run_start;
  for (const auto& p : sc.phases) clock.phase_ns.push_back(p.duration_ns);
  phase_store store(sc, plan.workloads, rep.phases, run_dir);
  timeseries_stream timeseries(sc, run_dir, run_start);
  phase_loop loop(plan, rep, store, timeseries, rec, con, run_start, total_ns);
  std::shared_ptr<sampler> smp;
  {
    std::optional<run_wiring> wiring;
    try {
      wiring.emplace(plan, opts, rec, rep, [&] { return loop.t_s(mono_ns()); });
      smp = wiring->sampler_handle();
      loop.run(*wiring);
      clock.end_run();  // from here the wiring is taken down: its errors are not the target's
    } catch (const std::exception& e) {
      clock.end_run();
      loop.close_phase(false, smp.get());
      if (wiring) loop.revert_applied(*wiring);
      rep.status = "failed";
      rep.failure = e.what();
      std::cerr << "rig: run failed: " << e.what() << "\n";
    }
  }  // the wiring goes: undone in reverse order of its making
  const int64_t run_end = mono_ns();
  windows.finalize(INT64_MAX);
  try {
    write_hdr_logs(run_dir, sc, windows.rows(), run_start_wall);
  } catch (const std::exception& e) {  // the figures stand without them; said, not hidden
    std::cerr << "rig: the latency interval logs were not written: " << e.what() << "\n";
  }

  // The workloads' figures of the phases not summarized yet, now that every worker thread has joined.
  store.finish();
  rep.magnification = compute_magnification(rep.phases);
  for (auto& e : errors_began(rep.phases, windows.rows())) rep.events.push_back(std::move(e));
  std::stable_sort(rep.events.begin(), rep.events.end(),
                   [](const event_row& a, const event_row& b) { return a.t_s < b.t_s; });
  // The last second too.
  loop.write_timeseries(run_start + (run_end - run_start + ns_per_s - 1) / ns_per_s * ns_per_s, false, smp.get());

  phase_warnings(rep);
  judge(rep, sc, loop.target_death());
  // What rig could not undo on the host is rig's failure, whatever the figures say (exit 4).
  if (!loop.revert_failures().empty() && rep.status != "interrupted") {
    rep.status = "failed";
    rep.failure = "not reverted: " + loop.revert_failures();
  }
  return write_and_say(rep, run_dir, store.spilled() > 0, con, loop.interrupted_by());
}

}  // namespace rig
