#pragma once
#include <string>

#include "core/netlink.hpp"
#include "core/netns.hpp"

namespace rig {

// The run's private network: a namespace for the target and one for the rig's side
// (workloads, proxy), joined by a veth pair. Its addresses exist only inside the two
// namespaces, and nothing of it is in the host's namespace, so traffic never leaves the
// machine and the host's links and qdiscs are never touched. Dropping the object (or the
// rig dying) frees both namespaces and with them the veth.
class veth_network {
 public:
  enum class side { client, target };
  static constexpr const char* client_if = "rig-c";
  static constexpr const char* target_if = "rig-t";
  static constexpr const char* client_addr = "198.18.0.1";  // RFC 2544 benchmarking range
  static constexpr const char* target_addr = "198.18.0.2";

  static veth_network create();  // each namespace in the journal while it exists
  veth_network(veth_network&&) = default;
  veth_network& operator=(veth_network&&) = delete;
  ~veth_network();

  const netns& ns(side s) const { return s == side::client ? client_ : target_; }
  const char* interface(side s) const { return s == side::client ? client_if : target_if; }
  // A route socket acting inside one side's namespace.
  nl_socket route(side s) const { return route_socket(ns(s).fd()); }
  std::string describe() const;

 private:
  veth_network() = default;
  static std::string journal_line(const netns& ns);  // "netns INODE"
  netns client_, target_;
};

}  // namespace rig
