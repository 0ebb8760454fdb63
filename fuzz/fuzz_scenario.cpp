// libFuzzer target: arbitrary bytes as a scenario file, then as a --set override. The loader
// must either return a valid Scenario or throw ConfigError; anything else (another exception,
// a crash, a sanitizer report) is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "scenario/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    fabricsim::load_scenario_text(text, "fuzz.toml");
  } catch (const fabricsim::ConfigError&) {
  }
  try {
    fabricsim::load_scenario_text("[fabric]\nhosts = 2\n", "fuzz.toml",
                                  {.overrides = {std::string(text)}});
  } catch (const fabricsim::ConfigError&) {
  }
  return 0;
}
