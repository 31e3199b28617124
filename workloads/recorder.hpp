#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/histogram.hpp"

namespace rig {

// The most phases a scenario may have: each phase's start and end are kept in the run clock so
// a request is counted in the phase it was due in, however late it ends.
constexpr int max_phases = 1000;

// The part of the run clock that changes during the run. It may live in memory shared with a
// helper process (a workload run inside the target's cgroup), so its atomics must be lock-free.
struct clock_cell {
  std::atomic<int> phase{-1};
  std::atomic<int64_t> phase_start_ns{0};
  std::atomic<int> started{0};  // phases begun so far
  std::atomic<bool> over{false};  // the last phase is over: what happens now is rig's teardown
  // Each begun phase's window [begin, end) on the monotonic clock; end 0 while it runs.
  std::atomic<int64_t> begin_ns[max_phases]{};
  std::atomic<int64_t> end_ns[max_phases]{};
};
static_assert(std::atomic<int>::is_always_lock_free && std::atomic<int64_t>::is_always_lock_free);

// Which phase is running. -1 between phases (injectors being applied or reverted):
// samples then are counted apart, not in any phase.
struct run_clock {
  run_clock() : run_clock(own_) {}
  explicit run_clock(clock_cell& cell) : phase(cell.phase), phase_start_ns(cell.phase_start_ns), cell_(cell) {}
  run_clock(const run_clock&) = delete;
  run_clock& operator=(const run_clock&) = delete;

 private:
  clock_cell own_;  // unused when the cell is shared

 public:
  int64_t start_ns = 0;
  std::atomic<int>& phase;
  std::atomic<int64_t>& phase_start_ns;  // set before `phase`
  std::vector<int64_t> phase_ns;         // each phase's planned length, fixed before the run
  // How far into its phase `t_ns` is and how long that phase lasts; {0, 0} between phases. The
  // phase is the one whose window holds t_ns, not the one running: a schedule computed late (its
  // connection held by a slow reply past the phase's end) keeps the rate of the time it is for.
  std::pair<int64_t, int64_t> in_phase(int64_t t_ns) const;
  // The rig's side: phase p runs from now (t_ns), and p ended at t_ns.
  void begin_phase(int p, int64_t t_ns);
  void end_phase(int64_t t_ns);
  // The run's phases are over; the workloads, proxy and target are being stopped.
  void end_run() { cell_.over.store(true, std::memory_order_release); }
  bool run_over() const { return cell_.over.load(std::memory_order_acquire); }
  // The phase whose window holds t_ns (-1: none, between phases or before the first).
  int phase_at(int64_t t_ns) const;
  // When the latest phase begun ended (0: it runs, or none began).
  int64_t last_end() const {
    const int n = cell_.started.load(std::memory_order_acquire);
    return n > 0 ? end_of(n - 1) : 0;
  }
  // When phase p ended (0: it has not, or never began).
  int64_t end_of(int p) const {
    return p >= 0 && p < max_phases ? cell_.end_ns[p].load(std::memory_order_acquire) : 0;
  }

 private:
  clock_cell& cell_;
};

// A clock_cell in a memfd: the controller's run clock uses it, and a helper process maps the
// same file (fd passed at spawn) so its samples change phase at the same instant.
class shared_clock_cell {
 public:
  static shared_clock_cell create();
  static shared_clock_cell attach(int fd);  // takes ownership of fd
  shared_clock_cell(shared_clock_cell&&) noexcept;
  shared_clock_cell& operator=(shared_clock_cell&&) = delete;
  ~shared_clock_cell();
  clock_cell& cell() { return *cell_; }
  int fd() const { return fd_; }

 private:
  shared_clock_cell(int fd, clock_cell* cell) : fd_(fd), cell_(cell) {}
  int fd_ = -1;
  clock_cell* cell_ = nullptr;
};

// read/write: other I/O failures; reset: the peer reset the connection (RST); closed: the
// peer closed it mid-request (EOF); status_4xx/5xx: an HTTP reply saying the request failed.
enum class error_kind {
  connect, timeout, read, write, reset, closed, rejected, protocol, status_4xx, status_5xx, error_reply, bad_reply
};
constexpr size_t error_kind_count = 12;
const char* error_kind_name(error_kind k);
// The kinds that are replies saying the request failed (a status, an error prefix, a reply not as
// expected), as against a request that got no reply (timeout, reset, ...) or a rejection.
bool is_error_reply(error_kind k);

// The names a workload's own tallies (phase_stats::counts) go by, for checks on them
// ("capped.mem.counts.helper_died == 1"): the memory workload's page faults and bytes, and a
// helper process that died in the phase.
inline const std::vector<std::string>& workload_count_names() {
  static const std::vector<std::string> v = {"minor_faults", "major_faults", "bytes_allocated", "helper_died"};
  return v;
}

// A send later than this after the op was allowed to go is the generator's own lateness, not the
// target's, and more than 1% of ops that late says the generator limited the phase. Below it is
// the noise of timers and scheduling on a shared 2-vCPU VM. Measured 2026-12-05, http-ramp.toml
// (500/s rising to 4000/s, 4 s, the offered rate met within 4%): with a 1 ms bound 0.2-2.1% of
// sends were late and 7 of 10 phases said "generator limited"; with 10 ms, 0-0.22% and none.
constexpr int64_t generator_late_ns = 10'000'000;

struct phase_stats {
  histogram latency;   // from intended send time (coordinated omission corrected): successful replies
  histogram service;   // from actual send
  histogram send_lag;  // actual send - intended send
  // Every request has an outcome and a latency (from the intended send time): replies that were
  // errors (a status, an error prefix, a bad reply), rejections, and all requests sent whatever
  // their end (a timeout at the timeout, a reset when it came).
  histogram error_latency, rejected_latency, all_latency;
  uint64_t ops = 0;
  // Requests due in the phase (intended send time in it): each has one outcome, a reply (ops),
  // an error, or at the run's end not_sent (never sent) or unfinished (sent, no reply yet).
  uint64_t due = 0, not_sent = 0, unfinished = 0;
  // Successful replies that arrived while the phase ran, whichever phase they were due in: the
  // rate the target delivered (throughput), as against ops, the phase's own requests answered.
  uint64_t replies_in_phase = 0;
  uint64_t late_sends = 0;  // sent > generator_late_ns after the op was allowed to go
  std::array<uint64_t, error_kind_count> errors{};
  std::array<uint64_t, 6> status_classes{};  // replies by status class (HTTP): [2] counts 2xx
  std::map<std::string, uint64_t> counts;      // a workload's own tallies (memory: page faults), summed
  void merge(const phase_stats& o);
  uint64_t error_total() const;
  bool empty() const {  // nothing recorded
    return ops == 0 && due == 0 && replies_in_phase == 0 && error_total() == 0 && counts.empty();
  }
  // Lossless, for a helper process handing its figures to the rig.
  nlohmann::json to_wire() const;
  static phase_stats from_wire(const nlohmann::json& j);
};

// One second of one workload, merged over its threads.
struct window_row {
  std::string workload;
  int64_t index = 0;  // seconds since run start
  uint64_t ops = 0, errors = 0;
  double p50_us = 0, p99_us = 0, p999_us = 0;
  std::string hdr;  // the second's latency histogram, HdrHistogram's compressed V2 in base64 (ns)
  double max_us = 0;
  nlohmann::json to_wire() const;
  static window_row from_wire(const nlohmann::json& j);
};

// Collects per-thread windows as they complete and summarizes each second once every
// thread has had its chance to hand it in.
class window_sink {
 public:
  struct window {
    int64_t index = 0;
    uint64_t ops = 0, errors = 0;
    histogram latency;
  };
  void submit(const std::string& workload, std::unique_ptr<window> w);
  // Summarizes windows with index < before (all when before is INT64_MAX).
  void finalize(int64_t before);
  std::vector<window_row> rows() const;
  // One workload's finalized rows from second `index` on.
  std::vector<window_row> rows_from(const std::string& workload, int64_t index) const;
  // A row summarized elsewhere (a helper process's own sink), taken as it is.
  void add_row(const window_row& r);
  // The latest finalized row per workload, for progress lines.
  std::vector<window_row> latest() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int64_t>, std::unique_ptr<window>> open_;
  std::map<std::pair<std::string, int64_t>, window_row> done_;
};

// Owned by one workload thread: no locks on the request path; phases allocated once.
class thread_recorder {
 public:
  thread_recorder(const run_clock& clock, window_sink& sink, std::string workload);
  // generator_lag_ns: how late the send was after the op was allowed to go (generator_lag_ns()).
  // status: the reply's status code (0: none), counted by class in the same phase as the op, so a phase
  // ending between the two cannot split them.
  void record(int64_t intended_ns, int64_t sent_ns, int64_t done_ns, int64_t generator_lag_ns = 0, int status = 0);
  // intended_ns: when the request was meant to go (-1: none was sent, e.g. a failed connect), so
  // the failure's latency is recorded by its outcome.
  void error(error_kind k, int64_t now_ns, int status = 0, int64_t intended_ns = -1);
  // At the run's end, a request due at intended_ns that never got an outcome: sent (unfinished) or not.
  void not_done(int64_t intended_ns, bool sent);
  // Adds to counts[what] of the phase of the open op (hold_from), else of the running phase.
  void count(const char* what, uint64_t n);
  // The earliest intended send time of a request this thread has not finished (taken from the
  // schedule, or sent and waiting), INT64_MAX when none: the phases ending after it stay open
  // (their figures not handed in) until it ends. Set before tick() by a workload that keeps
  // requests open across ticks; without it a phase is handed in when the clock leaves it.
  void hold_from(int64_t intended_ns) { hold_ns_ = intended_ns; }
  // Requests recorded in a phase after the workload's hold let it go (should be 0).
  uint64_t late_for_phase() const { return late_for_phase_; }
  void tick(int64_t now_ns);  // hands in the current window once its second is over, and a phase left
  void flush();
  // The phases not handed in (the running one; after the thread stops, whatever it never left).
  const std::vector<std::unique_ptr<phase_stats>>& phases() const { return phases_; }
  uint64_t between_phases() const { return between_phases_; }
  const run_clock& clock() const { return clock_; }

  // Once the thread sees the clock leave a phase (on its next sample or tick: workload threads
  // tick at least every 10 ms), it moves that phase's figures out of phases() to be taken, from
  // any thread, with take_handed_in(). So the rig can summarize a phase soon after it ends and
  // let its histograms go: a long run's memory does not grow with its phases.
  std::vector<std::pair<int, std::unique_ptr<phase_stats>>> take_handed_in();
  // The thread is past every phase below this one: it will record nothing more in them, and
  // what it recorded there has been handed in. Read it before take_handed_in().
  int past_below() const { return past_below_.load(std::memory_order_acquire); }

 private:
  phase_stats* current_phase();
  phase_stats* phase_slot(int p);
  phase_stats* due_phase(int64_t intended_ns);
  void hand_in_past();
  void roll(int64_t now_ns);
  // The running phase is now `p`; the one the thread was in is handed in.
  void notice_phase(int p) {
    if (p != seen_phase_) [[unlikely]] hand_in_left_phase(p);
  }
  void hand_in_left_phase(int now_phase);

  const run_clock& clock_;
  window_sink& sink_;
  std::string workload_;
  std::vector<std::unique_ptr<phase_stats>> phases_;
  std::unique_ptr<window_sink::window> window_;
  uint64_t between_phases_ = 0;
  uint64_t late_for_phase_ = 0;
  int64_t hold_ns_ = INT64_MAX;
  int clock_past_ = 0;  // the phases below it the clock has left
  int seen_phase_ = -1;
  std::atomic<int> past_below_{0};
  std::mutex handed_mu_;
  std::vector<std::pair<int, std::unique_ptr<phase_stats>>> handed_;
};

// What a workload's threads handed in since the last take: pieces (per thread and phase), and
// the phase index below which every thread is past (no piece of those phases is still to come).
struct finished_phases {
  std::vector<std::pair<int, phase_stats>> pieces;
  int complete_below = 0;
};
finished_phases take_finished(const std::vector<thread_recorder*>& recorders);
template <typename Workers>
finished_phases take_finished_of(const Workers& workers) {
  std::vector<thread_recorder*> recs;
  for (const auto& w : workers) recs.push_back(w->rec.get());
  return take_finished(recs);
}

// The rig's side: pieces of a workload's phases, merged until every thread is past the phase,
// then handed over whole, once.
class phase_assembler {
 public:
  // Adds what the workload handed in; returns the phases it completed, by index, in order (a
  // phase in which no thread recorded anything comes as zeros).
  std::vector<std::pair<int, phase_stats>> add(finished_phases f);
  // After the workload stopped: `rest` (its results(), what no thread handed in) merged with
  // the pieces still held; every phase not handed over yet, through `phases` at least.
  std::vector<std::pair<int, phase_stats>> finish(std::vector<phase_stats> rest, int phases = 0);

 private:
  std::vector<std::pair<int, phase_stats>> hand_over_below(int end);
  std::map<int, phase_stats> pending_;
  int next_ = 0;  // the phases below it have been handed over
};

// Per phase index, merged over the recorders of a workload's threads.
std::vector<phase_stats> merge_phases(const std::vector<const thread_recorder*>& recorders);
// The same over a workload's workers (anything holding a `rec`).
template <typename Workers>
std::vector<phase_stats> merge_phases_of(const Workers& workers) {
  std::vector<const thread_recorder*> recs;
  for (const auto& w : workers) recs.push_back(w->rec.get());
  return merge_phases(recs);
}

}  // namespace rig
