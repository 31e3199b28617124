#include "core/listener.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <sstream>

#include "core/proc.hpp"

namespace rig {

namespace {

// One line of /proc/net/tcp{,6}: "sl local_address rem_address st ... inode".
bool parse_line(const std::string& line, bool v6, uint16_t port, tcp_listener& out) {
  char local[64] = {}, remote[64] = {};
  unsigned st = 0;
  unsigned long long inode = 0;
  if (std::sscanf(line.c_str(), " %*d: %63s %63s %x %*s %*s %*s %*d %*d %llu", local, remote, &st, &inode) != 4)
    return false;
  if (st != 0x0A) return false;  // TCP_LISTEN
  const char* colon = std::strrchr(local, ':');
  if (!colon || unsigned(std::strtoul(colon + 1, nullptr, 16)) != port) return false;
  const std::string hex(local, size_t(colon - local));
  char text[INET6_ADDRSTRLEN] = {};
  if (!v6 && hex.size() == 8) {
    in_addr a{};
    a.s_addr = uint32_t(std::strtoul(hex.c_str(), nullptr, 16));  // the kernel prints it in host order of the word
    inet_ntop(AF_INET, &a, text, sizeof text);
  } else if (v6 && hex.size() == 32) {
    in6_addr a{};
    for (int w = 0; w < 4; ++w) {
      const uint32_t word = uint32_t(std::strtoul(hex.substr(size_t(w) * 8, 8).c_str(), nullptr, 16));
      std::memcpy(&a.s6_addr[w * 4], &word, 4);
    }
    inet_ntop(AF_INET6, &a, text, sizeof text);
  }
  out = {inode, text};
  return true;
}

bool wildcard(const std::string& a) { return a == "0.0.0.0" || a == "::"; }

}  // namespace

std::vector<tcp_listener> tcp_listeners(uint16_t port, pid_t netns_of) {
  std::vector<tcp_listener> found;
  const std::string base = netns_of > 0 ? fmt::format("/proc/{}/net/", netns_of) : std::string("/proc/net/");
  for (const bool v6 : {false, true}) {
    const auto text = read_text_file(base + (v6 ? "tcp6" : "tcp"));
    if (!text) continue;
    std::istringstream in(*text);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      tcp_listener l;
      if (parse_line(line, v6, port, l)) found.push_back(l);
    }
  }
  return found;
}

std::vector<pid_t> all_pids() {
  std::vector<pid_t> pids;
  DIR* d = ::opendir("/proc");
  if (!d) return pids;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long p = std::strtol(e->d_name, &end, 10);
    if (p > 0 && end && *end == 0) pids.push_back(pid_t(p));
  }
  ::closedir(d);
  return pids;
}

std::vector<pid_t> process_tree(pid_t root) {
  std::vector<std::pair<pid_t, pid_t>> parent_of;  // (pid, ppid)
  for (pid_t p : all_pids())
    if (const auto h = stat_head(p)) parent_of.push_back({p, h->ppid});
  std::vector<pid_t> tree = {root};
  for (size_t i = 0; i < tree.size(); ++i)
    for (const auto& [p, pp] : parent_of)
      if (pp == tree[i]) tree.push_back(p);
  return tree;
}

std::vector<pid_t> socket_holders(const std::vector<uint64_t>& inodes, const std::vector<pid_t>& pids) {
  std::vector<pid_t> holders;
  if (inodes.empty()) return holders;
  std::vector<std::string> wanted;
  for (uint64_t i : inodes) wanted.push_back(fmt::format("socket:[{}]", i));
  for (pid_t p : pids.empty() ? all_pids() : pids) {
    const std::string dir = fmt::format("/proc/{}/fd", p);
    DIR* d = ::opendir(dir.c_str());
    if (!d) continue;
    bool holds = false;
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char link[64] = {};
      const ssize_t n = ::readlinkat(::dirfd(d), e->d_name, link, sizeof link - 1);
      if (n > 0 && std::find(wanted.begin(), wanted.end(), std::string(link, size_t(n))) != wanted.end()) {
        holds = true;
        break;
      }
    }
    ::closedir(d);
    if (holds) holders.push_back(p);
  }
  return holders;
}

std::string process_name(pid_t pid) {
  std::string comm = read_text_file(fmt::format("/proc/{}/comm", pid)).value_or("");
  if (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm.empty() ? fmt::format("pid {}", pid) : fmt::format("{} (pid {})", comm, pid);
}

std::string process_names(const std::vector<pid_t>& pids) {
  std::string names;
  for (pid_t p : pids) names += (names.empty() ? "" : ", ") + process_name(p);
  return names;
}

std::string port_holders(uint16_t port, const std::string& host, pid_t netns_of) {
  std::vector<uint64_t> inodes;
  std::string addresses;
  for (const auto& l : tcp_listeners(port, netns_of))
    if (l.address == host || wildcard(l.address) || host == "0.0.0.0" || host == "::") {
      inodes.push_back(l.inode);
      if (addresses.find(l.address) == std::string::npos) addresses += (addresses.empty() ? "" : ", ") + l.address;
    }
  if (inodes.empty()) return "";
  const std::string names = process_names(socket_holders(inodes));
  return fmt::format("{}:{} is already listened on by {}", addresses, port,
                     names.empty() ? "a process rig cannot see" : names);
}

}  // namespace rig
