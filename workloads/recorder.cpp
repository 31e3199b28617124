#include "workloads/recorder.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <new>
#include <nlohmann/json.hpp>

#include "core/hdr_codec.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"

namespace rig {

const char* error_kind_name(error_kind k) {
  switch (k) {
    case error_kind::connect: return "connect";
    case error_kind::timeout: return "timeout";
    case error_kind::read: return "read";
    case error_kind::write: return "write";
    case error_kind::reset: return "reset";
    case error_kind::closed: return "closed";
    case error_kind::rejected: return "rejected";
    case error_kind::protocol: return "protocol";
    case error_kind::status_4xx: return "status_4xx";
    case error_kind::status_5xx: return "status_5xx";
    case error_kind::error_reply: return "error_reply";
    case error_kind::bad_reply: return "bad_reply";
  }
  return "?";
}

void phase_stats::merge(const phase_stats& o) {
  latency.merge(o.latency);
  service.merge(o.service);
  send_lag.merge(o.send_lag);
  error_latency.merge(o.error_latency);
  rejected_latency.merge(o.rejected_latency);
  all_latency.merge(o.all_latency);
  ops += o.ops;
  due += o.due;
  replies_in_phase += o.replies_in_phase;
  not_sent += o.not_sent;
  unfinished += o.unfinished;
  late_sends += o.late_sends;
  for (size_t i = 0; i < errors.size(); ++i) errors[i] += o.errors[i];
  for (size_t i = 0; i < status_classes.size(); ++i) status_classes[i] += o.status_classes[i];
  for (const auto& [k, n] : o.counts) counts[k] += n;
}

uint64_t phase_stats::error_total() const {
  uint64_t n = 0;
  for (auto e : errors) n += e;
  return n;
}

void window_sink::submit(const std::string& workload, std::unique_ptr<window> w) {
  std::lock_guard lk(mu_);
  const auto key = std::make_pair(workload, w->index);
  if (auto d = done_.find(key); d != done_.end()) {
    // Handed in after its second was summarized: counts still add up, percentiles stay.
    d->second.ops += w->ops;
    d->second.errors += w->errors;
    return;
  }
  auto& slot = open_[key];
  if (!slot) {
    slot = std::move(w);
  } else {
    slot->ops += w->ops;
    slot->errors += w->errors;
    slot->latency.merge(w->latency);
  }
}

void window_sink::finalize(int64_t before) {
  // The rows are made under the lock with their counts (a window handed in late still adds to
  // them); the percentiles and the encoded histogram are worked out after it, so the workload
  // threads handing in their windows do not wait on a compression.
  std::vector<std::pair<std::pair<std::string, int64_t>, std::unique_ptr<window>>> ready;
  {
    std::lock_guard lk(mu_);
    for (auto it = open_.begin(); it != open_.end();) {
      if (it->first.second >= before) {
        ++it;
        continue;
      }
      const auto& w = *it->second;
      done_[it->first] = window_row{it->first.first, w.index, w.ops, w.errors};
      ready.emplace_back(it->first, std::move(it->second));
      it = open_.erase(it);
    }
  }
  for (const auto& [key, w] : ready) {
    const double p50 = double(w->latency.percentile(50)) / 1e3, p99 = double(w->latency.percentile(99)) / 1e3,
                 p999 = double(w->latency.percentile(99.9)) / 1e3, max = double(w->latency.max()) / 1e3;
    std::string hdr = hdr_encode(w->latency);
    std::lock_guard lk(mu_);
    window_row& r = done_[key];
    r.p50_us = p50;
    r.p99_us = p99;
    r.p999_us = p999;
    r.hdr = std::move(hdr);
    r.max_us = max;
  }
}

std::vector<window_row> window_sink::rows() const {
  std::lock_guard lk(mu_);
  std::vector<window_row> out;
  for (const auto& [k, r] : done_) out.push_back(r);
  return out;
}

std::vector<window_row> window_sink::rows_from(const std::string& workload, int64_t index) const {
  std::lock_guard lk(mu_);
  std::vector<window_row> out;
  for (auto it = done_.lower_bound({workload, index}); it != done_.end() && it->first.first == workload; ++it)
    out.push_back(it->second);
  return out;
}

std::vector<window_row> window_sink::latest() const {
  std::lock_guard lk(mu_);
  std::map<std::string, window_row> last;
  for (const auto& [k, r] : done_) last[k.first] = r;
  std::vector<window_row> out;
  for (auto& [k, r] : last) out.push_back(r);
  return out;
}

void run_clock::begin_phase(int p, int64_t t_ns) {
  if (p >= 0 && p < max_phases) {
    cell_.begin_ns[p].store(t_ns, std::memory_order_relaxed);
    cell_.end_ns[p].store(0, std::memory_order_relaxed);
    cell_.started.store(p + 1, std::memory_order_release);
  }
  phase_start_ns.store(t_ns, std::memory_order_relaxed);
  phase.store(p, std::memory_order_release);
}

void run_clock::end_phase(int64_t t_ns) {
  const int p = phase.load(std::memory_order_relaxed);
  if (p >= 0 && p < max_phases) cell_.end_ns[p].store(t_ns, std::memory_order_release);
  phase.store(-1, std::memory_order_release);
}

std::pair<int64_t, int64_t> run_clock::in_phase(int64_t t_ns) const {
  const int p = phase_at(t_ns);
  if (p < 0) return {0, 0};
  const int64_t len = size_t(p) < phase_ns.size() ? phase_ns[size_t(p)] : 0;
  // A bare clock keeps no windows: the running phase's start.
  const int64_t begin = p < cell_.started.load(std::memory_order_acquire)
                            ? cell_.begin_ns[p].load(std::memory_order_relaxed)
                            : phase_start_ns.load(std::memory_order_relaxed);
  const int64_t in = t_ns - begin;
  return {in > 0 ? in : 0, len};
}

int run_clock::phase_at(int64_t t_ns) const {
  const int started = cell_.started.load(std::memory_order_acquire);
  if (started == 0) return phase.load(std::memory_order_acquire);  // no windows kept (a bare clock): the running one
  // The latest phases first: a request is nearly always due in the running phase or the one before.
  for (int p = started - 1; p >= 0; --p) {
    const int64_t b = cell_.begin_ns[p].load(std::memory_order_relaxed);
    if (t_ns < b) continue;
    const int64_t e = cell_.end_ns[p].load(std::memory_order_acquire);
    return e == 0 || t_ns < e ? p : -1;  // past its end and before the next began: between phases
  }
  return -1;
}

thread_recorder::thread_recorder(const run_clock& clock, window_sink& sink, std::string workload)
    : clock_(clock), sink_(sink), workload_(std::move(workload)) {}

phase_stats* thread_recorder::current_phase() {
  const int p = clock_.phase.load(std::memory_order_relaxed);
  notice_phase(p);
  return phase_slot(p);
}

phase_stats* thread_recorder::phase_slot(int p) {
  if (p < 0) return nullptr;
  if (size_t(p) >= phases_.size()) phases_.resize(size_t(p) + 1);
  if (!phases_[size_t(p)]) [[unlikely]] phases_[size_t(p)] = std::make_unique<phase_stats>();
  return phases_[size_t(p)].get();
}

// A request's figures go to the phase it was due in (its intended send time), however late it
// ended. The caller has noticed the running phase (current_phase(), notice_phase()).
phase_stats* thread_recorder::due_phase(int64_t intended_ns) {
  const int p = clock_.phase_at(intended_ns);
  if (p >= 0 && p < past_below_.load(std::memory_order_relaxed)) [[unlikely]] {
    ++late_for_phase_;  // the workload said nothing was open there: its hold was wrong. Not lost: said.
  }
  return phase_slot(p);
}

void thread_recorder::roll(int64_t now_ns) {
  const int64_t index = (now_ns - clock_.start_ns) / ns_per_s;
  if (window_ && window_->index == index) return;
  if (window_) sink_.submit(workload_, std::move(window_));
  window_ = std::make_unique<window_sink::window>();
  window_->index = index;
}

namespace {
void count_status(phase_stats& p, int code) {
  if (code >= 100 && code < 600) ++p.status_classes[size_t(code / 100)];
}
}  // namespace

void thread_recorder::record(int64_t intended_ns, int64_t sent_ns, int64_t done_ns, int64_t generator_lag_ns,
                             int status) {
  roll(done_ns);
  ++window_->ops;
  window_->latency.record(done_ns - intended_ns);
  if (phase_stats* now = current_phase()) ++now->replies_in_phase;
  phase_stats* p = due_phase(intended_ns);
  if (!p) {
    ++between_phases_;
    return;
  }
  ++p->due;
  ++p->ops;
  count_status(*p, status);
  p->latency.record(done_ns - intended_ns);
  p->all_latency.record(done_ns - intended_ns);
  p->service.record(done_ns - sent_ns);
  if (sent_ns > intended_ns) p->send_lag.record(sent_ns - intended_ns);  // closed loop: no lag to record
  if (generator_lag_ns > generator_late_ns) ++p->late_sends;
}

bool is_error_reply(error_kind k) {
  return k == error_kind::status_4xx || k == error_kind::status_5xx || k == error_kind::error_reply ||
         k == error_kind::bad_reply || k == error_kind::protocol;
}

void thread_recorder::error(error_kind k, int64_t now_ns, int status, int64_t intended_ns) {
  // After the last phase rig stops the proxy and the target: a connection that fails then was
  // failed by that, not by the target. The request is unfinished (sent, no answer in the run).
  if (intended_ns >= 0 && !is_error_reply(k) && k != error_kind::rejected && clock_.run_over()) {
    not_done(intended_ns, true);
    return;
  }
  roll(now_ns);
  ++window_->errors;
  notice_phase(clock_.phase.load(std::memory_order_relaxed));
  if (phase_stats* p = intended_ns >= 0 ? due_phase(intended_ns) : phase_slot(seen_phase_)) {
    ++p->errors[size_t(k)];
    count_status(*p, status);
    if (intended_ns >= 0) {
      ++p->due;
      const int64_t took = now_ns - intended_ns;
      p->all_latency.record(took);
      if (k == error_kind::rejected) p->rejected_latency.record(took);
      else if (is_error_reply(k)) p->error_latency.record(took);
    }
  }
}

void thread_recorder::not_done(int64_t intended_ns, bool sent) {
  notice_phase(clock_.phase.load(std::memory_order_relaxed));
  if (phase_stats* p = due_phase(intended_ns)) {
    ++p->due;
    ++(sent ? p->unfinished : p->not_sent);
  } else {
    ++between_phases_;
  }
}

void thread_recorder::count(const char* what, uint64_t n) {
  // With the op of a one-at-a-time thread open (its hold), its tallies go with it to its phase.
  phase_stats* now = current_phase();
  if (phase_stats* p = hold_ns_ != INT64_MAX ? due_phase(hold_ns_) : now) p->counts[what] += n;
}

void thread_recorder::hand_in_left_phase(int now_phase) {
  const int left = std::exchange(seen_phase_, now_phase);
  // Phases only go forward: past the one left, and past all before the one now running.
  if (left + 1 > clock_past_) clock_past_ = left + 1;
  if (now_phase > clock_past_) clock_past_ = now_phase;
  hand_in_past();
}

// The phases this thread is past: the clock has left them and no request due in them is still
// open (the workload's hold is after their end). Their figures are handed in; stored after the
// hand-in, so whoever reads past_below() finds those phases' pieces to take.
void thread_recorder::hand_in_past() {
  int past = past_below_.load(std::memory_order_relaxed);
  while (past < clock_past_) {
    const int64_t end = clock_.end_of(past);
    // A phase whose end the clock did not keep (a bare clock, or past max_phases): the clock's word.
    if (end != 0 && hold_ns_ < end) break;
    ++past;
  }
  std::lock_guard lk(handed_mu_);
  for (int q = 0; q < past && size_t(q) < phases_.size(); ++q)
    if (phases_[size_t(q)]) handed_.emplace_back(q, std::move(phases_[size_t(q)]));
  if (past > past_below_.load(std::memory_order_relaxed)) past_below_.store(past, std::memory_order_release);
}

std::vector<std::pair<int, std::unique_ptr<phase_stats>>> thread_recorder::take_handed_in() {
  std::lock_guard lk(handed_mu_);
  return std::exchange(handed_, {});
}

void thread_recorder::tick(int64_t now_ns) {
  notice_phase(clock_.phase.load(std::memory_order_relaxed));
  hand_in_past();
  if (window_ && (now_ns - clock_.start_ns) / ns_per_s != window_->index) sink_.submit(workload_, std::move(window_));
}

void thread_recorder::flush() {
  if (window_) sink_.submit(workload_, std::move(window_));
}

std::vector<phase_stats> merge_phases(const std::vector<const thread_recorder*>& recorders) {
  std::vector<phase_stats> out;
  for (const auto* r : recorders) {
    const auto& phases = r->phases();
    if (out.size() < phases.size()) out.resize(phases.size());
    for (size_t i = 0; i < phases.size(); ++i)
      if (phases[i]) out[i].merge(*phases[i]);  // out's histograms start compact and stay so
  }
  return out;
}

finished_phases take_finished(const std::vector<thread_recorder*>& recorders) {
  finished_phases f;
  f.complete_below = INT_MAX;
  for (auto* r : recorders) f.complete_below = std::min(f.complete_below, r->past_below());  // before the take
  if (recorders.empty()) f.complete_below = 0;
  for (auto* r : recorders)
    for (auto& [p, s] : r->take_handed_in()) f.pieces.emplace_back(p, std::move(*s));
  return f;
}

std::vector<std::pair<int, phase_stats>> phase_assembler::add(finished_phases f) {
  for (auto& [p, s] : f.pieces) pending_[p].merge(s);
  return hand_over_below(f.complete_below);
}

std::vector<std::pair<int, phase_stats>> phase_assembler::finish(std::vector<phase_stats> rest, int phases) {
  for (size_t p = 0; p < rest.size(); ++p)
    if (!rest[p].empty()) pending_[int(p)].merge(rest[p]);  // a phase a thread never recorded in is a gap there
  return hand_over_below(std::max(phases, pending_.empty() ? 0 : pending_.rbegin()->first + 1));
}

std::vector<std::pair<int, phase_stats>> phase_assembler::hand_over_below(int end) {
  std::vector<std::pair<int, phase_stats>> done;
  for (; next_ < end; ++next_) {  // whole now; zeros where no thread recorded anything
    auto node = pending_.extract(next_);
    done.emplace_back(next_, node ? std::move(node.mapped()) : phase_stats{});
  }
  return done;
}

shared_clock_cell shared_clock_cell::create() {
  const int fd = ::memfd_create("rig-clock", MFD_CLOEXEC);
  throw_system_error_on(fd < 0, "memfd_create for the run clock");
  if (::ftruncate(fd, sizeof(clock_cell)) != 0) {
    const int err = errno;
    ::close(fd);
    throw_system_error("sizing the run clock's memfd", err);
  }
  shared_clock_cell c = attach(fd);
  new (c.cell_) clock_cell();
  return c;
}

shared_clock_cell shared_clock_cell::attach(int fd) {
  void* p = ::mmap(nullptr, sizeof(clock_cell), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    ::close(fd);
    throw_system_error("mapping the run clock", err);
  }
  return shared_clock_cell(fd, static_cast<clock_cell*>(p));
}

shared_clock_cell::shared_clock_cell(shared_clock_cell&& o) noexcept : fd_(o.fd_), cell_(o.cell_) {
  o.fd_ = -1;
  o.cell_ = nullptr;
}

shared_clock_cell::~shared_clock_cell() {
  if (cell_) ::munmap(cell_, sizeof(clock_cell));
  if (fd_ >= 0) ::close(fd_);
}

nlohmann::json phase_stats::to_wire() const {
  return {{"latency", latency.to_wire()}, {"service", service.to_wire()}, {"send_lag", send_lag.to_wire()},
          {"error_latency", error_latency.to_wire()}, {"rejected_latency", rejected_latency.to_wire()},
          {"all_latency", all_latency.to_wire()},
          {"ops", ops},  {"due", due}, {"replies_in_phase", replies_in_phase}, {"not_sent", not_sent}, {"unfinished", unfinished}, {"late_sends", late_sends}, {"errors", errors}, {"status_classes", status_classes},
          {"counts", counts}};
}

phase_stats phase_stats::from_wire(const nlohmann::json& j) {
  phase_stats s;
  s.latency = histogram::from_wire(j.at("latency"));
  s.service = histogram::from_wire(j.at("service"));
  s.send_lag = histogram::from_wire(j.at("send_lag"));
  s.error_latency = histogram::from_wire(j.at("error_latency"));
  s.rejected_latency = histogram::from_wire(j.at("rejected_latency"));
  s.all_latency = histogram::from_wire(j.at("all_latency"));
  s.ops = j.at("ops").get<uint64_t>();
  s.due = j.at("due").get<uint64_t>();
  s.replies_in_phase = j.at("replies_in_phase").get<uint64_t>();
  s.not_sent = j.at("not_sent").get<uint64_t>();
  s.unfinished = j.at("unfinished").get<uint64_t>();
  s.late_sends = j.at("late_sends").get<uint64_t>();
  s.errors = j.at("errors").get<decltype(s.errors)>();
  s.status_classes = j.at("status_classes").get<decltype(s.status_classes)>();
  s.counts = j.at("counts").get<decltype(s.counts)>();
  return s;
}

nlohmann::json window_row::to_wire() const {
  return {{"workload", workload}, {"index", index}, {"ops", ops}, {"errors", errors}, {"p50_us", p50_us},
          {"p99_us", p99_us}, {"p999_us", p999_us}, {"hdr", hdr}, {"max_us", max_us}};
}

window_row window_row::from_wire(const nlohmann::json& j) {
  return {j.at("workload").get<std::string>(), j.at("index").get<int64_t>(), j.at("ops").get<uint64_t>(),
          j.at("errors").get<uint64_t>(),      j.at("p50_us").get<double>(), j.at("p99_us").get<double>(),
          j.at("p999_us").get<double>(),      j.value("hdr", ""),         j.value("max_us", 0.0)};
}

void window_sink::add_row(const window_row& r) {
  std::lock_guard lk(mu_);
  done_[{r.workload, r.index}] = r;
}

}  // namespace rig
