#include "core/journal.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <sstream>

#include "core/cgroup.hpp"
#include "core/error.hpp"

namespace rig {

std::string state_dir() {
  const char* d = ::getenv("RIG_STATE_DIR");
  return d && *d ? d : "/run/rig";
}

journal& journal::self() {
  static journal j;
  return j;
}

journal::journal() : path_(fmt::format("{}/journal-{}.log", state_dir(), ::getpid())) {}

void journal::record(const std::string& line) {
  if (fd_ < 0) {
    std::filesystem::create_directories(state_dir());
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    throw_system_error_on(fd_ < 0, "open journal " + path_);
  }
  const std::string text = line + "\n";
  throw_system_error_on(::write(fd_, text.data(), text.size()) != ssize_t(text.size()), "write journal " + path_);
  ::fdatasync(fd_);
  ++open_;
}

void journal::done(const std::string& line) {
  if (fd_ < 0) return;
  const std::string text = "done " + line + "\n";
  if (::write(fd_, text.data(), text.size()) == ssize_t(text.size())) --open_;
  if (open_ <= 0) close_clean();
}

void journal::close_clean() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  open_ = 0;
  ::unlink(path_.c_str());
  ::rmdir(state_dir().c_str());  // the directory too, once no rig keeps a journal there
}

std::vector<stale_journal> stale_journals() {
  std::vector<stale_journal> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(state_dir(), ec)) {
    const std::string name = e.path().filename();
    int pid = 0;
    if (std::sscanf(name.c_str(), "journal-%d.log", &pid) != 1 || pid <= 0) continue;
    if (::kill(pid, 0) == 0 || errno == EPERM) continue;  // that rig still runs
    stale_journal j;
    j.path = e.path();
    j.pid = pid;
    std::ifstream in(j.path);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) {
      if (l.rfind("done ", 0) == 0) {
        auto it = std::find(lines.begin(), lines.end(), l.substr(5));
        if (it != lines.end()) lines.erase(it);
      } else if (!l.empty()) {
        lines.push_back(l);
      }
    }
    if (lines.empty()) {  // everything was undone; only the file was left
      ::unlink(j.path.c_str());
      ::rmdir(state_dir().c_str());
      continue;
    }
    j.pending = lines;
    out.push_back(j);
  }
  return out;
}

std::vector<std::string> replay(const stale_journal& j) {
  std::vector<std::string> report;
  bool all = true;
  for (auto it = j.pending.rbegin(); it != j.pending.rend(); ++it) {
    std::istringstream in(*it);
    std::string kind, a, b;
    in >> kind >> a >> b;
    if (kind == "cgroup") {
      if (!std::filesystem::exists(a)) {
        report.push_back("cgroup " + a + ": already gone");
        continue;
      }
      // Processes left inside (a target whose rig was killed) go to the top of the hierarchy.
      const std::string top = a.substr(0, a.rfind("/rig/"));
      const size_t moved = evacuate_cgroup(a, top);
      if (remove_cgroup_dir(a)) {
        ::rmdir((top + "/rig").c_str());  // the parent too, once no run uses it
        report.push_back(fmt::format("cgroup {}: removed{}", a,
                                     moved ? fmt::format(" ({} process(es) moved out first)", moved) : ""));
      } else {
        all = false;
        report.push_back(fmt::format("cgroup {}: NOT removed ({})", a, strerror(errno)));
      }
    } else if (kind == "subtree") {
      try {
        if (!std::filesystem::exists(a + "/rig")) write_control(a + "/cgroup.subtree_control", "-" + b);
        report.push_back(fmt::format("{}/cgroup.subtree_control: {} taken back", a, b));
      } catch (const std::exception& e) {
        report.push_back(fmt::format("{}/cgroup.subtree_control: {} left on ({})", a, b, e.what()));
      }
    } else {
      report.push_back("unknown journal line, left alone: " + *it);
    }
  }
  if (all) {
    ::unlink(j.path.c_str());
    ::rmdir(state_dir().c_str());
  }
  return report;
}

}  // namespace rig
