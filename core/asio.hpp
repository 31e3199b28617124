#pragma once
// The one place Boost.Asio is included. Boost 1.74's awaitable.hpp uses std::exchange
// without including <utility>, which g++ 12 in C++20 mode rejects.
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
}  // namespace rig
