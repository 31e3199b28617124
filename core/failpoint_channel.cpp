#include "core/failpoint_channel.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "core/error.hpp"
#include "core/journal.hpp"

namespace rig {

std::map<std::string, failpoint_state> parse_failpoint_stats(const std::string& text) {
  std::map<std::string, failpoint_state> out;
  std::istringstream items(text);
  std::string item;
  while (std::getline(items, item, ';')) {
    std::istringstream words(item);
    std::string name, w;
    if (!(words >> name)) continue;
    auto& s = out[name];
    while (words >> w) {
      const auto eq = w.find('=');
      if (eq == std::string::npos) continue;
      const std::string k = w.substr(0, eq), v = w.substr(eq + 1);
      try {
        if (k == "action") s.action = v;
        else if (k == "p") s.probability = std::stod(v);
        else if (k == "count") s.count = std::stoll(v);
        else if (k == "delay_ns") s.delay_ns = std::stoll(v);
        else if (k == "errno") s.error = std::stoi(v);
        else if (k == "seed") s.seed = std::stoull(v);
        else if (k == "hits") s.hits = std::stoull(v);
        else if (k == "fired") s.fired = std::stoull(v);
      } catch (const std::exception&) {
        throw std::runtime_error("failpoint stats: bad value in '" + w + "'");
      }
    }
  }
  return out;
}

failpoint_channel::failpoint_channel() {
  static std::atomic<int> seq{0};
  // In rig's state directory, which only rig's user can enter: no one else can connect.
  const unique_fd dir = open_state_dir(true);
  dir_ = state_dir();
  const std::string name = "fp-" + std::to_string(::getpid()) + "-" + std::to_string(++seq) + ".sock";
  path_ = dir_ + "/" + name;
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path_.size() >= sizeof a.sun_path)
    throw std::runtime_error("failpoint socket path too long: " + path_ + " (set RIG_STATE_DIR to a shorter directory)");
  std::memcpy(a.sun_path, path_.c_str(), path_.size() + 1);
  listener_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  throw_system_error_on(!listener_, "socket for the failpoint channel");
  const std::string line = journal_line("file", {path_});
  journal::self().record(line);
  try {
    throw_system_error_on(::bind(listener_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0,
                          "bind the failpoint channel at " + path_);
    ::fchmodat(dir.get(), name.c_str(), 0600, 0);
    throw_system_error_on(::listen(listener_.get(), 64) != 0, "listen on the failpoint channel at " + path_);
  } catch (...) {
    ::unlinkat(dir.get(), name.c_str(), 0);
    journal::self().done(line);
    throw;
  }
}

failpoint_channel::~failpoint_channel() {
  conns_.clear();
  listener_.reset();
  try {
    if (const unique_fd dir = open_state_dir(false)) ::unlinkat(dir.get(), path_.substr(dir_.size() + 1).c_str(), 0);
  } catch (const std::exception&) {
    // No longer a directory rig may trust: nothing in it is touched.
  }
  journal::self().done(journal_line("file", {path_}));
}

std::string failpoint_channel::environment() const { return "RIG_FAILPOINT_SOCKET=" + path_; }

void failpoint_channel::accept_waiting() {
  for (;;) {
    unique_fd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!fd) return;  // EAGAIN: nothing more waiting
    // Only processes of rig's own user, and a bounded number of them.
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != ::geteuid() ||
        conns_.size() >= max_processes)
      continue;
    conn c;
    c.in = line_reader(std::move(fd));
    std::string hello;
    // The library sends "hello pid=N" as soon as it connects.
    if (c.in.read_line(hello, 1000) != line_reader::got::line || hello.rfind("hello pid=", 0) != 0) continue;
    c.pid = pid_t(std::atoi(hello.c_str() + 10));
    conns_.push_back(std::move(c));
  }
}

size_t failpoint_channel::await_processes(int timeout_ms) {
  accept_waiting();
  if (conns_.empty() && timeout_ms > 0) {
    pollfd p{listener_.get(), POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) > 0) accept_waiting();
  }
  return conns_.size();
}

std::vector<failpoint_channel::reply> failpoint_channel::request(const std::string& line, int timeout_ms) {
  accept_waiting();
  std::vector<reply> out;
  const std::string msg = line + "\n";
  for (auto it = conns_.begin(); it != conns_.end();) {
    std::string got;
    const bool sent = ::send(it->in.fd(), msg.data(), msg.size(), MSG_NOSIGNAL) == ssize_t(msg.size());
    if (!sent || it->in.read_line(got, timeout_ms) != line_reader::got::line) {
      it = conns_.erase(it);  // the process is gone (or hung): it no longer counts
      continue;
    }
    const bool ok = got.rfind("ok", 0) == 0;
    const size_t skip = ok ? 2 : (got.rfind("error", 0) == 0 ? 5 : 0);
    out.push_back({it->pid, ok, got.size() > skip ? got.substr(skip + (got[skip] == ' ')) : ""});
    ++it;
  }
  return out;
}

std::map<std::string, failpoint_state> failpoint_channel::stats(int timeout_ms) {
  std::map<std::string, failpoint_state> sum;
  for (const auto& r : request("stats", timeout_ms)) {
    if (!r.ok) continue;
    for (const auto& [name, s] : parse_failpoint_stats(r.text)) {
      auto [it, fresh] = sum.try_emplace(name, s);
      if (fresh) continue;
      it->second.hits += s.hits;
      it->second.fired += s.fired;
    }
  }
  return sum;
}

}  // namespace rig
