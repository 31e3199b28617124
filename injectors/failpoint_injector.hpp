#pragma once
#include <memory>
#include <string>

#include "core/options.hpp"
#include "injectors/injector.hpp"

namespace rig {

// A failpoint in the target (rig's failpoint library) armed for a phase through rig's
// failpoint channel. `threads` is the same with its defaults set for dropped worker
// threads: worker.handle, action throw.
const option_table& failpoint_options();
const option_table& threads_options();
void check_failpoint(const option_values& v, const bind_context& ctx, diagnostics& diags);
std::unique_ptr<injector> make_failpoint(const option_values& v);

}  // namespace rig
