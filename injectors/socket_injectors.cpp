#include "injectors/socket_injectors.hpp"

#include <fmt/format.h>

#include <map>
#include <optional>

#include "core/socket_peek.hpp"
#include "core/units.hpp"
#include "injectors/shim.hpp"

namespace rig {

namespace {

// rig's own read of the target's sockets as root (pidfd_getfd + getsockopt), beside what the
// mechanism (the shim, the control channel) reports: before the policy, under it, after its revert.
class socket_audit {
 public:
  void snapshot(const run_context& ctx) {
    before_.clear();
    listener_locks_ = 0;
    on_ = ctx.target_processes && socket_peek_unavailable().empty();
    if (!on_) return;
    try {
      for (const auto& s : peek_tcp_sockets(ctx.target_processes())) {
        before_[s.inode] = s;
        if (s.listening && s.buf_locks > 0) listener_locks_ |= s.buf_locks;
      }
    } catch (const std::exception& e) {
      on_ = false;
      why_not_ = e.what();
    }
  }

  // Every socket of the target's processes (listeners aside) as the policy forces it.
  std::pair<bool, std::string> forced(const run_context& ctx, const socket_policy& p) const {
    if (!on_) return {true, ""};
    const auto now = read(ctx);
    if (!now) return {false, "; rig could not read the target's sockets itself: " + why_not_};
    int total = 0, as_forced = 0;
    for (const auto& s : now->sockets) {
      if (s.listening) continue;
      ++total;
      const bool ok = (!p.nodelay || s.nodelay == (*p.nodelay ? 1 : 0)) &&
                      (!p.send_buffer || s.sndbuf <= 2 * std::max(*p.send_buffer, 2304)) &&
                      (!p.receive_buffer || s.rcvbuf <= 2 * std::max(*p.receive_buffer, 1152));
      as_forced += ok;
    }
    return {as_forced == total, fmt::format("; rig read the {} socket{} of the target's {} itself: {} as forced", total,
                                            total == 1 ? "" : "s", now->processes, as_forced)};
  }

  // Each socket back as it was before the policy: its buffer sizes not fixed by rig (a socket
  // accepted since: no more fixed than its listener was), TCP_NODELAY as the program had it.
  std::pair<bool, std::string> reverted(const run_context& ctx, const socket_policy& forced) const {
    if (!on_) return {true, ""};
    const auto now = read(ctx);
    if (!now) return {false, "; rig could not read the target's sockets itself: " + why_not_};
    const int rigs_locks = (forced.send_buffer ? 1 : 0) | (forced.receive_buffer ? 2 : 0);
    int total = 0, fixed = 0, nodelay = 0;
    for (const auto& s : now->sockets) {
      ++total;
      const auto was = before_.find(s.inode);
      const int allowed = was != before_.end() ? std::max(0, was->second.buf_locks) : listener_locks_;
      if (rigs_locks && s.buf_locks >= 0 && (s.buf_locks & rigs_locks & ~allowed)) ++fixed;
      if (forced.nodelay && was != before_.end() && was->second.nodelay >= 0 && s.nodelay != was->second.nodelay)
        ++nodelay;
    }
    std::string text = fmt::format("; rig read the {} socket{} of the target's {} itself: ", total, total == 1 ? "" : "s",
                                   now->processes);
    if (!fixed && !nodelay) return {true, text + "as before"};
    if (fixed) text += fmt::format("{} still with a buffer size rig fixed (autotuning off)", fixed);
    if (nodelay) text += fmt::format("{}{} with TCP_NODELAY not as the program had it", fixed ? ", " : "", nodelay);
    return {false, text};
  }

 private:
  struct reading {
    std::vector<peeked_socket> sockets;
    std::string processes;  // "3 processes"
  };
  std::optional<reading> read(const run_context& ctx) const {
    try {
      const auto pids = ctx.target_processes();
      return reading{peek_tcp_sockets(pids), fmt::format("{} process{}", pids.size(), pids.size() == 1 ? "" : "es")};
    } catch (const std::exception& e) {
      why_not_ = e.what();
      return std::nullopt;
    }
  }

  bool on_ = false;
  mutable std::string why_not_;
  std::map<uint64_t, peeked_socket> before_;
  int listener_locks_ = 0;
};

const option_spec where_option = {
    .name = "where", .type = opt_type::string, .default_text = "\"target\"",
    .help = "whose sockets: the target's, the rig's own (workload), or both",
    .allowed = {"target", "workload", "both"}};

// One mechanism for every injector that forces socket options (nodelay, sockbuf): save
// each site's policy, force ours, read every socket back, put the saved policy back.
class socket_injector final : public injector {
 public:
  socket_injector(const option_values& v, socket_policy forced, std::string what)
      : opts_(v), where_(v.str("where")), forced_(std::move(forced)), what_(std::move(what)) {}

  probe_result probe(const run_context& ctx) override {
    if (where_ != "workload" && !ctx.target_sockets.sockets)
      return {false, ctx.target_sockets_missing + "; use where = \"workload\" to act on the rig's own sockets"};
    if (where_ != "target") {
      bool any = false;
      for (const auto& w : ctx.workloads) any = any || w.sockets;
      if (!any) return {false, "no workload in this scenario has TCP sockets"};
    }
    return {};
  }

  void apply(run_context& ctx) override {
    sites_.clear();
    if (where_ != "workload") sites_.push_back({ctx.target_sockets, {}});
    if (where_ != "target")
      for (const auto& w : ctx.workloads)
        if (w.sockets) sites_.push_back({w, {}});
    via_.clear();
    if (where_ != "workload") audit_.snapshot(ctx);
    for (auto& s : sites_) {
      s.prior = s.site.sockets->socket_policy_now();
      s.site.sockets->set_socket_policy(forced_);
      via_ += (via_.empty() ? "" : " and ") + s.site.via;
    }
  }

  verification verify(run_context& ctx) override {
    verification v;
    v.ok = !sites_.empty();
    int total = 0, matching = 0;
    for (auto& s : sites_) {
      const auto r = s.site.sockets->check_socket_policy(forced_);
      if (r.sockets == 0 && s.site.may_be_empty) continue;
      total += r.sockets;
      matching += r.matching;
      v.ok = v.ok && r.sockets > 0 && r.matching == r.sockets && r.reached_server;
      v.text += fmt::format("{}{}: {} of {} sockets read back {}", v.text.empty() ? "" : "; ", s.site.name,
                            r.matching, r.sockets, forced_.str());
      nlohmann::json m = {{"sockets", r.sockets}, {"matching", r.matching}};
      for (const auto& [k, n] : r.counters) m[k] = n;
      if (!r.detail.empty()) v.text += " (" + r.detail + ")";
      v.measured[s.site.name] = m;
    }
    if (total == 0) v.text += " (no open sockets: nothing was changed)";
    if (where_ != "workload") {
      const auto [ok, text] = audit_.forced(ctx, forced_);
      v.ok = v.ok && ok;
      v.text += text;
    }
    v.measured["sockets"] = total;
    v.measured["sockets_matching"] = matching;
    return v;
  }

  // At the phase's end, each site's counts again: what the mechanism did over the phase,
  // including in processes that exited meanwhile (a backend forked per connection).
  nlohmann::json measure(run_context&) override {
    nlohmann::json m = nlohmann::json::object();
    std::string summary;
    for (auto& s : sites_) {
      try {
        const auto r = s.site.sockets->check_socket_policy(forced_);
        nlohmann::json site = {{"sockets", r.sockets}, {"matching", r.matching}};
        for (const auto& [k, n] : r.counters) site[k] = n;
        m[s.site.name] = site;
        summary += fmt::format("{}{}: {} of {} open sockets as forced at the end", summary.empty() ? "" : "; ",
                               s.site.name, r.matching, r.sockets);
        const auto count = [&](const char* k) { return r.counters.count(k) ? r.counters.at(k) : int64_t(0); };
        if (count("tcp_sockets_seen"))
          summary += fmt::format(" ({} TCP sockets seen in all, {} of the program's setsockopt calls overridden{})",
                                 count("tcp_sockets_seen"), count("setsockopt_overridden"),
                                 count("processes_exited") ? fmt::format(", {} processes exited", count("processes_exited"))
                                                           : "");
      } catch (const std::exception& e) {
        summary += fmt::format("{}{}: not read: {}", summary.empty() ? "" : "; ", s.site.name, e.what());
      }
    }
    m["summary"] = summary;
    return m;
  }

  undo_result revert(run_context& ctx) noexcept override {
    undo_result u;
    for (auto it = sites_.rbegin(); it != sites_.rend(); ++it) {
      const auto& s = *it;
      const std::string prior = s.prior == socket_policy{} ? "the program's own options" : s.prior.str();
      std::string text;
      try {
        s.site.sockets->reset_socket_policy(s.prior);
        // Read back: the policy in force is the saved one, and every socket has what it sets.
        const auto now = s.site.sockets->socket_policy_now();
        const auto r = s.site.sockets->check_socket_policy(s.prior);
        const bool back = now == s.prior && r.matching == r.sockets;
        u.ok = u.ok && back;
        const auto count = [&](const char* k) { return r.counters.count(k) ? r.counters.at(k) : int64_t(0); };
        // A size set with SO_SNDBUF/SO_RCVBUF stays fixed (the kernel's autotuning off) until
        // SO_BUF_LOCK hands it back: said either way.
        std::string buffers;
        if (count("buffers_restored"))
          buffers += fmt::format(", buffer autotuning handed back on {} socket{}", count("buffers_restored"),
                                 count("buffers_restored") == 1 ? "" : "s");
        if (count("buffers_fixed"))
          buffers += fmt::format(", {} socket{} stay fixed at their old size{} (this kernel has no SO_BUF_LOCK to hand "
                                 "the size back to autotuning)",
                                 count("buffers_fixed"), count("buffers_fixed") == 1 ? "" : "s",
                                 count("buffers_fixed_bytes") ? " (up to " + format_bytes(double(count("buffers_fixed_bytes"))) + ")" : "");
        text = back ? fmt::format("{}: back to {}{}, {} socket{} read back", s.site.name, prior, buffers, r.sockets,
                                  r.sockets == 1 ? "" : "s")
                    : fmt::format("{}: not put back: {} of {} sockets read back {}{} (policy in force: {})", s.site.name,
                                  r.matching, r.sockets, prior, buffers, now.str());
      } catch (const std::exception& e) {
        // The target gone took its sockets with it; else they may still have rig's options.
        const bool gone = s.site.name == "target" && target_gone(ctx);
        u.ok = u.ok && gone;
        text = gone ? s.site.name + ": the target is gone, and its sockets with it"
                    : fmt::format("{}: not put back to {}: {}", s.site.name, prior, e.what());
      }
      u.text += (u.text.empty() ? "" : "; ") + text;
    }
    if (where_ != "workload" && !target_gone(ctx)) {
      const auto [ok, text] = audit_.reverted(ctx, forced_);
      u.ok = u.ok && ok;
      u.text += text;
    }
    sites_.clear();
    return u;
  }

  std::string mechanism() const override {
    return fmt::format("setsockopt({}) through {}", what_, via_.empty() ? "(not applied)" : via_);
  }
  nlohmann::json params() const override { return opts_.to_json(); }

 private:
  struct applied_site {
    run_context::site site;
    socket_policy prior;
  };
  option_values opts_;
  std::string where_;
  socket_policy forced_;
  std::string what_, via_;
  std::vector<applied_site> sites_;
  socket_audit audit_;
};

}  // namespace

const option_table& nodelay_options() {
  static const option_table t = {where_option};
  return t;
}

const option_table& sockbuf_options() {
  static const option_table t = {
      {.name = "send", .type = opt_type::size, .default_text = "",
       .help = "SO_SNDBUF forced to this size (the kernel doubles it and keeps at least 4.5KiB)", .min = 1,
       .max = 64.0 * 1048576},
      {.name = "receive", .type = opt_type::size, .default_text = "",
       .help = "SO_RCVBUF forced to this size (the kernel doubles it and keeps at least 2.25KiB)", .min = 1,
       .max = 64.0 * 1048576},
      where_option,
  };
  return t;
}

void check_sockbuf(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  if (!v.has("send") && !v.has("receive"))
    diags.add(ctx.table_pos, "sockbuf in " + ctx.section + " needs 'send', 'receive' or both, e.g. send = \"4KiB\"");
}

probe_result probe_socket_host(const host_context& h) {
  std::string why;
  if (auto lib = preload_library(h.rig_exe, &why))
    return {true, "built-in target (control channel), the rig's own sockets, and dynamically linked command "
                  "targets through the preload shim " + *lib};
  return {true, "built-in target and the rig's own sockets only: " + why};
}

std::unique_ptr<injector> make_nodelay(const option_values& v) {
  socket_policy p;
  p.nodelay = false;
  return std::make_unique<socket_injector>(v, p, "TCP_NODELAY, 0");
}

std::unique_ptr<injector> make_sockbuf(const option_values& v) {
  socket_policy p;
  std::string what;
  if (v.has("send")) {
    p.send_buffer = int(v.bytes("send"));
    what = fmt::format("SO_SNDBUF, {}", *p.send_buffer);
  }
  if (v.has("receive")) {
    p.receive_buffer = int(v.bytes("receive"));
    what += fmt::format("{}SO_RCVBUF, {}", what.empty() ? "" : "; ", *p.receive_buffer);
  }
  return std::make_unique<socket_injector>(v, p, what);
}

}  // namespace rig
