#pragma once
#include <nlohmann/json.hpp>

namespace rig {

// A JSON Schema (draft-07) of the scenario language, generated from the same option tables
// that bind and check scenarios, so TOML editors (Taplo, Even Better TOML) complete keys,
// show their help and flag mistakes as rig would. `rig schema` prints it.
nlohmann::json scenario_schema();

}  // namespace rig
