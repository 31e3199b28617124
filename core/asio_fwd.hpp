#pragma once
// Boost.Asio's event loop by name only, for headers that pass one along (a workload hosting
// rig's proxy on its loop) without bringing all of Asio into every unit that includes them.
namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace rig {
namespace asio = boost::asio;
}  // namespace rig
