#pragma once
#include "injectors/injector.hpp"

namespace rig {
const option_table& nodelay_options();
std::unique_ptr<injector> make_nodelay(const option_values& v);
}  // namespace rig
