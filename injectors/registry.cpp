#include "injectors/injector.hpp"
#include "injectors/nodelay.hpp"

namespace rig {

const std::vector<injector_kind>& injector_kinds() {
  static const std::vector<injector_kind> kinds = {
      {"nodelay", "TCP_NODELAY forced off (Nagle's algorithm on) for the target, the rig, or both",
       &nodelay_options, &make_nodelay},
  };
  return kinds;
}

const injector_kind* find_injector_kind(std::string_view name) {
  for (const auto& k : injector_kinds())
    if (k.name == name) return &k;
  return nullptr;
}

}  // namespace rig
