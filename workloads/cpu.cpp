#include "workloads/cpu.hpp"

#include "core/clock.hpp"
#include "core/spin.hpp"

namespace rig {

const option_table& cpu_workload_options() {
  static const option_table t = with_load_options({
      {.name = "threads", .type = opt_type::integer, .default_text = "1",
       .help = "threads doing work, each unpinned", .min = 1, .max = 256},
      {.name = "unit", .type = opt_type::duration, .default_text = "\"100us\"",
       .help = "one operation: work that takes this long at full speed (calibrated at start)", .min = 1e3,
       .max = 10e9},
  }, false);
  return t;
}

void check_cpu_workload(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  check_load_model(v, ctx, diags);
}

cpu_workload::cpu_workload(const option_values& v) : opts_(v) {
  threads_ = int(v.integer("threads"));
  unit_ns_ = v.duration_ns("unit");
  load_ = load_model::from(v);
}

cpu_workload::~cpu_workload() { stop(); }

void cpu_workload::start(const workload_env& env) {
  clock_ = env.clock;
  seed_ = env.seed;
  iterations_ = uint64_t(spin_per_ns() * double(unit_ns_));
  workers_.start(threads_, env, [this](worker_threads::worker& w) { run(w); });
}

void cpu_workload::run(worker_threads::worker& w) {
  std::optional<pacer> plan;
  if (load_.open()) {
    plan.emplace(load_, *clock_, threads_, w.index, seed_);
    plan->start(mono_ns());
  }
  run_paced(
      *w.rec, plan ? &*plan : nullptr, stopping_,
      [&]() -> std::optional<error_kind> {
        spin(iterations_);
        return std::nullopt;
      },
      [] {});
}

void cpu_workload::stop() noexcept {
  if (stopping_.exchange(true)) return;
  workers_.join();
}

std::vector<phase_stats> cpu_workload::results() const {
  return workers_.results();
}

nlohmann::json cpu_workload::describe() const {
  return {{"kind", "cpu"},
          {"load_model", load_.describe()},
          {"iterations_per_unit", iterations_},
          {"params", opts_.to_json()}};
}

}  // namespace rig
