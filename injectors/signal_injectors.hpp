#pragma once
// Signals to the target on a schedule: pause (SIGSTOP/SIGCONT on a period) and kill (one
// signal at a set time). Only a target rig started, by its pid.
#include "injectors/injector.hpp"

namespace rig {

const option_table& pause_options();
void check_pause(const option_values& v, const bind_context& ctx, diagnostics& diags);
std::unique_ptr<injector> make_pause(const option_values& v);

const option_table& kill_options();
std::unique_ptr<injector> make_kill(const option_values& v);

}  // namespace rig
