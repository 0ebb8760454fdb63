#include "report/scenario_doc.hpp"

#include <fmt/format.h>
#include <sstream>

#include <toml++/toml.h>

#include "scenario/schema.hpp"

namespace fabricsim {

namespace {

bool under(const KeySpec& k, std::string_view prefix) {
  if (prefix.empty() || k.path == prefix) return true;
  return k.path.starts_with(prefix) && k.path.size() > prefix.size() &&
         k.path[prefix.size()] == '.';
}

// A markdown table cell: pipes would end it.
std::string cell(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

std::string_view type_name(KeyType t) {
  switch (t) {
    case KeyType::kString:
      return "string";
    case KeyType::kChoice:
      return "choice";
    case KeyType::kBoolean:
      return "boolean";
    case KeyType::kInteger:
      return "integer";
    case KeyType::kReal:
      return "number";
    case KeyType::kTime:
      return "time";
    case KeyType::kSize:
      return "size";
    case KeyType::kByteCount:
      return "byte_count";
    case KeyType::kBandwidth:
      return "bandwidth";
    case KeyType::kLength:
      return "length";
    case KeyType::kFile:
      return "file";
    case KeyType::kStringList:
      return "string_list";
    case KeyType::kIntegerList:
      return "integer_list";
    case KeyType::kSizeList:
      return "size_list";
  }
  return "";
}

std::string_view presence_name(Presence p) {
  switch (p) {
    case Presence::kDefault:
      return "default";
    case Presence::kRequired:
      return "required";
    case Presence::kOptional:
      return "optional";
    case Presence::kDerived:
      return "derived";
  }
  return "";
}

}  // namespace

std::string scenario_keys_markdown(std::string_view prefix) {
  std::string out;
  for (const SectionSpec& section : scenario_sections()) {
    std::string rows;
    for (const KeySpec& k : scenario_schema())
      if (k.table() == section.table && under(k, prefix))
        rows += fmt::format("| `{}` | {} | {} | {} |\n", k.path, cell(describe_type(k)),
                            cell(describe_default(k)), cell(k.doc));
    const bool whole = prefix.empty() || section.table == prefix ||
                       section.table.starts_with(std::string(prefix) + ".");
    if (rows.empty() && !whole) continue;
    if (!out.empty()) out += '\n';
    out += fmt::format("### {}\n", section.heading);
    if (!section.intro.empty()) out += section.intro + "\n\n";
    if (!rows.empty()) out += "| key | type | default | meaning |\n|---|---|---|---|\n" + rows;
    if (!section.outro.empty()) out += "\n" + section.outro + "\n";
  }
  return out;
}

std::string scenario_keys_json(std::string_view prefix) {
  toml::array rows;
  for (const KeySpec& k : scenario_schema()) {
    if (!under(k, prefix)) continue;
    toml::table row{{"key", k.path},
                    {"type", std::string(type_name(k.type))},
                    {"type_text", describe_type(k)},
                    {"presence", std::string(presence_name(k.presence))},
                    {"default_text", describe_default(k)},
                    {"doc", k.doc}};
    if (k.presence == Presence::kDefault) row.insert("default", toml_text(k.fallback, k.type));
    if (k.min > -kUnbounded) row.insert("min", k.min);
    if (k.max < kUnbounded) row.insert("max", k.max);
    if (!k.choices.empty()) {
      toml::array choices;
      for (const auto& c : k.choices) choices.push_back(c);
      row.insert("choices", std::move(choices));
    }
    if (k.fit.use != FitSpec::Use::kNone)
      row.insert("calibration", toml::table{{"min", k.fit.min},
                                            {"max", k.fit.max},
                                            {"physical_low", k.fit.low},
                                            {"physical_high", k.fit.high},
                                            {"physical_basis", std::string(k.fit.basis)}});
    rows.push_back(std::move(row));
  }
  std::ostringstream s;
  s << toml::json_formatter(rows) << '\n';
  return s.str();
}

std::string resolved_scenario_toml(const Scenario& scenario) {
  std::string out;
  std::string_view table;
  bool first = true;
  for (const KeySpec& k : scenario_schema()) {
    const toml::node* value = scenario.resolved.at_path(k.path).node();
    if (value == nullptr) continue;
    if (k.table() != table || first) {
      if (!k.table().empty()) out += fmt::format("{}[{}]\n", out.empty() ? "" : "\n", k.table());
      table = k.table();
      first = false;
    }
    const auto it = scenario.positions.find(k.path);
    const std::string origin = it != scenario.positions.end()     ? it->second
                               : k.presence == Presence::kDefault ? "default"
                                                                  : "derived";
    std::ostringstream v;
    v << toml::toml_formatter(*value);
    out += fmt::format("{} = {}  # {}\n", k.name(), v.str(), origin);
  }
  return out;
}

}  // namespace fabricsim
