#include "injectors/failpoint_injector.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/failpoint_channel.hpp"
#include "core/proc.hpp"
#include "core/units.hpp"

namespace rig {

namespace {

const std::vector<std::string_view> actions = {"throw", "error", "delay", "abort"};

// How long apply() waits for the target's first process to connect.
constexpr int connect_wait_ms = 3000;

// The library's spec: "ACTION p=P count=N seed=S [delay=Dns] [errno=E]" ("off" alone).
std::string spec_text(const std::string& action, double probability, int64_t count, int64_t delay_ns,
                      const std::string& error, uint64_t seed) {
  if (action == "off") return action;
  std::string s = fmt::format("{} p={:.17g} count={} seed={}", action, probability, count, seed);
  if (action == "delay") s += fmt::format(" delay={}ns", delay_ns);
  if (action == "error") s += " errno=" + error;
  return s;
}

class failpoint_injector final : public injector {
 public:
  explicit failpoint_injector(const option_values& v)
      : opts_(v), name_(v.str("failpoint")) {}

  probe_result probe(const run_context& ctx) override {
    if (auto p = needs_started_target(ctx, "rig cannot give it the failpoint channel")) return *p;
    if (!ctx.failpoints) return {false, "no failpoint channel: " + ctx.failpoints_missing};
    return {};
  }

  void apply(run_context& ctx) override {
    channel_ = ctx.failpoints;
    // The run's seed: the n-th hit since this set fires by the n-th draw of (seed, failpoint).
    seed_ = ctx.seed;
    spec_ = spec_text(opts_.str("action"), opts_.real("probability"), opts_.integer("count"),
                      opts_.duration_ns("delay"), opts_.str("error"), seed_);
    if (channel_->await_processes(connect_wait_ms) == 0)
      throw std::runtime_error(fmt::format(
          "failpoint {}: the target did not connect to rig's failpoint channel within {} s; a command target "
          "must link rig's failpoint library (librig_failpoint.so beside the rig binary, or the static "
          "rig_failpoint) and keep RIG_FAILPOINT_SOCKET in its environment",
          name_, connect_wait_ms / 1000));
    // What the target had (its RIG_FAILPOINTS start configuration, or off), restored by revert.
    const auto before = channel_->stats();
    if (auto it = before.find(name_); it != before.end()) prior_ = it->second;
    applied_ = true;
    armed_.clear();
    for (const auto& r : channel_->request("set " + name_ + " " + spec_)) {
      armed_.push_back(r.pid);  // even one that refused: revert asks it too
      if (!r.ok) throw std::runtime_error(fmt::format("failpoint {} in process {}: {}", name_, r.pid, r.text));
    }
    at_apply_ = channel_->stats()[name_];
    from_ = at_apply_;
  }

  void phase_starts(run_context&) override {
    if (applied_) from_ = channel_->stats()[name_];
  }

  verification verify(run_context&) override {
    verification v;
    const size_t processes = channel_->processes();
    const auto& s = at_apply_;
    v.ok = processes > 0 && s.action == opts_.str("action") && s.probability == opts_.real("probability") &&
           s.count == opts_.integer("count") && s.seed == seed_;
    v.text = fmt::format("{}: {} read back from {} process{} of the target", name_, what(s), processes,
                         processes == 1 ? "" : "es");
    if (!v.ok) v.text += fmt::format(" (asked: {})", spec_);
    v.measured = {{"processes", processes}, {"action", s.action}, {"probability", s.probability}, {"seed", s.seed}};
    return v;
  }

  nlohmann::json measure(run_context&) override {
    const auto now = channel_->stats()[name_];
    const uint64_t hits = now.hits - std::min(now.hits, from_.hits);
    const uint64_t fired = now.fired - std::min(now.fired, from_.fired);
    std::string summary = fmt::format("{}: {} hits, {} fired", name_, format_count(double(hits)), format_count(double(fired)));
    if (hits == 0) summary += " (never reached: the code path did not run in this phase)";
    return {{"hits", hits}, {"fired", fired}, {"processes", channel_->processes()}, {"summary", summary}};
  }

  undo_result revert(run_context&) noexcept override {
    if (!applied_) return {true, "nothing applied"};
    applied_ = false;
    const auto& p = prior_;
    const std::string prior_spec =
        spec_text(p.action, p.probability, p.count, p.delay_ns, std::to_string(p.error), p.seed);
    std::vector<pid_t> put_back, refused;
    try {
      for (const auto& r : channel_->request("set " + name_ + " " + prior_spec, 1000))
        (r.ok ? put_back : refused).push_back(r.pid);
    } catch (...) {
      // The channel failed: every process it armed is judged below by whether it lives.
    }
    // A process it armed that no longer answers on the channel (it closed its descriptors, or
    // stopped reading) may still fire; one that is gone took its failpoints with it.
    std::vector<pid_t> unreached;
    for (pid_t pid : armed_)
      if (std::find(put_back.begin(), put_back.end(), pid) == put_back.end()) {
        const auto head = stat_head(pid);
        if (head && head->state != 'Z' && head->state != 'X') unreached.push_back(pid);
      }
    std::string now = "?";
    try {
      if (!put_back.empty()) now = channel_->stats(1000)[name_].action;
    } catch (...) {
    }
    const bool back = refused.empty() && unreached.empty() && (put_back.empty() || now == p.action);
    undo_result u{back, fmt::format("{}: back to {} in {} process{} (read back: {})", name_, p.action, put_back.size(),
                                    put_back.size() == 1 ? "" : "es", put_back.empty() ? "none answers" : now)};
    if (!refused.empty()) u.text += fmt::format("; refused by process {}", fmt::join(refused, ", "));
    if (!unreached.empty())
      u.text += fmt::format("; armed in process {} that no longer answers on rig's channel: it may still fire there",
                            fmt::join(unreached, ", "));
    armed_.clear();
    return u;
  }

  std::string mechanism() const override {
    return "rig's failpoint library in the target, armed through rig's failpoint channel (a unix socket)";
  }
  nlohmann::json params() const override { return opts_.to_json(); }

 private:
  static std::string what(const failpoint_state& s) {
    std::string t = s.action;
    if (s.action == "off") return t;
    t += fmt::format(" with probability {:g}", s.probability);
    if (s.probability < 1) t += fmt::format(" (seed {})", s.seed);
    if (s.count > 0) t += s.count == 1 ? std::string(", at most once") : fmt::format(", at most {} times", s.count);
    if (s.action == "delay") t += ", " + format_duration_us(double(s.delay_ns) / 1e3) + " each";
    if (s.action == "error") t += fmt::format(", errno {} ({})", s.error, ::strerrorname_np(s.error) ?: "?");
    return t;
  }

  option_values opts_;
  std::string name_, spec_;
  uint64_t seed_ = 0;
  failpoint_channel* channel_ = nullptr;
  failpoint_state prior_, at_apply_;
  failpoint_state from_;  // what measure() counts from: read as the phase's window opens
  std::vector<pid_t> armed_;  // the processes the set reached at apply()
  bool applied_ = false;
};

std::vector<option_spec> failpoint_table(const char* failpoint_default, const char* action_default) {
  return {
      {.name = "failpoint", .type = opt_type::string, .default_text = failpoint_default,
       .help = "the failpoint's name in the target; the built-in target has worker.handle (worker entry), "
               "queue.push, reply.write and wal.fsync"},
      {.name = "action", .type = opt_type::string, .default_text = action_default,
       .help = "throw: a C++ exception (a built-in worker with catch_exceptions = false dies of it); error: the "
               "point returns an errno; delay: it stalls; abort: the process aborts",
       .allowed = actions},
      {.name = "probability", .type = opt_type::real, .default_text = "1.0",
       .help = "the share of hits that fire", .min = 0, .max = 1},
      {.name = "count", .type = opt_type::integer, .default_text = "0",
       .help = "fire at most this many times in the phase; 0: no limit", .min = 0, .max = 1e15},
      {.name = "delay", .type = opt_type::duration, .default_text = "\"0ms\"",
       .help = "action delay: how long each fired hit stalls", .min = 0, .max = 3600e9},
      {.name = "error", .type = opt_type::string, .default_text = "\"EIO\"",
       .help = "action error: the errno the point returns",
       .allowed = {"EIO", "ENOSPC", "ENOMEM", "EAGAIN", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EACCES"}},
  };
}

}  // namespace

const option_table& failpoint_options() {
  static const option_table t = failpoint_table("", "");
  return t;
}

const option_table& threads_options() {
  static const option_table t = failpoint_table("\"worker.handle\"", "\"throw\"");
  return t;
}

void check_failpoint(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  if (!v.has("failpoint") || v.str("failpoint").empty())
    diags.add(ctx.table_pos, "'failpoint' in " + ctx.section + " is missing: name the failpoint to arm");
  else if (v.str("failpoint").size() >= 64 || v.str("failpoint").find_first_of(" \t;=") != std::string::npos)
    diags.add(v.where("failpoint"), "'failpoint' in " + ctx.section + " must be under 64 bytes, without spaces, ';' or '='");
  if (!v.has("action"))
    diags.add(ctx.table_pos, "'action' in " + ctx.section + " is missing: throw, error, delay or abort");
  else if (v.str("action") == "delay" && v.duration_ns("delay") == 0)
    diags.add(v.where("action"), "action delay in " + ctx.section + " needs a delay (e.g. delay = \"20ms\")");
}

std::unique_ptr<injector> make_failpoint(const option_values& v) { return std::make_unique<failpoint_injector>(v); }

}  // namespace rig
