#include "workloads/cpu.hpp"

#include "core/clock.hpp"
#include "workloads/helper.hpp"
#include "core/spin.hpp"

namespace rig {

const option_table& cpu_workload_options() {
  static const option_table t = with_cgroup_option(with_load_options({
      {.name = "threads", .type = opt_type::integer, .default_text = "1",
       .help = "threads doing work, each unpinned", .min = 1, .max = 256},
      {.name = "unit", .type = opt_type::duration, .default_text = "\"100us\"",
       .help = "one operation: work that takes this long at full speed (calibrated at start)", .min = 1e3,
       .max = 10e9},
  }, false));
  return t;
}

cpu_workload::cpu_workload(const option_values& v)
    : threaded_workload(v, int(v.integer("threads")), load_model::from(v)), unit_ns_(v.duration_ns("unit")) {}

void cpu_workload::prepare(const workload_env&) { iterations_ = uint64_t(spin_per_ns() * double(unit_ns_)); }

void cpu_workload::run(worker_threads::worker& w) {
  auto plan = pacer_for(w);
  run_paced(
      *w.rec, plan ? &*plan : nullptr, stopping_,
      [&]() -> std::optional<error_kind> {
        spin(iterations_);
        return std::nullopt;
      },
      [] {});
}

nlohmann::json cpu_workload::describe() const {
  return {{"kind", "cpu"},
          {"load_model", load_.describe()},
          {"iterations_per_unit", iterations_},
          {"params", opts_.to_json()}};
}

}  // namespace rig
