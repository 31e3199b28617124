#include "rig/repeat.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "core/units.hpp"
#include "reports/html_common.hpp"
#include "rig/controller.hpp"

namespace rig {

int run_repeat(const scenario& sc, int repeats, const run_options& opts, std::vector<run_report>* reports_out) {
  std::ostream& out = opts.out ? *opts.out : std::cout;
  const directory dir = make_run_dir(opts.out_base, name_with_kind(sc.name, "repeat"));
  if (opts.ran_in) *opts.ran_in = dir.path();
  out << fmt::format("rig repeat: {} — {} runs, in {}\n", sc.name, repeats, dir.path());
  out.flush();
  run_group group{dir.path(), "repeat", {}};
  int worst = exit_ok;
  for (int i = 0; i < repeats; ++i) {
    run_options ro = opts;
    ro.out_base = dir.path();
    ro.quiet = true;
    std::stringstream sink;
    ro.out = &sink;
    ro.cleanup_first = opts.cleanup_first && i == 0;
    std::string ran_in;
    ro.ran_in = &ran_in;
    const int code = run_scenario(sc, ro);
    std::string line;
    if (!ran_in.empty()) try {
        run_report r = html::read_run_report(ran_in);
        r.run_dir = ran_in;
        if (!r.phases.empty())
          for (const auto& w : r.phases.back().workloads)
            line += fmt::format("  {} {}: {} ops/s p99 {}", r.phases.back().name, w.name, format_count(w.throughput_ops_s),
                                w.latency.count ? format_duration_us(w.latency.p99) : "-");
        group.runs.push_back({"", std::move(r)});
      } catch (const std::exception& e) {
        line = std::string("  ") + e.what();
      }
    out << fmt::format("  [{}/{}] {}{}\n", i + 1, repeats, code == exit_ok ? "ok" : fmt::format("exit {}", code), line);
    if (code == exit_expectations)  // the failed checks, as the run said them
      for (std::string l; std::getline(sink, l);)
        if (l.rfind("FAIL ", 0) == 0 || l.rfind("UNVERIFIED", 0) == 0) out << "      " << l << "\n";
    out.flush();
    if (code == 130 || code == 143) {
      worst = code;
      break;
    }
    if (code == exit_usage || code == exit_capability || code == exit_stale_state) return code;  // none can run
    if (code == exit_runtime || (code == exit_expectations && worst == exit_ok)) worst = code;
  }
  const repeat_summary s = summarize_repeat(sc.name, group);
  dir.write_file("repeat.json", to_json(s).dump(2) + "\n");
  out << "\n" << repeat_table(s);
  out << fmt::format("\nrepeat: {}/repeat.json\n  compare two of these: rig compare {} OTHER --fail-if \"p99 > 1.20x\"\n",
                     dir.path(), dir.path());
  if (reports_out)
    for (auto& r : group.runs) reports_out->push_back(std::move(r.report));
  return worst;
}

}  // namespace rig
