// Every toxic rig's proxy has. A new toxic: its file in this folder and one line here.
#include "injectors/toxics/toxic.hpp"

namespace rig {

extern const toxic_kind latency_toxic, bandwidth_toxic, slicer_toxic, slow_close_toxic, timeout_toxic,
    reset_peer_toxic, limit_data_toxic;

const std::vector<toxic_kind>& toxic_kinds() {
  static const std::vector<toxic_kind> kinds = {latency_toxic, bandwidth_toxic, slicer_toxic, slow_close_toxic,
                                                timeout_toxic, reset_peer_toxic, limit_data_toxic};
  return kinds;
}

}  // namespace rig
