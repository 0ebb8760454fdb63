// The scenario schema (scenario/schema.hpp) is the one list of keys: the loader reads nothing
// outside it and everything in it, docs/scenario.md is generated from it, the resolved
// scenario it prints loads back to itself, and calibration's parameters are its rows.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "experiments/calibration.hpp"
#include "experiments/sweep.hpp"
#include "report/results.hpp"
#include "report/scenario_doc.hpp"
#include "scenario/scenario.hpp"
#include "scenario/schema.hpp"
#include "tests/support/temp_dir.hpp"

namespace fabricsim {
namespace {

const std::string kSource = FABRICSIM_SOURCE_DIR;

std::string read(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A value of the key's type, valid or not for its range: what matters is that the loader asks
// for the key (a key nobody reads is an "unknown key" error).
std::string sample(const KeySpec& k) {
  switch (k.type) {
    case KeyType::kString:
      return "\"x\"";
    case KeyType::kChoice:
      return fmt::format("\"{}\"", k.choices.front());
    case KeyType::kBoolean:
      return "true";
    case KeyType::kInteger:
      return "1";
    case KeyType::kReal:
      return "1.0";
    case KeyType::kTime:
      return "\"1us\"";
    case KeyType::kSize:
    case KeyType::kByteCount:
      return "\"1KiB\"";
    case KeyType::kBandwidth:
      return "\"1Gbps\"";
    case KeyType::kLength:
      return "\"1m\"";
    case KeyType::kFile:
      return "\"missing.toml\"";
    case KeyType::kStringList:
      return fmt::format("[\"{}\"]", k.choices.empty() ? std::string("x") : k.choices[0]);
    case KeyType::kIntegerList:
      return "[1]";
    case KeyType::kSizeList:
      return "[\"1KiB\"]";
  }
  return "";
}

TEST(Schema, EveryKeyOfTheSchemaIsOneTheLoaderReads) {
  // All keys at once: many combinations are refused (not applicable, out of range, missing
  // files), but none may be unknown, and none may reach a loader path the schema lacks
  // (std::logic_error).
  std::map<std::string, std::string> by_table;
  int keys = 0;
  for (const KeySpec& k : scenario_schema()) {
    if (k.path == "extends") continue;  // read by the document, before the loader
    by_table[std::string(k.table())] += fmt::format("{} = {}\n", k.name(), sample(k));
    ++keys;
  }
  std::string text = by_table[""];
  for (const auto& [table, body] : by_table)
    if (!table.empty()) text += fmt::format("[{}]\n{}", table, body);
  std::vector<std::string> errors;
  try {
    load_scenario_text(text, "all-keys.toml");
  } catch (const ConfigError& e) {
    errors = e.messages();
  }
  for (const auto& e : errors) EXPECT_EQ(e.find("unknown key"), std::string::npos) << e;
  EXPECT_GT(keys, 170);
}

TEST(Schema, EveryKeyTheLoaderResolvesHasARowAndARowsDefaultIsItsType) {
  int scenarios = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(kSource + "/scenarios")) {
    if (e.path().extension() != ".toml") continue;
    ++scenarios;
    for (const auto& key : known_scenario_keys(load_scenario(e.path())))
      EXPECT_NE(find_scenario_key(key), nullptr) << key << " (" << e.path() << ")";
  }
  EXPECT_GE(scenarios, 2);
  for (const KeySpec& k : scenario_schema()) {
    EXPECT_EQ(k.presence == Presence::kDefault, !std::holds_alternative<std::monostate>(k.fallback))
        << k.path;
    EXPECT_FALSE(k.doc.empty()) << k.path;
    EXPECT_EQ(k.type == KeyType::kChoice, !k.choices.empty() && k.type != KeyType::kStringList)
        << k.path;
    if (k.presence == Presence::kDerived) {
      EXPECT_FALSE(k.note.empty()) << k.path;
    }
  }
}

TEST(Schema, DefaultsLoadAsTheSchemaWritesThem) {
  // A scenario that sets only what is required: every key with a default resolves to it.
  const Scenario s = load_scenario_text(
      "[fabric]\nhosts = 2\nlink_rate = \"100Gbps\"\n[traffic]\nmessage_size = \"1KiB\"\n",
      "minimal.toml");
  int checked = 0;
  for (const KeySpec& k : scenario_schema()) {
    if (k.presence != Presence::kDefault) continue;
    const toml::node* v = s.resolved.at_path(k.path).node();
    if (v == nullptr) continue;  // a table this scenario does not have ([workload], ...)
    ++checked;
    // Render the resolved value the way the schema renders its default.
    toml::table one;
    one.insert("v", *v);
    const std::string rendered = toml_text(k.fallback, k.type);
    toml::table expected = toml::parse("v = " + rendered);
    std::ostringstream got;
    got << toml::toml_formatter(one);
    EXPECT_EQ(one, expected) << k.path << ": resolved " << got.str() << ", schema " << rendered;
  }
  EXPECT_GT(checked, 80);
}

TEST(Schema, DocsScenarioMdIsGeneratedFromTheSchema) {
  const std::filesystem::path file = kSource + "/docs/scenario.md";
  const std::string doc = read(file);
  const auto begin = doc.find(kGeneratedBegin), end = doc.find(kGeneratedEnd);
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  const std::size_t from = begin + kGeneratedBegin.size() + 1;
  const std::string generated = fmt::format("\n{}\n", scenario_keys_markdown());
  if (std::getenv("FABRICSIM_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(file) << doc.substr(0, from) << generated << doc.substr(end);
    return;
  }
  EXPECT_EQ(doc.substr(from, end - from), generated)
      << "docs/scenario.md is out of date: FABRICSIM_UPDATE_GOLDEN=1 ctest -R Schema.Docs";
}

TEST(Schema, TheResolvedScenarioLoadsBackToItself) {
  const std::filesystem::path dir = tests::temp_dir("resolved");
  std::filesystem::create_directories(dir);
  for (const char* name : {"/tests/data/golden.toml", "/scenarios/case-study-32gpu/before.toml",
                           "/scenarios/fat-tree-256/roce-400g-2to1-rail.toml"}) {
    const Scenario s = load_scenario(kSource + name);
    const std::filesystem::path copy = dir / "resolved.toml";
    std::ofstream(copy) << resolved_scenario_toml(s);
    try {
      const Scenario back = load_scenario(copy);
      EXPECT_EQ(s.resolved, back.resolved) << name;
    } catch (const ConfigError& e) {
      ADD_FAILURE() << name << ": " << e.what();
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(Schema, TheBuyingStudysRoceOptionsRunWithPfcAndDcqcnActing) {
  // Issue 19: the risk a RoCE buyer needs to see (pauses, marks, rate cuts) acts only with
  // packets on the network; the InfiniBand options stay at flow level.
  for (const char* name : {"roce-400g-full-rail.toml", "roce-400g-2to1-rail.toml"}) {
    const Scenario s = load_scenario(kSource + "/scenarios/fat-tree-256/" + name);
    EXPECT_EQ(s.fidelity, Fidelity::kHybrid) << name;
    const FidelityScope scope = fidelity_scope(s);
    EXPECT_TRUE(scope.inactive.empty()) << name;
    for (const char* mechanism : {"PFC", "ECN marking", "DCQCN"})
      EXPECT_NE(std::find(scope.models.begin(), scope.models.end(), mechanism), scope.models.end())
          << name << ": " << mechanism;
  }
  EXPECT_EQ(load_scenario(kSource + "/scenarios/fat-tree-256/ib-ndr-full-rail.toml").fidelity,
            Fidelity::kFlow);
}

TEST(Schema, CalibrationParametersAreRowsWhoseNumberRoundTrips) {
  const auto params = calibration_parameters();
  ASSERT_GE(params.size(), 17u);
  Scenario s = load_scenario_text("[fabric]\nhosts = 2\nlink_rate = \"100Gbps\"\n", "m.toml");
  for (const auto& p : params) {
    const KeySpec* k = find_scenario_key(p.key);
    ASSERT_NE(k, nullptr) << p.key;
    EXPECT_TRUE(static_cast<bool>(k->number)) << p.key;
    EXPECT_EQ(p.time_us, k->type == KeyType::kTime) << p.key;
    const double v = (p.min + p.max) / 3;
    p.set(s, v);
    EXPECT_NEAR(p.get(s), v, v * 1e-9 + 1e-6) << p.key;  // times round to the picosecond
  }
  // The order the fit and its reports use: efficiencies and launch latencies first.
  EXPECT_EQ(params[0].key, "flow.efficiency_nvlink");
  EXPECT_EQ(params[1].key, "flow.efficiency_network");
  EXPECT_EQ(params[2].key, "nccl.launch_latency.ll");
}

TEST(Schema, ASweepAxisThatIsNoKeyIsRefusedBeforeAnyPointLoads) {
  try {
    sweep_axes(kSource + "/tests/data/golden.toml", {"switch.bufer=1MiB,2MiB"});
    FAIL() << "a misspelt axis was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("did you mean 'switch.buffer'"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(sweep_axes(kSource + "/tests/data/golden.toml", {"switch.buffer=1MiB,2MiB"}).size(),
            1u);
}

}  // namespace
}  // namespace fabricsim
