// reset_peer: the connection carries data until it is reset (RST) after timeout.
#include "injectors/toxics/toxic.hpp"

namespace rig {

namespace {

const option_table& reset_peer_options() {
  static const option_table t = {
      {.name = "timeout", .type = opt_type::duration, .default_text = "", .help = "reset after this (default 0: at once)",
       .min = 0, .max = 3600e9},
  };
  return t;
}

class reset_peer final : public toxic {
 public:
  reset_peer(std::string name, const option_values& v)
      : toxic(std::move(name), v), timeout_ns_(v.has("timeout") ? v.duration_ns("timeout") : 0) {}
  std::string_view type() const override { return "reset_peer"; }
  std::string params_text() const override { return "after " + toxic_duration(timeout_ns_); }
  std::optional<connection_end> ends() const override { return connection_end{timeout_ns_, true}; }
  void on_end() override { ++reset_; }

 protected:
  void add_counters(nlohmann::json& m) const override { m["connections_reset"] = reset_.load(); }

 private:
  int64_t timeout_ns_;
  std::atomic<uint64_t> reset_{0};
};

}  // namespace

extern const toxic_kind reset_peer_toxic;
const toxic_kind reset_peer_toxic = {.name = "reset_peer",
                                     .summary = "the connection reset (RST) after a while",
                                     .options = &reset_peer_options,
                                     .make = &make_as<reset_peer>,
                                     .needs_tcp = true};

}  // namespace rig
