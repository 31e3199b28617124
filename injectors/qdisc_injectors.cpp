#include "injectors/qdisc_injectors.hpp"

#include <linux/pkt_sched.h>
#include <unistd.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/tbf.h>
#include <netlink/route/tc.h>

#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <iostream>
#include <mutex>

#include "core/clock.hpp"
#include "core/netlink.hpp"
#include "core/units.hpp"
#include "core/veth_network.hpp"
#include "injectors/netem_dist.hpp"

namespace rig {

namespace {

constexpr uint32_t rig_handle = 0x52490000;  // "RI": rig's qdiscs show up as 5249: in tc
constexpr int psched_shift = 6;              // the kernel's psched tick is 64 ns
constexpr double prob_scale = 4294967295.0;  // tc's 100%

uint32_t probability(double fraction) { return uint32_t(std::llround(std::clamp(fraction, 0.0, 1.0) * prob_scale)); }
std::string percent(uint32_t p) { return fmt::format("{:g}%", std::round(double(p) / prob_scale * 1e6) / 1e4); }
std::string duration(int64_t ns) { return ns == 0 ? "0" : format_duration_us(double(ns) / 1e3); }

template <typename T>
T read_as(const attr_view& a) {
  T v{};
  std::memcpy(&v, a.data, std::min(sizeof v, a.len));
  return v;
}

const option_spec direction_option = {
    .name = "direction", .type = opt_type::string, .default_text = "\"replies\"",
    .help = "which way it acts: replies (target to rig: each round trip grows once), requests (rig to target), or both",
    .allowed = {"replies", "requests", "both"}};

std::vector<veth_network::side> sides_of(const std::string& direction) {
  if (direction == "replies") return {veth_network::side::target};
  if (direction == "requests") return {veth_network::side::client};
  return {veth_network::side::client, veth_network::side::target};
}

std::string flow_of(veth_network::side s) {
  return s == veth_network::side::target ? "target→rig" : "rig→target";
}

// What the kernel answers when a probe on a throwaway "lo" sets the qdisc; cached per kind.
probe_result kernel_qdisc_probe(const std::string& kind, const std::vector<uint8_t>& options,
                                const std::string& missing) {
  static std::mutex mu;
  static std::map<std::string, probe_result> cache;
  std::lock_guard lk(mu);
  if (auto it = cache.find(kind); it != cache.end()) return it->second;
  std::string why;
  probe_result r;
  if (!kernel_has_qdisc(kind, options, &why)) {
    r.ok = false;
    if (why.find("Object not found") != std::string::npos)
      r.reason = missing;
    else
      r.reason = why + " (setting qdiscs needs root: CAP_NET_ADMIN and CAP_SYS_ADMIN for the namespaces)";
  } else {
    r.reason = "kernel has the " + kind + " qdisc; applied on the veth between the rig's and the target's namespaces";
  }
  return cache[kind] = r;
}

// The shared life of a root qdisc on one or both ends of the run's veth: save what was
// there, install, read back, count what passed through it, restore.
class qdisc_injector : public injector {
 public:
  explicit qdisc_injector(const option_values& v) : opts_(v), sides_(sides_of(v.str("direction"))) {}

  probe_result probe(const run_context& ctx) override {
    if (!ctx.target_started)
      return {false, "the " + kind() +
                         " injector works on the veth between a target rig starts in a network namespace and the "
                         "workloads; the " + ctx.target_kind + " target is already running outside it: use a builtin "
                         "or command target, or kind = \"proxy\""};
    return host_probe();
  }

  void apply(run_context& ctx) override {
    if (!ctx.net) throw std::logic_error(kind() + " injector applied without the run's network namespaces");
    for (const auto side : sides_) {
      site s;
      s.side = side;
      s.ifname = ctx.net->interface(side);
      s.sk = ctx.net->route(side);
      s.ifindex = link_index(s.sk.get(), s.ifname);
      s.saved = saved_root_qdisc::save(s.sk.get(), s.ifindex);
      sites_.push_back(std::move(s));  // before installing: a failed install is still restored
      site& in = sites_.back();
      install(in.sk.get(), in.ifindex);
      in.t0_ns = mono_ns();
      if (auto q = root_qdisc(in.sk.get(), in.ifindex)) in.at_apply = *q;
    }
  }

  verification verify(run_context&) override {
    verification v;
    v.ok = !sites_.empty();
    for (auto& s : sites_) {
      const auto q = root_qdisc(s.sk.get(), s.ifindex);
      std::string text;
      bool ok = false;
      if (!q) {
        text = "no root qdisc read back";
      } else if (q->kind != kind() || q->handle != rig_handle) {
        text = fmt::format("root qdisc read back is {} {:x}:, not rig's {}", q->kind, q->handle >> 16, kind());
      } else {
        const auto diffs = readback_differences(*q);
        ok = diffs.empty();
        text = ok ? fmt::format("{} read back from the kernel", readback_text(*q))
                  : fmt::format("kernel differs: {}", fmt::join(diffs, "; "));
      }
      v.ok = v.ok && ok;
      v.text += fmt::format("{}{} on {} ({}): {}", v.text.empty() ? "" : "; ", kind(), s.ifname, flow_of(s.side), text);
      v.measured[s.ifname] = {{"qdisc", q ? q->kind : ""}, {"prior_qdisc", s.saved.describe()}};
    }
    return v;
  }

  nlohmann::json measure(run_context&) override {
    nlohmann::json m = nlohmann::json::object();
    std::string summary;
    for (auto& s : sites_) {
      const auto q = root_qdisc(s.sk.get(), s.ifindex);
      if (!q || q->kind != kind()) continue;
      const double secs = double(mono_ns() - s.t0_ns) / 1e9;
      const uint64_t bytes = q->bytes - std::min(q->bytes, s.at_apply.bytes);
      nlohmann::json j = {{"seconds", secs},
                          {"packets", q->packets - std::min(q->packets, s.at_apply.packets)},
                          {"bytes", bytes},
                          {"throughput_bytes_s", secs > 0 ? double(bytes) / secs : 0.0},
                          {"drops", q->drops - std::min(q->drops, s.at_apply.drops)},
                          {"overlimits", q->overlimits - std::min(q->overlimits, s.at_apply.overlimits)}};
      add_measured(j);
      summary += fmt::format("{}{}: {}", summary.empty() ? "" : "; ", s.ifname, summarize(j));
      m[s.ifname] = j;
    }
    if (!summary.empty()) m["summary"] = summary;
    return m;
  }

  undo_result revert(run_context&) noexcept override {
    undo_result u;
    for (auto it = sites_.rbegin(); it != sites_.rend(); ++it) {
      try {
        drain(it->sk.get(), it->ifindex);
      } catch (const std::exception& e) {
        std::cerr << "rig: could not drain " << kind() << " on " << it->ifname << " before removing it: " << e.what()
                  << "\n";
      }
      std::string text;
      try {
        it->saved.restore(it->sk.get());
        const std::string now = it->saved.differs_now(it->sk.get());
        u.ok = u.ok && now.empty();
        text = now.empty() ? fmt::format("{}: root qdisc back to {} (read back)", it->ifname, it->saved.describe())
                           : fmt::format("{}: root qdisc reads back {}, not {}", it->ifname, now, it->saved.describe());
      } catch (const std::exception& e) {
        u.ok = false;
        text = fmt::format("{}: root qdisc not put back to {}: {}", it->ifname, it->saved.describe(), e.what());
      }
      u.text += (u.text.empty() ? "" : "; ") + text;
    }
    sites_.clear();
    return u;
  }

  nlohmann::json params() const override { return opts_.to_json(); }

 protected:
  virtual std::string kind() const = 0;
  virtual probe_result host_probe() const = 0;
  virtual void install(nl_sock* sk, int ifindex) = 0;
  virtual std::vector<std::string> readback_differences(const qdisc_dump& q) const = 0;
  virtual std::string readback_text(const qdisc_dump& q) const = 0;
  virtual void add_measured(nlohmann::json&) const {}
  virtual std::string summarize(const nlohmann::json& j) const {
    return fmt::format("{} packets ({}) in {:.1f}s, {} dropped", j["packets"].get<uint64_t>(),
                       format_bytes(j["bytes"].get<double>()), j["seconds"].get<double>(), j["drops"].get<uint64_t>());
  }
  // Lets packets still held in the qdisc leave before it is deleted (deleting drops them,
  // and the connections would then stall on TCP retransmission timeouts in the next phase).
  virtual void drain(nl_sock*, int) {}
  // Waits until the root qdisc holds no packets, at most timeout_ns.
  static void wait_empty(nl_sock* sk, int ifindex, int64_t timeout_ns) {
    const int64_t deadline = mono_ns() + timeout_ns;
    for (;;) {
      const auto q = root_qdisc(sk, ifindex);
      if (!q || q->qlen == 0 || mono_ns() > deadline) return;
      ::usleep(2000);
    }
  }

  option_values opts_;

 private:
  struct site {
    veth_network::side side;
    std::string ifname;
    nl_socket sk;
    int ifindex = 0;
    saved_root_qdisc saved;
    qdisc_dump at_apply;
    int64_t t0_ns = 0;
  };
  std::vector<veth_network::side> sides_;
  std::vector<site> sites_;
};

const std::string netem_missing =
    "this kernel has no netem qdisc (sch_netem); use kind = \"proxy\" for delay and loss at the TCP level, or load "
    "sch_netem";

class netem_injector final : public qdisc_injector {
 public:
  explicit netem_injector(const option_values& v)
      : qdisc_injector(v), p_(netem_params::from(v)), options_(p_.options()),
        table_entries_(netem_distribution(p_.distribution).size()) {}
  std::string mechanism() const override {
    return "netem root qdisc through libnl-route on the run's veth (" + opts_.str("direction") + ")";
  }

 protected:
  std::string kind() const override { return "netem"; }
  probe_result host_probe() const override { return probe_netem_host({}); }
  void install(nl_sock* sk, int ifindex) override { replace_root_qdisc(sk, ifindex, rig_handle, "netem", options_); }
  std::vector<std::string> readback_differences(const qdisc_dump& q) const override {
    return p_.differences(netem_params::parse(q.options));
  }
  void drain(nl_sock* sk, int ifindex) override {
    // New packets pass at once; those already queued leave at their time.
    netem_params pass;
    pass.limit = p_.limit;
    replace_root_qdisc(sk, ifindex, rig_handle, "netem", pass.options());
    const int64_t longest = p_.delay_ns + p_.jitter_ns;
    wait_empty(sk, ifindex, std::min<int64_t>(2 * longest + 100 * ns_per_ms, 5 * ns_per_s));
  }
  std::string readback_text(const qdisc_dump& q) const override {
    std::string t = netem_params::parse(q.options).str();
    if (p_.distribution != "uniform")
      t += fmt::format(" (distribution {} sent as a {}-entry table; the kernel does not report tables back)",
                       p_.distribution, table_entries_);
    return t;
  }

 private:
  netem_params p_;
  std::vector<uint8_t> options_;  // encoded once: the distribution table takes ~400k erf() to generate
  size_t table_entries_;
};

class rate_injector final : public qdisc_injector {
 public:
  explicit rate_injector(const option_values& v)
      : qdisc_injector(v),
        rate_(uint64_t(std::llround(v.per_second("rate")))),
        burst_(v.is_set("burst") ? v.bytes("burst") : std::max<uint64_t>(16 * 1024, rate_ / 100)),
        latency_ns_(v.duration_ns("latency")) {}
  std::string mechanism() const override {
    return "tbf root qdisc through libnl-route on the run's veth (" + opts_.str("direction") + ")";
  }

 protected:
  std::string kind() const override { return "tbf"; }
  probe_result host_probe() const override { return probe_rate_host({}); }
  void install(nl_sock* sk, int ifindex) override {
    std::unique_ptr<rtnl_qdisc, void (*)(rtnl_qdisc*)> q(rtnl_qdisc_alloc(), rtnl_qdisc_put);
    if (!q) throw std::runtime_error("netlink: out of memory");
    rtnl_tc_set_ifindex(TC_CAST(q.get()), ifindex);
    rtnl_tc_set_parent(TC_CAST(q.get()), TC_H_ROOT);
    rtnl_tc_set_handle(TC_CAST(q.get()), rig_handle);
    check_nl(rtnl_tc_set_kind(TC_CAST(q.get()), "tbf"), "libnl: tbf");
    rtnl_qdisc_tbf_set_rate(q.get(), int(rate_), int(burst_), 0);
    check_nl(rtnl_qdisc_tbf_set_limit_by_latency(q.get(), int(latency_ns_ / 1000)), "libnl: tbf limit");
    limit_ = uint32_t(rtnl_qdisc_tbf_get_limit(q.get()));
    replace_root_qdisc(sk, q.get());
  }
  struct readback {
    uint64_t rate = 0;
    uint32_t limit = 0;
    double burst = 0;
  };
  static readback parse(const qdisc_dump& q) {
    readback r;
    for (const auto& a : parse_attrs(q.options, 0)) {
      if (a.type == TCA_TBF_PARMS) {
        const auto o = read_as<tc_tbf_qopt>(a);
        r.rate = o.rate.rate;
        r.limit = o.limit;
        r.burst = double(uint64_t(o.buffer) << psched_shift) * 1e-9;  // seconds of tokens, as bytes below
      }
      if (a.type == TCA_TBF_RATE64) r.rate = read_as<uint64_t>(a);
    }
    r.burst *= double(r.rate);
    return r;
  }
  std::vector<std::string> readback_differences(const qdisc_dump& q) const override {
    const auto r = parse(q);
    std::vector<std::string> d;
    if (r.rate != rate_) d.push_back(fmt::format("rate {} B/s read back as {} B/s", rate_, r.rate));
    if (r.limit != limit_) d.push_back(fmt::format("limit {} B read back as {} B", limit_, r.limit));
    if (std::abs(r.burst - double(burst_)) > 0.01 * double(burst_) + 64)
      d.push_back(fmt::format("burst {} B read back as {:.0f} B", burst_, r.burst));
    return d;
  }
  std::string readback_text(const qdisc_dump& q) const override {
    const auto r = parse(q);
    return fmt::format("rate {}/s ({} B/s) burst {} limit {}", format_bytes(double(r.rate)), r.rate,
                       format_bytes(r.burst), format_bytes(r.limit));
  }
  std::string summarize(const nlohmann::json& j) const override {
    return fmt::format("{}/s on the wire, {:.3f}x the cap; {} packets dropped, {} held back",
                       format_bytes(j["throughput_bytes_s"].get<double>()), j["of_cap"].get<double>(),
                       j["drops"].get<uint64_t>(), j["overlimits"].get<uint64_t>());
  }
  void add_measured(nlohmann::json& j) const override {
    j["cap_bytes_s"] = rate_;
    j["of_cap"] = rate_ ? j["throughput_bytes_s"].get<double>() / double(rate_) : 0.0;
  }

 private:
  uint64_t rate_, burst_;
  int64_t latency_ns_;
  uint32_t limit_ = 0;
};

}  // namespace

netem_params netem_params::from(const option_values& v) {
  netem_params p;
  p.delay_ns = v.duration_ns("delay");
  p.jitter_ns = v.duration_ns("jitter");
  p.delay_correlation = probability(v.fraction("correlation"));
  p.distribution = v.str("distribution");
  p.loss = probability(v.fraction("loss"));
  p.loss_correlation = probability(v.fraction("loss_correlation"));
  p.duplicate = probability(v.fraction("duplicate"));
  p.reorder = probability(v.fraction("reorder"));
  p.corrupt = probability(v.fraction("corrupt"));
  if (v.has("rate")) p.rate_bytes_s = uint64_t(std::llround(v.per_second("rate")));
  p.limit = uint32_t(v.integer("limit"));
  p.gap = p.reorder ? 1 : 0;  // as tc: reorder acts on every packet after the first delayed one
  return p;
}

std::vector<uint8_t> netem_params::options() const {
  tc_netem_qopt q{};
  q.latency = uint32_t(std::min<int64_t>(delay_ns >> psched_shift, UINT32_MAX));
  q.jitter = uint32_t(std::min<int64_t>(jitter_ns >> psched_shift, UINT32_MAX));
  q.limit = limit;
  q.loss = loss;
  q.gap = gap;
  q.duplicate = duplicate;
  attr_writer w;
  w.raw(&q, sizeof q);
  w.attr(TCA_NETEM_CORR, tc_netem_corr{delay_correlation, loss_correlation, 0});
  w.attr(TCA_NETEM_REORDER, tc_netem_reorder{reorder, 0});
  w.attr(TCA_NETEM_CORRUPT, tc_netem_corrupt{corrupt, 0});
  if (const auto table = netem_distribution(distribution); !table.empty())
    w.attr(TCA_NETEM_DELAY_DIST, table.data(), table.size() * sizeof(int16_t));
  if (rate_bytes_s) {
    tc_netem_rate r{};
    r.rate = uint32_t(std::min<uint64_t>(rate_bytes_s, UINT32_MAX));
    w.attr(TCA_NETEM_RATE, r);
    if (rate_bytes_s >= (1ull << 32)) w.attr(TCA_NETEM_RATE64, uint64_t(rate_bytes_s));
  }
  w.attr(TCA_NETEM_LATENCY64, int64_t(delay_ns));
  w.attr(TCA_NETEM_JITTER64, int64_t(jitter_ns));
  return w.bytes;
}

netem_params netem_params::parse(const std::vector<uint8_t>& options) {
  netem_params p;
  p.distribution.clear();
  tc_netem_qopt q{};
  std::memcpy(&q, options.data(), std::min(sizeof q, options.size()));
  p.delay_ns = int64_t(q.latency) << psched_shift;
  p.jitter_ns = int64_t(q.jitter) << psched_shift;
  p.limit = q.limit;
  p.loss = q.loss;
  p.gap = q.gap;
  p.duplicate = q.duplicate;
  for (const auto& a : parse_attrs(options, sizeof q)) {
    switch (a.type) {
      case TCA_NETEM_CORR: {
        const auto c = read_as<tc_netem_corr>(a);
        p.delay_correlation = c.delay_corr;
        p.loss_correlation = c.loss_corr;
        break;
      }
      case TCA_NETEM_REORDER: p.reorder = read_as<tc_netem_reorder>(a).probability; break;
      case TCA_NETEM_CORRUPT: p.corrupt = read_as<tc_netem_corrupt>(a).probability; break;
      case TCA_NETEM_RATE: p.rate_bytes_s = read_as<tc_netem_rate>(a).rate; break;
      case TCA_NETEM_RATE64: p.rate_bytes_s = read_as<uint64_t>(a); break;
      case TCA_NETEM_LATENCY64: p.delay_ns = read_as<int64_t>(a); break;
      case TCA_NETEM_JITTER64: p.jitter_ns = read_as<int64_t>(a); break;
      default: break;
    }
  }
  return p;
}

std::string netem_params::str() const {
  std::string s = fmt::format("delay {}", duration(delay_ns));
  if (jitter_ns) s += fmt::format(" jitter {}", duration(jitter_ns));
  if (delay_correlation) s += fmt::format(" correlation {}", percent(delay_correlation));
  if (!distribution.empty() && distribution != "uniform") s += " distribution " + distribution;
  if (loss) s += fmt::format(" loss {}", percent(loss));
  if (loss_correlation) s += fmt::format(" loss_correlation {}", percent(loss_correlation));
  if (duplicate) s += fmt::format(" duplicate {}", percent(duplicate));
  if (reorder) s += fmt::format(" reorder {} gap {}", percent(reorder), gap);
  if (corrupt) s += fmt::format(" corrupt {}", percent(corrupt));
  if (rate_bytes_s) s += fmt::format(" rate {}/s", format_bytes(double(rate_bytes_s)));
  s += fmt::format(" limit {}", limit);
  return s;
}

std::vector<std::string> netem_params::differences(const netem_params& k) const {
  std::vector<std::string> d;
  auto dur = [&](const char* name, int64_t want, int64_t got) {
    if (want != got) d.push_back(fmt::format("{} {} read back as {}", name, duration(want), duration(got)));
  };
  auto prob = [&](const char* name, uint32_t want, uint32_t got) {
    if (want != got) d.push_back(fmt::format("{} {} read back as {}", name, percent(want), percent(got)));
  };
  dur("delay", delay_ns, k.delay_ns);
  dur("jitter", jitter_ns, k.jitter_ns);
  prob("correlation", delay_correlation, k.delay_correlation);
  prob("loss", loss, k.loss);
  prob("loss_correlation", loss_correlation, k.loss_correlation);
  prob("duplicate", duplicate, k.duplicate);
  prob("reorder", reorder, k.reorder);
  prob("corrupt", corrupt, k.corrupt);
  if (rate_bytes_s != k.rate_bytes_s)
    d.push_back(fmt::format("rate {} B/s read back as {} B/s", rate_bytes_s, k.rate_bytes_s));
  if (limit != k.limit) d.push_back(fmt::format("limit {} read back as {}", limit, k.limit));
  if (gap != k.gap) d.push_back(fmt::format("gap {} read back as {}", gap, k.gap));
  return d;
}

const option_table& netem_options() {
  static const option_table t = {
      {.name = "delay", .type = opt_type::duration, .default_text = "\"0ms\"",
       .help = "added to every packet in the chosen direction", .min = 0, .max = 3600e9},
      {.name = "jitter", .type = opt_type::duration, .default_text = "\"0ms\"",
       .help = "random variation of the delay (spread by 'distribution')", .min = 0, .max = 3600e9},
      {.name = "correlation", .type = opt_type::percent, .default_text = "\"0%\"",
       .help = "how much each packet's delay depends on the previous one's", .min = 0, .max = 1},
      {.name = "distribution", .type = opt_type::string, .default_text = "\"uniform\"",
       .help = "shape of the jitter; tables generated as tc's normal/pareto/paretonormal.dist",
       .allowed = {"uniform", "normal", "pareto", "paretonormal"}},
      {.name = "loss", .type = opt_type::percent, .default_text = "\"0%\"", .help = "packets dropped", .min = 0,
       .max = 1},
      {.name = "loss_correlation", .type = opt_type::percent, .default_text = "\"0%\"",
       .help = "how much each loss depends on the previous packet's (bursts of loss)", .min = 0, .max = 1},
      {.name = "duplicate", .type = opt_type::percent, .default_text = "\"0%\"", .help = "packets sent twice",
       .min = 0, .max = 1},
      {.name = "reorder", .type = opt_type::percent, .default_text = "\"0%\"",
       .help = "packets sent at once instead of delayed, so they overtake others (needs delay)", .min = 0, .max = 1},
      {.name = "corrupt", .type = opt_type::percent, .default_text = "\"0%\"",
       .help = "packets with one bit flipped", .min = 0, .max = 1},
      {.name = "rate", .type = opt_type::byte_rate, .default_text = "",
       .help = "netem's own link rate (packets leave no faster than this)", .min = 1, .max = 1e15},
      {.name = "limit", .type = opt_type::integer, .default_text = "1000",
       .help = "packets netem may hold; more are dropped", .min = 1, .max = 1e9},
      direction_option,
  };
  return t;
}

const option_table& rate_options() {
  static const option_table t = {
      {.name = "rate", .type = opt_type::byte_rate, .default_text = "",
       .help = "the bandwidth cap, e.g. \"1MB/s\" or \"8Mbit/s\" (counted on whole frames, headers included)",
       .min = 1000, .max = 2147483647, .required = true},
      {.name = "burst", .type = opt_type::size, .default_text = "",
       .help = "bytes that may leave at once after an idle spell; default the larger of 16KiB and 10 ms of rate",
       .min = 2048, .max = 1e9},
      {.name = "latency", .type = opt_type::duration, .default_text = "\"50ms\"",
       .help = "longest a packet may wait in the queue (sets tbf's limit); later ones are dropped", .min = 1e6,
       .max = 60e9},
      direction_option,
  };
  return t;
}

void check_netem(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  const netem_params p = netem_params::from(v);
  if (p.reorder && p.delay_ns == 0)
    diags.add(v.where("reorder"), "'reorder' in " + ctx.section + " needs 'delay': netem reorders by letting some packets skip it");
  if (v.str("distribution") != "uniform" && p.jitter_ns == 0)
    diags.add(v.where("distribution"), "'distribution' in " + ctx.section + " shapes the jitter: set 'jitter' too");
  if (p.jitter_ns > p.delay_ns && p.delay_ns > 0)
    diags.add(v.where("jitter"), "'jitter' in " + ctx.section + " is larger than 'delay': packets would be sent before their time");
  if (p.loss_correlation && !p.loss)
    diags.add(v.where("loss_correlation"), "'loss_correlation' in " + ctx.section + " has no effect without 'loss'");
  if (p.delay_correlation && !p.jitter_ns)
    diags.add(v.where("correlation"), "'correlation' in " + ctx.section + " correlates the jitter: set 'jitter' too");
  if (!p.delay_ns && !p.jitter_ns && !p.loss && !p.duplicate && !p.corrupt && !p.rate_bytes_s)
    diags.add(ctx.table_pos, ctx.section + " changes nothing: set at least one of delay, loss, duplicate, corrupt, rate");
}

void check_rate(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  if (v.is_set("burst") && v.has("rate") && double(v.bytes("burst")) < v.per_second("rate") / 1000)
    diags.add(v.where("burst"), "'burst' in " + ctx.section + " is under 1 ms of 'rate': tbf would stall between ticks");
}

std::unique_ptr<injector> make_netem(const option_values& v) { return std::make_unique<netem_injector>(v); }
std::unique_ptr<injector> make_rate(const option_values& v) { return std::make_unique<rate_injector>(v); }

probe_result probe_netem_host(const host_context&) {
  netem_params p;
  p.delay_ns = 1'000'000;
  return kernel_qdisc_probe("netem", p.options(), netem_missing);
}

probe_result probe_rate_host(const host_context&) {
  tc_tbf_qopt q{};
  q.rate.rate = 1'000'000;
  q.limit = 50'000;
  q.buffer = uint32_t(10'000'000 >> psched_shift);  // 10 ms of tokens
  attr_writer w;
  w.attr(TCA_TBF_PARMS, q);
  return kernel_qdisc_probe("tbf", w.bytes, "this kernel has no tbf qdisc (sch_tbf); load sch_tbf");
}

}  // namespace rig
