// `rig schema`: the JSON Schema editors use. Every scenario in scenarios/ must validate
// against it, mistakes must not, and its unit patterns must agree with rig's own parsers.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "../helpers.hpp"
#include "core/units.hpp"
#include "injectors/injector.hpp"
#include "rig/schema.hpp"
#include "targets/target.hpp"
#include "workloads/workload.hpp"

using namespace rig;
using namespace rig::testing;
namespace fs = std::filesystem;

namespace {

// python3's tomllib (3.11+) and jsonschema validate files against the schema rig prints.
const char* validator = R"(import json, sys, tomllib, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft7Validator.check_schema(schema)
v = jsonschema.Draft7Validator(schema)
for path in sys.argv[2:]:
    with open(path, 'rb') as f:
        doc = tomllib.load(f)
    errs = list(v.iter_errors(doc))
    for e in errs:
        print(f"{path}: {'/'.join(map(str, e.absolute_path))}: {e.message}")
    print(f"{path}: {'valid' if not errs else 'INVALID'}")
)";

bool have_validator() { return !python_with("tomllib, jsonschema").empty(); }

std::string validate(const temp_dir& tmp, const std::vector<std::string>& files) {
  const auto schema = run_rig({"schema"}, tmp.path);
  REQUIRE(schema.code == 0);
  std::ofstream(tmp.path + "/schema.json") << schema.stdout_text();
  std::ofstream(tmp.path + "/v.py") << validator;
  std::vector<std::string> argv = {python_with("tomllib, jsonschema"), tmp.path + "/v.py", tmp.path + "/schema.json"};
  argv.insert(argv.end(), files.begin(), files.end());
  auto c = child_process::spawn({.argv = argv, .capture_stdout = true, .stderr_path = tmp.path + "/v.err"});
  std::string out;
  while (auto line = c.read_line(60'000)) out += *line + "\n";
  REQUIRE(c.wait(60'000));
  INFO(slurp(tmp.path + "/v.err"));
  REQUIRE(c.exit_code() == 0);
  return out;
}

}  // namespace

TEST_CASE("rig schema: every key of every kind is there, with its help, default and type") {
  const auto s = scenario_schema();
  const auto& props = s["properties"];
  for (const char* k : {"name", "description", "seed", "target", "workloads", "injectors", "phases", "expect"})
    CHECK_MESSAGE(props.contains(k), k);
  auto keys_of = [](const nlohmann::json& kinds_schema, std::string_view kind) {
    for (const auto& c : kinds_schema["allOf"])
      if (c["if"]["properties"]["kind"]["const"] == kind) return c["then"]["properties"];
    return nlohmann::json();
  };
  for (const auto& k : injector_kinds()) {
    const auto keys = keys_of(props["injectors"]["additionalProperties"], k.name);
    REQUIRE_MESSAGE(keys.is_object(), k.name);
    for (const auto& o : k.options()) CHECK_MESSAGE(keys.contains(std::string(o.name)), k.name << "." << o.name);
  }
  for (const auto& k : workload_kinds()) {
    const auto keys = keys_of(props["workloads"]["additionalProperties"], k.name);
    for (const auto& o : k.options()) CHECK_MESSAGE(keys.contains(std::string(o.name)), k.name << "." << o.name);
  }
  for (const auto& k : target_kinds()) {
    const auto keys = keys_of(props["target"], k.name);
    for (const auto& o : k.options()) CHECK_MESSAGE(keys.contains(std::string(o.name)), k.name << "." << o.name);
  }
  const auto threads = keys_of(props["injectors"]["additionalProperties"], "threads");
  CHECK(threads["failpoint"]["default"] == "worker.handle");
  CHECK(threads["probability"]["maximum"] == 1);
  CHECK(threads["action"]["enum"].size() == 4);
  CHECK(threads["delay"]["description"].get<std::string>().find("e.g. \"250ms\"") != std::string::npos);
}

TEST_CASE("rig schema: its unit patterns accept exactly what rig's parsers accept") {
  struct sample {
    const char* kind;
    std::vector<std::string> texts;
    bool (*parses)(const std::string&);
  };
  const std::vector<sample> samples = {
      {"duration", {"250ms", "1.5s", " 10 us", "2µs", "1e3ns", "1_000ms", "5min", "1h", "5", "5 parsecs", "-1s", "ms", "1.5 s "},
       [](const std::string& t) { return parse_duration_ns(t).has_value(); }},
      {"size", {"64KiB", "1MB", "512B", "1.5GiB", "64kb", "64", "KiB", "2TiB"},
       [](const std::string& t) { return parse_size_bytes(t).has_value(); }},
      {"op_rate", {"2000/s", "2k/s", "10/ms", "1/min", "2000", "2000/sec", "5M/s"},
       [](const std::string& t) { return parse_op_rate(t).has_value(); }},
      {"byte_rate", {"10MB/s", "10Mbit/s", "1Gbps", "10mb/s", "100KiB/s", "5"},
       [](const std::string& t) { return parse_byte_rate(t).has_value(); }},
      {"percent", {"25%", "2.5 %", "25", "%"}, [](const std::string& t) { return parse_percent(t).has_value(); }},
  };
  for (const auto& s : samples) {
    const std::regex re(unit_pattern(s.kind), std::regex::ECMAScript);
    for (const auto& t : s.texts) CHECK_MESSAGE(std::regex_search(t, re) == s.parses(t), s.kind << " '" << t << "'");
  }
}

TEST_CASE("rig schema: every file in scenarios/ validates against it, and mistakes do not") {
  if (!have_validator()) {
    MESSAGE("skipped: needs python3 with tomllib and jsonschema (scripts/install-deps.sh installs python3-jsonschema)");
    return;
  }
  temp_dir tmp;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(RIG_SOURCE_DIR "/scenarios"))
    if (e.path().extension() == ".toml") files.push_back(e.path().string());
  REQUIRE(files.size() >= 15);
  const std::string out = validate(tmp, files);
  for (const auto& f : files) CHECK_MESSAGE(out.find(f + ": valid\n") != std::string::npos, out);

  std::ofstream(tmp.path + "/bad.toml") << R"(name = "bad"
[target]
kind = "builtin"
workerz = 2
[workloads.rr]
kind = "tcp"
timeout = "5 parsecs"
[injectors.x]
kind = "threads"
probability = 2
[injectors.y]
kind = "teleport"
[injectors.z]
kind = "proxy"
toxic = "latency"
rate = "1MB/s"
[[phases]]
name = "p"
duration = "1s"
inject = ["x"]
)";
  const std::string bad = validate(tmp, {tmp.path + "/bad.toml"});
  CHECK(bad.find("bad.toml: INVALID") != std::string::npos);
  CHECK(bad.find("target: Additional properties are not allowed ('workerz' was unexpected)") != std::string::npos);
  CHECK(bad.find("workloads/rr/timeout: '5 parsecs' does not match") != std::string::npos);
  CHECK(bad.find("injectors/x/probability: 2 is greater than the maximum of 1") != std::string::npos);
  CHECK(bad.find("injectors/y/kind: 'teleport' is not one of") != std::string::npos);
  // A toxic takes its own keys: another toxic's is refused, its required one asked for.
  CHECK(bad.find("False schema does not allow '1MB/s'") != std::string::npos);
  CHECK(bad.find("injectors/z: 'latency' is a required property") != std::string::npos);
}

TEST_CASE("docs/scenarios.md shows every key as rig list prints it, and its example validates") {
  temp_dir tmp;
  const std::string doc = slurp(RIG_SOURCE_DIR "/docs/scenarios.md");
  const auto list = run_rig({"list"}, tmp.path);
  REQUIRE(list.code == 0);
  std::string printed;
  for (const auto& l : list.out) printed += l + "\n";
  const auto at = doc.find("## Every key");
  REQUIRE(at != std::string::npos);
  // Regenerate the block with scripts/update-docs-keys.sh.
  CHECK_MESSAGE(doc.find("```\n" + printed + "```\n", at) != std::string::npos,
                "docs/scenarios.md's key tables differ from `rig list`: run scripts/update-docs-keys.sh");
  // The example at the top is a scenario rig accepts.
  const auto from = doc.find("```toml\n"), to = doc.find("```\n", from + 8);
  REQUIRE(from != std::string::npos);
  std::ofstream(tmp.path + "/example.toml") << doc.substr(from + 8, to - from - 8);
  const auto v = run_rig({"validate", tmp.path + "/example.toml"}, tmp.path);
  INFO(v.err);
  CHECK(v.code == 0);
}

TEST_CASE("README.md names every scenario in scenarios/ and every kind in the registries") {
  std::ifstream in(RIG_SOURCE_DIR "/README.md");
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t files = 0;
  for (const auto& f : std::filesystem::directory_iterator(RIG_SOURCE_DIR "/scenarios"))
    if (f.path().extension() == ".toml") {
      ++files;
      CHECK_MESSAGE(readme.find("`" + f.path().filename().string() + "`") != std::string::npos,
                    f.path().filename().string(), " is not in README.md's scenario table");
    }
  CHECK(files >= 20);
  // The kinds table has one row per kind: "| target `builtin` |", "| injector `rate` |", ...
  const auto row = [&](const char* what, std::string_view name) {
    return readme.find(fmt::format("| {} `{}` |", what, name)) != std::string::npos;
  };
  for (const auto& k : target_kinds()) CHECK_MESSAGE(row("target", k.name), "target ", k.name);
  for (const auto& k : workload_kinds()) CHECK_MESSAGE(row("workload", k.name), "workload ", k.name);
  for (const auto& k : injector_kinds()) CHECK_MESSAGE(row("injector", k.name), "injector ", k.name);
  // One table: no blank line between its first and last rows.
  const size_t first = readme.find("| target `builtin` |"), last = readme.find("| injector `rate` |");
  REQUIRE(first != std::string::npos);
  REQUIRE(last != std::string::npos);
  CHECK(readme.substr(first, last - first).find("\n\n") == std::string::npos);
}
