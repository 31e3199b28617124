#include "core/netlink.hpp"

#include <linux/gen_stats.h>
#include <linux/if.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/tc.h>
#include <netlink/socket.h>

#include <cstring>
#include <fmt/format.h>
#include <stdexcept>

#include "core/netns.hpp"

namespace rig {

void nl_sock_free::operator()(nl_sock* s) const noexcept { nl_socket_free(s); }

void check_nl(int rc, const std::string& what) {
  if (rc < 0) throw std::runtime_error(what + ": " + nl_geterror(rc));
}

nl_socket route_socket(int ns_fd) {
  nl_socket sk;
  run_in_netns(ns_fd, [&] {
    sk.reset(nl_socket_alloc());
    if (!sk) throw std::runtime_error("netlink: out of memory");
    check_nl(nl_connect(sk.get(), NETLINK_ROUTE), "netlink: connect a NETLINK_ROUTE socket");
  });
  return sk;
}

namespace {

struct link_ref {
  rtnl_link* p = nullptr;
  ~link_ref() {
    if (p) rtnl_link_put(p);
  }
};

link_ref get_link(nl_sock* sk, const std::string& name) {
  link_ref l;
  check_nl(rtnl_link_get_kernel(sk, 0, name.c_str(), &l.p), "netlink: find link " + name);
  return l;
}

// Sends a request and waits for the kernel's acknowledgement.
void send_and_ack(nl_sock* sk, nl_msg* m, const std::string& what) {
  const int rc = nl_send_auto(sk, m);
  nlmsg_free(m);
  check_nl(rc, what);
  check_nl(nl_wait_for_ack(sk), what);
}

nl_msg* qdisc_msg(int type, int flags, int ifindex, uint32_t handle) {
  nl_msg* m = nlmsg_alloc_simple(type, flags);
  if (!m) throw std::runtime_error("netlink: out of memory");
  tcmsg t{};
  t.tcm_family = AF_UNSPEC;
  t.tcm_ifindex = ifindex;
  t.tcm_handle = handle;
  t.tcm_parent = TC_H_ROOT;
  if (nlmsg_append(m, &t, sizeof t, NLMSG_ALIGNTO) < 0) {
    nlmsg_free(m);
    throw std::runtime_error("netlink: message too large");
  }
  return m;
}

int collect_qdisc(nl_msg* msg, void* arg) {
  auto* out = static_cast<std::vector<qdisc_dump>*>(arg);
  nlmsghdr* h = nlmsg_hdr(msg);
  if (h->nlmsg_type != RTM_NEWQDISC) return NL_OK;
  nlattr* tb[TCA_MAX + 1];
  if (nlmsg_parse(h, sizeof(tcmsg), tb, TCA_MAX, nullptr) < 0) return NL_OK;
  const auto* t = static_cast<const tcmsg*>(nlmsg_data(h));
  qdisc_dump q;
  q.ifindex = t->tcm_ifindex;
  q.handle = t->tcm_handle;
  q.parent = t->tcm_parent;
  if (tb[TCA_KIND]) q.kind = nla_get_string(tb[TCA_KIND]);
  if (tb[TCA_OPTIONS]) {
    const auto* p = static_cast<const uint8_t*>(nla_data(tb[TCA_OPTIONS]));
    q.options.assign(p, p + nla_len(tb[TCA_OPTIONS]));
  }
  if (tb[TCA_STATS2]) {
    nlattr* st[TCA_STATS_MAX + 1];
    if (nla_parse_nested(st, TCA_STATS_MAX, tb[TCA_STATS2], nullptr) == 0) {
      if (st[TCA_STATS_BASIC]) {
        gnet_stats_basic b{};
        std::memcpy(&b, nla_data(st[TCA_STATS_BASIC]), std::min<size_t>(sizeof b, nla_len(st[TCA_STATS_BASIC])));
        q.bytes = b.bytes;
        q.packets = b.packets;
      }
      if (st[TCA_STATS_QUEUE]) {
        gnet_stats_queue s{};
        std::memcpy(&s, nla_data(st[TCA_STATS_QUEUE]), std::min<size_t>(sizeof s, nla_len(st[TCA_STATS_QUEUE])));
        q.drops = s.drops;
        q.overlimits = s.overlimits;
        q.backlog = s.backlog;
        q.qlen = s.qlen;
      }
    }
  }
  out->push_back(std::move(q));
  return NL_OK;
}

}  // namespace

int link_index(nl_sock* sk, const std::string& name) { return rtnl_link_get_ifindex(get_link(sk, name).p); }

bool link_exists(nl_sock* sk, const std::string& name) {
  link_ref l;
  return rtnl_link_get_kernel(sk, 0, name.c_str(), &l.p) == 0;
}

void set_link_up(nl_sock* sk, const std::string& name) {
  link_ref l = get_link(sk, name);
  link_ref change{rtnl_link_alloc()};
  rtnl_link_set_flags(change.p, IFF_UP);
  check_nl(rtnl_link_change(sk, l.p, change.p, 0), "netlink: set link " + name + " up");
}

void create_veth(nl_sock* sk, const std::string& name, const std::string& peer_name, int peer_ns_fd) {
  link_ref l{rtnl_link_veth_alloc()};
  if (!l.p) throw std::runtime_error("netlink: out of memory");
  rtnl_link_set_name(l.p, name.c_str());
  link_ref peer{rtnl_link_veth_get_peer(l.p)};
  rtnl_link_set_name(peer.p, peer_name.c_str());
  if (peer_ns_fd >= 0) rtnl_link_set_ns_fd(peer.p, peer_ns_fd);
  check_nl(rtnl_link_add(sk, l.p, NLM_F_CREATE | NLM_F_EXCL),
           fmt::format("netlink: create veth pair {} / {}", name, peer_name));
}

void add_address(nl_sock* sk, const std::string& link, const std::string& cidr) {
  const int ifindex = link_index(sk, link);
  nl_addr* local = nullptr;
  check_nl(nl_addr_parse(cidr.c_str(), AF_INET, &local), "netlink: parse address " + cidr);
  rtnl_addr* a = rtnl_addr_alloc();
  rtnl_addr_set_ifindex(a, ifindex);
  const int rc = rtnl_addr_set_local(a, local);
  nl_addr_put(local);
  const int rc2 = rc < 0 ? rc : rtnl_addr_add(sk, a, 0);
  rtnl_addr_put(a);
  check_nl(rc2, fmt::format("netlink: add address {} to {}", cidr, link));
}

link_counters read_link_counters(nl_sock* sk, const std::string& name) {
  link_ref l = get_link(sk, name);
  return {rtnl_link_get_stat(l.p, RTNL_LINK_TX_BYTES), rtnl_link_get_stat(l.p, RTNL_LINK_TX_PACKETS),
          rtnl_link_get_stat(l.p, RTNL_LINK_RX_BYTES), rtnl_link_get_stat(l.p, RTNL_LINK_RX_PACKETS),
          rtnl_link_get_stat(l.p, RTNL_LINK_TX_DROPPED)};
}

std::vector<qdisc_dump> dump_qdiscs(nl_sock* sk) {
  tcmsg t{};
  t.tcm_family = AF_UNSPEC;
  check_nl(nl_send_simple(sk, RTM_GETQDISC, NLM_F_DUMP, &t, sizeof t), "netlink: dump qdiscs");
  std::vector<qdisc_dump> out;
  nl_cb* own = nl_socket_get_cb(sk);  // takes a reference, given back at once (LSan found it kept)
  nl_cb* cb = nl_cb_clone(own);
  nl_cb_put(own);
  if (!cb) throw std::runtime_error("netlink: out of memory");
  nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, collect_qdisc, &out);
  const int rc = nl_recvmsgs(sk, cb);
  nl_cb_put(cb);
  check_nl(rc, "netlink: dump qdiscs");
  return out;
}

std::optional<qdisc_dump> root_qdisc(nl_sock* sk, int ifindex) {
  for (auto& q : dump_qdiscs(sk))
    if (q.ifindex == ifindex && q.parent == TC_H_ROOT) return std::move(q);
  return std::nullopt;
}

void replace_root_qdisc(nl_sock* sk, int ifindex, uint32_t handle, const std::string& kind,
                        const std::vector<uint8_t>& options) {
  nl_msg* m = qdisc_msg(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE, ifindex, handle);
  if (nla_put_string(m, TCA_KIND, kind.c_str()) < 0 ||
      (!options.empty() && nla_put(m, TCA_OPTIONS, int(options.size()), options.data()) < 0)) {
    nlmsg_free(m);
    throw std::runtime_error("netlink: qdisc message too large");
  }
  send_and_ack(sk, m, fmt::format("netlink: set a {} root qdisc on interface {}", kind, ifindex));
}

void replace_root_qdisc(nl_sock* sk, rtnl_qdisc* q) {
  check_nl(rtnl_qdisc_add(sk, q, NLM_F_CREATE | NLM_F_REPLACE),
           fmt::format("netlink: set a {} root qdisc on interface {}", rtnl_tc_get_kind(TC_CAST(q)),
                       rtnl_tc_get_ifindex(TC_CAST(q))));
}

void delete_root_qdisc(nl_sock* sk, int ifindex) {
  send_and_ack(sk, qdisc_msg(RTM_DELQDISC, 0, ifindex, 0),
               fmt::format("netlink: delete the root qdisc of interface {}", ifindex));
}

saved_root_qdisc saved_root_qdisc::save(nl_sock* sk, int ifindex) {
  saved_root_qdisc s;
  s.ifindex_ = ifindex;
  s.prior_ = root_qdisc(sk, ifindex);
  return s;
}

void saved_root_qdisc::restore(nl_sock* sk) const {
  if (!prior_ || prior_->handle == 0) {
    // The kernel's default (noqueue, pfifo_fast, mq): deleting rig's root qdisc brings it back.
    const auto now = root_qdisc(sk, ifindex_);
    if (now && now->handle != 0) delete_root_qdisc(sk, ifindex_);
    return;
  }
  replace_root_qdisc(sk, ifindex_, prior_->handle, prior_->kind, prior_->options);
}

std::string saved_root_qdisc::differs_now(nl_sock* sk) const {
  const auto now = root_qdisc(sk, ifindex_);
  const auto shown = [](const std::optional<qdisc_dump>& q) {
    return !q ? std::string("none") : q->handle == 0 ? q->kind + " (kernel default)"
                                                     : fmt::format("{} {:x}:", q->kind, q->handle >> 16);
  };
  if (!prior_ || prior_->handle == 0) return now && now->handle != 0 ? shown(now) : "";
  return now && now->kind == prior_->kind && now->handle == prior_->handle ? "" : shown(now);
}

std::string saved_root_qdisc::describe() const {
  if (!prior_) return "none";
  if (prior_->handle == 0) return prior_->kind + " (kernel default)";
  return fmt::format("{} {:x}:", prior_->kind, prior_->handle >> 16);
}

void attr_writer::raw(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  bytes.insert(bytes.end(), b, b + n);
  bytes.resize((bytes.size() + 3) & ~size_t(3), 0);
}

void attr_writer::attr(uint16_t type, const void* p, size_t n) {
  nlattr h{uint16_t(NLA_HDRLEN + n), type};
  raw(&h, sizeof h);
  raw(p, n);
}

std::vector<attr_view> parse_attrs(const std::vector<uint8_t>& bytes, size_t skip) {
  std::vector<attr_view> out;
  size_t at = (skip + 3) & ~size_t(3);
  while (at + NLA_HDRLEN <= bytes.size()) {
    nlattr h;
    std::memcpy(&h, bytes.data() + at, sizeof h);
    if (h.nla_len < NLA_HDRLEN || at + h.nla_len > bytes.size()) break;
    out.push_back({uint16_t(h.nla_type & NLA_TYPE_MASK), bytes.data() + at + NLA_HDRLEN, size_t(h.nla_len - NLA_HDRLEN)});
    at += (h.nla_len + 3u) & ~3u;
  }
  return out;
}

bool kernel_has_qdisc(const std::string& kind, const std::vector<uint8_t>& options, std::string* why) {
  try {
    const netns scratch = netns::create();
    nl_socket sk = route_socket(scratch.fd());
    replace_root_qdisc(sk.get(), link_index(sk.get(), "lo"), 0x10000, kind, options);
    return true;
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return false;
  }
}

}  // namespace rig
