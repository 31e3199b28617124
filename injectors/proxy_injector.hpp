#pragma once
#include "injectors/injector.hpp"

namespace rig {
// The proxy injector's keys: toxic, stream, toxicity, then every toxic's own (injectors/toxics/).
const option_table& proxy_options();
const option_variants& proxy_variants();  // per toxic, its own keys
void check_proxy(const option_values& v, const bind_context& ctx, diagnostics& diags);
std::unique_ptr<injector> make_proxy_injector(const std::string& name, const option_values& v);
}  // namespace rig
