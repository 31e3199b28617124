#pragma once
// The outcome of a run, said the same way by report.json, the terminal and the exit code.
#include <string>

#include "core/directory.hpp"
#include "reports/report.hpp"
#include "rig/phase_loop.hpp"
#include "rig/scenario.hpp"

namespace rig {

// The scenario's checks evaluated and the injections that were not verified named, into the
// report's status. A target that died mid-run is a result, not rig's failure: a failed check
// (exit 1), unless the scenario's checks expect its death (events.target_exit,
// events.oom_kill). An injection that was not verified fails the run (exit 1) unless its
// injector says it may go unverified.
// Warnings in the report: a phase after the first in which a workload got no successful reply
// (the first phase's is a failed check, judge()); an open loop whose connections could not carry
// the requests due (with the connections that would).
void phase_warnings(run_report& rep);

// A workload with no successful reply in the first phase (every magnification's divisor) fails
// the implicit check "W answers in the PHASE phase", unless a check on that workload's errors
// in that phase expects it.
void judge(run_report& rep, const scenario& sc, const std::string& target_death);

// Writes report.json (and report.html), says the summary and the status, and returns the exit
// code. A report that cannot be written is rig's failure: never a silent ok.
int write_and_say(run_report& rep, const directory& run_dir, bool remove_spill, const run_console& con,
                  int interrupted_by);

}  // namespace rig
