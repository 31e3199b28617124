// limit_data: the connection closed once bytes have passed in a direction.
#include "core/units.hpp"
#include "injectors/toxics/toxic.hpp"

namespace rig {

namespace {

const option_table& limit_data_options() {
  static const option_table t = {
      {.name = "bytes", .type = opt_type::size, .default_text = "",
       .help = "close the connection once this much has passed", .min = 1, .max = 1e15, .required = true},
  };
  return t;
}

class limit_data final : public toxic {
 public:
  limit_data(std::string name, const option_values& v) : toxic(std::move(name), v), bytes_(v.bytes("bytes")) {}
  std::string_view type() const override { return "limit_data"; }
  std::string params_text() const override { return format_bytes(double(bytes_)); }
  void on_chunk(toxic_chunk& c, toxic_flow& f) override {
    if (f.passed + c.size < bytes_) return;
    c.size = size_t(bytes_ - std::min(bytes_, f.passed));
    c.close_after = true;
    ++closed_;
  }

 protected:
  void add_counters(nlohmann::json& m) const override { m["connections_closed"] = closed_.load(); }

 private:
  uint64_t bytes_;
  std::atomic<uint64_t> closed_{0};
};

}  // namespace

extern const toxic_kind limit_data_toxic;
const toxic_kind limit_data_toxic = {.name = "limit_data",
                                     .summary = "the connection closed once a number of bytes passed",
                                     .options = &limit_data_options,
                                     .make = &make_as<limit_data>};

}  // namespace rig
