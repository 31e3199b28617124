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

}  // namespace rig
