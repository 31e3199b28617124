#pragma once
// report.json's published JSON Schema (draft-07), `rig schema --report`: what a consumer may
// rely on for report_version 1. A test validates every report a suite writes against it.
#include <nlohmann/json.hpp>

namespace rig {

constexpr int report_version = 1;
nlohmann::json report_schema();

}  // namespace rig
