#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "core/cgroup.hpp"
#include "core/netlink.hpp"
#include "injectors/injector.hpp"
#include "injectors/netem_dist.hpp"
#include "injectors/qdisc_injectors.hpp"
#include "rig/scenario.hpp"
#include "tests/helpers.hpp"

using namespace rig;
using namespace rig::testing;

namespace {

// A distribution table file as iproute2 ships it: '#' comments, then numbers.
std::vector<int> load_dist(const std::string& path) {
  std::ifstream f(path);
  std::vector<int> v;
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    for (int x; s >> x;) v.push_back(x);
  }
  return v;
}

std::string scenario_with(const std::string& injector_body) {
  return "name = \"t\"\n[target]\nkind = \"builtin\"\n[workloads.rr]\nkind = \"tcp\"\n[injectors.n]\n" + injector_body +
         "\n[[phases]]\nname = \"p\"\nduration = \"1s\"\ninject = [\"n\"]\n";
}

std::string load_error(const std::string& text) {
  try {
    parse_scenario(text, "t.toml");
  } catch (const input_error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("netem distribution tables are the ones tc ships, entry for entry") {
  int compared = 0;
  for (const char* name : {"normal", "pareto", "paretonormal"}) {
    const std::string path = std::string("/usr/lib/x86_64-linux-gnu/tc/") + name + ".dist";
    const auto ours = netem_distribution(name);
    CHECK(ours.size() == 4096);
    const auto theirs = load_dist(path);
    if (theirs.empty()) {
      MESSAGE("skipped the comparison for " << name << ": " << path << " is not installed (package iproute2)");
      continue;
    }
    REQUIRE(theirs.size() == ours.size());
    int diffs = 0;
    for (size_t i = 0; i < ours.size(); ++i) diffs += ours[i] != theirs[i];
    CHECK_MESSAGE(diffs == 0, name);
    ++compared;
  }
  CHECK(netem_distribution("uniform").empty());
  CHECK_THROWS(netem_distribution("gaussian"));
  if (compared == 0) MESSAGE("no tc distribution files to compare against");
}

TEST_CASE("netem parameters survive the kernel's encoding: every field parsed back, a change is named") {
  option_values v = bind_text(netem_options(),
                              "delay = \"25ms\"\njitter = \"5ms\"\ncorrelation = \"25%\"\ndistribution = \"normal\"\n"
                              "loss = \"1.5%\"\nloss_correlation = \"10%\"\nduplicate = \"2%\"\nreorder = \"5%\"\n"
                              "corrupt = \"0.1%\"\nrate = \"10MB/s\"\nlimit = 500\n");
  const netem_params p = netem_params::from(v);
  CHECK(p.delay_ns == 25'000'000);
  CHECK(p.loss == uint32_t(std::llround(0.015 * 4294967295.0)));
  CHECK(p.gap == 1);  // tc's rule: reorder needs a gap
  const auto bytes = p.options();
  // The distribution table is in the message (4096 int16 after the fixed header and other attributes).
  CHECK(bytes.size() > 4096 * 2);
  const netem_params back = netem_params::parse(bytes);
  CHECK(p.differences(back).empty());
  CHECK(back.rate_bytes_s == 10'000'000);
  CHECK(back.limit == 500);
  CHECK(back.jitter_ns == 5'000'000);
  netem_params off = back;
  off.loss = 0;
  off.delay_ns = 20'000'000;
  const auto d = p.differences(off);
  REQUIRE(d.size() == 2);
  CHECK(d[0] == "delay 25.00ms read back as 20.00ms");
  CHECK(d[1] == "loss 1.5% read back as 0%");
  CHECK(p.str().find("delay 25.00ms jitter 5.00ms correlation 25% distribution normal loss 1.5%") == 0);
}

TEST_CASE("netem probe: available, or the exact message naming sch_netem and the proxy") {
  if (!can_make_netns()) return;
  const probe_result r = probe_netem_host({});
  std::string why;
  netem_params p;
  p.delay_ns = 1'000'000;
  const bool has = kernel_has_qdisc("netem", p.options(), &why);
  CHECK(r.ok == has);
  if (!has) {
    CHECK(r.reason ==
          "this kernel has no netem qdisc (sch_netem); use kind = \"proxy\" for delay and loss at the TCP level, or "
          "load sch_netem");
    MESSAGE("this kernel has no sch_netem: netem itself is tested under qemu (tests/kernel)");
  }
  // tbf exists on every kernel rig targets; the same probe finds it.
  CHECK(probe_rate_host({}).ok);
}

TEST_CASE("netem and rate refuse what would do nothing or cannot work, naming the key") {
  CHECK(load_error(scenario_with("kind = \"netem\"\nreorder = \"5%\"")).find("'reorder' in [injectors.n] needs 'delay'") !=
        std::string::npos);
  CHECK(load_error(scenario_with("kind = \"netem\"\ndelay = \"5ms\"\ndistribution = \"normal\"")).find(
            "t.toml:9:1: 'distribution' in [injectors.n] shapes the jitter") != std::string::npos);
  CHECK(load_error(scenario_with("kind = \"netem\"\ndirection = \"up\"")).find("direction") != std::string::npos);
  CHECK(load_error(scenario_with("kind = \"netem\"")).find("changes nothing") != std::string::npos);
  CHECK(load_error(scenario_with("kind = \"netem\"\ndelya = \"5ms\"")).find("did you mean 'delay'") != std::string::npos);
  CHECK(load_error(scenario_with("kind = \"rate\"")).find("rate") != std::string::npos);
  CHECK(load_error(scenario_with("kind = \"rate\"\nrate = \"1000\"")).find("rate") != std::string::npos);  // no unit
  CHECK(load_error(scenario_with("kind = \"rate\"\nrate = \"1MB/s\"")).empty());
  CHECK(load_error(scenario_with("kind = \"netem\"\ndelay = \"5ms\"\njitter = \"1ms\"\ndistribution = \"pareto\"")).empty());
}

TEST_CASE("netem and rate need a target rig starts: an endpoint target is refused at probe") {
  run_context ctx;
  ctx.target_kind = "endpoint";
  const auto opts = bind_text(rate_options(), "rate = \"1MB/s\"");
  auto inj = make_rate(opts);
  CHECK(find_injector_kind("rate")->needs(opts, cgroup_layout::detect()).namespaces);  // the kind's record says
  const auto r = inj->probe(ctx);
  CHECK_FALSE(r.ok);
  CHECK(r.reason.find("endpoint target is already running") != std::string::npos);
}
