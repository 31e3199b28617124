// timeout: data stops passing; the connection is closed after timeout (0: never, data
// dropped for as long as the toxic is there).
#include "injectors/toxics/toxic.hpp"

namespace rig {

namespace {

const option_table& timeout_options() {
  static const option_table t = {
      {.name = "timeout", .type = opt_type::duration, .default_text = "",
       .help = "close after this while passing nothing (0: never close, drop forever)", .min = 0, .max = 3600e9,
       .required = true},
  };
  return t;
}

class timeout final : public toxic {
 public:
  timeout(std::string name, const option_values& v) : toxic(std::move(name), v), timeout_ns_(v.duration_ns("timeout")) {}
  std::string_view type() const override { return "timeout"; }
  std::string params_text() const override { return "after " + toxic_duration(timeout_ns_); }
  std::optional<connection_end> ends() const override {
    if (timeout_ns_ <= 0) return std::nullopt;
    return connection_end{timeout_ns_, false};
  }
  void on_end() override { ++closed_; }
  void on_chunk(toxic_chunk& c, toxic_flow&) override {
    dropped_ += c.size;
    c.drop = true;
  }

 protected:
  void add_counters(nlohmann::json& m) const override {
    m["dropped_bytes"] = dropped_.load();
    m["connections_closed"] = closed_.load();
  }

 private:
  int64_t timeout_ns_;
  std::atomic<uint64_t> dropped_{0}, closed_{0};
};

}  // namespace

extern const toxic_kind timeout_toxic;
const toxic_kind timeout_toxic = {.name = "timeout",
                                  .summary = "data stops passing, and the connection is closed after a while",
                                  .options = &timeout_options,
                                  .make = &make_as<timeout>};

}  // namespace rig
