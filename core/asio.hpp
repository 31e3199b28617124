#pragma once
// The one place Boost.Asio is included. Boost 1.74's awaitable.hpp uses std::exchange
// without including <utility>, which g++ 12 in C++20 mode rejects.
#include <cstdint>
#include <string>
#include <utility>

#include <boost/asio.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace rig {
namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;

// A connected byte stream of either family: TCP, or one end of an AF_UNIX socket pair
// (how a workload reaches rig's proxy on its own event loop without the TCP stack).
using stream_socket = asio::generic::stream_protocol::socket;

// Opens, binds and listens; returns the port actually bound (port 0 picks a free one).
inline uint16_t listen_on(asio::ip::tcp::acceptor& a, const std::string& host, uint16_t port) {
  const asio::ip::tcp::endpoint ep(asio::ip::make_address(host), port);
  a.open(ep.protocol());
  a.set_option(asio::ip::tcp::acceptor::reuse_address(true));
  a.bind(ep);
  a.listen(1024);
  return a.local_endpoint().port();
}
}  // namespace rig
