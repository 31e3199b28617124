#include <fmt/format.h>

#include "injectors/proxy.hpp"
#include "injectors/proxy_injector.hpp"

namespace rig {

const option_variants& proxy_variants() {
  static const option_variants v = [] {
    option_variants out{.key = "toxic"};
    for (const auto& k : toxic_kinds()) out.cases.push_back({k.name, k.summary, &k.options()});
    return out;
  }();
  return v;
}

const option_table& proxy_options() {
  static const option_table common = {
      {.name = "toxic", .type = opt_type::string, .default_text = "",
       .help = "Toxiproxy's toxic (each takes its own keys, below)", .required = true},
      {.name = "stream", .type = opt_type::string, .default_text = "\"downstream\"",
       .help = "direction: downstream (target to client), upstream (client to target) or both",
       .allowed = {"downstream", "upstream", "both"}},
      {.name = "toxicity", .type = opt_type::real, .default_text = "1.0",
       .help = "fraction of connections the toxic affects, decided once per connection", .min = 0, .max = 1},
  };
  static const option_table t = merge_variants(common, proxy_variants());
  return t;
}

void check_proxy(const option_values& v, const bind_context& ctx, diagnostics& diags) {
  check_variant(v, proxy_variants(), ctx, diags);
}

namespace {

// One toxic in rig's proxy. Applied = added to the chain; verified = read back from the
// proxy's active chain; measured = what the proxy counted it doing during the phase.
class proxy_injector final : public injector {
 public:
  proxy_injector(const std::string& name, const option_values& v)
      : name_(name), opts_(v), toxic_(make_toxic(name, v)) {}

  probe_result probe(const run_context&) override { return {}; }

  void apply(run_context& ctx) override {
    if (!ctx.proxy) throw std::logic_error("proxy injector applied without a proxy");
    toxic_ = make_toxic(name_, opts_);  // a fresh one each phase: its counters are this phase's
    id_ = ctx.proxy->add_toxic(toxic_);
  }

  verification verify(run_context& ctx) override {
    verification v;
    int position = 0;
    for (const auto& t : ctx.proxy->active()) {
      ++position;
      if (t == toxic_) {  // this very toxic, read back from the chain the proxy runs
        v.ok = true;
        v.text = fmt::format("{} active in the proxy (toxic {} of the chain), {} connection{} through it", t->str(),
                             position, ctx.proxy->connections(), ctx.proxy->connections() == 1 ? "" : "s");
      }
    }
    if (!v.ok) v.text = toxic_->str() + " is not in the proxy's active chain";
    v.measured["proxy_connections"] = ctx.proxy->connections();
    return v;
  }

  nlohmann::json measure(run_context&) override { return toxic_->counters(); }

  undo_result revert(run_context& ctx) noexcept override {
    if (!ctx.proxy || !id_) return {true, "nothing applied"};
    ctx.proxy->remove_toxic(id_);
    id_ = 0;
    // Read back: the toxic is no longer in the proxy's active chain.
    for (const auto& t : ctx.proxy->active())
      if (t == toxic_) return {false, toxic_->str() + " is still in the proxy's active chain"};
    return {true, toxic_->str() + " out of the proxy's chain (read back)"};
  }

  std::string mechanism() const override {
    return "rig's TCP proxy between the workloads and the target (Toxiproxy's " + std::string(toxic_->type()) + " toxic)";
  }
  nlohmann::json params() const override { return opts_.to_json(); }

 private:
  std::string name_;
  option_values opts_;
  std::shared_ptr<toxic> toxic_;
  int id_ = 0;
};

}  // namespace

std::unique_ptr<injector> make_proxy_injector(const std::string& name, const option_values& v) {
  return std::make_unique<proxy_injector>(name, v);
}

}  // namespace rig
