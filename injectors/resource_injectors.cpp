#include "injectors/resource_injectors.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <sstream>
#include <thread>

#include "core/cgroup.hpp"
#include "core/clock.hpp"
#include "core/cpufreq.hpp"
#include "core/host.hpp"
#include "core/proc.hpp"
#include "core/units.hpp"

namespace rig {

namespace {

std::string version_name(cg_version v) { return v == cg_version::v2 ? "cgroup v2" : "cgroup v1"; }

// Injectors that cap the target need it to start inside a cgroup.
const std::string cannot_cap = "rig cannot put it in a cgroup";

std::optional<probe_result> needs_controllers(const run_context& ctx, const std::vector<std::string>& controllers) {
  if (::geteuid() != 0) return probe_result{false, "making cgroups needs root"};
  for (const auto& c : controllers)
    if (!ctx.cgroups || !ctx.cgroups->find(c))
      return probe_result{false, fmt::format("no cgroup '{}' controller on this host (cgroups: {})", c,
                                             ctx.cgroups ? ctx.cgroups->describe() : "not detected")};
  return std::nullopt;
}

}  // namespace

bool memory_via_cgroup(const option_values& v, const cgroup_layout& l) {
  return v.str("via") == "cgroup" || (v.str("via") == "auto" && l.find("memory"));
}

namespace {
// "0-2,5" -> {0, 1, 2, 5}; empty when malformed (the check refuses those before a run).
std::vector<int> cpu_list(const std::string& list) {
  std::vector<int> out;
  std::istringstream in(list);
  for (std::string part; std::getline(in, part, ',');) {
    unsigned a = 0, b = 0;
    char dash = 0;
    std::istringstream p(part);
    if (!(p >> a)) return {};
    b = a;
    if (p >> dash && (dash != '-' || !(p >> b) || b < a)) return {};
    if (b >= 65536) return {};  // beyond any kernel's CPU count (and no list of a billion entries)
    for (unsigned c = a; c <= b; ++c) out.push_back(int(c));
  }
  return out;
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string s;
  for (int c : cpus) s += (s.empty() ? "" : ",") + std::to_string(c);
  return s;
}

}  // namespace

// The CPUs online on this host, from /sys (0..n-1 where it cannot be read).
static std::vector<int> host_cpus() {
  if (auto text = read_text_file("/sys/devices/system/cpu/online")) {
    while (!text->empty() && std::isspace(static_cast<unsigned char>(text->back()))) text->pop_back();
    if (auto l = cpu_list(*text); !l.empty()) return l;
  }
  std::vector<int> all;
  for (int c = 0; c < online_cpus(); ++c) all.push_back(c);
  return all;
}

// 'cpus' (cpu, noise) must be a CPU list of CPUs this host has online: the host decides, so a
// scenario written for a larger machine is refused here before anything runs.
static void check_cpu_list(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  if (!v.has("cpus")) return;
  const auto asked = cpu_list(v.str("cpus"));
  if (asked.empty()) {
    diags.add(v.where("cpus"), fmt::format("'cpus' in {} is \"{}\": expected a CPU list such as \"1\", \"0-1\" or "
                                           "\"0,2\"",
                                           ctx.section, v.str("cpus")));
    return;
  }
  const auto online = host_cpus();
  for (int c : asked)
    if (std::find(online.begin(), online.end(), c) == online.end()) {
      diags.add(v.where("cpus"), fmt::format("'cpus' in {} names CPU {}, but this host has CPUs {} online", ctx.section,
                                             c, cpu_list_text(online)));
      return;
    }
}

int count_cpus(const std::string& list) { return int(cpu_list(list).size()); }

// ---------------------------------------------------------------------------------------
// memory

const option_table& memory_options() {
  static const option_table t = {
      {.name = "limit", .type = opt_type::size, .default_text = "",
       .help = "cap on the target's memory (what the kernel charges it: anonymous memory, page cache, kernel "
               "memory); at the cap it reclaims, then the OOM killer acts",
       .min = 1 << 20, .max = 1e15, .required = true},
      {.name = "swap", .type = opt_type::size, .default_text = "",
       .help = "swap the target may use beyond 'limit' (absent: as the host allows); \"0B\" forbids swapping",
       .min = 0, .max = 1e15},
      {.name = "via", .type = opt_type::string, .default_text = "\"auto\"",
       .help = "cgroup: the memory controller's limit; rlimit: RLIMIT_AS on the target process (allocations fail "
               "instead of an OOM kill); auto: cgroup where the host has a memory controller, else rlimit",
       .allowed = {"auto", "cgroup", "rlimit"}},
  };
  return t;
}

void check_memory(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  if (v.is_set("swap") && v.str("via") == "rlimit")
    diags.add(v.where("swap"), "'swap' in " + ctx.section + " needs via = \"cgroup\": RLIMIT_AS has no swap cap");
}

probe_result probe_memory_host(const host_context&) {
  const auto l = cgroup_layout::detect();
  if (!l.find("memory")) return {true, "no memory controller (cgroups: " + l.describe() + "): RLIMIT_AS only"};
  if (::geteuid() != 0) return {false, "making cgroups needs root"};
  return {true, fmt::format("memory controller ({})", version_name(l.find("memory")->version))};
}

namespace {

class memory_injector final : public injector {
 public:
  explicit memory_injector(const option_values& v)
      : opts_(v), limit_(int64_t(v.bytes("limit"))), via_(v.str("via")) {
    if (v.has("swap")) swap_ = int64_t(v.bytes("swap"));
  }

  probe_result probe(const run_context& ctx) override {
    if (auto p = needs_started_target(ctx, cannot_cap)) return *p;
    if (ctx.cgroups && memory_via_cgroup(opts_, *ctx.cgroups))
      if (auto p = needs_controllers(ctx, {"memory"})) return *p;
    return {};
  }

  void apply(run_context& ctx) override {
    cg_ = ctx.target_cgroup && ctx.target_cgroup->has("memory") ? ctx.target_cgroup : nullptr;
    applied_ = true;
    if (cg_) {
      prior_ = cg_->memory_limit();
      prior_swap_ = cg_->swap_limit();
      at_apply_ = cg_->memory();
      cg_->set_memory_limit(limit_, swap_);
      cg_->reset_memory_peak();
      return;
    }
    if (!ctx.target_pid) throw std::runtime_error("memory via rlimit: the target has no process");
    pid_ = *ctx.target_pid;
    // The soft limit only: raising a hard limit back needs CAP_SYS_RESOURCE, which root in a
    // container may lack, and then the revert could not undo it.
    if (::prlimit(pid_, RLIMIT_AS, nullptr, &prior_rlimit_) != 0)
      throw std::runtime_error(fmt::format("prlimit(RLIMIT_AS) on pid {}: {}", pid_, strerror(errno)));
    if (rlim_t(limit_) > prior_rlimit_.rlim_max)
      throw std::runtime_error(fmt::format("the target's hard RLIMIT_AS is {}, below the asked limit {}",
                                           format_bytes(double(prior_rlimit_.rlim_max)), format_bytes(double(limit_))));
    const rlimit want{rlim_t(limit_), prior_rlimit_.rlim_max};
    if (::prlimit(pid_, RLIMIT_AS, &want, nullptr) != 0)
      throw std::runtime_error(fmt::format("prlimit(RLIMIT_AS) on pid {}: {}", pid_, strerror(errno)));
  }

  verification verify(run_context&) override {
    verification v;
    const int64_t page = ::sysconf(_SC_PAGESIZE);
    const int64_t expect = limit_ / page * page;  // the kernel keeps whole pages
    if (cg_) {
      const auto got = cg_->memory_limit();
      const auto now = cg_->memory();
      v.ok = got == expect && (!swap_ || cg_->swap_limit() == *swap_);
      const bool v2 = cg_->version("memory") == cg_version::v2;
      v.text = fmt::format("{} = {} read back{} ({} {}); the target uses {} now", v2 ? "memory.max" : "memory.limit_in_bytes",
                           got ? format_bytes(double(*got)) : "no limit",
                           swap_ ? fmt::format(", swap {}", format_bytes(double(cg_->swap_limit().value_or(-1)))) : "",
                           version_name(cg_->version("memory")), cg_->path("memory"), format_bytes(double(now.usage_bytes)));
      v.measured = {{"limit_bytes", got.value_or(-1)}, {"usage_bytes", now.usage_bytes}};
      return v;
    }
    rlimit cur{};
    v.ok = ::prlimit(pid_, RLIMIT_AS, nullptr, &cur) == 0 && cur.rlim_cur == rlim_t(limit_);
    v.text = fmt::format("RLIMIT_AS (soft) of pid {} = {} read back", pid_, format_bytes(double(cur.rlim_cur)));
    v.measured = {{"limit_bytes", int64_t(cur.rlim_cur)}};
    return v;
  }

  nlohmann::json measure(run_context&) override {
    if (!cg_) return nlohmann::json::object();
    const auto m = cg_->memory();
    const int64_t hits = m.limit_hits - at_apply_.limit_hits, kills = m.oom_kills - at_apply_.oom_kills;
    const int64_t page = ::sysconf(_SC_PAGESIZE), cap = limit_ / page * page;
    const bool v2 = cg_->version("memory") == cg_version::v2;
    // v1's peak starts again at apply(); v2's runs from the cgroup's start, and its "max" event
    // count is kept.
    const bool reached = hits > 0 || kills > 0 || (!v2 && m.peak_bytes >= cap);
    const auto counted = counted_limit_hits(hits, reached);
    const nlohmann::json limit_hits = counted ? nlohmann::json(*counted) : nlohmann::json();
    const std::string peak = m.peak_bytes < 0 ? ""
                             : fmt::format("peak {}{}", format_bytes(double(m.peak_bytes)),
                                           v2 ? " since the target started" : "");
    std::string summary;
    if (kills > 0)
      summary = fmt::format("the target reached its {} cap and the kernel's OOM killer killed {} process{} ({}{}{} "
                            "left in the cgroup after)",
                            format_bytes(double(limit_)), kills, kills == 1 ? "" : "es", peak, peak.empty() ? "" : "; ",
                            format_bytes(double(m.usage_bytes)));
    else if (reached)
      summary = fmt::format("the target reached its {} cap ({}{}uses {} now){}", format_bytes(double(limit_)), peak,
                            peak.empty() ? "" : ", ", format_bytes(double(m.usage_bytes)),
                            hits > 0 ? fmt::format("; the kernel refused {} charges there", hits) : "");
    else
      summary = fmt::format("the target uses {} of its {} cap{}", format_bytes(double(m.usage_bytes)),
                            format_bytes(double(limit_)), peak.empty() ? "" : " (" + peak + ")");
    return {{"usage_bytes", m.usage_bytes},
            {"peak_bytes", m.peak_bytes < 0 ? nlohmann::json() : nlohmann::json(m.peak_bytes)},
            {"cap_reached", reached},
            {"limit_hits", limit_hits},
            {"oom_kills", kills},
            {"summary", summary}};
  }

  undo_result revert(run_context&) noexcept override {
    if (!applied_) return {true, "nothing applied"};
    applied_ = false;
    const auto shown = [](std::optional<int64_t> b) { return b ? format_bytes(double(*b)) : std::string("no limit"); };
    if (cg_) {
      try {
        cg_->set_memory_limit(prior_, prior_swap_);
        const auto now = cg_->memory_limit();
        const bool back = now == prior_ && (!swap_ || cg_->swap_limit() == prior_swap_);
        return {back, back ? fmt::format("memory cap back to {} (read back)", shown(prior_))
                           : fmt::format("memory cap reads back {}, not {}", shown(now), shown(prior_))};
      } catch (const std::exception& e) {
        return {false, fmt::format("memory cap not put back to {}: {}", shown(prior_), e.what())};
      }
    }
    rlimit now{};
    if (::prlimit(pid_, RLIMIT_AS, &prior_rlimit_, nullptr) != 0 || ::prlimit(pid_, RLIMIT_AS, nullptr, &now) != 0) {
      if (errno == ESRCH) return {true, "the target is gone, and its RLIMIT_AS with it"};
      return {false, fmt::format("RLIMIT_AS of pid {} not put back: {}", pid_, strerror(errno))};
    }
    const bool back = now.rlim_cur == prior_rlimit_.rlim_cur;
    const auto lim = [](rlim_t r) { return r == RLIM_INFINITY ? std::string("unlimited") : format_bytes(double(r)); };
    return {back, fmt::format("RLIMIT_AS (soft) of pid {} reads back {}{}", pid_, lim(now.rlim_cur),
                              back ? " again" : ", not " + lim(prior_rlimit_.rlim_cur))};
  }

  std::string mechanism() const override {
    if (cg_) {
      const bool v2 = cg_->version("memory") == cg_version::v2;
      return fmt::format("{}{} ({})", v2 ? "memory.max" : "memory.limit_in_bytes",
                         swap_ ? (v2 ? " + memory.swap.max" : " + memory.memsw.limit_in_bytes") : "",
                         version_name(cg_->version("memory")));
    }
    return "prlimit RLIMIT_AS (soft limit) on the target: allocations past it fail, no OOM kill";
  }
  nlohmann::json params() const override { return opts_.to_json(); }

 private:

  option_values opts_;
  int64_t limit_;
  std::optional<int64_t> swap_;
  std::string via_;
  bool applied_ = false;
  cgroup* cg_ = nullptr;
  std::optional<int64_t> prior_, prior_swap_;
  memory_figures at_apply_;
  pid_t pid_ = -1;
  rlimit prior_rlimit_{RLIM_INFINITY, RLIM_INFINITY};
};

}  // namespace

std::unique_ptr<injector> make_memory(const option_values& v) { return std::make_unique<memory_injector>(v); }

// ---------------------------------------------------------------------------------------
// cpu

const option_table& cpu_options() {
  static const option_table t = {
      {.name = "scale", .type = opt_type::percent, .default_text = "",
       .help = "the target's CPUs run at this fraction of full speed (cpufreq where the host has it, else a CFS "
               "quota of scale x CPUs per period); \"100%\" with 'cpus' only pins the target",
       .min = 0.01, .max = 1},
      {.name = "frequency", .type = opt_type::string, .default_text = "",
       .help = "cpufreq only: cap the target's CPUs at this clock, e.g. \"1.2GHz\" or \"800MHz\""},
      {.name = "cpus", .type = opt_type::string, .default_text = "",
       .help = "pin the target to these CPUs during the phase, e.g. \"1\" or \"0-1\" (absent: the CPUs it has)"},
      {.name = "period", .type = opt_type::duration, .default_text = "",
       .help = "CFS period of the quota (absent: 10ms, longer where the quota would fall under the kernel's "
               "minimum of 1ms); a request longer than the quota is stretched over periods, as by a slower clock; "
               "periods near the scheduler tick (4ms at HZ=250) are enforced loosely",
       .min = 1e6, .max = 1e9},
  };
  return t;
}

namespace {
// "1.2GHz", "800MHz", "1200000kHz" -> kHz; nullopt when malformed.
std::optional<int64_t> parse_khz(const std::string& text) {
  double v = 0;
  char unit[8] = {};
  if (std::sscanf(text.c_str(), "%lf%7s", &v, unit) != 2 || v <= 0) return std::nullopt;
  const std::string u = unit;
  if (u == "GHz") return std::llround(v * 1e6);
  if (u == "MHz") return std::llround(v * 1e3);
  if (u == "kHz") return std::llround(v);
  return std::nullopt;
}
}  // namespace

void check_cpu(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  if (v.has("scale") == v.has("frequency"))
    diags.add(ctx.table_pos, "cpu in " + ctx.section + " needs one of 'scale' (e.g. \"25%\") or 'frequency' (e.g. "
                                                       "\"1.2GHz\", cpufreq hosts only)");
  if (v.has("frequency") && !parse_khz(v.str("frequency")))
    diags.add(v.where("frequency"), fmt::format("'frequency' in {} is \"{}\": expected a clock such as \"1.2GHz\" or "
                                                "\"800MHz\"",
                                                ctx.section, v.str("frequency")));
  check_cpu_list(v, ctx, diags);
}

probe_result probe_cpu_host(const host_context&) {
  const auto l = cgroup_layout::detect();
  if (!l.find("cpu") || !l.find("cpuset"))
    return {false, "needs the cpu and cpuset cgroup controllers (cgroups: " + l.describe() + ")"};
  if (::geteuid() != 0) return {false, "making cgroups needs root"};
  std::vector<int> all;
  for (int c = 0; c < online_cpus(); ++c) all.push_back(c);
  if (cpufreq_pin().available(all)) return {true, "cpufreq: scaling_max_freq pinned on the target's CPUs"};
  return {true, fmt::format("no cpufreq in sysfs: a slower CPU is emulated with a CFS quota ({})",
                            version_name(l.find("cpu")->version))};
}

namespace {

class cpu_injector final : public injector {
 public:
  explicit cpu_injector(const option_values& v) : opts_(v), scale_(v.has("scale") ? v.fraction("scale") : 0) {
    if (v.has("frequency")) freq_khz_ = parse_khz(v.str("frequency"));
  }


  probe_result probe(const run_context& ctx) override {
    if (auto p = needs_started_target(ctx, cannot_cap)) return *p;
    if (auto p = needs_controllers(ctx, {"cpu", "cpuset"})) return *p;
    if (freq_khz_) {
      std::vector<int> cpus = opts_.has("cpus") ? cpu_list(opts_.str("cpus")) : std::vector<int>{};
      if (cpus.empty())
        for (int c = 0; c < online_cpus(); ++c) cpus.push_back(c);
      if (!cpufreq_.available(cpus))
        return {false, "'frequency' needs cpufreq (/sys/devices/system/cpu/cpuN/cpufreq/scaling_max_freq), which "
                       "this host does not expose; use scale, which a CFS quota emulates"};
    }
    return {};
  }

  void apply(run_context& ctx) override {
    cg_ = ctx.target_cgroup;
    if (!cg_ || !cg_->has("cpu")) throw std::runtime_error("cpu: the target has no cgroup with a cpu controller");
    applied_ = true;
    prior_quota_ = cg_->cpu_quota_us();
    prior_period_ = cg_->cpu_period_us();
    prior_cpus_ = cg_->cpus();
    if (opts_.has("cpus")) cg_->set_cpus(opts_.str("cpus"));
    cpus_ = cg_->cpus();
    const int n = std::max(1, count_cpus(cpus_));
    at_apply_ = cg_->cpu();
    t_apply_ns_ = mono_ns();
    // A real slower clock where the host has cpufreq: pin scaling_max_freq on those CPUs.
    if (!pin_only() && cpufreq_.available(cpu_list(cpus_))) {
      const auto list = cpu_list(cpus_);
      const int64_t want = freq_khz_ ? *freq_khz_ : std::llround(scale_ * double(cpufreq_.max_khz(list[0])));
      pinned_khz_ = cpufreq_.pin(list, want);
      return;
    }
    // 10 ms: short enough that a request of a few ms is stretched over periods as a slower
    // clock would stretch it, long enough against the scheduler tick (4 ms at HZ=250) that
    // enforces it. Longer where the quota would fall under the kernel's minimum of 1 ms.
    period_us_ = opts_.has("period") ? opts_.duration_ns("period") / 1000
                                     : std::max<int64_t>(10'000, int64_t(std::ceil(1000.0 / (scale_ * n))));
    quota_us_ = std::max<int64_t>(1000, std::llround(scale_ * n * double(period_us_)));
    if (pin_only()) cg_->set_cpu_quota(std::nullopt, prior_period_);
    else cg_->set_cpu_quota(quota_us_, period_us_);
  }

  verification verify(run_context&) override {
    verification v;
    const auto q = cg_->cpu_quota_us();
    const int64_t p = cg_->cpu_period_us();
    const std::string cpus = cg_->cpus();
    const int n = std::max(1, count_cpus(cpus));
    if (pinned_khz_) {
      const auto back = cpufreq_.read_back();
      v.ok = cpus == cpus_ && !back.empty() &&
             std::all_of(back.begin(), back.end(), [&](int64_t k) { return k == pinned_khz_; });
      const auto list = cpu_list(cpus_);
      v.text = fmt::format("scaling_max_freq = {:.2f} GHz read back on CPUs {} (cpuinfo_max_freq {:.2f} GHz: {:.0f}%)",
                           double(pinned_khz_) / 1e6, cpus, double(cpufreq_.max_khz(list[0])) / 1e6,
                           100.0 * double(pinned_khz_) / double(cpufreq_.max_khz(list[0])));
      v.measured = {{"scaling_max_freq_khz", pinned_khz_}, {"cpus", cpus}, {"cpu_count", n}};
      return v;
    }
    if (pin_only()) {
      v.ok = !q && cpus == cpus_;
      v.text = fmt::format("pinned to CPUs {} ({} CPU{}), no quota: read back ({} {})", cpus, n, n == 1 ? "" : "s",
                           version_name(cg_->version("cpuset")), cg_->path("cpuset"));
      v.measured = {{"quota_us", q.value_or(-1)}, {"cpus", cpus}, {"cpu_count", n}};
      return v;
    }
    v.ok = q == quota_us_ && p == period_us_ && cpus == cpus_;
    v.text = fmt::format("quota {}us per {}us read back on CPUs {} ({} CPU{}): {:.0f}% of their speed ({} {})",
                         q.value_or(-1), p, cpus, n, n == 1 ? "" : "s",
                         q ? 100.0 * double(*q) / double(p) / n : 100.0, version_name(cg_->version("cpu")),
                         cg_->path("cpu"));
    v.measured = {{"quota_us", q.value_or(-1)}, {"period_us", p}, {"cpus", cpus}, {"cpu_count", n}};
    return v;
  }

  // What the cap did: CPU the target got (in CPUs' worth) against the cap, and how often
  // the kernel throttled it.
  nlohmann::json measure(run_context&) override {
    const auto f = cg_->cpu();
    const double wall_s = double(mono_ns() - t_apply_ns_) / 1e9;
    const double used = wall_s > 0 ? double(f.usage_ns - at_apply_.usage_ns) / 1e9 / wall_s : 0;
    const double cap = pin_only() || pinned_khz_ ? double(std::max(1, count_cpus(cpus_)))
                                                 : double(quota_us_) / double(period_us_);
    const int64_t throttled = f.throttled_periods - at_apply_.throttled_periods, periods = f.periods - at_apply_.periods;
    return {{"cpu_used_cpus", used},
            {"cpu_cap_cpus", cap},
            {"throttled_periods", throttled},
            {"periods", periods},
            {"throttled_s", double(f.throttled_ns - at_apply_.throttled_ns) / 1e9},
            {"summary", fmt::format("the target got {:.2f} CPUs against a cap of {:.2f}; throttled in {} of {} periods",
                                    used, cap, throttled, periods)}};
  }

  undo_result revert(run_context&) noexcept override {
    if (!applied_) return {true, "nothing applied"};
    applied_ = false;
    undo_result u;
    std::vector<std::string> said;
    if (pinned_khz_) {
      const std::string freq = cpufreq_.restore();
      pinned_khz_ = 0;
      u.ok = freq.empty();
      said.push_back(freq.empty() ? "cpufreq limits as they were (read back)" : "cpufreq: " + freq);
    }
    try {
      cg_->set_cpu_quota(prior_quota_, prior_period_);
      const auto quota = cg_->cpu_quota_us();
      const bool back = quota == prior_quota_ && (!quota || cg_->cpu_period_us() == prior_period_);
      u.ok = u.ok && back;
      const auto shown = [](std::optional<int64_t> q, int64_t period) {
        return q ? fmt::format("{}us per {}us", *q, period) : std::string("no quota");
      };
      said.push_back(back ? fmt::format("CPU quota back to {} (read back)", shown(prior_quota_, prior_period_))
                          : fmt::format("CPU quota reads back {}, not {}", shown(quota, cg_->cpu_period_us()),
                                        shown(prior_quota_, prior_period_)));
      if (!prior_cpus_.empty()) {
        cg_->set_cpus(prior_cpus_);
        const std::string cpus = cg_->cpus();
        u.ok = u.ok && cpus == prior_cpus_;
        said.push_back(cpus == prior_cpus_ ? fmt::format("cpuset back to {} (read back)", cpus)
                                           : fmt::format("cpuset reads back {}, not {}", cpus, prior_cpus_));
      }
    } catch (const std::exception& e) {
      u.ok = false;
      said.push_back(fmt::format("CPU quota or cpuset not put back: {}", e.what()));
    }
    u.text = fmt::format("{}", fmt::join(said, "; "));
    return u;
  }

  std::string mechanism() const override {
    if (pinned_khz_) return "cpufreq: scaling_max_freq (and scaling_min_freq under it) on the target's CPUs + cpuset.cpus";
    if (pin_only()) return "cpuset.cpus on the target's cgroup (pinning only: scale 100%)";
    const bool v2 = cg_ && cg_->version("cpu") == cg_version::v2;
    return fmt::format("CFS bandwidth quota, emulating a slower CPU ({} + cpuset.cpus, {}; no cpufreq in sysfs)",
                       v2 ? "cpu.max" : "cpu.cfs_quota_us/cpu.cfs_period_us",
                       version_name(cg_ ? cg_->version("cpu") : cg_version::v1));
  }
  nlohmann::json params() const override { return opts_.to_json(); }

 private:
  bool pin_only() const { return scale_ >= 1.0; }

  option_values opts_;
  double scale_;
  std::optional<int64_t> freq_khz_;
  cpufreq_pin cpufreq_;
  int64_t pinned_khz_ = 0;  // non-zero: cpufreq is the mechanism in force
  bool applied_ = false;
  cgroup* cg_ = nullptr;
  std::optional<int64_t> prior_quota_;
  int64_t prior_period_ = 100'000, period_us_ = 0, quota_us_ = 0;
  std::string prior_cpus_, cpus_;
  cpu_figures at_apply_;
  int64_t t_apply_ns_ = 0;
};

}  // namespace

std::unique_ptr<injector> make_cpu(const option_values& v) { return std::make_unique<cpu_injector>(v); }


// ---------------------------------------------------------------------------------------
// disk

const option_table& disk_options() {
  static const option_table t = {
      {.name = "path", .type = opt_type::string, .default_text = "",
       .help = "a file or directory on the disk to throttle (absent: the run directory, where the built-in "
               "target's write-ahead log lives); the cap applies to the whole block device behind it"},
      {.name = "read_bps", .type = opt_type::byte_rate, .default_text = "",
       .help = "cap on the target's reads from that disk", .min = 512, .max = 1e12},
      {.name = "write_bps", .type = opt_type::byte_rate, .default_text = "",
       .help = "cap on the target's writes to that disk", .min = 512, .max = 1e12},
      {.name = "read_iops", .type = opt_type::op_rate, .default_text = "",
       .help = "cap on the target's read operations per second", .min = 1, .max = 1e9},
      {.name = "write_iops", .type = opt_type::op_rate, .default_text = "",
       .help = "cap on the target's write operations per second", .min = 1, .max = 1e9},
  };
  return t;
}

void check_disk(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  if (!v.has("read_bps") && !v.has("write_bps") && !v.has("read_iops") && !v.has("write_iops"))
    diags.add(ctx.table_pos, "disk in " + ctx.section +
                                 " caps nothing: give read_bps, write_bps, read_iops or write_iops, e.g. "
                                 "write_iops = \"100/s\"");
}

probe_result probe_disk_host(const host_context&) {
  const auto l = cgroup_layout::detect();
  if (!l.find("io")) return {false, "needs the blkio (v1) or io (v2) cgroup controller (cgroups: " + l.describe() + ")"};
  if (::geteuid() != 0) return {false, "making cgroups needs root"};
  return {true, l.find("io")->version == cg_version::v2 ? "io.max (cgroup v2)"
                                                        : "blkio.throttle (cgroup v1: direct and synchronous I/O only)"};
}

namespace {

class disk_injector final : public injector {
 public:
  explicit disk_injector(const option_values& v) : opts_(v) {
    auto n = [&](const char* k) { return v.has(k) ? int64_t(std::llround(v.per_second(k))) : int64_t(0); };
    caps_ = {n("read_bps"), n("write_bps"), n("read_iops"), n("write_iops")};
  }


  probe_result probe(const run_context& ctx) override {
    if (auto p = needs_started_target(ctx, cannot_cap)) return *p;
    if (auto p = needs_controllers(ctx, {"io"})) return *p;
    if (opts_.has("path")) {
      try {
        block_device_of(opts_.str("path"));
      } catch (const std::exception& e) {
        return {false, e.what()};
      }
    }
    return {};
  }

  void apply(run_context& ctx) override {
    cg_ = ctx.target_cgroup;
    if (!cg_ || !cg_->has("io")) throw std::runtime_error("disk: the target has no cgroup with an io controller");
    path_ = opts_.has("path") ? opts_.str("path") : ctx.run_dir;
    device_ = block_device_of(path_);
    applied_ = true;
    prior_ = cg_->io_limits_of(device_);
    at_apply_ = cg_->io(device_);
    t_apply_ns_ = mono_ns();
    cg_->set_io_limits(device_, caps_);
  }

  verification verify(run_context&) override {
    verification v;
    const auto got = cg_->io_limits_of(device_);
    v.ok = got.read_bps == caps_.read_bps && got.write_bps == caps_.write_bps && got.read_iops == caps_.read_iops &&
           got.write_iops == caps_.write_iops;
    const bool v2 = cg_->version("io") == cg_version::v2;
    v.text = fmt::format("{} read back on {} (the disk behind {}): {}{}", v2 ? "io.max" : "blkio.throttle.*_device",
                         device_name(device_), path_, describe(got),
                         v2 ? "" : "; cgroup v1 throttles only direct and synchronous I/O, not buffered writeback");
    v.measured = {{"device", device_name(device_)},
                  {"read_bps", got.read_bps},
                  {"write_bps", got.write_bps},
                  {"read_iops", got.read_iops},
                  {"write_iops", got.write_iops}};
    return v;
  }

  // The target's I/O on that disk during the phase, against the caps.
  nlohmann::json measure(run_context&) override {
    const auto f = cg_->io(device_);
    const double s = std::max(1e-9, double(mono_ns() - t_apply_ns_) / 1e9);
    const double rb = double(f.read_bytes - at_apply_.read_bytes) / s, wb = double(f.write_bytes - at_apply_.write_bytes) / s;
    const double ro = double(f.read_ops - at_apply_.read_ops) / s, wo = double(f.write_ops - at_apply_.write_ops) / s;
    std::string summary;
    auto against = [&](const char* what, double got, int64_t cap, bool bytes) {
      if (!cap) return;
      summary += fmt::format("{}{} {} against a cap of {} ({:.2f}×)", summary.empty() ? "" : "; ", what,
                             bytes ? format_bytes(got) + "/s" : fmt::format("{:.0f}/s", got),
                             bytes ? format_bytes(double(cap)) + "/s" : fmt::format("{}/s", cap), got / double(cap));
    };
    against("read", rb, caps_.read_bps, true);
    against("wrote", wb, caps_.write_bps, true);
    against("read ops", ro, caps_.read_iops, false);
    against("write ops", wo, caps_.write_iops, false);
    return {{"read_bytes_per_s", rb}, {"write_bytes_per_s", wb}, {"read_ops_per_s", ro}, {"write_ops_per_s", wo},
            {"summary", summary}};
  }

  undo_result revert(run_context&) noexcept override {
    if (!applied_) return {true, "nothing applied"};
    applied_ = false;
    try {
      cg_->set_io_limits(device_, prior_);
      const auto now = cg_->io_limits_of(device_);
      const bool back = now.read_bps == prior_.read_bps && now.write_bps == prior_.write_bps &&
                        now.read_iops == prior_.read_iops && now.write_iops == prior_.write_iops;
      return {back, back ? fmt::format("I/O caps on {} back to {} (read back)", device_name(device_), describe(prior_))
                         : fmt::format("I/O caps on {} read back {}, not {}", device_name(device_), describe(now),
                                       describe(prior_))};
    } catch (const std::exception& e) {
      return {false, fmt::format("I/O caps on {} not put back to {}: {}", device_name(device_), describe(prior_),
                                 e.what())};
    }
  }

  std::string mechanism() const override {
    const bool v2 = cg_ && cg_->version("io") == cg_version::v2;
    return v2 ? "io.max on the target's cgroup (cgroup v2)"
              : "blkio.throttle.{read,write}_{bps,iops}_device on the target's cgroup (cgroup v1)";
  }
  nlohmann::json params() const override { return opts_.to_json(); }

 private:
  static std::string describe(const io_limits& l) {
    std::string s;
    auto add = [&](const char* k, int64_t n, bool bytes) {
      if (n) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", k, bytes ? format_bytes(double(n)) + "/s" : fmt::format("{}/s", n));
    };
    add("read", l.read_bps, true);
    add("write", l.write_bps, true);
    add("read ops", l.read_iops, false);
    add("write ops", l.write_iops, false);
    return s.empty() ? "no cap" : s;
  }

  option_values opts_;
  io_limits caps_;
  bool applied_ = false;
  cgroup* cg_ = nullptr;
  std::string path_;
  dev_t device_ = 0;
  io_limits prior_;
  io_figures at_apply_;
  int64_t t_apply_ns_ = 0;
};

}  // namespace

std::unique_ptr<injector> make_disk(const option_values& v) { return std::make_unique<disk_injector>(v); }


// ---------------------------------------------------------------------------------------
// noise

const option_table& noise_options() {
  static const option_table t = {
      {.name = "threads", .type = opt_type::integer, .default_text = "0",
       .help = "spinning threads (0: one per CPU they are pinned to)", .min = 0, .max = 1024},
      {.name = "cpus", .type = opt_type::string, .default_text = "",
       .help = "the CPUs the threads spin on, e.g. \"1\" (absent: the target's CPUs, its affinity when the phase "
               "starts)"},
  };
  return t;
}

void check_noise(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  check_cpu_list(v, ctx, diags);
}

namespace {

// A noisy neighbour: threads in the rig that spin on the target's CPUs, each pinned to one.
class noise_injector final : public injector {
 public:
  explicit noise_injector(const option_values& v) : opts_(v) {}

  probe_result probe(const run_context& ctx) override {
    if (!opts_.has("cpus") && !ctx.target_started)
      return {false, "an endpoint target's CPUs are unknown: give 'cpus'"};
    return {};
  }

  void apply(run_context& ctx) override {
    if (opts_.has("cpus")) {
      cpus_ = cpu_list(opts_.str("cpus"));
    } else {
      cpu_set_t set;
      CPU_ZERO(&set);
      if (!ctx.target_pid || ::sched_getaffinity(*ctx.target_pid, sizeof set, &set) != 0)
        throw std::runtime_error("noise: cannot read the target's CPU affinity; give 'cpus'");
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) cpus_.push_back(c);
    }
    const int n = opts_.integer("threads") ? int(opts_.integer("threads")) : int(cpus_.size());
    stop_ = false;
    spun_ns_ = std::vector<std::atomic<int64_t>>(size_t(n));
    tids_ = std::vector<std::atomic<pid_t>>(size_t(n));
    for (int i = 0; i < n; ++i)
      threads_.emplace_back([this, i, cpu = cpus_[size_t(i) % cpus_.size()]] {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        ::sched_setaffinity(0, sizeof one, &one);
        tids_[size_t(i)] = pid_t(::gettid());
        const int64_t t0 = thread_cpu_ns();
        while (!stop_.load(std::memory_order_relaxed)) {
          for (int k = 0; k < 10000; ++k) asm volatile("" : : "r"(k) : "memory");  // a spin the compiler keeps
          spun_ns_[size_t(i)].store(thread_cpu_ns() - t0, std::memory_order_relaxed);
        }
      });
    applied_at_ns_ = mono_ns();
  }

  verification verify(run_context&) override {
    // Proof they spin where asked: each thread's affinity read back, and CPU time it got.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    verification v;
    v.ok = !threads_.empty();
    int pinned = 0;
    for (size_t i = 0; i < tids_.size(); ++i) {
      cpu_set_t set;
      CPU_ZERO(&set);
      const pid_t tid = tids_[i].load();
      if (tid > 0 && ::sched_getaffinity(tid, sizeof set, &set) == 0 && CPU_COUNT(&set) == 1 &&
          CPU_ISSET(cpus_[i % cpus_.size()], &set))
        ++pinned;
    }
    const double spun = spun_s();
    v.ok = v.ok && pinned == int(threads_.size()) && spun > 0;
    v.text = fmt::format("{} of {} spinning threads read back pinned to CPU{} {}; {:.2f} CPU-s spun in the first "
                         "{:.0f} ms",
                         pinned, threads_.size(), cpus_.size() == 1 ? "" : "s", cpu_list_text(cpus_), spun,
                         double(mono_ns() - applied_at_ns_) / 1e6);
    v.measured = {{"threads", threads_.size()}, {"pinned", pinned}, {"cpus", cpu_list_text(cpus_)}};
    return v;
  }

  nlohmann::json measure(run_context&) override {
    const double wall_s = double(mono_ns() - applied_at_ns_) / 1e9;
    const double spun = spun_s();
    return {{"noise_cpu_s", spun},
            {"noise_cpus", wall_s > 0 ? spun / wall_s : 0.0},
            {"summary", fmt::format("{} threads spun {:.2f} CPUs' worth on CPU{} {}", threads_.size(),
                                    wall_s > 0 ? spun / wall_s : 0.0, cpus_.size() == 1 ? "" : "s",
                                    cpu_list_text(cpus_))}};
  }

  undo_result revert(run_context&) noexcept override {
    stop_ = true;
    size_t joined = 0;
    for (auto& t : threads_)
      if (t.joinable()) {
        t.join();
        ++joined;
      }
    threads_.clear();
    cpus_.clear();
    return {true, joined ? fmt::format("{} spinning thread{} ended (joined)", joined, joined == 1 ? "" : "s")
                         : "nothing applied"};
  }

  std::string mechanism() const override { return "spinning threads in the rig, each pinned with sched_setaffinity"; }
  nlohmann::json params() const override { return opts_.to_json(); }

 private:
  static int64_t thread_cpu_ns() {
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }
  double spun_s() const {
    int64_t ns = 0;
    for (const auto& s : spun_ns_) ns += s.load();
    return double(ns) / 1e9;
  }

  option_values opts_;
  std::vector<int> cpus_;
  std::vector<std::thread> threads_;
  std::vector<std::atomic<int64_t>> spun_ns_;
  std::vector<std::atomic<pid_t>> tids_;
  std::atomic<bool> stop_{false};
  int64_t applied_at_ns_ = 0;
};

}  // namespace

std::unique_ptr<injector> make_noise(const option_values& v) { return std::make_unique<noise_injector>(v); }

}  // namespace rig
