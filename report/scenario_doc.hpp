#pragma once
// The scenario schema (scenario/schema.hpp) as people and programs read it: the key tables of
// docs/scenario.md, `fabricsim schema` (markdown or JSON) and `fabricsim check --resolved`.

#include <string>
#include <string_view>

#include "scenario/scenario.hpp"

namespace fabricsim {

// docs/scenario.md's "Keys" part: per section its heading, introduction, key table (key, type,
// default, meaning) and closing remarks. With `prefix`, only the keys under it ("nic.dcqcn").
std::string scenario_keys_markdown(std::string_view prefix = {});
// The same rows as JSON: [{key, type, type_text, default, default_text, min, max, choices,
// doc, calibration}], for tools.
std::string scenario_keys_json(std::string_view prefix = {});
// The scenario as it runs, in the schema's order, as TOML: every key that applies with its
// value, and a comment saying where the value came from ("default", "derived" or the
// file:line:column, or the --set, that wrote it).
std::string resolved_scenario_toml(const Scenario& scenario);

// The markers docs/scenario.md holds the generated part between.
inline constexpr std::string_view kGeneratedBegin =
    "<!-- BEGIN generated from scenario/schema.cpp (`fabricsim schema`); edit the table there -->";
inline constexpr std::string_view kGeneratedEnd = "<!-- END generated -->";

}  // namespace fabricsim
