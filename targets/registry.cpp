#include <signal.h>
#include <sys/socket.h>

#include <fmt/format.h>
#include <sstream>

#include "core/asio.hpp"
#include "core/bind.hpp"
#include "core/error.hpp"
#include "core/net.hpp"
#include "core/process.hpp"
#include "targets/builtin_service.hpp"
#include "targets/command_target.hpp"
#include "targets/control_client.hpp"
#include "targets/target.hpp"

namespace rig {

namespace {

// The built-in target runs as a child process (`rig target`), so its CPU, memory and
// threads are its own in /proc and it can later join cgroups before its first instruction.
class builtin_target final : public target, public socket_tunable {
 public:
  explicit builtin_target(const option_values& v) : opts_(v) {}

  void start(const target_env& env) override {
    // The control channel is a socket pair: the target inherits one end, and no other process
    // can reach it (a named socket could be opened by any local user).
    int pair[2];
    throw_system_error_on(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0, "socketpair");
    unique_fd ours(pair[0]), theirs(pair[1]);
    std::vector<std::string> argv = {env.rig_exe, "target", "--bind", env.host, "--port",
                                     std::to_string(opts_.integer("port")), "--control",
                                     fmt::format("fd:{}", control_fd_number)};
    for (const auto& key : opts_.given_keys()) {
      if (key == "port") continue;
      const option_spec* spec = find_kind(builtin_options(), key);
      argv.push_back("--set");
      argv.push_back(key + "=" + toml_literal(spec->type, opts_.text(key)));
    }
    if (opts_.boolean("wal") && !opts_.has("wal_path")) {
      argv.push_back("--set");
      argv.push_back("wal_path=" + toml_literal(opt_type::string, env.run_dir + "/target.wal"));
    }
    log_path_ = env.run_dir + "/target.log";
    auto fds = env.inherit_fds;
    fds.push_back({theirs.get(), control_fd_number});
    child_ = child_process::spawn({.argv = argv, .capture_stdout = true, .stderr_path = log_path_, .env = env.env,
                                   .inherit_fds = fds, .netns_fd = env.netns_fd, .cgroup_procs = env.cgroup_procs,
                                   .journaled = true});
    theirs.reset();
    auto line = child_.read_line(10'000);
    unsigned port = 0;
    if (!line || std::sscanf(line->c_str(), ("listening " + env.host + ":%u").c_str(), &port) != 1) {
      child_.stop();
      throw std::runtime_error("the built-in target did not start (" + child_.exit_description() +
                               "); its log " + log_path_ + " says:\n" + file_tail(log_path_, 20));
    }
    port_ = uint16_t(port);
    host_ = env.host;
    control_.adopt(std::move(ours));
  }

  void stop() noexcept override { child_.stop(); }
  std::string host() const override { return host_; }
  uint16_t port() const override { return port_; }
  std::optional<pid_t> pid() const override {
    if (child_.pid() > 0) return child_.pid();
    return std::nullopt;
  }
  std::optional<exit_info> died() override { return child_.ended(); }
  std::map<std::string, int64_t> counters(int timeout_ms) override {
    return control_client::parse_pairs(control_.request("stats", timeout_ms));
  }
  socket_tunable* sockets() override { return this; }
  // `rig target` is this very binary: dynamically linked, so the shim can reach its file I/O.
  std::optional<std::string> preload_executable() const override { return self_exe(); }
  nlohmann::json describe() const override {
    return {{"kind", "builtin"}, {"pid", child_.pid()}, {"host", host_}, {"port", port_}, {"params", opts_.to_json()}};
  }

  socket_report set_socket_policy(const socket_policy& p) override { return report("policy", p); }
  socket_report check_socket_policy(const socket_policy& p) override { return report("check", p); }
  socket_policy socket_policy_now() override {
    const auto kv = control_client::parse_pairs(control_.request("policy"));
    socket_policy p;
    if (kv.count("nodelay")) p.nodelay = kv.at("nodelay") != 0;
    if (kv.count("sndbuf")) p.send_buffer = int(kv.at("sndbuf"));
    if (kv.count("rcvbuf")) p.receive_buffer = int(kv.at("rcvbuf"));
    return p;
  }
  void reset_socket_policy(const socket_policy& prior) override { control_.request(policy_line("reset", prior)); }

 private:
  static std::string policy_line(const std::string& verb, const socket_policy& p) {
    std::string line = verb;
    if (p.nodelay) line += fmt::format(" nodelay={}", *p.nodelay ? 1 : 0);
    if (p.send_buffer) line += fmt::format(" sndbuf={}", *p.send_buffer);
    if (p.receive_buffer) line += fmt::format(" rcvbuf={}", *p.receive_buffer);
    return line;
  }
  socket_report report(const std::string& verb, const socket_policy& p) {
    const auto kv = control_client::parse_pairs(control_.request(policy_line(verb, p)));
    return {int(kv.at("sockets")), int(kv.at("matching"))};
  }

  option_values opts_;
  child_process child_;
  control_client control_;
  static constexpr int control_fd_number = 230;  // beside the shim's (231)
  std::string log_path_, host_ = "127.0.0.1";
  uint16_t port_ = 0;
};

const option_table& endpoint_options() {
  static const option_table t = {
      {.name = "address", .type = opt_type::string, .default_text = "",
       .help = "host:port of a server rig did not start, on loopback (e.g. \"127.0.0.1:6379\")", .required = true},
  };
  return t;
}

void check_endpoint(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  if (!v.has("address")) return;
  std::string host;
  uint16_t port = 0;
  if (!split_host_port(v.str("address"), host, port))
    diags.add(v.where("address"), fmt::format("'address' in {} must be host:port, e.g. \"127.0.0.1:6379\"",
                                              ctx.section));
  else if (!is_loopback(host) && !ctx.allow_remote)
    diags.add(v.where("address"),
              fmt::format("'address' in {} is {}: rig only sends traffic to loopback addresses unless run with "
                          "--allow-remote",
                          ctx.section, host));
}

class endpoint_target final : public target {
 public:
  explicit endpoint_target(const option_values& v) : opts_(v) {
    split_host_port(v.str("address"), host_, port_);
    if (host_ == "localhost") host_ = "127.0.0.1";
  }
  void start(const target_env&) override {}
  void stop() noexcept override {}
  std::string host() const override { return host_; }
  uint16_t port() const override { return port_; }
  nlohmann::json describe() const override {
    return {{"kind", "endpoint"}, {"address", opts_.str("address")}, {"params", opts_.to_json()}};
  }

 private:
  option_values opts_;
  std::string host_;
  uint16_t port_ = 0;
};

}  // namespace

const std::vector<target_kind>& target_kinds() {
  static const std::vector<target_kind> kinds = {
      {.name = "builtin",
       .summary = "rig's own TCP service with the knobs the seed cases need",
       .options = &builtin_options,
       .make = [](const option_values& v) -> std::unique_ptr<target> { return std::make_unique<builtin_target>(v); },
       .started_by_rig = true,
       .counters = {{"rejected", true},
                    {"requests", true},
                    {"exceptions_caught", true},
                    {"workers_died", true},
                    {"protocol_errors", true},
                    {"workers"},
                    {"live_workers"},
                    {"queue_depth"},
                    {"queue_capacity"},
                    {"retained_bytes"},
                    {"connections"}}},
      {.name = "command",
       .summary = "a program rig starts, e.g. redis-server, with a free port for {port}",
       .options = &command_options,
       .make = [](const option_values& v) -> std::unique_ptr<target> { return std::make_unique<command_target>(v); },
       .check = &check_command,
       .started_by_rig = true},
      {.name = "endpoint",
       .summary = "a server that is already running, by address (loopback only)",
       .options = &endpoint_options,
       .make = [](const option_values& v) -> std::unique_ptr<target> { return std::make_unique<endpoint_target>(v); },
       .check = &check_endpoint},
  };
  return kinds;
}

}  // namespace rig
