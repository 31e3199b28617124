#include "injectors/signal_injectors.hpp"

#include <signal.h>
#include <string.h>

#include <condition_variable>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "core/clock.hpp"
#include "core/listener.hpp"
#include "core/proc.hpp"
#include "core/units.hpp"

namespace rig {

namespace {

const std::vector<std::pair<std::string, int>> signal_names = {
    {"SIGKILL", SIGKILL}, {"SIGTERM", SIGTERM}, {"SIGINT", SIGINT}, {"SIGQUIT", SIGQUIT}, {"SIGABRT", SIGABRT},
    {"SIGSEGV", SIGSEGV}, {"SIGBUS", SIGBUS},   {"SIGHUP", SIGHUP}, {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}};

int signal_number(const std::string& name) {
  for (const auto& [n, s] : signal_names)
    if (n == name) return s;
  return 0;
}

// The target's process state letter from /proc/PID/stat ('T' stopped, 'S' sleeping, ...).
char process_state(pid_t pid) {
  const auto fields = stat_fields(pid);
  return fields ? (*fields)[0] : '?';
}

const std::string signals_only_its_own = "rig does not signal it (rig signals only processes it started)";

// A thread that runs a schedule against the target until the phase ends.
class scheduled {
 public:
  ~scheduled() { stop(); }
  template <typename F>
  void start(F body) {
    stopping_ = false;
    thread_ = std::thread([this, body] { body(*this); });
  }
  // Sleeps until `until_ns` or stop(); false when stopped.
  bool sleep_until(int64_t until_ns) {
    std::unique_lock lk(mu_);
    while (!stopping_) {
      const int64_t left = until_ns - mono_ns();
      if (left <= 0) return true;
      cv_.wait_for(lk, std::chrono::nanoseconds(left));
    }
    return false;
  }
  void stop() {
    {
      std::lock_guard lk(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

// ---------------------------------------------------------------------------------------

class pause_injector final : public injector {
 public:
  explicit pause_injector(const option_values& v)
      : opts_(v), period_ns_(v.duration_ns("period")), pause_ns_(v.duration_ns("pause_for")) {}

  probe_result probe(const run_context& ctx) override {
    if (auto p = needs_started_target(ctx, signals_only_its_own)) return *p;
    return {};
  }

  // The first pause starts at once, so verify() can see the target stopped.
  void apply(run_context& ctx) override {
    if (!ctx.target_pid) throw std::runtime_error("pause: the target has no process");
    pid_ = *ctx.target_pid;
    pauses_ = 0;
    paused_ns_ = 0;
    t0_ = mono_ns();
    // The pauses that begin within the phase: 5 s at one a second is 5, not a sixth begun as
    // the phase ends (the phase starts after verify(), a little later than t0_).
    const int64_t cycles = ctx.phase_duration_ns > 0 ? (ctx.phase_duration_ns + period_ns_ - 1) / period_ns_ : INT64_MAX;
    stop_target();
    schedule_.start([this, cycles](scheduled& s) {
      for (int64_t cycle = 0; cycle < cycles; ++cycle) {
        const int64_t start = t0_ + cycle * period_ns_;
        if (cycle > 0) {
          if (!s.sleep_until(start)) return;
          stop_target();
        }
        if (!s.sleep_until(start + pause_ns_)) return;
        continue_target();
      }
    });
  }

  verification verify(run_context&) override {
    verification v;
    // Delivery is asynchronous: give the kernel a moment to stop it.
    char state = process_state(pid_);
    for (int i = 0; i < 100 && state != 'T' && state != 't'; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      state = process_state(pid_);
    }
    v.ok = state == 'T' || state == 't';
    v.text = fmt::format("the target (pid {}) read back stopped (state '{}') in its first pause; then {} of every {}",
                         pid_, state, format_duration_us(double(pause_ns_) / 1e3),
                         format_duration_us(double(period_ns_) / 1e3));
    v.measured = {{"state", std::string(1, state)}};
    return v;
  }

  nlohmann::json measure(run_context&) override {
    std::lock_guard lk(mu_);
    // A pause still on as the phase ends counts up to now (the revert ends it).
    const double paused_s = double(paused_ns_ + (stopped_at_ ? mono_ns() - stopped_at_ : 0)) / 1e9;
    return {{"pauses", pauses_},
            {"paused_s", paused_s},
            {"summary", fmt::format("{} pauses, the target stopped for {:.2f}s in all", pauses_, paused_s)}};
  }

  undo_result revert(run_context&) noexcept override {
    schedule_.stop();
    if (pid_ <= 0) return {true, "nothing applied"};
    continue_target();  // never leave the target stopped
    // Delivery is asynchronous: give the kernel a moment to continue it, then read it back.
    char state = process_state(pid_);
    for (int i = 0; i < 100 && (state == 'T' || state == 't'); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      state = process_state(pid_);
    }
    const pid_t pid = std::exchange(pid_, -1);
    if (state == 0 || state == 'Z' || state == 'X') return {true, fmt::format("the target (pid {}) is gone", pid)};
    const bool running = state != 'T' && state != 't';
    return {running, fmt::format("the target (pid {}) read back {} (state '{}')", pid,
                                 running ? "running again" : "still stopped", state)};
  }

  std::string mechanism() const override { return "SIGSTOP / SIGCONT to the target's process group"; }
  nlohmann::json params() const override { return opts_.to_json(); }

 private:
  void stop_target() {
    std::lock_guard lk(mu_);
    if (stopped_at_) return;
    ::kill(-pid_, SIGSTOP);  // the target leads its own process group: its children stop too
    ::kill(pid_, SIGSTOP);
    stopped_at_ = mono_ns();
    ++pauses_;
  }
  void continue_target() {
    std::lock_guard lk(mu_);
    ::kill(-pid_, SIGCONT);
    ::kill(pid_, SIGCONT);
    if (stopped_at_) paused_ns_ += mono_ns() - stopped_at_;
    stopped_at_ = 0;
  }

  option_values opts_;
  int64_t period_ns_, pause_ns_;
  pid_t pid_ = -1;
  int64_t t0_ = 0;
  std::mutex mu_;
  int64_t stopped_at_ = 0, paused_ns_ = 0;
  int pauses_ = 0;
  scheduled schedule_;
};

class kill_injector final : public injector {
 public:
  explicit kill_injector(const option_values& v)
      : opts_(v), at_ns_(v.duration_ns("at")), signal_(signal_number(v.str("signal"))), child_(v.str("process") == "child") {}

  probe_result probe(const run_context& ctx) override {
    if (auto p = needs_started_target(ctx, signals_only_its_own)) return *p;
    return {};
  }

  void apply(run_context& ctx) override {
    if (!ctx.target_pid) throw std::runtime_error("kill: the target has no process");
    pid_ = *ctx.target_pid;
    sent_at_ns_ = 0;
    sent_to_ = 0;
    t0_ = mono_ns();
    processes_ = ctx.target_processes;
    schedule_.start([this](scheduled& s) {
      if (!s.sleep_until(t0_ + at_ns_)) return;
      // Held across the kill: the death it causes ends the phase, and measure() then waits for
      // this record instead of reading "not sent" beside a target it killed.
      std::lock_guard lk(mu_);
      const pid_t to = child_ ? oldest_child() : pid_;
      const int r = to > 0 ? ::kill(to, signal_) : -1;
      const int err = errno;
      sent_at_ns_ = mono_ns();
      sent_to_ = to;
      result_ = to <= 0  ? fmt::format("not delivered: the target (pid {}) had no child process then", pid_)
                : r == 0 ? fmt::format("delivered to {} (pid {})", to == pid_ ? "the target" : process_name(to), to)
                         : fmt::format("not delivered to pid {}: {}", to, strerror(err));
    });
  }

  // The signal is still to come: what can be proven now is that the target is there to receive it.
  verification verify(run_context&) override {
    verification v;
    v.ok = ::kill(pid_, 0) == 0;
    if (v.ok && child_) {
      const pid_t c = oldest_child();
      v.ok = c > 0;
      v.text = c > 0 ? fmt::format("{} to the target's oldest child process ({}, pid {}, alive now) scheduled {} into the "
                                   "phase",
                                   opts_.str("signal"), process_name(c), c, format_duration_us(double(at_ns_) / 1e3))
                     : fmt::format("the target (pid {}) has no child process to signal (process = \"child\" is for a "
                                   "server with pre-forked workers or per-connection processes)",
                                   pid_);
      return v;
    }
    v.text = fmt::format("{} to the target (pid {}, alive now) scheduled {} into the phase", opts_.str("signal"), pid_,
                         format_duration_us(double(at_ns_) / 1e3));
    return v;
  }

  nlohmann::json measure(run_context&) override {
    std::lock_guard lk(mu_);
    if (!sent_at_ns_) return {{"sent", false}, {"summary", "the phase ended before the signal was due"}};
    const double at_s = double(sent_at_ns_ - t0_) / 1e9;
    return {{"sent", true},
            {"sent_at_s", at_s},
            {"pid", sent_to_},
            {"summary", fmt::format("{} {} at {:.3f}s into the phase", opts_.str("signal"), result_, at_s)}};
  }

  // A signal sent stays sent: there is nothing to put back, only the schedule to stop.
  undo_result revert(run_context&) noexcept override {
    schedule_.stop();
    return {true, "nothing to put back (a signal cannot be unsent); the schedule is stopped"};
  }

  std::string mechanism() const override {
    return child_ ? "kill(2) on the target's oldest child process at a set time" : "kill(2) on the target's pid at a set time";
  }
  nlohmann::json params() const override { return opts_.to_json(); }

 private:
  // The target's child with the lowest pid (the first worker it forked), 0 when it has none.
  pid_t oldest_child() const {
    pid_t best = 0;
    for (pid_t p : processes_ ? processes_() : process_tree(pid_))
      if (const auto h = stat_head(p); p != pid_ && h && h->ppid == pid_ && h->state != 'Z' && (!best || p < best))
        best = p;
    return best;
  }

  option_values opts_;
  int64_t at_ns_;
  int signal_;
  bool child_;
  std::function<std::vector<pid_t>()> processes_;
  pid_t sent_to_ = 0;
  pid_t pid_ = -1;
  int64_t t0_ = 0, sent_at_ns_ = 0;
  std::string result_;
  std::mutex mu_;
  scheduled schedule_;
};

}  // namespace

const option_table& pause_options() {
  static const option_table t = {
      {.name = "period", .type = opt_type::duration, .default_text = "\"1s\"",
       .help = "a pause starts this often (the first at the start of the phase)", .min = 1e6, .max = 3600e9},
      {.name = "pause_for", .type = opt_type::duration, .default_text = "",
       .help = "how long the target stays stopped (SIGSTOP) each time", .min = 1e5, .max = 3600e9,
       .required = true},
  };
  return t;
}

void check_pause(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  if (v.has("pause_for") && v.duration_ns("pause_for") >= v.duration_ns("period"))
    diags.add(v.where("pause_for"), fmt::format("'pause_for' in {} ({}) must be shorter than 'period' ({}), or the "
                                                "target never runs",
                                                ctx.section, v.text("pause_for"), v.text("period")));
}

std::unique_ptr<injector> make_pause(const option_values& v) { return std::make_unique<pause_injector>(v); }

const option_table& kill_options() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> out;
    for (const auto& [n, s] : signal_names) out.push_back(n);
    return out;
  }();
  static const option_table t = {
      {.name = "at", .type = opt_type::duration, .default_text = "\"0s\"",
       .help = "when, counted from the start of the phase", .min = 0, .max = 3600e9},
      {.name = "signal", .type = opt_type::string, .default_text = "\"SIGKILL\"",
       .help = "the signal sent to the target", .allowed = names},
      {.name = "process", .type = opt_type::string, .default_text = "\"main\"",
       .help = "which process: main (the one that serves: the target dies) or child (its oldest child process, a "
               "pre-forked worker or backend: a crash inside the target, which a check must expect)",
       .allowed = {"main", "child"}},
  };
  return t;
}

std::unique_ptr<injector> make_kill(const option_values& v) { return std::make_unique<kill_injector>(v); }

}  // namespace rig
