#include "injectors/toxics/toxic.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include "core/units.hpp"

namespace rig {

toxic::toxic(std::string name, const option_values& v) : name_(std::move(name)) {
  if (v.has("stream")) {
    const std::string& s = v.str("stream");
    upstream_ = s != "downstream";
    downstream_ = s != "upstream";
  }
  if (v.has("toxicity")) toxicity_ = v.real("toxicity");
}

std::string toxic::str() const {
  std::string s(type());
  if (const std::string p = params_text(); !p.empty()) s += " " + p;
  s += upstream_ && downstream_ ? " both ways" : upstream_ ? " upstream" : " downstream";
  return s + fmt::format(", toxicity {:g}", toxicity_);
}

nlohmann::json toxic::counters() const {
  nlohmann::json m = {{"connections_affected", affected.load()},
                      {"connections_spared", spared.load()},
                      {"chunks", chunks.load()},
                      {"bytes", bytes.load()}};
  add_counters(m);
  return m;
}

std::unique_ptr<toxic> make_toxic(std::string name, const option_values& v) {
  const toxic_kind* k = find_toxic_kind(v.str("toxic"));
  if (!k) throw std::invalid_argument("no toxic named '" + v.str("toxic") + "'");
  return k->make(std::move(name), v);
}

std::string toxic_duration(int64_t ns) { return format_duration_us(double(ns) / 1e3); }

}  // namespace rig
