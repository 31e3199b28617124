// latency: every chunk held back by latency ± jitter (uniform), measured as delivered.
#include <algorithm>

#include "core/clock.hpp"
#include "injectors/toxics/toxic.hpp"

namespace rig {

namespace {

const option_table& latency_options() {
  static const option_table t = {
      {.name = "latency", .type = opt_type::duration, .default_text = "", .help = "added to every chunk of data",
       .min = 0, .max = 3600e9, .required = true},
      {.name = "jitter", .type = opt_type::duration, .default_text = "",
       .help = "uniform +/- spread around latency", .min = 0, .max = 3600e9},
  };
  return t;
}

class latency final : public toxic {
 public:
  latency(std::string name, const option_values& v)
      : toxic(std::move(name), v),
        latency_ns_(v.duration_ns("latency")),
        jitter_ns_(v.has("jitter") ? v.duration_ns("jitter") : 0) {}
  std::string_view type() const override { return "latency"; }
  std::string params_text() const override {
    return toxic_duration(latency_ns_) + (jitter_ns_ ? " ±" + toxic_duration(jitter_ns_) : "");
  }

  void on_chunk(toxic_chunk& c, toxic_flow& f) override {
    const double j = jitter_ns_ ? spread(f.rng) * double(jitter_ns_) : 0.0;
    c.due_ns += std::max<int64_t>(0, latency_ns_ + int64_t(j));
  }
  void held(const toxic_chunk& c, int64_t now) override {
    const int64_t late = std::max<int64_t>(0, now - c.due_ns);
    delay_sum_ns_ += now - c.arrived_ns;
    ++delayed_;
    late_sum_ns_ += late;
    int64_t worst = max_late_ns_.load();
    while (late > worst && !max_late_ns_.compare_exchange_weak(worst, late)) {
    }
  }

 protected:
  void add_counters(nlohmann::json& m) const override {
    const double n = double(delayed_.load());
    m["mean_added_delay_us"] = n ? double(delay_sum_ns_.load()) / n / 1e3 : 0.0;      // achieved, beyond arrival
    m["mean_lateness_us"] = n ? double(late_sum_ns_.load()) / n / 1e3 : 0.0;          // the proxy's wake-up cost
    m["max_lateness_us"] = double(max_late_ns_.load()) / 1e3;                         // worst release after due
  }

 private:
  int64_t latency_ns_, jitter_ns_;
  std::atomic<int64_t> delay_sum_ns_{0}, delayed_{0}, late_sum_ns_{0}, max_late_ns_{0};
};

}  // namespace

extern const toxic_kind latency_toxic;
const toxic_kind latency_toxic = {.name = "latency",
                                  .summary = "every chunk of data held back by latency ± jitter",
                                  .options = &latency_options,
                                  .make = &make_as<latency>};

}  // namespace rig
