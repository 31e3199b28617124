// slicer: data cut into segments of average_size ± size_variation, delay apart.
#include <fmt/format.h>

#include <algorithm>

#include "core/units.hpp"
#include "injectors/toxics/toxic.hpp"

namespace rig {

namespace {

const option_table& slicer_options() {
  static const option_table t = {
      {.name = "average_size", .type = opt_type::size, .default_text = "",
       .help = "average size of the segments data is cut into", .min = 1, .max = 64.0 * 1048576, .required = true},
      {.name = "size_variation", .type = opt_type::size, .default_text = "",
       .help = "uniform +/- spread of the segment size", .min = 0, .max = 64.0 * 1048576},
      {.name = "delay", .type = opt_type::duration, .default_text = "", .help = "pause between segments", .min = 0,
       .max = 3600e9},
  };
  return t;
}

class slicer final : public toxic {
 public:
  slicer(std::string name, const option_values& v)
      : toxic(std::move(name), v),
        average_(v.bytes("average_size")),
        variation_(v.has("size_variation") ? v.bytes("size_variation") : 0),
        delay_ns_(v.has("delay") ? v.duration_ns("delay") : 0) {}
  std::string_view type() const override { return "slicer"; }
  std::string params_text() const override {
    return fmt::format("{}±{} every {}", format_bytes(double(average_)), format_bytes(double(variation_)),
                       toxic_duration(delay_ns_));
  }
  size_t piece_limit(toxic_flow& f) override {
    ++slices_;  // counted as it is cut: a reader may see the piece before the write returns
    const double size = double(average_) + spread(f.rng) * double(variation_);
    return size_t(std::max(1.0, size));
  }
  int64_t piece_written(bool more) override { return more ? delay_ns_ : 0; }

 protected:
  void add_counters(nlohmann::json& m) const override { m["slices"] = slices_.load(); }

 private:
  uint64_t average_, variation_;
  int64_t delay_ns_;
  std::atomic<uint64_t> slices_{0};
};

}  // namespace

extern const toxic_kind slicer_toxic;
const toxic_kind slicer_toxic = {.name = "slicer",
                                 .summary = "data cut into small segments, a pause apart",
                                 .options = &slicer_options,
                                 .make = &make_as<slicer>};

}  // namespace rig
