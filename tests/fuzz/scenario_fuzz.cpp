// libFuzzer target over what rig reads from people: the scenario loader (TOML, every kind's
// options, units, checks, sweeps, --set overrides) and the unit parsers. Any input must end
// in a value or an input_error naming the problem: any other exception, a crash, a leak or
// undefined behaviour (the fuzz build has ASan and UBSan) is a finding.
//   make fuzz                  60 s from the seeds (scenarios/ and tests/bad_scenarios/)
//   make fuzz FUZZ_SECONDS=3600
// An input whose first line is "#set KEY=VALUE" also applies that line as a --set override.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/units.hpp"
#include "rig/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::string why;
  (void)rig::parse_duration_ns(text, &why);
  (void)rig::parse_size_bytes(text, &why);
  (void)rig::parse_op_rate(text, &why);
  (void)rig::parse_byte_rate(text, &why);
  (void)rig::parse_percent(text, &why);

  std::vector<std::string> overrides;
  if (text.rfind("#set ", 0) == 0) overrides.push_back(text.substr(5, text.find('\n') - 5));
  try {
    (void)rig::parse_scenario(text, "fuzz.toml", overrides, true, false);
  } catch (const rig::input_error&) {
    // refused, with file, line and key: what bad input must get
  }
  return 0;
}
