#include <fmt/format.h>

#include "injectors/nodelay.hpp"

namespace rig {

const option_table& nodelay_options() {
  static const option_table t = {
      {.name = "where", .type = opt_type::string, .default_text = "\"target\"",
       .help = "whose sockets get TCP_NODELAY off: the target's, the rig's own (workload), or both",
       .allowed = {"target", "workload", "both"}},
  };
  return t;
}

namespace {

// TCP_NODELAY forced off (Nagle's algorithm back on) on the target's and/or the rig's sockets.
class nodelay_injector final : public injector {
 public:
  explicit nodelay_injector(const option_values& v) : opts_(v), where_(v.str("where")) {}

  probe_result probe(const run_context& ctx) override {
    if (where_ != "workload" && !ctx.target_sockets)
      return {false, fmt::format("the {} target's sockets cannot be reached (the preload shim for unmodified "
                                 "programs is not built yet); use where = \"workload\"",
                                 ctx.target_kind)};
    if (where_ != "target") {
      bool any = false;
      for (const auto& w : ctx.workloads) any = any || w.sockets;
      if (!any) return {false, "no workload in this scenario has TCP sockets"};
    }
    return {};
  }

  void apply(run_context& ctx) override {
    sites_.clear();
    if (where_ != "workload") sites_.push_back({"target", ctx.target_sockets, {}});
    if (where_ != "target")
      for (const auto& w : ctx.workloads)
        if (w.sockets) sites_.push_back({"workload " + w.name, w.sockets, {}});
    for (auto& s : sites_) {
      s.prior = s.sockets->socket_policy_now();
      s.sockets->set_socket_policy(off());
    }
  }

  verification verify(run_context&) override {
    verification v;
    v.ok = !sites_.empty();
    int total = 0, matching = 0;
    for (auto& s : sites_) {
      const auto r = s.sockets->check_socket_policy(off());
      total += r.sockets;
      matching += r.matching;
      v.ok = v.ok && r.sockets > 0 && r.matching == r.sockets;
      v.text += fmt::format("{}{}: {} of {} sockets read back TCP_NODELAY=0", v.text.empty() ? "" : "; ", s.name,
                            r.matching, r.sockets);
      v.measured[s.name] = {{"sockets", r.sockets}, {"nodelay_off", r.matching}};
    }
    if (total == 0) v.text += " (no open sockets: nothing was changed)";
    v.measured["sockets"] = total;
    v.measured["sockets_nodelay_off"] = matching;
    return v;
  }

  void revert(run_context&) noexcept override {
    for (auto it = sites_.rbegin(); it != sites_.rend(); ++it) {
      try {
        socket_policy p;
        p.nodelay = it->prior.nodelay.value_or(true);
        it->sockets->set_socket_policy(p);
      } catch (...) {
        // The target may be gone; its sockets went with it.
      }
    }
    sites_.clear();
  }

  std::string mechanism() const override {
    if (where_ == "workload") return "setsockopt(TCP_NODELAY, 0) on the rig's sockets";
    if (where_ == "target") return "setsockopt(TCP_NODELAY, 0) in the built-in target (control channel)";
    return "setsockopt(TCP_NODELAY, 0) in the built-in target (control channel) and on the rig's sockets";
  }
  nlohmann::json params() const override { return opts_.to_json(); }

 private:
  static socket_policy off() {
    socket_policy p;
    p.nodelay = false;
    return p;
  }
  struct site {
    std::string name;
    socket_tunable* sockets;
    socket_policy prior;
  };
  option_values opts_;
  std::string where_;
  std::vector<site> sites_;
};

}  // namespace

std::unique_ptr<injector> make_nodelay(const option_values& v) { return std::make_unique<nodelay_injector>(v); }

}  // namespace rig
