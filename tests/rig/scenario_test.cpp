#include <doctest/doctest.h>

#include <filesystem>

#include "rig/scenario.hpp"

using namespace rig;

namespace {

const std::string good = R"(name = "t"

[target]
kind = "builtin"
reply_writes = 2

[workloads.rr]
kind = "tcp"
connections = 4

[injectors.no_nodelay]
kind = "nodelay"

[[phases]]
name = "baseline"
duration = "1s"

[[phases]]
name = "nagle"
duration = "2s"
inject = ["no_nodelay"]

[expect]
checks = ["nagle.rr.latency.p50 > 10ms"]
)";

// The errors a scenario produces, one string per error.
std::vector<std::string> errors_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    parse_scenario(text, "s.toml", sets);
  } catch (const input_error& e) {
    std::vector<std::string> out;
    for (const auto& d : e.diags().items()) out.push_back(d.str());
    MESSAGE(std::string(e.what()));
    return out;
  }
  return {};
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("every file in scenarios/ validates") {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(RIG_SOURCE_DIR "/scenarios")) {
    if (e.path().extension() != ".toml") continue;
    CAPTURE(e.path().string());
    CHECK_NOTHROW(load_scenario(e.path().string()));
    ++n;
  }
  CHECK(n >= 1);
}

TEST_CASE("a good scenario loads into typed values") {
  const auto sc = parse_scenario(good, "s.toml");
  CHECK(sc.name == "t");
  CHECK(sc.target.kind == "builtin");
  CHECK(sc.target.opts.integer("reply_writes") == 2);
  REQUIRE(sc.workloads.size() == 1);
  CHECK(sc.workloads[0].opts.integer("connections") == 4);
  REQUIRE(sc.phases.size() == 2);
  CHECK(sc.phases[1].duration_ns == 2'000'000'000);
  CHECK(sc.phases[1].inject == std::vector<std::string>{"no_nodelay"});
  CHECK(sc.checks.size() == 1);
}

TEST_CASE("a typo is refused with its line and the nearest key") {
  CHECK(errors_of(replace(good, "connections = 4", "conections = 4")) ==
        std::vector<std::string>{"s.toml:9:1: unknown key 'conections' in [workloads.rr]; did you mean 'connections'?"});
}

TEST_CASE("wrong type, missing unit and out-of-range values name line and key") {
  CHECK(errors_of(replace(good, "connections = 4", "connections = \"four\"")) ==
        std::vector<std::string>{"s.toml:9:1: 'connections' in [workloads.rr] must be an integer"});
  CHECK(errors_of(replace(good, "duration = \"1s\"", "duration = 1")) ==
        std::vector<std::string>{
            "s.toml:16:1: 'duration' in [[phases]] 'baseline' needs a unit: write it as a string, e.g. \"250ms\""});
  CHECK(errors_of(replace(good, "connections = 4", "connections = 0")) ==
        std::vector<std::string>{"s.toml:9:1: 'connections' in [workloads.rr] is out of range; must be 1 .. 100000"});
}

TEST_CASE("unknown kinds and unknown injectors in a phase are named with suggestions") {
  CHECK(errors_of(replace(good, "kind = \"nodelay\"", "kind = \"nodelya\"")) ==
        std::vector<std::string>{"s.toml:12:8: unknown injector kind 'nodelya' in [injectors.no_nodelay]; did you "
                                 "mean 'nodelay'? (known: nodelay, sockbuf, proxy, netem, rate, memory, cpu, disk, noise, file_faults, pause, threads, failpoint, kill)"});
  CHECK(errors_of(replace(good, "inject = [\"no_nodelay\"]", "inject = [\"no_nodely\"]")) ==
        std::vector<std::string>{"s.toml:21:11: phase 'nagle' injects 'no_nodely', which no [injectors.NAME] "
                                 "defines; did you mean 'no_nodelay'?"});
}

TEST_CASE("structural problems: missing target, duplicate phases, no phases, TOML syntax") {
  CHECK(errors_of(replace(good, "[target]\nkind = \"builtin\"\nreply_writes = 2\n", "")) ==
        std::vector<std::string>{"s.toml:1:1: missing [target] (kind = \"builtin\" runs rig's own service)"});
  CHECK(errors_of(replace(good, "name = \"nagle\"", "name = \"baseline\"")).at(0) ==
        "s.toml:19:1: duplicate phase name 'baseline'");
  const auto syntax = errors_of(replace(good, "connections = 4", "connections = = 4"));
  REQUIRE(syntax.size() == 1);
  CHECK(syntax[0].rfind("s.toml:9:", 0) == 0);
  CHECK(syntax[0].find("TOML syntax") != std::string::npos);
  const std::string no_phases = good.substr(0, good.find("[[phases]]"));
  CHECK(errors_of(no_phases).at(0) == "s.toml:1:1: no [[phases]]: a scenario needs at least one phase (e.g. a baseline)");
}

TEST_CASE("every error is reported at once") {
  std::string s = replace(good, "connections = 4", "conections = 4");
  s = replace(s, "reply_writes = 2", "reply_writes = 0");
  s = replace(s, "duration = \"2s\"", "duration = \"2 fortnights\"");
  CHECK(errors_of(s).size() == 3);
}

TEST_CASE("--set overrides keys and its errors name the flag") {
  const auto sc = parse_scenario(good, "s.toml", {"workloads.rr.connections=8", "phases.nagle.duration=500ms"});
  CHECK(sc.workloads[0].opts.integer("connections") == 8);
  CHECK(sc.phases[1].duration_ns == 500'000'000);
  CHECK(errors_of(good, {"workloads.rr.conections=8"}) ==
        std::vector<std::string>{
            "s.toml: --set workloads.rr.conections=8: unknown key 'conections' in [workloads.rr]; did you mean "
            "'connections'?"});
  CHECK(errors_of(good, {"workloads.r.connections=8"}) ==
        std::vector<std::string>{"s.toml: --set workloads.r.connections=8: no table [workloads.r] in the scenario; "
                                 "did you mean 'rr'?"});
  CHECK(errors_of(good, {"phases.nagel.duration=1s"}) ==
        std::vector<std::string>{"s.toml: --set phases.nagel.duration=1s: no phase 'nagel'; did you mean 'nagle'?"});
  CHECK(errors_of(good, {"workloads.rr.connections"}) ==
        std::vector<std::string>{
            "s.toml: --set workloads.rr.connections: expected key=value, e.g. --set workloads.rr.connections=8"});
}

TEST_CASE("expect checks are validated against the scenario's names") {
  CHECK(errors_of(replace(good, "nagle.rr.latency.p50 > 10ms", "nagel.rr.latency.p50 > 10ms")) ==
        std::vector<std::string>{
            "s.toml:24:11: check \"nagel.rr.latency.p50 > 10ms\": no phase 'nagel'; did you mean 'nagle'?"});
  CHECK(errors_of(replace(good, "nagle.rr.latency.p50 > 10ms", "nagle.rr.latency.p50 > 10")) ==
        std::vector<std::string>{"s.toml:24:11: check \"nagle.rr.latency.p50 > 10\": value '10': missing unit "
                                 "(expected ns, us, ms, s, min or h, e.g. \"250ms\")"});
}

TEST_CASE("endpoint targets must be loopback addresses") {
  const std::string base = replace(good, "kind = \"builtin\"\nreply_writes = 2", "kind = \"endpoint\"\naddress = \"10.1.2.3:80\"");
  const auto e = errors_of(replace(base, "[injectors.no_nodelay]\nkind = \"nodelay\"\n", "[injectors.no_nodelay]\nkind = \"nodelay\"\nwhere = \"workload\"\n"));
  REQUIRE(e.size() == 1);
  CHECK(e[0] == "s.toml:5:1: 'address' in [target] is 10.1.2.3: rig only sends traffic to loopback addresses unless run with --allow-remote");
}

TEST_CASE("load models: conflicting and incomplete rate keys are refused with line and key") {
  const auto with = [](const std::string& keys) { return replace(good, "connections = 4", "connections = 4\n" + keys); };
  CHECK(errors_of(with("rate = \"100/s\"\nsteps = [\"1/s\"]")) ==
        std::vector<std::string>{"s.toml:11:1: 'steps' and 'rate' in [workloads.rr] conflict: steps set the rate themselves"});
  CHECK(errors_of(with("ramp_to = \"100/s\"")) ==
        std::vector<std::string>{"s.toml:10:1: 'ramp_to' in [workloads.rr] needs 'rate', the rate the ramp starts from"});
  CHECK(errors_of(with("steps = [\"100/s\", \"fast\"]")).at(0).rfind(
            "s.toml:10:1: 'steps' in [workloads.rr]: \"fast\" is not a rate", 0) == 0);
  CHECK(errors_of(with("rate = \"100/s\"\nthink = \"1ms\"")) ==
        std::vector<std::string>{"s.toml:11:1: 'think' in [workloads.rr] applies to a closed loop; an open loop "
                                 "sends at 'rate' whatever the replies do"});
  CHECK(errors_of(with("arrival = \"poisson\"")) ==
        std::vector<std::string>{"s.toml:10:1: 'arrival' in [workloads.rr] applies to an open loop; set 'rate' or 'steps'"});
  CHECK(errors_of(with("step = \"2s\"")) ==
        std::vector<std::string>{"s.toml:10:1: 'step' in [workloads.rr] applies to 'steps' only"});
  const auto sc = parse_scenario(with("steps = [\"100/s\", \"2k/s\"]\nstep = \"2s\"\narrival = \"poisson\""), "s.toml");
  CHECK(sc.workloads[0].opts.strings("steps").size() == 2);
}

TEST_CASE("http workloads refuse framing headers in any case, and malformed paths") {
  const auto http = [](const std::string& keys) {
    return replace(good, "kind = \"tcp\"\nconnections = 4", "kind = \"http\"\nconnections = 4\n" + keys);
  };
  const auto e = errors_of(http("headers = { CONTENT-LENGTH = \"5\" }"));
  REQUIRE(e.size() == 1);
  CHECK(e[0].find("header 'CONTENT-LENGTH' in [workloads.rr]: rig sets the body's framing itself") != std::string::npos);
  CHECK(errors_of(http("path = \"no-slash\"")).size() == 1);
  CHECK(errors_of(http("headers = { Accept = \"*/*\" }")).empty());
}

TEST_CASE("sweep: levels as written or a range, each level's overrides, and mistakes named with line and key") {
  const std::string base = replace(good, "[expect]", "[sweep]\ninjector = \"no_nodelay\"\nparam = \"where\"\n"
                                                     "values = [\"target\", \"both\"]\nrepeats = 2\nbaseline = true\n"
                                                     "phase_duration = \"500ms\"\n\n[expect]");
  const auto sc = parse_scenario(base, "s.toml");
  REQUIRE(sc.sweep.present);
  CHECK(sc.sweep.labels == std::vector<std::string>{"target", "both"});
  CHECK(sc.sweep.phase == "nagle");  // the last phase by default
  CHECK(sc.sweep.repeats == 2);
  CHECK(sc.sweep.overrides_for(1, sc.phases) ==
        std::vector<std::string>{"phases.baseline.duration=\"500000000ns\"", "phases.nagle.duration=\"500000000ns\"",
                                 "injectors.no_nodelay.where='both'"});
  // The baseline level: the swept injector left out of the phases that inject it.
  const auto b = sc.sweep.overrides_for(-1, sc.phases);
  CHECK(b.back() == "phases.nagle.inject=[]");
  CHECK(parse_scenario(base, "s.toml", b, false).phases[1].inject.empty());

  // A range: linear from/to in one unit, `steps` levels; numbers as levels.
  const std::string ranged = replace(good, "[expect]", "[sweep]\nworkload = \"rr\"\nparam = \"rate\"\nfrom = \"1000/s\"\n"
                                                       "to = \"3000/s\"\nsteps = 3\n\n[expect]");
  CHECK(parse_scenario(ranged, "s.toml").sweep.labels == std::vector<std::string>{"1000/s", "2000/s", "3000/s"});
  const std::string numbers = replace(good, "[expect]", "[sweep]\nworkload = \"rr\"\nparam = \"connections\"\n"
                                                        "values = [1, 8]\n\n[expect]");
  CHECK(parse_scenario(numbers, "s.toml").sweep.literals == std::vector<std::string>{"1", "8"});

  auto sweep_with = [&](const std::string& body) { return replace(good, "[expect]", "[sweep]\n" + body + "\n\n[expect]"); };
  CHECK(errors_of(sweep_with("injector = \"no_nodelay\"\nparam = \"wher\"\nvalues = [\"both\"]")) ==
        std::vector<std::string>{"s.toml:25:1: [sweep] param 'wher' is not a key of nodelay 'no_nodelay' (where); did "
                                 "you mean 'where'?"});
  CHECK(errors_of(sweep_with("injector = \"no_nodelai\"\nparam = \"where\"\nvalues = [\"both\"]")) ==
        std::vector<std::string>{"s.toml:24:1: [sweep] injector 'no_nodelai' is not defined in [injectors.NAME]; did you "
                                 "mean 'no_nodelay'?"});
  CHECK(errors_of(sweep_with("workload = \"rr\"\nparam = \"connections\"\nvalues = [1, 0, 4]")) ==
        std::vector<std::string>{"s.toml:26:14: [sweep] level connections = 0: "
                                 "'connections' in [workloads.rr] is out of range; must be 1 .. 100000"});
  CHECK(errors_of(sweep_with("workload = \"rr\"\nparam = \"connections\"\nvalues = [1]\nfrom = \"1/s\"\nto = \"2/s\"")) ==
        std::vector<std::string>{"s.toml:26:10: [sweep] give values, or from/to/steps, not both"});
  CHECK(errors_of(sweep_with("injector = \"no_nodelay\"\nworkload = \"rr\"\nparam = \"where\"\nvalues = [\"both\"]")) ==
        std::vector<std::string>{"s.toml:23:1: [sweep] needs exactly one of injector = \"NAME\" or workload = \"NAME\""});
  CHECK(errors_of(sweep_with("injector = \"no_nodelay\"\nparam = \"where\"\nvalues = [\"both\"]\nphase = \"baseline\"")) ==
        std::vector<std::string>{"s.toml:23:1: [sweep] phase 'baseline' does not inject 'no_nodelay': the levels would "
                                 "change nothing"});
  CHECK(errors_of(sweep_with("workload = \"rr\"\nparam = \"rate\"\nvalues = [\"1000/s\"]\nbaseline = true")) ==
        std::vector<std::string>{"s.toml:27:1: [sweep] baseline = true needs an injector sweep"});
  CHECK(errors_of(sweep_with("workload = \"rr\"\nparam = \"rate\"\nvalues = [\"1000/s\"]\nrepeat = 3")) ==
        std::vector<std::string>{"s.toml:27:1: unknown key 'repeat' in [sweep]; did you mean 'repeats'?"});
}
