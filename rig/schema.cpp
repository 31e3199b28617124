#include "rig/schema.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <string>

#include "core/units.hpp"
#include "injectors/injector.hpp"
#include "rig/scenario.hpp"
#include "targets/target.hpp"
#include "workloads/workload.hpp"

namespace rig {

namespace {

using nlohmann::json;

// A default as JSON, from its TOML text ("\"250ms\"", "4", "true", "[\"fsync\"]").
json default_json(std::string_view text) {
  if (text.empty()) return nullptr;
  try {
    const toml::table t = toml::parse("v = " + std::string(text));
    const toml::node& n = *t.get("v");
    if (auto v = n.value<bool>(); n.is_boolean()) return *v;
    if (n.is_integer()) return *n.value<int64_t>();
    if (n.is_floating_point()) return *n.value<double>();
    if (n.is_string()) return *n.value<std::string>();
    if (const auto* a = n.as_array()) {
      json out = json::array();
      for (const auto& el : *a)
        if (auto s = el.value<std::string>()) out.push_back(*s);
      return out;
    }
  } catch (const std::exception&) {
  }
  return nullptr;
}

json option_schema(const option_spec& o) {
  json s;
  switch (o.type) {
    case opt_type::boolean: s = {{"type", "boolean"}}; break;
    case opt_type::integer:
    case opt_type::real:
      s = {{"type", o.type == opt_type::integer ? "integer" : "number"}};
      if (std::isfinite(o.min)) s["minimum"] = o.min;
      if (std::isfinite(o.max)) s["maximum"] = o.max;
      break;
    case opt_type::string:
      s = {{"type", "string"}};
      if (!o.allowed.empty()) s["enum"] = o.allowed;
      break;
    case opt_type::strings:
      s = {{"type", "array"}, {"items", {{"type", "string"}}}};
      if (!o.allowed.empty()) s["items"]["enum"] = o.allowed;
      break;
    case opt_type::string_map: s = {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}; break;
    case opt_type::duration: s = {{"type", "string"}, {"pattern", unit_pattern("duration")}}; break;
    case opt_type::size: s = {{"type", "string"}, {"pattern", unit_pattern("size")}}; break;
    case opt_type::op_rate: s = {{"type", "string"}, {"pattern", unit_pattern("op_rate")}}; break;
    case opt_type::byte_rate: s = {{"type", "string"}, {"pattern", unit_pattern("byte_rate")}}; break;
    case opt_type::percent: s = {{"type", "string"}, {"pattern", unit_pattern("percent")}}; break;
  }
  std::string help(o.help);
  if (std::string_view hint = unit_hint(o.type); !hint.empty()) help += " (" + std::string(type_name(o.type)) + ", " + std::string(hint) + ")";
  if (const std::string range = describe_range(o); !range.empty()) help += "; range " + range;
  s["description"] = help;
  if (json d = default_json(o.default_text); !d.is_null()) s["default"] = d;
  return s;
}

// An object whose keys are the table's, and nothing else.
json table_schema(const option_table& t, json extra_properties = json::object(), std::vector<std::string> required = {}) {
  json props = std::move(extra_properties);
  for (const auto& o : t) {
    props[std::string(o.name)] = option_schema(o);
    if (o.required) required.emplace_back(o.name);
  }
  json s = {{"type", "object"}, {"properties", props}, {"additionalProperties", false}};
  if (!required.empty()) s["required"] = required;
  return s;
}

// Per variant (the proxy's toxic), if its key names it then only its own keys of the
// variants' are allowed, and its required ones must be there.
json variants_schema(const option_variants& vs, const option_table& all) {
  json cases = json::array();
  for (const auto& v : vs.cases) {
    json props = json::object();
    std::vector<std::string> required;
    for (const auto& o : all) {
      const bool own = std::any_of(v.options->begin(), v.options->end(), [&](const auto& x) { return x.name == o.name; });
      const bool someones = std::any_of(vs.cases.begin(), vs.cases.end(), [&](const auto& c) {
        return std::any_of(c.options->begin(), c.options->end(), [&](const auto& x) { return x.name == o.name; });
      });
      if (someones && !own) props[std::string(o.name)] = false;  // another variant's key
    }
    for (const auto& o : *v.options)
      if (o.required) required.emplace_back(o.name);
    json then = {{"properties", props}, {"description", std::string(v.summary)}};
    if (!required.empty()) then["required"] = required;
    cases.push_back({{"if", {{"properties", {{std::string(vs.key), {{"const", std::string(v.value)}}}}},
                             {"required", {std::string(vs.key)}}}},
                     {"then", std::move(then)}});
  }
  return cases;
}

// Per kind, if `kind` names it then the table is that kind's keys and nothing else: an
// editor (and the test's validator) then names the very key that is wrong.
template <class Kinds>
json kinds_schema(const Kinds& kinds, const char* what, const json& envelope = json::object()) {
  json cases = json::array();
  std::vector<std::string> names;
  std::string summary;
  for (const auto& k : kinds) {
    json props = envelope;
    props["kind"] = {{"const", std::string(k.name)}, {"description", std::string(k.summary)}};
    json then = table_schema(k.options(), props, {"kind"});
    then["title"] = std::string(what) + " " + std::string(k.name);
    then["description"] = std::string(k.summary);
    if constexpr (requires { k.variants; })
      if (k.variants) then["allOf"] = variants_schema(k.variants(), k.options());
    cases.push_back({{"if", {{"properties", {{"kind", {{"const", std::string(k.name)}}}}}, {"required", {"kind"}}}},
                     {"then", std::move(then)}});
    names.emplace_back(k.name);
    summary += "\n" + std::string(k.name) + ": " + std::string(k.summary);
  }
  return {{"type", "object"},
          {"required", {"kind"}},
          {"properties", {{"kind", {{"enum", names}, {"description", std::string(what) + " kind:" + summary}}}}},
          {"allOf", cases}};
}

}  // namespace

json scenario_schema() {
  json props = table_schema(top_options())["properties"];
  props["target"] = kinds_schema(target_kinds(), "target");
  props["target"]["description"] = "what the workloads run against";
  props["workloads"] = {{"type", "object"},
                        {"description", "[workloads.NAME]: the load, each with its own figures"},
                        {"additionalProperties", kinds_schema(workload_kinds(), "workload")}};
  props["injectors"] = {{"type", "object"},
                        {"description", "[injectors.NAME]: faults a phase can inject by NAME"},
                        {"additionalProperties",
                         kinds_schema(injector_kinds(), "injector",
                                      {{"may_be_unverified",
                                        {{"type", "boolean"},
                                         {"default", false},
                                         {"description", "an injection of this injector that is not verified in the "
                                                         "target does not fail the run (by default it does: exit 1, "
                                                         "status unverified)"}}}})}};
  props["phases"] = {{"type", "array"},
                     {"minItems", 1},
                     {"description", "[[phases]]: run in order; each injects the injectors it names"},
                     {"items", table_schema(phase_options())}};
  props["sweep"] = table_schema(sweep_options());
  props["sweep"]["description"] = "[sweep]: the scenario once per level of one key, the response curve drawn";
  props["sweep"]["properties"]["values"] = {
      {"type", "array"},
      {"minItems", 1},
      {"items", {{"type", {"string", "number", "boolean"}}}},
      {"description", "the levels, in order, written as the key takes them (\"5ms\", 4); or from/to/steps"}};
  props["expect"] = table_schema(expect_options());
  props["expect"]["description"] = "[expect]: checks over the report; a failing one exits 1";
  return {{"$schema", "http://json-schema.org/draft-07/schema#"},
          {"title", "rig scenario"},
          {"description", "A rig scenario: a target, workloads, injectors and phases (generated by `rig schema`)"},
          {"type", "object"},
          {"properties", props},
          {"required", {"name", "target", "phases"}},
          {"additionalProperties", false}};
}

}  // namespace rig
