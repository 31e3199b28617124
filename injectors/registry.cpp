#include "injectors/injector.hpp"
#include "injectors/socket_injectors.hpp"

namespace rig {

const std::vector<injector_kind>& injector_kinds() {
  static const std::vector<injector_kind> kinds = {
      {"nodelay", "TCP_NODELAY forced off (Nagle's algorithm on) for the target, the rig, or both",
       &nodelay_options, &make_nodelay, nullptr, &probe_socket_host},
      {"sockbuf", "tiny SO_SNDBUF/SO_RCVBUF for the target, the rig, or both", &sockbuf_options, &make_sockbuf,
       &check_sockbuf, &probe_socket_host},
  };
  return kinds;
}

}  // namespace rig
