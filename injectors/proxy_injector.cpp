#include <fmt/format.h>

#include "injectors/proxy.hpp"
#include "injectors/proxy_injector.hpp"

namespace rig {

namespace {

// One toxic in rig's proxy. Applied = added to the chain; verified = read back from the
// proxy's active chain; measured = what the proxy counted it doing during the phase.
class proxy_injector final : public injector {
 public:
  proxy_injector(std::string name, const option_values& v) : opts_(v), spec_(toxic_spec::from(name, v)) {}

  probe_result probe(const run_context&) override { return {}; }

  void apply(run_context& ctx) override {
    if (!ctx.proxy) throw std::logic_error("proxy injector applied without a proxy");
    id_ = ctx.proxy->add_toxic(spec_);
  }

  verification verify(run_context& ctx) override {
    verification v;
    int position = 0;
    for (const auto& t : ctx.proxy->active()) {
      ++position;
      if (t.name == spec_.name && t.str() == spec_.str()) {
        v.ok = true;
        v.text = fmt::format("{} active in the proxy (toxic {} of the chain), {} connection{} through it", t.str(),
                             position, ctx.proxy->connections(), ctx.proxy->connections() == 1 ? "" : "s");
      }
    }
    if (!v.ok) v.text = spec_.str() + " is not in the proxy's active chain";
    v.measured["proxy_connections"] = ctx.proxy->connections();
    return v;
  }

  nlohmann::json measure(run_context& ctx) override {
    const auto c = ctx.proxy->counters(id_);
    nlohmann::json m = {{"connections_affected", c.connections_affected},
                        {"connections_spared", c.connections_spared},
                        {"chunks", c.chunks},
                        {"bytes", c.bytes}};
    if (spec_.type == "latency") {
      m["mean_added_delay_us"] = c.mean_added_delay_us;
      m["mean_lateness_us"] = c.mean_lateness_us;
      m["max_lateness_us"] = c.max_lateness_us;
    }
    if (spec_.type == "slicer") m["slices"] = c.slices;
    if (spec_.type == "timeout") m["dropped_bytes"] = c.dropped_bytes;
    if (spec_.type == "timeout" || spec_.type == "limit_data") m["connections_closed"] = c.closed;
    if (spec_.type == "reset_peer") m["connections_reset"] = c.reset;
    return m;
  }

  undo_result revert(run_context& ctx) noexcept override {
    if (!ctx.proxy || !id_) return {true, "nothing applied"};
    ctx.proxy->remove_toxic(id_);
    id_ = 0;
    // Read back: the toxic is no longer in the proxy's active chain.
    for (const auto& t : ctx.proxy->active())
      if (t.name == spec_.name) return {false, spec_.str() + " is still in the proxy's active chain"};
    return {true, spec_.str() + " out of the proxy's chain (read back)"};
  }

  std::string mechanism() const override {
    return "rig's TCP proxy between the workloads and the target (Toxiproxy's " + spec_.type + " toxic)";
  }
  nlohmann::json params() const override { return opts_.to_json(); }

 private:
  option_values opts_;
  toxic_spec spec_;
  int id_ = 0;
};

}  // namespace

std::unique_ptr<injector> make_proxy_injector(const std::string& name, const option_values& v) {
  return std::make_unique<proxy_injector>(name, v);
}

}  // namespace rig
