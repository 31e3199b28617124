// bandwidth: data passes at a rate, like a link: in pieces worth at most 10 ms at the rate,
// each through once its last byte would have crossed.
#include <fmt/format.h>

#include <algorithm>

#include "injectors/toxics/toxic.hpp"

namespace rig {

namespace {

const option_table& bandwidth_options() {
  static const option_table t = {
      {.name = "rate", .type = opt_type::byte_rate, .default_text = "", .help = "the rate data may pass at",
       .min = 1, .max = 100e9, .required = true},
  };
  return t;
}

class bandwidth final : public toxic {
 public:
  bandwidth(std::string name, const option_values& v) : toxic(std::move(name), v), rate_(v.per_second("rate")) {}
  std::string_view type() const override { return "bandwidth"; }
  std::string params_text() const override {
    return rate_ >= 1e6 ? fmt::format("{:g}MB/s", rate_ / 1e6)
           : rate_ >= 1e3 ? fmt::format("{:g}KB/s", rate_ / 1e3)
                          : fmt::format("{:g}B/s", rate_);
  }
  // Pieces worth at most 10 ms at the rate, so the flow is smooth, not bursty.
  size_t piece_limit(toxic_flow&) override { return size_t(std::max(1.0, rate_ / 100)); }
  int64_t piece_due_ns(size_t piece, const toxic_chunk& c, toxic_flow& f, int64_t now) override {
    const int64_t start = std::max({now, c.arrived_ns, f.mark_ns});
    f.mark_ns = start + int64_t(double(piece) / rate_ * 1e9);
    return f.mark_ns;
  }

 private:
  double rate_;  // bytes/s
};

}  // namespace

extern const toxic_kind bandwidth_toxic;
const toxic_kind bandwidth_toxic = {.name = "bandwidth",
                                    .summary = "data passes at a limited rate",
                                    .options = &bandwidth_options,
                                    .make = &make_as<bandwidth>};

}  // namespace rig
