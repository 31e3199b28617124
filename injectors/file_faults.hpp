#pragma once
// Faults on the target's file I/O through the LD_PRELOAD shim: a delay and/or an errno
// (EIO by default) on fsync, write or read of files under a path, with a probability.
#include "injectors/injector.hpp"

namespace rig {
const option_table& file_faults_options();
void check_file_faults(const option_values& v, const bind_context& ctx, diagnostics& diags);
std::unique_ptr<injector> make_file_faults(const option_values& v);
probe_result probe_file_faults_host(const host_context& h);
}  // namespace rig
