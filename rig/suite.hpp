#pragma once
// `rig suite PATH...`: scenarios run one after another as one step of a release campaign.
// A PATH is a scenario file, a directory (its *.toml files, in name order) or a suite file: a
// TOML file with [[scenarios]] entries, each a scenario with its own --set overrides and tags.
#include <string>
#include <vector>

#include "rig/run_options.hpp"
#include "rig/scenario.hpp"

namespace rig {

struct suite_entry {
  std::string label;               // unique in the suite: the scenario's name, or the entry's `name`
  std::string file;                // the scenario file
  std::vector<std::string> sets;   // the suite file's, then the entry's, then the command line's
  std::string phase_duration;      // "" or every phase this long
  std::vector<std::string> run_sets;  // `sets` and the phase durations: what the run is made with
  std::vector<std::string> tags;   // the scenario's and the entry's
  scenario sc;                     // loaded with `sets`: valid
};

struct suite_request {
  std::vector<std::string> paths, sets, filters, skips;
  std::string phase_duration;  // "" or a duration every phase of every scenario takes
  int repeat = 0;              // --repeat N (0: the suite file's `repeat`, else 1)
  bool allow_remote = false;
};

struct suite_plan {
  std::string name = "suite", description;
  // Each scenario this many times, judged on the median of its runs (a sweep keeps its own
  // [sweep] repeats: its checks are on medians already).
  int repeat = 1;
  std::vector<suite_entry> entries;
  std::vector<std::string> filters, skips, filtered_out;
};

// The suite's keys (a suite file's top level) and an entry's ([[scenarios]]).
const option_table& suite_options();
const option_table& suite_entry_options();

// Every scenario found, loaded and checked before anything runs; throws input_error holding
// every problem (a missing file, a bad key, an invalid scenario, a tag no scenario has).
suite_plan plan_suite(const suite_request& req);

// Runs the plan's scenarios in turn under runs/<stamp>-<name>-suite/, then writes suite.json and
// suite.html and the summary table, and JUnit XML to `junit` when given. Exit 0 when every
// scenario passed, 1 naming those that did not, 130/143 when interrupted (what ran is summarized).
int run_suite(const suite_plan& plan, const run_options& opts, const std::string& junit);

}  // namespace rig
