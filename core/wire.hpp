#pragma once
#include <cstdint>

// The built-in target's TCP protocol: a fixed 16-byte header each way, host byte order
// (client and target always share a host). The request carries the reply size it wants.
namespace rig::wire {

constexpr uint32_t request_magic = 0x51474952;  // "RIGQ"
constexpr uint32_t reply_magic = 0x52474952;    // "RIGR"
constexpr uint32_t header_bytes = 16;
constexpr uint32_t max_frame_bytes = 64u << 20;

struct request_header {
  uint32_t magic;
  uint32_t request_bytes;   // whole frame, header included
  uint32_t response_bytes;  // whole reply frame wanted, header included
  uint32_t seq;
};

enum class status : uint32_t { ok = 0, rejected = 1, error = 2 };

struct reply_header {
  uint32_t magic;
  uint32_t status;
  uint32_t payload_bytes;  // after this header
  uint32_t seq;
};

static_assert(sizeof(request_header) == header_bytes && sizeof(reply_header) == header_bytes);

}  // namespace rig::wire
