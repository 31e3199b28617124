#pragma once
// Thin RAII over libnl-route for what rig does to links and qdiscs: veth pairs, addresses,
// root qdiscs (dump, replace, delete) and link counters. Each call names what failed.
#include <linux/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct nl_sock;
struct rtnl_qdisc;

namespace rig {

struct nl_sock_free {
  void operator()(nl_sock* s) const noexcept;
};
using nl_socket = std::unique_ptr<nl_sock, nl_sock_free>;

// A NETLINK_ROUTE socket; with ns_fd >= 0 it is made inside that namespace, and every
// request on it acts there, whichever thread sends it.
nl_socket route_socket(int ns_fd = -1);

// Throws a runtime_error "what: <libnl's text>" for a negative libnl return code.
void check_nl(int rc, const std::string& what);

int link_index(nl_sock* sk, const std::string& name);  // throws when there is no such link
bool link_exists(nl_sock* sk, const std::string& name);
void set_link_up(nl_sock* sk, const std::string& name);
// Creates a veth pair: `name` in sk's namespace, `peer` moved into the namespace peer_ns_fd.
void create_veth(nl_sock* sk, const std::string& name, const std::string& peer, int peer_ns_fd);
void add_address(nl_sock* sk, const std::string& link, const std::string& cidr);  // "198.18.0.1/30"

struct link_counters {
  uint64_t tx_bytes = 0, tx_packets = 0, rx_bytes = 0, rx_packets = 0, tx_dropped = 0;
};
link_counters read_link_counters(nl_sock* sk, const std::string& name);

// A qdisc as the kernel dumps it: kind, raw TCA_OPTIONS (kind-specific, replayable) and stats.
struct qdisc_dump {
  int ifindex = 0;
  uint32_t handle = 0, parent = 0;
  std::string kind;
  std::vector<uint8_t> options;
  uint64_t bytes = 0, packets = 0;
  uint32_t drops = 0, overlimits = 0, backlog = 0, qlen = 0;
};
std::vector<qdisc_dump> dump_qdiscs(nl_sock* sk);
std::optional<qdisc_dump> root_qdisc(nl_sock* sk, int ifindex);

// Replaces the root qdisc of a link by one given as kind + raw options (what tc sends).
void replace_root_qdisc(nl_sock* sk, int ifindex, uint32_t handle, const std::string& kind,
                        const std::vector<uint8_t>& options);
// Replaces the root qdisc with one libnl built (rtnl_qdisc_tbf_*, ...); the object is used as is.
void replace_root_qdisc(nl_sock* sk, rtnl_qdisc* q);
void delete_root_qdisc(nl_sock* sk, int ifindex);

// What a link's root qdisc was before rig changed it, and how to put it back: the kernel's
// default (handle 0) comes back by deleting rig's qdisc; anything else is replayed.
class saved_root_qdisc {
 public:
  static saved_root_qdisc save(nl_sock* sk, int ifindex);
  void restore(nl_sock* sk) const;  // throws on failure
  // After restore(): empty when the root qdisc reads back as saved (kind and handle), else
  // what reads back instead.
  std::string differs_now(nl_sock* sk) const;
  std::string describe() const;      // "noqueue (kernel default)"
  const std::optional<qdisc_dump>& prior() const { return prior_; }

 private:
  int ifindex_ = 0;
  std::optional<qdisc_dump> prior_;
};

// Appends netlink attributes to a byte buffer (kind-specific TCA_OPTIONS payloads).
struct attr_writer {
  std::vector<uint8_t> bytes;
  void raw(const void* p, size_t n);  // padded to 4 bytes
  void attr(uint16_t type, const void* p, size_t n);
  template <typename T>
  void attr(uint16_t type, const T& v) {
    attr(type, &v, sizeof v);
  }
};

// Reads the attributes of a raw TCA_OPTIONS payload after a fixed header of `skip` bytes.
struct attr_view {
  uint16_t type;
  const uint8_t* data;
  size_t len;
};
std::vector<attr_view> parse_attrs(const std::vector<uint8_t>& bytes, size_t skip);

// True when the kernel knows qdisc `kind`: a probe made on "lo" in a throwaway namespace,
// so nothing on the host is touched. *why says what failed otherwise.
bool kernel_has_qdisc(const std::string& kind, const std::vector<uint8_t>& options, std::string* why);

}  // namespace rig
