#pragma once
#include <cstdint>

namespace rig {

// SIGINT and SIGTERM are blocked in every thread (call before starting any) and taken
// synchronously, so a run can revert everything before it exits. SIGCHLD is blocked too.
void block_stop_signals();
// Waits for SIGINT or SIGTERM; with timeout_ns >= 0 at most that long. Returns the signal or 0
// (SIGTERM when both are pending: a SIGTERM then a SIGINT exits 143, whenever rig looks).
// wake_on_child: a child's exit (SIGCHLD) ends the wait early too, returning 0, so the
// caller sees a dead target at once.
int wait_stop_signal(int64_t timeout_ns = -1, bool wake_on_child = false);

}  // namespace rig
