#pragma once
// netem and rate (tbf): root qdiscs on the veth between the rig's namespace and the
// target's, set through libnl-route and read back from the kernel.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "injectors/injector.hpp"

namespace rig {

// netem's parameters in the kernel's units (probabilities scaled to 2^32-1, as tc sends them).
struct netem_params {
  int64_t delay_ns = 0, jitter_ns = 0;
  uint32_t delay_correlation = 0, loss = 0, loss_correlation = 0, duplicate = 0, reorder = 0, corrupt = 0;
  uint64_t rate_bytes_s = 0;
  uint32_t limit = 1000, gap = 0;
  std::string distribution = "uniform";  // not reported back by the kernel

  static netem_params from(const option_values& v);
  std::vector<uint8_t> options() const;  // TCA_OPTIONS as tc builds it (qopt, then attributes)
  static netem_params parse(const std::vector<uint8_t>& options);
  // "delay 25ms jitter 0 ... " the way tc writes it.
  std::string str() const;
  // Each parameter the kernel reports that differs from this one ("loss 1% read back as 0%").
  std::vector<std::string> differences(const netem_params& kernel) const;
};

const option_table& netem_options();
const option_table& rate_options();
void check_netem(const option_values& v, const bind_context& ctx, diagnostics& diags);
void check_rate(const option_values& v, const bind_context& ctx, diagnostics& diags);
std::unique_ptr<injector> make_netem(const option_values& v);
std::unique_ptr<injector> make_rate(const option_values& v);
probe_result probe_netem_host(const host_context&);
probe_result probe_rate_host(const host_context&);

}  // namespace rig
