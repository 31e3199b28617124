#pragma once
#include "injectors/injector.hpp"

namespace rig {
const option_table& nodelay_options();
const option_table& sockbuf_options();
std::unique_ptr<injector> make_nodelay(const option_values& v);
std::unique_ptr<injector> make_sockbuf(const option_values& v);
probe_result probe_socket_host(const host_context& h);
void check_sockbuf(const option_values& v, const bind_context& ctx, diagnostics& diags);
}  // namespace rig
