// libFuzzer target: unit parsing. Every input parses or throws UnitError; whatever parses
// must render and parse back to the same value.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sim/units.hpp"

namespace {
template <class Parse>
void round_trip(std::string_view text, Parse parse) {
  try {
    const auto v = parse(text);
    if (parse(fabricsim::to_string(v)) != v) std::abort();
  } catch (const fabricsim::UnitError&) {
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  round_trip(text, fabricsim::parse_time);
  round_trip(text, fabricsim::parse_bytes);
  round_trip(text, fabricsim::parse_bandwidth);
  return 0;
}
