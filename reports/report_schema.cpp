#include "reports/report_schema.hpp"

namespace rig {

namespace {

using nlohmann::json;

json str() { return {{"type", "string"}}; }
json figure() { return {{"type", json::array({"number", "null"})}}; }
json object_of(json props, json required, bool closed = true) {
  json o = {{"type", "object"}, {"properties", std::move(props)}, {"required", std::move(required)}};
  if (closed) o["additionalProperties"] = false;
  return o;
}
json array_of(json items) { return {{"type", "array"}, {"items", std::move(items)}}; }
json ref(const char* name) { return {{"$ref", std::string("#/definitions/") + name}}; }

json latency() {
  json props = {{"count", {{"type", "integer"}, {"minimum", 0}}},
                {"low_confidence", array_of({{"enum", {"p50", "p90", "p99", "p999"}}})}};
  json required = {"count", "low_confidence"};
  for (const char* k : {"min", "mean", "p50", "p90", "p99", "p999", "max"}) {
    props[k] = figure();
    required.push_back(k);
  }
  return object_of(props, required);
}

json workload() {
  const json hdr = {{"type", "string"}, {"pattern", "^HISTFAAA[A-Za-z0-9+/]*={0,2}$"}};
  json props = {
      {"ops", {{"type", "integer"}, {"minimum", 0}}},
      {"due", {{"type", "integer"}, {"minimum", 0}}},
      {"not_sent", {{"type", "integer"}, {"minimum", 0}}},
      {"unfinished", {{"type", "integer"}, {"minimum", 0}}},
      {"errors", {{"type", "object"}, {"additionalProperties", {{"type", "integer"}, {"minimum", 0}}}}},
      {"throughput_ops_s", {{"type", "number"}, {"minimum", 0}}},
      {"errors_pct", figure()},
      {"generator", object_of({{"late_sends", {{"type", "integer"}}},
                               {"late_share", {{"type", "number"}}},
                               {"limited", {{"type", "boolean"}}},
                               {"warning", str()}},
                              {"late_sends", "late_share", "limited", "warning"})},
      {"status", {{"type", "object"}, {"additionalProperties", {{"type", "integer"}}}}},
      {"counts", {{"type", "object"}, {"additionalProperties", {{"type", "integer"}}}}},
      {"histograms", object_of({{"encoding", {{"const", "HdrHistogram V2 compressed, base64"}}},
                                {"unit", {{"const", "ns"}}},
                                {"latency", hdr},
                                {"service", hdr},
                                {"send_lag", hdr}},
                               {"encoding", "unit", "latency"})}};
  json required = {"ops", "due", "not_sent", "unfinished", "errors", "throughput_ops_s", "errors_pct", "generator"};
  for (const char* k : {"latency_us", "service_us", "send_lag_us", "error_latency_us", "rejected_latency_us",
                        "all_latency_us"}) {
    props[k] = ref("latency");
    required.push_back(k);
  }
  return object_of(props, required);
}

json injection() {
  return object_of({{"name", str()},
                    {"kind", str()},
                    {"mechanism", str()},
                    {"params", {{"type", "object"}}},
                    {"verified", {{"type", "boolean"}}},
                    {"verification", str()},
                    {"measured", {{"type", "object"}}},
                    {"reverted", {{"type", json::array({"boolean", "null"})}}},
                    {"revert", str()}},
                   {"name", "kind", "mechanism", "params", "verified", "verification", "measured", "reverted", "revert"});
}

json phase() {
  return object_of({{"name", str()},
                    {"start_s", {{"type", "number"}}},
                    {"end_s", {{"type", "number"}}},
                    {"start_wall_s", {{"type", "number"}}},
                    {"end_wall_s", {{"type", "number"}}},
                    {"completed", {{"type", "boolean"}}},
                    {"injections", array_of(ref("injection"))},
                    {"workloads", {{"type", "object"}, {"additionalProperties", ref("workload")}}},
                    {"resources", {{"type", "object"}}}},
                   {"name", "start_s", "end_s", "start_wall_s", "end_wall_s", "completed", "injections", "workloads",
                    "resources"});
}

}  // namespace

json report_schema() {
  json s = object_of(
      {{"report_version", {{"const", report_version}}},
       {"rig_version", str()},
       {"status", {{"enum", {"ok", "checks_failed", "unverified", "failed", "interrupted"}}}},
       {"failure", str()},
       {"scenario", object_of({{"name", str()},
                               {"file", str()},
                               {"description", str()},
                               {"seed", {{"type", "integer"}, {"minimum", 0}}},
                               {"sets", {{"type", "array"}, {"items", str()}}}},
                              {"name", "file", "description"})},
       {"host", {{"type", "object"}}},
       {"target", {{"type", "object"}}},
       {"workloads", {{"type", "object"}}},
       {"phases", array_of(ref("phase"))},
       {"magnification", array_of(object_of({{"phase", str()},
                                             {"baseline", str()},
                                             {"workload", str()},
                                             {"p50_x", figure()},
                                             {"p99_x", figure()},
                                             {"throughput_x", figure()}},
                                            {"phase", "baseline", "workload", "p50_x", "p99_x", "throughput_x"}))},
       {"events", array_of(object_of({{"t_s", {{"type", "number"}}}, {"kind", str()}, {"detail", str()}},
                                     {"t_s", "kind", "detail"}))},
       {"expectations", array_of(object_of({{"expr", str()}, {"ok", {{"type", "boolean"}}}, {"actual", str()}},
                                           {"expr", "ok", "actual"}))},
       {"skipped_injectors", {{"type", "array"}}},
       {"warnings", {{"type", "array"}, {"items", str()}}}},
      {"report_version", "rig_version", "status", "scenario", "host", "target", "workloads", "phases", "magnification",
       "events", "expectations"});
  s["$schema"] = "http://json-schema.org/draft-07/schema#";
  s["title"] = "rig report.json";
  s["description"] = "What `rig run` writes in each run directory; docs/report.md says what each key holds. "
                     "report_version changes when a key a consumer relies on changes.";
  s["definitions"] = {{"latency", latency()}, {"workload", workload()}, {"injection", injection()}, {"phase", phase()}};
  return s;
}

}  // namespace rig
