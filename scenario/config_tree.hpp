#pragma once
// Scenario files as a merged tree of TOML values that remember where they were written.
//
// A scenario is one TOML file, optionally `extends = "base.toml"` (a path relative to the
// file; chains allowed, cycles rejected), plus `--set a.b.c=value` overrides from the command
// line. Layers merge deeply: tables merge key by key, every other value (arrays included)
// replaces the one below. Each leaf keeps a pointer to its toml::node, whose source region
// (file, line, column) every error message quotes.
//
// ConfigReader then turns the tree into plain structs: each accessor states the key, its type
// and unit, its default or that it is required, and its constraints. Keys nobody asked for
// are errors ("unknown key", with the nearest known key suggested). All problems are
// collected and reported together, one line each; nothing runs on an invalid scenario.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "sim/units.hpp"

namespace fabricsim {

class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(std::vector<std::string> messages);
  const std::vector<std::string>& messages() const { return messages_; }

 private:
  std::vector<std::string> messages_;
};

struct ConfigChild;

struct ConfigNode {
  const toml::node* value = nullptr;  // the node as written (a table for tables)
  std::vector<ConfigChild> children;  // tables only, in written order
  bool is_table() const { return value == nullptr || value->is_table(); }
  ConfigNode* child(std::string_view key);
  const ConfigNode* child(std::string_view key) const;
};

struct ConfigChild {
  std::string key;
  ConfigNode node;
};

// "file:line:column" of a node, or "--set 'k=v'" for a command-line override.
std::string where(const toml::node* node);

// The most bytes fabricsim reads from one input file (scenario, topology, measurement): far
// above any real one (an nccl-tests output is kilobytes), low enough that a wrong path
// (`/dev/zero`, a 6 GB log) fails at once instead of filling memory.
inline constexpr std::uint64_t kMaxInputFileBytes = 64ull << 20;
// Nesting a scenario may have (tables, dotted keys, arrays and inline tables together): the
// TOML parser recurses per level, so a file 40,000 levels deep would overflow its stack.
inline constexpr int kMaxNestingDepth = 64;

// The whole text of `file`, reading at most kMaxInputFileBytes. Throws ConfigError naming the
// file when it is missing, a folder, unreadable or larger; `what` names the kind of file
// ("scenario file").
std::string read_input_file(const std::filesystem::path& file, std::string_view what);
// Throws ConfigError (file:line) when `text` nests deeper than kMaxNestingDepth. A scan of the
// text before parsing it, so that the parser's recursion stays bounded.
void check_nesting_depth(std::string_view text, std::string_view source_name);

class ConfigDocument {
 public:
  // Loads `file` and the files it extends. Throws ConfigError (file errors, TOML syntax errors
  // with position, extends cycles).
  static ConfigDocument load_file(const std::filesystem::path& file);
  // Parses TOML text held in memory; `source_name` stands for the file in messages.
  static ConfigDocument load_text(std::string_view text, std::string source_name);
  // Applies "a.b.c=value". The value is read as TOML ("4", "true", "\"x\"", "[1,2]") and
  // otherwise taken as a string, so `--set fabric.link_rate=100Gbps` needs no quotes.
  void apply_override(std::string_view assignment);

  const ConfigNode& root() const { return root_; }
  const std::filesystem::path& file() const { return file_; }

 private:
  void merge_file(const std::filesystem::path& file, std::vector<std::filesystem::path>& chain,
                  ConfigNode& into);
  void merge_table(const toml::table& table, ConfigNode& into);
  std::vector<std::unique_ptr<toml::table>> documents_;  // owners of every node in the tree
  ConfigNode root_;
  std::filesystem::path file_;
};

// Reads one table of the tree into plain values, recording the resolved value of every key
// (defaults included) so the scenario can be echoed back exactly as it will run.
class ConfigReader {
 public:
  // `origin` names the scenario in messages about keys of tables that are not written at all.
  // `positions` receives "file:line:column" of every key read that was written.
  ConfigReader(const ConfigNode* node, std::string path, std::string origin,
               std::vector<std::string>& errors, toml::table& resolved,
               std::map<std::string, std::string>& positions);

  // A required value is written `std::nullopt` as default.
  std::string string(std::string_view key, std::optional<std::string> fallback);
  std::string choice(std::string_view key, std::optional<std::string> fallback,
                     const std::vector<std::string>& allowed);
  std::int64_t integer(std::string_view key, std::optional<std::int64_t> fallback, std::int64_t min,
                       std::int64_t max);
  bool boolean(std::string_view key, std::optional<bool> fallback);
  // A number (integer or floating point) in [min, max].
  double real(std::string_view key, std::optional<double> fallback, double min, double max);
  // An optional number: absent stays absent (no default echoed).
  std::optional<double> optional_real(std::string_view key, double min, double max);
  // A cable length written with its unit, "3m" or "0.5m", in metres (> 0).
  double length_m(std::string_view key, std::optional<double> fallback);
  // A file name, resolved against the folder of the file the value was written in.
  std::optional<std::filesystem::path> file(std::string_view key);
  std::vector<std::string> string_list(std::string_view key, std::vector<std::string> fallback);
  // An array of integers, each in [min, max].
  std::vector<std::int64_t> integer_list(std::string_view key, std::vector<std::int64_t> fallback,
                                         std::int64_t min, std::int64_t max);
  // Quantities with units written in the text. `allow_zero` false rejects 0.
  Time time(std::string_view key, std::optional<Time> fallback, bool allow_zero);
  Bytes bytes(std::string_view key, std::optional<Bytes> fallback, bool allow_zero);
  Bandwidth bandwidth(std::string_view key, std::optional<Bandwidth> fallback,
                      bool allow_zero = false);
  // A byte size written with its unit or, as environment variables give it, as a plain
  // integer number of bytes (> 0).
  Bytes byte_count(std::string_view key, Bytes fallback);

  ConfigReader table(std::string_view key);
  // Reports every key of this table that no accessor asked for, with a suggestion.
  void finish();
  // Adds an error about `key` of this table (positioned at the key's value when present).
  void error(std::string_view key, std::string_view message);
  // "file:line:column: table.key: text", as an error about `key` reads (for warnings).
  std::string message(std::string_view key, std::string_view text) const;
  bool has(std::string_view key) const;
  // Problems found so far (this reader's and every other one's of the scenario).
  std::size_t error_count() const { return errors_.size(); }
  // Accepts `key` without reading it (a table another layer interprets, e.g. [sweep]).
  void skip(std::string_view key) { known_.emplace_back(key); }
  // Keys that exist in the schema but do not apply here: an error if written, naming why.
  void not_applicable(const std::vector<std::string_view>& keys, std::string_view why);

 private:
  const ConfigNode* find(std::string_view key);
  std::string key_path(std::string_view key) const;
  std::string position(std::string_view key) const;
  static std::string got(const ConfigNode* c);
  void missing(std::string_view key, std::string_view what);
  template <class T, class Parse>
  T quantity(std::string_view key, std::optional<T> fallback, bool allow_zero, Parse parse);

  const ConfigNode* node_;
  std::string path_;
  std::string origin_;
  std::vector<std::string>& errors_;
  toml::table& resolved_;
  std::map<std::string, std::string>& positions_;
  std::vector<std::string> known_;
};

// The known key closest to `key` by edit distance, if close enough to be a likely typo.
std::optional<std::string> nearest_key(std::string_view key, const std::vector<std::string>& known);
// The `count` known keys closest to `key` by edit distance, closest first (ties in `known`'s
// order), however far: for listing what there is when nothing matched.
std::vector<std::string> nearest_keys(std::string_view key, const std::vector<std::string>& known,
                                      std::size_t count);

}  // namespace fabricsim
