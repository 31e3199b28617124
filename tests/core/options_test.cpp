#include <doctest/doctest.h>

#include "core/bind.hpp"
#include "core/options.hpp"
#include "injectors/injector.hpp"
#include "targets/target.hpp"
#include "workloads/workload.hpp"

using namespace rig;

namespace {

const option_table& sample_table() {
  static const option_table t = {
      {.name = "connections", .type = opt_type::integer, .default_text = "1", .help = "conns", .min = 1, .max = 100},
      {.name = "timeout", .type = opt_type::duration, .default_text = "\"2s\"", .help = "t", .min = 1e6},
      {.name = "rate", .type = opt_type::op_rate, .default_text = "", .help = "r"},
      {.name = "where", .type = opt_type::string, .default_text = "\"target\"", .help = "w",
       .allowed = {"target", "workload", "both"}},
      {.name = "path", .type = opt_type::string, .default_text = "", .help = "p", .required = true},
      {.name = "fast", .type = opt_type::boolean, .default_text = "false", .help = "f"},
  };
  return t;
}

struct bound {
  option_values values;
  diagnostics diags;
};

bound bind_text(const std::string& text) {
  bound b;
  const toml::table t = toml::parse(std::string_view(text), std::string_view("test.toml"));
  bind_context ctx{"test.toml", "[workloads.rr]", "workloads.rr", nullptr, {"test.toml", 1, 1, {}}};
  b.values = bind_options(sample_table(), t, ctx, b.diags);
  return b;
}

}  // namespace

TEST_CASE("values bind with their units and defaults fill the rest") {
  auto b = bind_text("path = \"/x\"\nconnections = 8\nrate = \"2000/s\"\n");
  REQUIRE(b.diags.empty());
  CHECK(b.values.integer("connections") == 8);
  CHECK(b.values.per_second("rate") == 2000);
  CHECK(b.values.duration_ns("timeout") == 2'000'000'000);
  CHECK_FALSE(b.values.is_set("timeout"));
  CHECK(b.values.is_set("connections"));
  CHECK(b.values.str("where") == "target");
  CHECK(b.values.to_json()["rate"] == "2000/s");
}

TEST_CASE("unknown key: file, line, column and the nearest valid key") {
  auto b = bind_text("path = \"/x\"\n\nconections = 4\n");
  REQUIRE(b.diags.size() == 1);
  CHECK(b.diags.str() ==
        "test.toml:3:1: unknown key 'conections' in [workloads.rr]; did you mean 'connections'?");
}

TEST_CASE("a suggestion for a near miss, and for a known word with a suffix") {
  CHECK(did_you_mean("conections", {"connections", "threads"}) == "; did you mean 'connections'?");
  CHECK(did_you_mean("throughput_ops_s", {"latency", "throughput", "ops"}) == "; did you mean 'throughput'?");
  CHECK(did_you_mean("ops_total", {"ops", "latency"}).empty());  // too short to be sure
}

TEST_CASE("a key nothing resembles gets no suggestion") {
  auto b = bind_text("path = \"/x\"\nzzzzzzzz = 1\n");
  REQUIRE(b.diags.size() == 1);
  CHECK(b.diags.str() == "test.toml:2:1: unknown key 'zzzzzzzz' in [workloads.rr]");
}

TEST_CASE("every error form names its line and key") {
  auto b = bind_text(
      "path = \"/x\"\n"
      "connections = \"8\"\n"      // 2: wrong type
      "timeout = 2\n"              // 3: missing unit
      "rate = \"2000\"\n"          // 4: missing unit inside the string
      "where = \"targte\"\n"       // 5: not allowed, with suggestion
      "fast = 1\n");               // 6: wrong type
  const auto& d = b.diags.items();
  REQUIRE(d.size() == 5);
  CHECK(d[0].str() == "test.toml:2:1: 'connections' in [workloads.rr] must be an integer");
  CHECK(d[1].str() == "test.toml:3:1: 'timeout' in [workloads.rr] needs a unit: write it as a string, e.g. \"250ms\"");
  CHECK(d[2].str().find("test.toml:4:1: 'rate' in [workloads.rr] = \"2000\": missing unit") == 0);
  CHECK(d[3].str() ==
        "test.toml:5:1: 'where' in [workloads.rr] = 'targte' is not one of target, workload, both; did you mean "
        "'target'?");
  CHECK(d[4].str() == "test.toml:6:1: 'fast' in [workloads.rr] must be true or false");
}

TEST_CASE("out of range values and missing required keys") {
  auto b = bind_text("connections = 0\ntimeout = \"10us\"\n");
  const auto& d = b.diags.items();
  REQUIRE(d.size() == 3);
  CHECK(d[0].str() == "test.toml:1:1: 'connections' in [workloads.rr] is out of range; must be 1 .. 100");
  CHECK(d[1].str() == "test.toml:1:1: missing key 'path' in [workloads.rr] (p)");
  CHECK(d[2].str() == "test.toml:2:1: 'timeout' in [workloads.rr] is out of range; must be >= 1.00ms");
}

TEST_CASE("--set assignments: values parse as TOML, else as strings, and errors name the flag") {
  diagnostics diags;
  std::map<std::string, std::string> origins;
  toml::table t = table_from_assignments({"connections=8", "timeout=250ms", "path=/tmp/x", "fast=true", "bogus"},
                                         diags, origins);
  REQUIRE(diags.size() == 1);
  CHECK(diags.str() == "--set bogus: expected key=value in 'bogus'");
  bind_context ctx{"", "rig target", "", &origins, {}};
  diagnostics d2;
  const auto v = bind_options(sample_table(), t, ctx, d2);
  CHECK(d2.empty());
  CHECK(v.integer("connections") == 8);
  CHECK(v.duration_ns("timeout") == 250'000'000);
  CHECK(v.str("path") == "/tmp/x");
  CHECK(v.boolean("fast"));

  toml::table bad = table_from_assignments({"conections=3"}, diags, origins);
  bad.insert_or_assign("path", "x");
  diagnostics d3;
  bind_options(sample_table(), bad, ctx, d3);
  REQUIRE(d3.size() == 1);
  CHECK(d3.str() == "--set conections=3: unknown key 'conections' in rig target; did you mean 'connections'?");
}

TEST_CASE("every registered kind's defaults parse and sit in their ranges") {
  auto check_all = [](const auto& kinds) {
    for (const auto& k : kinds) {
      CAPTURE(k.name);
      toml::table empty;
      bind_context ctx{"x.toml", "[x]", "x", nullptr, {}};
      diagnostics d;
      CHECK_NOTHROW(bind_options(k.options(), empty, ctx, d));
      for (const auto& s : k.options()) CHECK_FALSE(s.help.empty());
    }
  };
  check_all(target_kinds());
  check_all(workload_kinds());
  check_all(injector_kinds());
}

TEST_CASE("the wire form carries every value, its text, its position and whether it was given") {
  auto b = bind_text("path = \"/x\"\nconnections = 8\nrate = \"2000/s\"\nfast = true\n");
  REQUIRE(b.diags.empty());
  const option_values back = option_values::from_wire(nlohmann::json::parse(b.values.to_wire().dump()));
  CHECK(back.to_json() == b.values.to_json());
  CHECK(back.integer("connections") == 8);
  CHECK(back.per_second("rate") == 2000);
  CHECK(back.text("rate") == b.values.text("rate"));
  CHECK(back.duration_ns("timeout") == 2'000'000'000);
  CHECK(back.boolean("fast"));
  CHECK(back.given_keys() == b.values.given_keys());
  CHECK(back.where("connections").str() == b.values.where("connections").str());
  CHECK(back.where("connections").line == 2);
}
