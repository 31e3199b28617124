#include "core/proc_events.hpp"

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/journal.hpp"
#include "core/proc.hpp"

namespace rig {

std::optional<std::string> proc_events::comm_of(pid_t pid) {
  auto c = read_text_file(fmt::format("/proc/{}/comm", pid));
  if (c && !c->empty() && c->back() == '\n') c->pop_back();
  return c;
}

namespace {

// Asks the kernel to start (or stop) sending process events to this socket.
bool subscribe(int fd, bool on) {
  alignas(nlmsghdr) char buf[NLMSG_SPACE(sizeof(cn_msg) + sizeof(proc_cn_mcast_op))] = {};
  auto* nl = reinterpret_cast<nlmsghdr*>(buf);
  nl->nlmsg_len = NLMSG_LENGTH(sizeof(cn_msg) + sizeof(proc_cn_mcast_op));
  nl->nlmsg_type = NLMSG_DONE;
  nl->nlmsg_pid = 0;
  auto* cn = static_cast<cn_msg*>(NLMSG_DATA(nl));
  cn->id.idx = CN_IDX_PROC;
  cn->id.val = CN_VAL_PROC;
  cn->len = sizeof(proc_cn_mcast_op);
  const proc_cn_mcast_op op = on ? PROC_CN_MCAST_LISTEN : PROC_CN_MCAST_IGNORE;
  std::memcpy(cn->data, &op, sizeof op);
  return ::send(fd, buf, nl->nlmsg_len, 0) == ssize_t(nl->nlmsg_len);
}

}  // namespace

std::unique_ptr<proc_events> proc_events::open(std::string* why) {
  const auto fail = [&](const std::string& text) -> std::unique_ptr<proc_events> {
    if (why) *why = text;
    return nullptr;
  };
  unique_fd fd(::socket(PF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR));
  if (!fd) return fail(fmt::format("no netlink connector socket: {}", std::strerror(errno)));
  sockaddr_nl sa{};
  sa.nl_family = AF_NETLINK;
  sa.nl_groups = CN_IDX_PROC;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
    return fail(fmt::format("the kernel's process events need root (CAP_NET_ADMIN): bind: {}", std::strerror(errno)));
  // Room for a burst of forks and exits between two reads (root may exceed rmem_max).
  const int bytes = 4 << 20;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  if (!subscribe(fd.get(), true))
    return fail(fmt::format("the kernel refused process events: {}", std::strerror(errno)));
  std::unique_ptr<proc_events> ev(new proc_events(std::move(fd)));
  // Proven, not assumed: a child of rig's that exits must be seen exiting (the kernel sends the
  // events only in the host's first network namespace, and only with CONFIG_PROC_EVENTS).
  int gate[2];
  if (::pipe2(gate, O_CLOEXEC) != 0) return fail(fmt::format("pipe: {}", std::strerror(errno)));
  const pid_t child = ::fork();
  if (child == 0) {
    char c;
    ::close(gate[1]);
    while (::read(gate[0], &c, 1) < 0 && errno == EINTR) {
    }
    ::_exit(42);
  }
  ::close(gate[0]);
  if (child < 0) {
    ::close(gate[1]);
    return fail(fmt::format("fork: {}", std::strerror(errno)));
  }
  ev->follow({child});
  ::close(gate[1]);  // now it exits
  while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
  }
  for (int i = 0; i < 200; ++i) {
    for (const auto& e : ev->take_exits())
      if (e.pid == child && WIFEXITED(e.status) && WEXITSTATUS(e.status) == 42) return ev;
    ::usleep(5'000);
  }
  return fail("no process event arrived for a child rig started and ended (rig may run in a network namespace other "
              "than the host's first, where the kernel does not send them)");
}

proc_events::proc_events(unique_fd fd) : fd_(std::move(fd)), wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  thread_ = std::thread([this] { read_loop(); });
}

proc_events::~proc_events() {
  const uint64_t one = 1;
  if (::write(wake_.get(), &one, sizeof one) < 0) {
    // Cannot happen with a fresh eventfd; the loop would then end at its next event.
  }
  if (thread_.joinable()) thread_.join();
  subscribe(fd_.get(), false);
}

void proc_events::read_loop() {
  alignas(nlmsghdr) char buf[16384];
  for (;;) {
    pollfd p[2] = {{fd_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents) return;
    const ssize_t n = ::recv(fd_.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == ENOBUFS) lost_.fetch_add(1, std::memory_order_relaxed);  // the kernel dropped some
      if (errno == EAGAIN || errno == EINTR || errno == ENOBUFS) continue;
      return;
    }
    int left = int(n);
    for (auto* nl = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(nl, left); nl = NLMSG_NEXT(nl, left)) {
      if (nl->nlmsg_type == NLMSG_ERROR || nl->nlmsg_type == NLMSG_NOOP) continue;
      const auto* cn = static_cast<const cn_msg*>(NLMSG_DATA(nl));
      if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC || cn->len < sizeof(proc_event)) continue;
      handle(cn->data);
    }
  }
}

void proc_events::handle(const void* data) {
  proc_event ev;
  std::memcpy(&ev, data, sizeof ev);
  std::lock_guard lk(mu_);
  switch (ev.what) {
    case proc_event::PROC_EVENT_FORK: {
      const auto& f = ev.event_data.fork;
      if (f.child_pid != f.child_tgid) break;  // a thread
      if (auto it = followed_.find(f.parent_tgid); it != followed_.end()) {
        const bool in_tree = it->second.in_tree || f.child_tgid == root_;
        followed_[f.child_tgid] = {it->second.comm, f.parent_tgid, process_start_time(f.child_tgid), in_tree};
      }
      break;
    }
    case proc_event::PROC_EVENT_EXEC:
    case proc_event::PROC_EVENT_COMM: {
      const pid_t tgid = ev.what == proc_event::PROC_EVENT_EXEC ? ev.event_data.exec.process_tgid
                                                                : ev.event_data.comm.process_tgid;
      if (auto it = followed_.find(tgid); it != followed_.end())
        if (auto c = comm_of(tgid)) it->second.comm = *c;  // gone already: the name it had
      break;
    }
    case proc_event::PROC_EVENT_EXIT: {
      const auto& x = ev.event_data.exit;
      if (x.process_pid != x.process_tgid) break;  // a thread
      auto it = followed_.find(x.process_tgid);
      if (it == followed_.end()) break;
      if (root_ == 0 || it->second.in_tree) exits_.push_back({x.process_tgid, int(x.exit_code), mono_ns(), it->second.comm});
      followed_.erase(it);
      break;
    }
    default:
      break;
  }
}

void proc_events::follow(const std::vector<pid_t>& pids) {
  std::lock_guard lk(mu_);
  for (pid_t p : pids)
    if (p > 0 && !followed_.count(p))
      followed_[p] = {comm_of(p).value_or("?"), 0, process_start_time(p), root_ != 0};  // named after the root: the tree's
}

void proc_events::set_tree_root(pid_t root) {
  std::lock_guard lk(mu_);
  root_ = root;
  // What of it was read already: it, and each process whose parents lead to it (forks are
  // read in order, so a parent is always there before its child).
  bool more = true;
  while (more) {
    more = false;
    for (auto& [pid, f] : followed_) {
      if (f.in_tree) continue;
      const auto parent = followed_.find(f.parent);
      if (pid == root || (parent != followed_.end() && parent->second.in_tree)) f.in_tree = more = true;
    }
  }
}

std::vector<proc_events::tree_process> proc_events::tree() const {
  std::lock_guard lk(mu_);
  std::vector<tree_process> out;
  for (const auto& [pid, f] : followed_)
    if (f.in_tree) out.push_back({pid, f.start, f.comm});
  return out;
}

bool proc_events::followed(pid_t pid) const {
  std::lock_guard lk(mu_);
  return followed_.count(pid) > 0;
}

std::optional<proc_events::exit_event> proc_events::take_exit_of(pid_t pid) {
  std::lock_guard lk(mu_);
  const auto it = std::find_if(exits_.begin(), exits_.end(), [&](const exit_event& e) { return e.pid == pid; });
  if (it == exits_.end()) return std::nullopt;
  exit_event e = *it;
  exits_.erase(it);
  return e;
}

std::vector<proc_events::exit_event> proc_events::take_exits() {
  std::lock_guard lk(mu_);
  return std::exchange(exits_, {});
}

}  // namespace rig
