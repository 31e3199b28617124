#include "workloads/helper.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/fd.hpp"
#include "core/line_reader.hpp"
#include "core/process.hpp"

namespace rig {

namespace {

constexpr int channel_fd = 3, clock_fd_number = 4;
constexpr int64_t ready_timeout_ms = 120'000;  // the disk workload fills its file before it is ready
constexpr int stop_timeout_ms = 30'000;

// JSON messages, one per line, over a stream socket. Sending has an fd of its own, so the
// reader closing its fd at end of stream never races a send from another thread.
class json_channel {
 public:
  explicit json_channel(unique_fd fd) : out_(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0)), in_(std::move(fd)) {
    throw_system_error_on(!out_, "dup of the workload helper's channel");
  }
  int fd() const { return in_.fd(); }

  void send(const nlohmann::json& j) {
    const std::string line = j.dump() + "\n";
    for (size_t off = 0; off < line.size();) {
      const ssize_t n = ::send(out_.get(), line.data() + off, line.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      throw_system_error_on(n < 0, "sending to the workload helper's channel");
      off += size_t(n);
    }
  }

  using got = line_reader::got;
  // The next message within timeout_ms (-1: no limit, 0: only one already there).
  got receive(nlohmann::json& out, int timeout_ms) {
    std::string line;
    const got g = in_.read_line(line, timeout_ms);
    if (g == got::line) out = nlohmann::json::parse(line);
    return g;
  }

 private:
  unique_fd out_;
  line_reader in_;
};

class helper_workload final : public workload {
 public:
  helper_workload(std::string kind, option_values v, std::vector<std::string> controllers)
      : kind_(std::move(kind)), opts_(std::move(v)), controllers_(std::move(controllers)) {}
  ~helper_workload() override { stop(); }

  void start(const workload_env& env) override {
    name_ = env.name;
    if (env.target_cgroup_procs.empty() || env.clock_fd < 0)
      throw std::runtime_error(fmt::format("workload {}: in_target_cgroup = true, but the target has no cgroup of "
                                           "its own in this run",
                                           name_));
    int sv[2];
    throw_system_error_on(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0, "socketpair");
    unique_fd mine(sv[0]), theirs(sv[1]);
    spawn_options o;
    o.argv = {env.rig_exe.empty() ? self_exe() : env.rig_exe, "__workload"};
    o.inherit_fds = {{theirs.get(), channel_fd}, {env.clock_fd, clock_fd_number}};
    o.cgroup_procs = env.target_cgroup_procs;
    o.journaled = true;
    child_ = child_process::spawn(o);
    theirs.reset();
    chan_.emplace(std::move(mine));
    chan_->send({{"kind", kind_},
                 {"name", name_},
                 {"options", opts_.to_wire()},
                 {"run_dir", env.run_dir},
                 {"seed", env.seed},
                 {"start_ns", env.clock->start_ns},
                 {"phase_ns", env.clock->phase_ns}});
    const int64_t deadline = mono_ns() + ready_timeout_ms * ns_per_ms;
    for (nlohmann::json m;;) {
      const auto r = chan_->receive(m, 1000);
      if (r == json_channel::got::line && m.contains("ready")) {
        describe_ = m.at("describe");
        break;
      }
      if (r == json_channel::got::line && m.contains("error")) {
        child_.wait(2000);
        const std::string what = fmt::format("workload {}: {}", name_, m.at("error").get<std::string>());
        if (m.value("input", false)) throw input_error(what);
        throw std::runtime_error(what);
      }
      if (r == json_channel::got::closed) {
        child_.wait(2000);
        throw std::runtime_error(fmt::format("workload {}: its helper process (pid {}) {} before it started",
                                             name_, child_.pid(), child_.exit_description()));
      }
      if (mono_ns() > deadline)
        throw std::runtime_error(fmt::format("workload {}: its helper process (pid {}) was not ready within {} s",
                                             name_, child_.pid(), ready_timeout_ms / 1000));
    }
    window_sink* sink = env.windows;
    clock_ = env.clock;
    reader_ = std::thread([this, sink] { read_loop(sink); });
  }

  void stop() noexcept override {
    if (!chan_ || stopped_) return;
    stopped_ = true;
    if (!reader_.joinable()) {  // it never started: start() has said why
      child_.stop();
      return;
    }
    try {
      chan_->send({{"stop", true}});
    } catch (const std::exception&) {
      // Gone already: the reader has seen the channel close.
    }
    if (!child_.wait(stop_timeout_ms)) child_.stop();
    if (reader_.joinable()) reader_.join();
    std::lock_guard lk(mu_);
    if (!finished_)
      std::cerr << fmt::format(
          "rig: workload {}: its helper process (pid {}) in the target's cgroup {} before it stopped (an OOM kill "
          "there?): the phases it finished are reported; the one it died in counts helper_died\n",
          name_, child_.pid(), child_.exit_description());
  }

  // What the helper handed in when it stopped (its pieces of each phase came as its threads
  // left it, through take_finished_phases). A helper that died (an OOM kill in the target's
  // cgroup) handed in its finished phases only; the phase it died in counts helper_died, so the
  // report says why it is short.
  std::vector<phase_stats> results() const override {
    std::lock_guard lk(mu_);
    std::vector<phase_stats> r = got_;
    if (!finished_ && died_in_phase_ >= 0) {
      if (r.size() <= size_t(died_in_phase_)) r.resize(size_t(died_in_phase_) + 1);
      r[size_t(died_in_phase_)].counts["helper_died"] = 1;
    }
    return r;
  }

  nlohmann::json describe() const override {
    nlohmann::json d = describe_;
    d["runs_in"] = {{"where", "a helper process in the target's cgroup"}, {"pid", child_.pid()}};
    return d;
  }

  std::vector<std::string> cgroup_controllers() const override { return controllers_; }

  finished_phases take_finished_phases() override {
    std::lock_guard lk(mu_);
    return {std::exchange(handed_.pieces, {}), handed_.complete_below};
  }

  void phase_over(int phase) override {
    if (!chan_ || stopped_) return;
    try {
      chan_->send({{"hand_in", phase}});
    } catch (const std::exception&) {
      return;  // gone: the reader has seen it
    }
    std::unique_lock lk(mu_);
    handed_cv_.wait_for(lk, std::chrono::seconds(1), [&] { return handed_through_ >= phase || closed_; });
  }

 private:
  void read_loop(window_sink* sink) {
    try {
      for (nlohmann::json m; chan_->receive(m, -1) == json_channel::got::line;) {
        if (m.contains("row")) {
          sink->add_row(window_row::from_wire(m.at("row")));
        } else if (m.contains("handed_in")) {
          std::lock_guard lk(mu_);
          handed_through_ = m.at("handed_in").get<int>();
          handed_cv_.notify_all();
        } else if (m.contains("phase")) {
          auto s = phase_stats::from_wire(m.at("stats"));
          std::lock_guard lk(mu_);
          handed_.pieces.emplace_back(m.at("phase").get<int>(), std::move(s));
        } else if (m.contains("complete_below")) {  // after the pieces it covers
          std::lock_guard lk(mu_);
          handed_.complete_below = m.at("complete_below").get<int>();
        } else if (m.contains("results")) {
          const auto& rest = m.at("results");
          for (size_t i = 0; i < rest.size(); ++i) add(i, phase_stats::from_wire(rest[i]));
          std::lock_guard lk(mu_);
          finished_ = true;
        }
      }
    } catch (const std::exception& e) {
      std::cerr << fmt::format("rig: workload {}: a bad message from its helper process: {}\n", name_, e.what());
    }
    std::lock_guard lk(mu_);
    if (!finished_) {
      // Between phases, a helper dies of the next phase's injectors (a cap set below what it holds).
      const int p = clock_->phase.load();
      died_in_phase_ = p >= 0 ? p : handed_through_ + 1;
    }
    closed_ = true;
    handed_cv_.notify_all();
  }

  void add(size_t phase, const phase_stats& s) {
    std::lock_guard lk(mu_);
    if (got_.size() <= phase) got_.resize(phase + 1);
    got_[phase].merge(s);
  }

  const std::string kind_;
  const option_values opts_;
  const std::vector<std::string> controllers_;
  std::string name_;
  child_process child_;
  std::optional<json_channel> chan_;
  std::thread reader_;
  bool stopped_ = false;
  nlohmann::json describe_;
  mutable std::mutex mu_;
  std::vector<phase_stats> got_;                   // what it handed in as it stopped
  finished_phases handed_;                         // the pieces it handed in since the last take
  bool finished_ = false;  // the helper handed in all it had
  bool closed_ = false;    // its channel closed
  int handed_through_ = -1;
  std::condition_variable handed_cv_;
  const run_clock* clock_ = nullptr;
  int died_in_phase_ = -1;
};

// Sends the rows finalized since the last call (without copying the run's earlier rows again).
void forward_rows(json_channel& chan, const window_sink& sink, const std::string& workload, int64_t& sent_below) {
  for (const auto& r : sink.rows_from(workload, sent_below)) {
    chan.send({{"row", r.to_wire()}});
    sent_below = r.index + 1;
  }
}

// Sends the phases the workload's threads have left since the last call, then (when it moved)
// the phase below which they are all past.
void forward_phases(json_channel& chan, workload& w, int& complete_below) {
  const finished_phases f = w.take_finished_phases();
  for (const auto& [p, s] : f.pieces) chan.send({{"phase", p}, {"stats", s.to_wire()}});
  if (f.complete_below > complete_below) chan.send({{"complete_below", complete_below = f.complete_below}});
}

}  // namespace

option_table with_cgroup_option(option_table t) {
  t.push_back({.name = "in_target_cgroup", .type = opt_type::boolean, .default_text = "false",
               .help = "run this workload in a helper process inside the target's cgroup, so the caps injectors "
                       "set there (memory, CPU, disk) apply to it as well"});
  return t;
}

std::unique_ptr<workload> make_helper_workload(std::string kind, const option_values& v,
                                               std::vector<std::string> controllers) {
  return std::make_unique<helper_workload>(std::move(kind), v, std::move(controllers));
}

int run_workload_helper() {
  // SIGTERM (the rig died: parent-death signal) or SIGINT ends the run like a stop message,
  // so the workload still removes what it made. Blocked before any thread starts.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  unique_fd sig(::signalfd(-1, &stop_signals, SFD_CLOEXEC));
  if (::fcntl(channel_fd, F_SETFD, FD_CLOEXEC) != 0 || ::fcntl(clock_fd_number, F_SETFD, FD_CLOEXEC) != 0) {
    std::cerr << "rig __workload: runs only as a helper of `rig run` (no channel on fd 3 and clock on fd 4)\n";
    return 2;
  }
  json_channel chan{unique_fd(channel_fd)};
  try {
    shared_clock_cell cell = shared_clock_cell::attach(clock_fd_number);
    nlohmann::json cfg;
    if (chan.receive(cfg, 10'000) != json_channel::got::line) return 2;
    try {
      const std::string kind_name = cfg.at("kind").get<std::string>();
      const workload_kind* kind = find_workload_kind(kind_name);
      if (!kind || !kind->make_here) throw std::runtime_error("workload kind '" + kind_name + "' cannot run here");
      const option_values v = option_values::from_wire(cfg.at("options"));
      run_clock clock(cell.cell());
      clock.start_ns = cfg.at("start_ns").get<int64_t>();
      clock.phase_ns = cfg.at("phase_ns").get<std::vector<int64_t>>();
      window_sink sink;
      std::unique_ptr<workload> w = kind->make_here(v);
      workload_env env{cfg.at("name").get<std::string>(), "", 0, &clock, &sink};
      env.run_dir = cfg.at("run_dir").get<std::string>();
      env.seed = cfg.at("seed").get<uint64_t>();
      w->start(env);
      chan.send({{"ready", true}, {"describe", w->describe()}});
      int64_t sent_below = 0;
      int complete_below = 0;
      for (bool running = true; running;) {
        pollfd p[2] = {{chan.fd(), POLLIN, 0}, {sig.get(), POLLIN, 0}};
        if (::poll(p, 2, 250) < 0 && errno != EINTR) break;
        sink.finalize((mono_ns() - clock.start_ns) / ns_per_s - 1);  // a second of grace, as the rig gives
        forward_rows(chan, sink, env.name, sent_below);
        forward_phases(chan, *w, complete_below);
        if (p[1].revents) running = false;
        for (nlohmann::json m; running && p[0].revents;) {
          const auto got = chan.receive(m, 0);
          if (got == json_channel::got::timeout) break;
          if (got == json_channel::got::line && m.contains("hand_in")) {
            // The threads see the phase's end at their next sample or tick (within 10 ms).
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            forward_phases(chan, *w, complete_below);
            chan.send({{"handed_in", m.at("hand_in")}});
            continue;
          }
          running = false;  // stop, or the rig is gone
        }
      }
      w->stop();
      sink.finalize(INT64_MAX);
      forward_rows(chan, sink, env.name, sent_below);
      forward_phases(chan, *w, complete_below);
      nlohmann::json results = nlohmann::json::array();  // what no thread handed in
      for (const auto& s : w->results()) results.push_back(s.to_wire());
      chan.send({{"results", results}});
      return 0;
    } catch (const input_error& e) {
      chan.send({{"error", e.what()}, {"input", true}});
      return 2;
    } catch (const std::exception& e) {
      chan.send({{"error", e.what()}});
      return 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "rig __workload: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace rig
