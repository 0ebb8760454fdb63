#pragma once
// The scenario schema: one row per key a scenario file may hold, with its type, default, range,
// meaning and, for keys calibration fits, the number it sets. Everything that knows about keys
// reads this table:
//   - the loader (scenario.cpp) reads every key through it: type, default and range come from
//     the row, so a default is written once (where a model struct has one with its citation,
//     the row takes the struct's value);
//   - `--sweep` and `[sweep]` axes are checked against it before any point is loaded;
//   - `fabricsim check --resolved` prints the resolved scenario in its order, with units;
//   - calibration's parameters are its rows with a FitSpec (experiments/calibration.cpp);
//   - `fabricsim schema` prints it, and docs/scenario.md's key tables are generated from it
//     (tests/scenario/schema_test.cpp fails when the file and the table differ).
// The table is built once, on first use, and never changes: a constant, not global state.

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sim/units.hpp"

namespace fabricsim {

struct Scenario;

enum class KeyType {
  kString,
  kChoice,  // one of `choices`
  kBoolean,
  kInteger,    // in [min, max]
  kReal,       // a number in [min, max]
  kTime,       // written with its unit; `positive`: 0 refused
  kSize,       // bytes, written with their unit
  kByteCount,  // a size with its unit, or a plain integer number of bytes (as NCCL's env)
  kBandwidth,
  kLength,       // a cable length, "3m" (metres)
  kFile,         // a path relative to the file that names it
  kStringList,   // `choices`, when given, are the values allowed in it
  kIntegerList,  // each in [min, max]
  kSizeList,
};

enum class Presence {
  kDefault,   // absent: `fallback`
  kRequired,  // absent: an error (unless `note` names when it is not needed)
  kOptional,  // absent: nothing (no value echoed)
  kDerived,   // absent: computed from other keys, as `note` says
};

using KeyValue = std::variant<std::monostate, bool, std::int64_t, double, std::string, Time, Bytes,
                              Bandwidth, std::vector<std::string>, std::vector<std::int64_t>>;

// A key calibration can fit: its bounds (in the key's number unit, see KeyNumber), where the
// fit starts when the scenario's value is below `min`, when it is in the default set, and its
// place in the fit's parameter order.
struct FitSpec {
  enum class Use { kNone, kDefault, kWithRdmaLatencyRows, kWithRdmaStreamRows, kOnRequest };
  Use use = Use::kNone;
  double min = 0, max = 0;  // where the fit may search
  double start = 0;
  int order = 0;
  // The range a real machine's value lies in, and the evidence for it (docs/validation.md,
  // "Physical ranges"). The fit's prior spans it: log-normal, centred on the scenario's value,
  // its ends two standard deviations away; a fitted value outside it, or at a search bound,
  // makes calibration refuse to call the fit good.
  double low = 0, high = 0;
  std::string_view basis{};
};

// The plain number a key sets in a Scenario, for calibration: times in µs, bandwidths in GB/s,
// numbers as written.
struct KeyNumber {
  std::function<double(const Scenario&)> get{};
  std::function<void(Scenario&, double)> set{};
  explicit operator bool() const { return static_cast<bool>(get); }
};

inline constexpr double kUnbounded = std::numeric_limits<double>::infinity();

struct KeySpec {
  std::string path{};  // dotted, e.g. "nic.dcqcn.rpg_time_reset"
  KeyType type = KeyType::kString;
  Presence presence = Presence::kDefault;
  KeyValue fallback{};  // Presence::kDefault only
  // How a derived default is computed, when a required key is not needed, or a remark on the
  // default ("off"): shown in the default column.
  std::string note{};
  double min = -kUnbounded, max = kUnbounded;  // numbers, integers, integer lists
  bool positive = false;                       // quantities: 0 refused
  std::vector<std::string> choices{};          // kChoice, kStringList
  std::string type_note{};  // replaces the generated type text where the range is not static
  std::string doc{};        // what it means (markdown)
  KeyNumber number{};       // set for keys calibration fits or estimates
  FitSpec fit{};

  // The table it belongs to ("" at the top level) and its own name.
  std::string_view table() const;
  std::string_view name() const;
};

// A table of the scenario file as docs/scenario.md presents it.
struct SectionSpec {
  std::string table;    // "" top level, "nic.dcqcn"
  std::string heading;  // markdown after "### "
  std::string intro;    // before the key table (markdown)
  std::string outro;    // after it
};

const std::vector<KeySpec>& scenario_schema();
const std::vector<SectionSpec>& scenario_sections();
// The row of `path`, else nullptr.
const KeySpec* find_scenario_key(std::string_view path);
// Whether `path` names a key or a table of keys (a `--sweep` or `--set` target).
bool is_scenario_path(std::string_view path);
// The known key nearest to `path`, for "did you mean".
std::string nearest_scenario_key(std::string_view path);

// As docs/scenario.md shows them: "integer 1 … 1000", "`\"1s\"`", "required for `ring`".
std::string describe_type(const KeySpec& key);
std::string describe_default(const KeySpec& key);
// A value as TOML text: "\"4KiB\"", "0.125", "[3]".
std::string toml_text(const KeyValue& value, KeyType type);

}  // namespace fabricsim
