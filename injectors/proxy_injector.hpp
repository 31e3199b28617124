#pragma once
#include "injectors/injector.hpp"

namespace rig {
std::unique_ptr<injector> make_proxy_injector(const std::string& name, const option_values& v);
}  // namespace rig
