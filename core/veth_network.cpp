#include "core/veth_network.hpp"

#include <fmt/format.h>

#include "core/journal.hpp"

namespace rig {

veth_network veth_network::create() {
  veth_network n;
  n.client_ = netns::create();
  n.target_ = netns::create();
  for (const auto* ns : {&n.client_, &n.target_}) journal::self().record(journal_line(*ns));
  nl_socket c = n.route(side::client), t = n.route(side::target);
  create_veth(c.get(), client_if, target_if, n.target_.fd());
  add_address(c.get(), client_if, fmt::format("{}/30", client_addr));
  add_address(t.get(), target_if, fmt::format("{}/30", target_addr));
  for (auto* sk : {c.get(), t.get()}) set_link_up(sk, "lo");
  set_link_up(c.get(), client_if);
  set_link_up(t.get(), target_if);
  return n;
}

std::string veth_network::journal_line(const netns& ns) { return rig::journal_line("netns", {std::to_string(ns.inode())}); }

veth_network::~veth_network() {
  if (!client_) return;  // moved from
  const std::string lines[] = {journal_line(client_), journal_line(target_)};
  client_ = {};
  target_ = {};
  // Freed with the last fd (a target still in one is in the journal as a process of its own).
  for (const auto& line : lines) journal::self().done(line);
}

std::string veth_network::describe() const {
  return fmt::format("veth {} {} (rig side) <-> {} {} (target), each end in a network namespace of the run", client_if,
                     client_addr, target_if, target_addr);
}

}  // namespace rig
