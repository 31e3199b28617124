// slow_close: the end of the stream held back by delay.
#include "injectors/toxics/toxic.hpp"

namespace rig {

namespace {

const option_table& slow_close_options() {
  static const option_table t = {
      {.name = "delay", .type = opt_type::duration, .default_text = "", .help = "how long a close is held back",
       .min = 0, .max = 3600e9, .required = true},
  };
  return t;
}

class slow_close final : public toxic {
 public:
  slow_close(std::string name, const option_values& v) : toxic(std::move(name), v), delay_ns_(v.duration_ns("delay")) {}
  std::string_view type() const override { return "slow_close"; }
  std::string params_text() const override { return toxic_duration(delay_ns_); }
  int64_t close_delay_ns() const override { return delay_ns_; }

 private:
  int64_t delay_ns_;
};

}  // namespace

extern const toxic_kind slow_close_toxic;
const toxic_kind slow_close_toxic = {.name = "slow_close",
                                     .summary = "a closed stream's close held back",
                                     .options = &slow_close_options,
                                     .make = &make_as<slow_close>};

}  // namespace rig
