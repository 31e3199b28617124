#include "targets/command_target.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <regex>

#include "core/cgroup.hpp"
#include "core/clock.hpp"
#include "core/fd.hpp"
#include "core/listener.hpp"
#include "core/net.hpp"
#include "core/pidfd.hpp"
#include "core/proc.hpp"
#include "core/process.hpp"

namespace rig {

const option_table& command_options() {
  static const option_table t = {
      {.name = "run", .type = opt_type::strings, .default_text = "",
       .help = "program and arguments; {port} becomes the port, {host} the address to listen on "
               "(127.0.0.1, or the target's veth address when netem/rate put it in a namespace), {rig} the rig binary, "
               "in any argument (e.g. [\"redis-server\", \"--bind\", \"{host}\", \"--port\", \"{port}\", \"--protected-mode\", \"no\"]: "
               "under netem/rate rig connects from its veth, not loopback)",
       .required = true},
      {.name = "env", .type = opt_type::string_map, .default_text = "",
       .help = "environment added for the program, e.g. { MALLOC_ARENA_MAX = \"2\" }"},
      {.name = "port", .type = opt_type::integer, .default_text = "0",
       .help = "the port the program listens on ({host}); 0 picks a free one", .min = 0, .max = 65535},
      {.name = "ready", .type = opt_type::string, .default_text = "\"tcp\"",
       .help = "ready when: tcp (the port accepts) or log (ready_log matches its output)",
       .allowed = {"tcp", "log"}},
      {.name = "ready_log", .type = opt_type::string, .default_text = "",
       .help = "regex on the program's output that means it is ready (sets ready = \"log\")"},
      {.name = "ready_timeout", .type = opt_type::duration, .default_text = "\"10s\"",
       .help = "how long the program may take to become ready", .min = 10e6, .max = 600e9},
      {.name = "stop_timeout", .type = opt_type::duration, .default_text = "\"2s\"",
       .help = "after SIGTERM, how long before SIGKILL", .min = 0, .max = 600e9},
  };
  return t;
}

void check_command(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  if (v.has("run")) {
    const auto& run = v.strings("run");
    if (run.empty() || run[0].empty())
      diags.add(v.where("run"), "'run' in " + ctx.section + " is empty: name the program to start");
    else if (run[0] != "{rig}" && find_in_path(run[0]).empty())
      diags.add(v.where("run"), fmt::format("'run' in {}: program '{}' not found{}", ctx.section, run[0],
                                            std::filesystem::is_directory(run[0]) ? " (it is a directory)"
                                            : run[0].find('/') == std::string::npos ? " in PATH"
                                                                                     : " (no executable file there)"));
  }
  if (v.has("ready_log")) {
    try {
      std::regex re(v.str("ready_log"));
    } catch (const std::regex_error& e) {
      diags.add(v.where("ready_log"), fmt::format("'ready_log' in {} is not a valid regex: {}", ctx.section, e.what()));
    }
    if (v.is_set("ready") && v.str("ready") != "log")
      diags.add(v.where("ready"), "'ready' in " + ctx.section + " must be \"log\" when 'ready_log' is given");
  } else if (v.is_set("ready") && v.str("ready") == "log") {
    diags.add(v.where("ready"), "ready = \"log\" in " + ctx.section + " needs 'ready_log', a regex");
  }
}

namespace {

uint16_t pick_free_port() {
  unique_fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("no free port");
  socklen_t len = sizeof a;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

}  // namespace

command_target::command_target(const option_values& v) : opts_(v) {
  const auto& program = v.strings("run").at(0);
  executable_ = program == "{rig}" ? self_exe() : find_in_path(program);
}

// A fixed port another server already holds would pass the readiness check and be measured
// in the target's place. (In a network namespace of the run's own, nothing else listens.)
std::string command_target::cannot_start_here(bool in_own_netns) const {
  if (!opts_.integer("port") || in_own_netns) return "";
  const auto held = port_holders(uint16_t(opts_.integer("port")), "127.0.0.1");
  if (held.empty()) return "";
  return fmt::format("{} before the target starts: rig would measure that server, not the one it starts. Stop it, "
                     "or leave 'port' out of [target] so rig picks a free port and passes it as {{port}}",
                     held);
}

void command_target::start(const target_env& env) {
  port_ = opts_.integer("port") ? uint16_t(opts_.integer("port")) : pick_free_port();
  host_ = env.host;
  // Checked again at the start: taken since the check before the run.
  if (const auto why = cannot_start_here(env.netns_fd >= 0); !why.empty()) throw std::runtime_error(why);
  std::vector<std::string> argv;
  const std::string rig_exe = env.rig_exe.empty() ? self_exe() : env.rig_exe;
  for (const auto& a : opts_.strings("run")) {
    std::string arg = a;
    for (size_t at; (at = arg.find("{port}")) != std::string::npos;) arg.replace(at, 6, std::to_string(port_));
    for (size_t at; (at = arg.find("{host}")) != std::string::npos;) arg.replace(at, 6, env.host);
    // Anywhere in an argument too: a wrapper's command line ("sh", "-c", "exec {rig} target ...").
    for (size_t at; (at = arg.find("{rig}")) != std::string::npos;) arg.replace(at, 5, rig_exe);
    argv.push_back(arg);
  }
  if (opts_.strings("run").at(0) == "{rig}") executable_ = rig_exe;
  argv[0] = executable_;
  argv_ = argv;
  std::vector<std::string> environment;
  if (opts_.has("env"))
    for (const auto& [k, val] : opts_.map("env")) environment.push_back(k + "=" + val);
  environment.insert(environment.end(), env.env.begin(), env.env.end());
  log_path_ = env.run_dir + "/target.log";
  tree_ = env.tree;
  child_ = child_process::spawn(
      {.argv = argv, .output_path = log_path_, .env = environment, .inherit_fds = env.inherit_fds,
       .netns_fd = env.netns_fd, .cgroup_procs = env.cgroup_procs, .journaled = true});

  const bool by_log = opts_.has("ready_log");
  std::regex ready_re(by_log ? opts_.str("ready_log") : std::string("."));
  const int64_t timeout = opts_.duration_ns("ready_timeout");
  const int64_t deadline = mono_ns() + timeout;
  for (;;) {
    if (by_log ? std::regex_search(read_text_file(log_path_).value_or(""), ready_re) : port_accepts(host_, port_)) {
      if (!child_.running())
        if (auto d = daemonized()) throw std::runtime_error(*d);
      try {
        find_server();
      } catch (...) {
        child_.stop(int(opts_.duration_ns("stop_timeout") / ns_per_ms));
        throw;
      }
      return;
    }
    const std::string why = by_log ? fmt::format("its output never matched /{}/", opts_.str("ready_log"))
                                   : fmt::format("{}:{} never accepted a connection{}", host_, port_,
                                                 env.netns_fd >= 0 ? " (the program runs in a network namespace of "
                                                                     "its own: pass it {host} so it listens on that "
                                                                     "address, not only on 127.0.0.1)"
                                                                   : "");
    if (!child_.running()) {
      if (auto d = daemonized()) throw std::runtime_error(*d);
      throw std::runtime_error(fmt::format("the command target {} before it was ready ({}); last output:\n{}",
                                           child_.exit_description(), why, file_tail(log_path_, 20)));
    }
    if (mono_ns() > deadline) {
      child_.stop(int(opts_.duration_ns("stop_timeout") / ns_per_ms));
      throw std::runtime_error(fmt::format("the command target was not ready within {:.1f}s: {}; last output:\n{}",
                                           double(timeout) / 1e9, why, file_tail(log_path_, 20)));
    }
    ::usleep(20'000);
  }
}

void command_target::stop() noexcept { child_.stop(int(opts_.duration_ns("stop_timeout") / ns_per_ms)); }

std::optional<pid_t> command_target::pid() const {
  if (serving_ > 0) return serving_;
  if (child_.pid() > 0) return child_.pid();
  return std::nullopt;
}

std::vector<pid_t> command_target::processes() const {
  if (!tree_) return child_.pid() > 0 ? process_tree(child_.pid()) : std::vector<pid_t>{};
  // The run's cgroup also holds rig's own helpers (a memory workload's): children of rig's
  // other than the process it started are not the target's.
  auto pids = tree_->pids();
  std::erase_if(pids, [&](pid_t p) {
    const auto h = stat_head(p);
    return p != child_.pid() && h && h->ppid == ::getpid();
  });
  return pids;
}

std::vector<uint64_t> command_target::listening_inodes() const {
  std::vector<uint64_t> inodes;
  for (const auto& l : tcp_listeners(port_, child_.pid())) inodes.push_back(l.inode);
  return inodes;
}

std::vector<pid_t> command_target::listening_in_tree() const {
  auto holders = socket_holders(listening_inodes(), processes());
  // The one found ready first, then the others (a master's workers share its socket).
  std::stable_partition(holders.begin(), holders.end(), [&](pid_t p) { return p == serving_; });
  return holders;
}

std::vector<pid_t> command_target::serving_pids() const {
  auto p = listening_in_tree();
  if (p.empty() && serving_ > 0) p.push_back(serving_);
  return p;
}

// The port accepts: the socket must be the target's, and the process that holds it is the one
// measured, signalled and checked for injections (a wrapper's child, not the wrapper).
void command_target::find_server() {
  const auto inodes = listening_inodes();
  if (inodes.empty()) return;  // ready by its log, listening later (or elsewhere): workloads will say
  const auto mine = processes();
  auto holders = socket_holders(inodes, mine);
  if (holders.empty()) {
    const std::string others = process_names(socket_holders(inodes));
    throw std::runtime_error(fmt::format(
        "{}:{} accepts connections, but no process of the target listens there (it is held by {}): rig would "
        "measure that server, not the one it started. Stop it, or leave 'port' out of [target] so rig picks a free "
        "port; last output of the target:\n{}",
        host_, port_, others.empty() ? "a process rig cannot see" : others, file_tail(log_path_, 20)));
  }
  // The holder nearest the process rig started (mine lists parents before children).
  serving_ = *std::min_element(holders.begin(), holders.end(), [&](pid_t a, pid_t b) {
    return std::find(mine.begin(), mine.end(), a) < std::find(mine.begin(), mine.end(), b);
  });
  serving_name_ = process_name(serving_);
  if (serving_ != child_.pid()) serving_fd_ = unique_fd(open_pidfd(serving_));
}

std::optional<std::string> command_target::daemonized() {
  if (!tree_ || child_.exit_code() != 0) return std::nullopt;
  // What it left there, less rig's own children (a workload's helper may share the cgroup).
  std::vector<pid_t> left;
  for (pid_t p : tree_->pids())
    if (const auto h = stat_head(p); h && h->ppid != ::getpid() && h->state != 'Z') left.push_back(p);
  if (left.empty()) return std::nullopt;
  std::string names;
  for (pid_t p : left) {
    std::string comm = read_text_file(fmt::format("/proc/{}/comm", p)).value_or("?\n");
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    names += fmt::format("{}{} (pid {})", names.empty() ? "" : ", ", comm, p);
  }
  return fmt::format(
      "the command target daemonized: the process rig started (pid {}) exited with status 0 and left {} in the run's "
      "cgroup: {}. rig measures, caps and stops the process it starts, so run the program in the foreground (e.g. "
      "redis-server --daemonize no, nginx -g 'daemon off;', memcached without -d); what it left is stopped with the run",
      child_.pid(), left.size() == 1 ? "1 process" : fmt::format("{} processes", left.size()), names);
}

std::optional<exit_info> command_target::died() {
  auto how = child_.ended();
  // The serving process (a wrapper's child: nginx under sh -c) gone is the target's death,
  // whether the wrapper outlives it (sh -c "server; sleep 1000") or ends after it: what it
  // left running then (an orphaned worker) is no daemon.
  if (serving_fd_.get() >= 0) {
    pollfd p{serving_fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, 0) == 1)
      return exit_info{fmt::format("the serving process {} exited ({})", serving_name_,
                                   how ? "the process rig started, pid " + std::to_string(child_.pid()) + ", then " +
                                             how->how
                                       : "the process rig started, pid " + std::to_string(child_.pid()) + ", still runs")};
  }
  if (how)
    if (auto d = daemonized()) how->how = *d;
  return how;
}

nlohmann::json command_target::describe() const {
  nlohmann::json j = {{"kind", "command"}, {"pid", child_.pid()}, {"host", host_}, {"port", port_}, {"argv", argv_},
                      {"params", opts_.to_json()}};
  // The process measured and reached into, when it is not the one rig started (a wrapper's child).
  if (serving_ > 0) j["serving"] = {{"pid", serving_}, {"process", serving_name_}};
  return j;
}

}  // namespace rig
