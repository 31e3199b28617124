#include "injectors/file_faults.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <filesystem>

#include "core/units.hpp"
#include "injectors/preload/shim_control.h"
#include "injectors/shim.hpp"

namespace rig {

namespace {

const std::vector<std::pair<std::string, int>> errnos = {
    {"EIO", EIO}, {"ENOSPC", ENOSPC}, {"EROFS", EROFS}, {"EDQUOT", EDQUOT}, {"EAGAIN", EAGAIN}, {"none", 0}};

const std::vector<std::pair<std::string, uint32_t>> op_bits = {
    {"fsync", RIG_SHIM_OP_FSYNC}, {"write", RIG_SHIM_OP_WRITE}, {"read", RIG_SHIM_OP_READ}};

class file_faults_injector final : public injector {
 public:
  explicit file_faults_injector(const option_values& v)
      : opts_(v), probability_(v.real("probability")), delay_ns_(v.duration_ns("delay")) {
    for (const auto& op : v.strings("ops"))
      for (const auto& [name, bit] : op_bits)
        if (op == name) ops_ |= bit;
    for (const auto& [name, e] : errnos)
      if (name == v.str("error")) error_ = e;
  }

  probe_result probe(const run_context& ctx) override {
    if (!ctx.shim) return {false, "file faults need the LD_PRELOAD shim in the target: " + ctx.shim_missing};
    return {};
  }

  void apply(run_context& ctx) override {
    shim_ = ctx.shim;
    prefix_ = std::filesystem::absolute(opts_.has("path_prefix") ? opts_.str("path_prefix") : ctx.run_dir).string();
    applied_ = true;
    at_apply_ = shim_->set_file_faults(ops_, prefix_, probability_, delay_ns_, error_, ctx.seed);
    from_ = at_apply_.counters;
  }

  void phase_starts(run_context&) override {
    if (applied_) from_ = shim_->file_fault_report().counters;
  }

  verification verify(run_context&) override {
    verification v;
    const auto& c = at_apply_.counters;
    const int64_t processes = c.count("processes") ? c.at("processes") : 0;
    const int64_t stale = c.count("processes_not_answering") ? c.at("processes_not_answering") : 0;
    v.ok = processes > 0 && stale == 0 && at_apply_.reached_server;
    v.text = fmt::format("{} under {}: {}; applied by the shim in {} of {} process{} of the target{}", ops_text(),
                         prefix_, what(), processes - stale, processes, processes == 1 ? "" : "es",
                         at_apply_.unreached.empty() ? "" : "; " + at_apply_.unreached);
    v.measured = {{"processes", processes}, {"prefix", prefix_}};
    return v;
  }

  nlohmann::json measure(run_context&) override {
    const auto now = shim_->file_fault_report().counters;
    auto delta = [&](const char* k) {
      const int64_t a = now.count(k) ? now.at(k) : 0, b = from_.count(k) ? from_.at(k) : 0;
      return a - b;
    };
    // Counts of processes that exited meanwhile (a per-connection backend) are kept by the shim's page.
    const int64_t calls = delta("file_calls"), failed = delta("file_failed"), delayed = delta("file_delayed");
    const int64_t exited = delta("processes_exited_with_file_calls");
    return {{"calls", calls},
            {"failed", failed},
            {"delayed", delayed},
            {"processes_exited", exited},
            {"summary", fmt::format("{} {} call{} under {}: {} failed{}, {} delayed{}", calls, ops_text(),
                                    calls == 1 ? "" : "s", prefix_, failed,
                                    error_ ? " with " + opts_.str("error") : "", delayed,
                                    exited ? fmt::format(" ({} of the processes that made them have exited)", exited)
                                           : "")}};
  }

  undo_result revert(run_context& ctx) noexcept override {
    if (!applied_) return {true, "nothing applied"};
    applied_ = false;
    try {
      // Read back: every live process of the target applied the setting with no fault.
      const auto r = shim_->set_file_faults(0, "", 0, 0, 0);
      const auto count = [&](const char* k) { return r.counters.count(k) ? r.counters.at(k) : int64_t(0); };
      const int64_t processes = count("processes"), stale = count("processes_not_answering");
      if (processes == 0 && target_gone(ctx)) return {true, "the target is gone, and its file faults with it"};
      return {stale == 0, fmt::format("file faults off in {} of {} process{} of the target (applied by the shim){}",
                                      processes - stale, processes, processes == 1 ? "" : "es",
                                      stale ? ": the others may still fail or delay file I/O" : "")};
    } catch (const std::exception& e) {
      if (target_gone(ctx)) return {true, "the target is gone, and its file faults with it"};
      return {false, std::string("file faults not turned off: ") + e.what()};
    }
  }

  std::string mechanism() const override {
    return "LD_PRELOAD shim in the target: fsync/fdatasync, write/pwrite/writev, read/pread/readv interposed";
  }
  nlohmann::json params() const override { return opts_.to_json(); }

 private:
  std::string ops_text() const {
    std::string s;
    for (const auto& [name, bit] : op_bits)
      if (ops_ & bit) s += (s.empty() ? "" : "/") + name;
    return s;
  }
  std::string what() const {
    std::string s = fmt::format("with probability {:g}", probability_);
    if (delay_ns_) s += ", delayed " + format_duration_us(double(delay_ns_) / 1e3);
    if (error_) s += ", then failed with " + opts_.str("error");
    return s;
  }

  option_values opts_;
  double probability_;
  int64_t delay_ns_;
  uint32_t ops_ = 0;
  int error_ = EIO;
  bool applied_ = false;
  preload_shim* shim_ = nullptr;
  std::string prefix_;
  socket_report at_apply_;
  decltype(socket_report::counters) from_;  // what measure() counts from: read as the phase's window opens
};

}  // namespace

const option_table& file_faults_options() {
  static const std::vector<std::string_view> errno_names = [] {
    std::vector<std::string_view> out;
    for (const auto& [n, e] : errnos) out.push_back(n);
    return out;
  }();
  static const option_table t = {
      {.name = "path_prefix", .type = opt_type::string, .default_text = "",
       .help = "files whose path starts with this (absent: the run directory, where the built-in target's "
               "write-ahead log lives)"},
      {.name = "ops", .type = opt_type::strings, .default_text = "[\"fsync\"]",
       .help = "which calls: fsync (and fdatasync), write (pwrite, writev), read (pread, readv)"},
      {.name = "delay", .type = opt_type::duration, .default_text = "\"0ms\"",
       .help = "added before each faulted call", .min = 0, .max = 3600e9},
      {.name = "error", .type = opt_type::string, .default_text = "\"EIO\"",
       .help = "the errno a faulted call fails with; none: delay only", .allowed = errno_names},
      {.name = "probability", .type = opt_type::real, .default_text = "1.0",
       .help = "the share of calls faulted", .min = 0, .max = 1},
  };
  return t;
}

void check_file_faults(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  std::vector<std::string> names;
  for (const auto& [n, b] : op_bits) names.push_back(n);
  if (v.has("ops")) {
    if (v.strings("ops").empty())
      diags.add(v.where("ops"), "'ops' in " + ctx.section + " is empty: name fsync, write or read");
    for (const auto& op : v.strings("ops"))
      if (std::find(names.begin(), names.end(), op) == names.end())
        diags.add(v.where("ops"), fmt::format("'ops' in {} has '{}'{}; known: fsync, write, read", ctx.section, op,
                                              did_you_mean(op, names)));
  }
  if (v.has("error") && v.str("error") == "none" && v.has("delay") && v.duration_ns("delay") == 0)
    diags.add(ctx.table_pos, "file_faults in " + ctx.section + " does nothing: give a delay or an error");
  if (v.has("path_prefix") && v.str("path_prefix").empty())
    diags.add(v.where("path_prefix"), "'path_prefix' in " + ctx.section +
                                          " is empty: leave it out for the run directory, or give an absolute path");
  else if (v.has("path_prefix") && v.str("path_prefix")[0] != '/')
    diags.add(v.where("path_prefix"), "'path_prefix' in " + ctx.section + " must be an absolute path");
}

probe_result probe_file_faults_host(const host_context& h) {
  std::string why;
  if (auto lib = preload_library(h.rig_exe, &why))
    return {true, "the built-in target and dynamically linked command targets, through the preload shim " + *lib};
  return {false, why};
}

std::unique_ptr<injector> make_file_faults(const option_values& v) {
  return std::make_unique<file_faults_injector>(v);
}

}  // namespace rig
