#include "scenario/config_tree.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <utility>

namespace fabricsim {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kOverridePrefix = "--set ";

std::string join(const std::vector<std::string>& messages) {
  std::string out;
  for (const auto& m : messages) {
    if (!out.empty()) out += '\n';
    out += m;
  }
  return out;
}

std::string_view type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a floating-point number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time of day";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    default:
      return "nothing";
  }
}

std::string describe(const toml::node& n) {
  if (const auto* s = n.as_string()) return fmt::format("{} \"{}\"", type_name(n), s->get());
  if (const auto* i = n.as_integer()) return fmt::format("{} {}", type_name(n), i->get());
  if (const auto* f = n.as_floating_point()) return fmt::format("{} {}", type_name(n), f->get());
  if (const auto* b = n.as_boolean()) return fmt::format("{} {}", type_name(n), b->get());
  return std::string(type_name(n));
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

toml::table parse_toml(std::string_view text, std::string source_name) {
  check_nesting_depth(text, source_name);
  try {
    return toml::parse(text, std::move(source_name));
  } catch (const toml::parse_error& e) {
    const auto& src = e.source();
    const std::string file = src.path ? *src.path : std::string("<input>");
    throw ConfigError({fmt::format("{}:{}:{}: invalid TOML: {}", file, src.begin.line,
                                   src.begin.column, e.description())});
  }
}

}  // namespace

std::string read_input_file(const fs::path& file, std::string_view what) {
  std::error_code ec;
  if (fs::is_directory(file, ec))
    throw ConfigError({fmt::format("{}: is a folder, not a {}", file.string(), what)});
  const auto too_large = [&] {
    return ConfigError({fmt::format(
        "{}: larger than {} MiB, the most fabricsim reads from one input file; is it a {}?",
        file.string(), kMaxInputFileBytes >> 20, what)});
  };
  if (fs::is_regular_file(file, ec) && fs::file_size(file, ec) > kMaxInputFileBytes)
    throw too_large();
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw ConfigError(
        {fmt::format("{}: cannot read the {} (missing or unreadable)", file.string(), what)});
  // Read one byte past the cap: devices and pipes have no size to ask for up front.
  std::string text(kMaxInputFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxInputFileBytes) throw too_large();
  return text;
}

void check_nesting_depth(std::string_view text, std::string_view source_name) {
  // Depth of a value = tables above it (header parts, dotted-key parts) + arrays and inline
  // tables around it. The scan skips strings and comments; it may count a level more than the
  // parser would (a float inside an inline table's key), never fewer.
  int line = 1, header = 0, dots = 0, value_base = 0;
  bool key_mode = true, line_start = true;
  std::vector<std::pair<char, int>> open;  // '[' or '{' and the depth inside it
  const auto check = [&](int depth) {
    if (depth > kMaxNestingDepth)
      throw ConfigError({fmt::format(
          "{}:{}: nested deeper than {} levels (tables, dotted keys, arrays); flatten it",
          source_name, line, kMaxNestingDepth)});
  };
  const auto skip_string = [&](std::size_t& i) {
    const char q = text[i];
    const bool multi = text.substr(i, 3) == std::string(3, q);
    const std::string_view close = multi ? text.substr(i, 3) : text.substr(i, 1);
    for (i += close.size(); i < text.size(); ++i) {
      if (text[i] == '\n') ++line;
      if (q == '"' && text[i] == '\\') {
        ++i;
        continue;
      }
      if (text.substr(i, close.size()) == close) {
        i += close.size() - 1;
        return;
      }
    }
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = true;
      if (open.empty()) key_mode = true, dots = 0;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') continue;
    const bool at_line_start = std::exchange(line_start, false);
    if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      skip_string(i);
      continue;
    }
    if (open.empty() && at_line_start && c == '[') {  // [table] or [[array.of.tables]]
      header = 1;
      for (++i; i < text.size() && text[i] != '\n' && text[i] != ']'; ++i) {
        if (text[i] == '"' || text[i] == '\'') skip_string(i);
        if (i < text.size() && text[i] == '.') ++header;
      }
      check(header);
      while (i + 1 < text.size() && text[i + 1] == ']') ++i;
      continue;
    }
    if (key_mode) {
      if (c == '.') ++dots;
      if (c == '=') {
        value_base = (open.empty() ? header : open.back().second) + dots + 1;
        check(value_base);
        key_mode = false;
        dots = 0;
      }
      continue;
    }
    if (c == '[' || c == '{') {
      const int depth = (open.empty() ? value_base : open.back().second) + 1;
      check(depth);
      open.emplace_back(c, depth);
      if (c == '{') key_mode = true, dots = 0;
    } else if ((c == ']' || c == '}') && !open.empty()) {
      open.pop_back();
    } else if (c == ',' && !open.empty() && open.back().first == '{') {
      key_mode = true;
      dots = 0;
    }
  }
}

ConfigError::ConfigError(std::vector<std::string> messages)
    : std::runtime_error(join(messages)), messages_(std::move(messages)) {}

ConfigNode* ConfigNode::child(std::string_view key) {
  for (auto& c : children)
    if (c.key == key) return &c.node;
  return nullptr;
}

const ConfigNode* ConfigNode::child(std::string_view key) const {
  return const_cast<ConfigNode*>(this)->child(key);
}

std::string where(const toml::node* node) {
  if (node == nullptr) return "<scenario>";
  const auto& src = node->source();
  const std::string path = src.path ? *src.path : std::string("<input>");
  if (path.starts_with(kOverridePrefix)) return path;
  return fmt::format("{}:{}:{}", path, src.begin.line, src.begin.column);
}

ConfigDocument ConfigDocument::load_file(const fs::path& file) {
  ConfigDocument doc;
  doc.file_ = file;
  std::vector<fs::path> chain;
  doc.merge_file(file, chain, doc.root_);
  return doc;
}

ConfigDocument ConfigDocument::load_text(std::string_view text, std::string source_name) {
  ConfigDocument doc;
  doc.file_ = source_name;
  doc.documents_.push_back(std::make_unique<toml::table>(parse_toml(text, source_name)));
  if (doc.documents_.back()->contains("extends"))
    throw ConfigError({fmt::format("{}: 'extends' needs a scenario file on disk", source_name)});
  doc.merge_table(*doc.documents_.back(), doc.root_);
  return doc;
}

void ConfigDocument::merge_file(const fs::path& file, std::vector<fs::path>& chain,
                                ConfigNode& into) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(file, ec);
  if (std::find(chain.begin(), chain.end(), canonical) != chain.end()) {
    std::string cycle;
    for (const auto& f : chain) cycle += f.filename().string() + " -> ";
    throw ConfigError({fmt::format("{}: 'extends' makes a cycle: {}{}", file.string(), cycle,
                                   file.filename().string())});
  }
  documents_.push_back(std::make_unique<toml::table>(
      parse_toml(read_input_file(file, "scenario file"), file.string())));
  const toml::table& table = *documents_.back();
  chain.push_back(canonical);
  if (const toml::node* ext = table.get("extends")) {
    // One base file, or a list applied in order: each later file (and this one last) sets
    // what it names over what came before.
    std::vector<const toml::node*> bases;
    if (const auto* list = ext->as_array()) {
      for (const toml::node& b : *list) bases.push_back(&b);
    } else {
      bases.push_back(ext);
    }
    for (const toml::node* b : bases) {
      const auto* base = b->as_string();
      if (base == nullptr)
        throw ConfigError({fmt::format(
            "{}: extends: expected a file name such as \"base.toml\" or a list of them, got {}",
            where(b), describe(*b))});
      const fs::path base_file = file.parent_path() / base->get();
      try {
        merge_file(base_file, chain, into);
      } catch (const ConfigError& e) {
        // An error about the base file as a whole (missing, too large, a cycle) is positioned
        // at the `extends` that names it; errors inside it carry their own position.
        if (e.messages().size() != 1 ||
            !e.messages().front().starts_with(base_file.string() + ": "))
          throw;
        throw ConfigError({fmt::format("{}: extends: {}", where(b), e.messages().front())});
      }
    }
  }
  chain.pop_back();
  merge_table(table, into);
}

void ConfigDocument::merge_table(const toml::table& table, ConfigNode& into) {
  into.value = &table;
  for (const auto& [key, value] : table) {
    if (&into == &root_ && key.str() == "extends") continue;  // consumed by merge_file
    ConfigNode* existing = into.child(key.str());
    if (existing == nullptr) {
      into.children.push_back(ConfigChild{std::string(key.str()), {}});
      existing = &into.children.back().node;
    }
    if (const auto* sub = value.as_table()) {
      if (!existing->is_table()) existing->children.clear();
      merge_table(*sub, *existing);
    } else {
      existing->value = &value;
      existing->children.clear();
    }
  }
}

void ConfigDocument::apply_override(std::string_view assignment) {
  const std::string label = fmt::format("{}'{}'", kOverridePrefix, assignment);
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0)
    throw ConfigError({fmt::format("{}: expected key=value, e.g. --set seed=7", label)});
  std::string_view key = assignment.substr(0, eq);
  std::string_view value = assignment.substr(eq + 1);
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const auto dot = key.find('.', start);
    parts.emplace_back(key.substr(start, dot == std::string_view::npos ? key.npos : dot - start));
    if (parts.back().empty())
      throw ConfigError({fmt::format("{}: empty part in key \"{}\"", label, key)});
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  std::unique_ptr<toml::table> doc;
  try {
    doc = std::make_unique<toml::table>(toml::parse(fmt::format("v = {}", value), label));
  } catch (const toml::parse_error&) {
    std::ostringstream quoted;
    quoted << toml::value<std::string>(std::string(value));
    doc = std::make_unique<toml::table>(parse_toml(fmt::format("v = {}", quoted.str()), label));
  }
  const toml::node* node = doc->get("v");
  documents_.push_back(std::move(doc));

  ConfigNode* at = &root_;
  std::string walked;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    walked += (walked.empty() ? "" : ".") + parts[i];
    ConfigNode* next = at->child(parts[i]);
    if (next == nullptr) {
      at->children.push_back(ConfigChild{parts[i], {}});
      next = &at->children.back().node;
    } else if (!next->is_table()) {
      throw ConfigError(
          {fmt::format("{}: '{}' is {}, not a table", label, walked, describe(*next->value))});
    }
    at = next;
  }
  ConfigNode* leaf = at->child(parts.back());
  if (leaf == nullptr) {
    at->children.push_back(ConfigChild{parts.back(), {}});
    leaf = &at->children.back().node;
  }
  leaf->children.clear();
  if (const auto* t = node->as_table()) {
    merge_table(*t, *leaf);
  } else {
    leaf->value = node;
  }
}

std::optional<std::string> nearest_key(std::string_view key,
                                       const std::vector<std::string>& known) {
  std::optional<std::string> best;
  std::size_t best_distance = std::max<std::size_t>(2, key.size() / 3) + 1;
  for (const auto& k : known) {
    const std::size_t d = edit_distance(key, k);
    if (d < best_distance) {
      best_distance = d;
      best = k;
    }
  }
  return best;
}

std::vector<std::string> nearest_keys(std::string_view key, const std::vector<std::string>& known,
                                      std::size_t count) {
  std::vector<std::pair<std::size_t, std::size_t>> ranked;  // (distance, index)
  for (std::size_t i = 0; i < known.size(); ++i)
    ranked.emplace_back(edit_distance(key, known[i]), i);
  std::stable_sort(ranked.begin(), ranked.end());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < ranked.size() && i < count; ++i)
    out.push_back(known[ranked[i].second]);
  return out;
}

ConfigReader::ConfigReader(const ConfigNode* node, std::string path, std::string origin,
                           std::vector<std::string>& errors, toml::table& resolved,
                           std::map<std::string, std::string>& positions)
    : node_(node),
      path_(std::move(path)),
      origin_(std::move(origin)),
      errors_(errors),
      resolved_(resolved),
      positions_(positions) {}

// What a value that is the wrong type was, for messages ("an integer 5", "a table").
std::string ConfigReader::got(const ConfigNode* c) {
  return c->value != nullptr ? describe(*c->value) : std::string("a table");
}

void ConfigReader::missing(std::string_view key, std::string_view what) {
  errors_.push_back(
      fmt::format("{}: missing required key '{}' ({})", position(key), key_path(key), what));
}

std::string ConfigReader::key_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
}

bool ConfigReader::has(std::string_view key) const {
  return node_ != nullptr && node_->child(key) != nullptr;
}

const ConfigNode* ConfigReader::find(std::string_view key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
  const ConfigNode* c = node_ == nullptr ? nullptr : node_->child(key);
  if (c != nullptr && c->value != nullptr) positions_[key_path(key)] = where(c->value);
  return c;
}

std::string ConfigReader::position(std::string_view key) const {
  if (node_ != nullptr)
    if (const ConfigNode* c = node_->child(key); c != nullptr && c->value != nullptr)
      return where(c->value);
  if (node_ != nullptr && node_->value != nullptr) return where(node_->value);
  return origin_;
}

void ConfigReader::error(std::string_view key, std::string_view text) {
  errors_.push_back(message(key, text));
}

std::string ConfigReader::message(std::string_view key, std::string_view text) const {
  return fmt::format("{}: {}: {}", position(key), key_path(key), text);
}

std::string ConfigReader::string(std::string_view key, std::optional<std::string> fallback) {
  const ConfigNode* c = find(key);
  std::string out;
  if (c == nullptr) {
    if (!fallback) {
      missing(key, "a string");
      return {};
    }
    out = *fallback;
  } else if (const auto* s = c->value != nullptr ? c->value->as_string() : nullptr) {
    out = s->get();
  } else {
    error(key, fmt::format("expected a string, got {}", got(c)));
    return fallback.value_or("");
  }
  resolved_.insert_or_assign(key, out);
  return out;
}

std::string ConfigReader::choice(std::string_view key, std::optional<std::string> fallback,
                                 const std::vector<std::string>& allowed) {
  const std::size_t before = errors_.size();
  std::string v = string(key, std::move(fallback));
  if (errors_.size() != before) return allowed.front();
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "\"" : ", \"") + a + "\"";
    const auto near = nearest_key(v, allowed);
    error(key, fmt::format("expected one of {}, got \"{}\"{}", list, v,
                           near ? fmt::format("; did you mean \"{}\"?", *near) : ""));
    return allowed.front();
  }
  return v;
}

std::int64_t ConfigReader::integer(std::string_view key, std::optional<std::int64_t> fallback,
                                   std::int64_t min, std::int64_t max) {
  const ConfigNode* c = find(key);
  std::int64_t out;
  if (c == nullptr) {
    if (!fallback) {
      missing(key, "an integer");
      return min;
    }
    out = *fallback;
  } else if (const auto* i = c->value != nullptr ? c->value->as_integer() : nullptr) {
    out = i->get();
    if (out < min || out > max) {
      error(key, max == std::numeric_limits<std::int64_t>::max()
                     ? fmt::format("must be at least {}, got {}", min, out)
                     : fmt::format("must be between {} and {}, got {}", min, max, out));
      return min;
    }
  } else {
    error(key, fmt::format("expected an integer, got {}", got(c)));
    return min;
  }
  resolved_.insert_or_assign(key, out);
  return out;
}

bool ConfigReader::boolean(std::string_view key, std::optional<bool> fallback) {
  const ConfigNode* c = find(key);
  bool out = false;
  if (c == nullptr) {
    if (!fallback) {
      missing(key, "true or false");
      return false;
    }
    out = *fallback;
  } else if (const auto* b = c->value != nullptr ? c->value->as_boolean() : nullptr) {
    out = b->get();
  } else {
    error(key, fmt::format("expected true or false, got {}", got(c)));
    return false;
  }
  resolved_.insert_or_assign(key, out);
  return out;
}

std::vector<std::int64_t> ConfigReader::integer_list(std::string_view key,
                                                     std::vector<std::int64_t> fallback,
                                                     std::int64_t min, std::int64_t max) {
  const ConfigNode* c = find(key);
  std::vector<std::int64_t> out = std::move(fallback);
  if (c != nullptr) {
    const auto* arr = c->value != nullptr ? c->value->as_array() : nullptr;
    if (arr == nullptr) {
      error(key, fmt::format("expected an array of integers, got {}", got(c)));
      return out;
    }
    out.clear();
    for (const auto& item : *arr) {
      const auto* i = item.as_integer();
      if (i == nullptr || i->get() < min || i->get() > max) {
        errors_.push_back(fmt::format("{}: {}: expected integers between {} and {}, got {} in it",
                                      where(&item), key_path(key), min, max, describe(item)));
        return {};
      }
      out.push_back(i->get());
    }
  }
  toml::array echo;
  for (const auto v : out) echo.push_back(v);
  resolved_.insert_or_assign(key, std::move(echo));
  return out;
}

double ConfigReader::real(std::string_view key, std::optional<double> fallback, double min,
                          double max) {
  const ConfigNode* c = find(key);
  double out = 0;
  if (c == nullptr) {
    if (!fallback) {
      missing(key, "a number");
      return min;
    }
    out = *fallback;
  } else if (const auto* f = c->value != nullptr ? c->value->as_floating_point() : nullptr) {
    out = f->get();
  } else if (const auto* i = c->value != nullptr ? c->value->as_integer() : nullptr) {
    out = static_cast<double>(i->get());
  } else {
    error(key, fmt::format("expected a number, got {}", got(c)));
    return min;
  }
  if (!(out >= min && out <= max)) {
    error(key, fmt::format("must be between {} and {}, got {}", min, max, out));
    return min;
  }
  resolved_.insert_or_assign(key, out);
  return out;
}

std::optional<double> ConfigReader::optional_real(std::string_view key, double min, double max) {
  if (find(key) == nullptr) return std::nullopt;
  return real(key, std::nullopt, min, max);
}

double ConfigReader::length_m(std::string_view key, std::optional<double> fallback) {
  const ConfigNode* c = find(key);
  double out = fallback.value_or(0);
  if (c == nullptr) {
    if (!fallback) {
      missing(key, "a length such as \"3m\"");
      return 0;
    }
  } else {
    const auto* s = c->value != nullptr ? c->value->as_string() : nullptr;
    std::string text = s != nullptr ? s->get() : std::string();
    char* end = nullptr;
    out = s != nullptr ? std::strtod(text.c_str(), &end) : 0;
    const bool ok =
        s != nullptr && end != text.c_str() && std::string_view(end) == "m" && out > 0 && out < 1e6;
    if (!ok) {
      error(key, fmt::format("expected a cable length in metres such as \"3m\", got {}", got(c)));
      return fallback.value_or(1);
    }
  }
  resolved_.insert_or_assign(key, fmt::format("{}m", out));
  return out;
}

std::optional<std::filesystem::path> ConfigReader::file(std::string_view key) {
  const ConfigNode* c = find(key);
  if (c == nullptr) return std::nullopt;
  const auto* s = c->value != nullptr ? c->value->as_string() : nullptr;
  if (s == nullptr) {
    error(key, fmt::format("expected a file name, got {}", got(c)));
    return std::nullopt;
  }
  std::filesystem::path p = s->get();
  const auto& src = c->value->source();
  if (p.is_relative() && src.path && !src.path->starts_with(kOverridePrefix))
    p = std::filesystem::path(*src.path).parent_path() / p;
  if (!std::filesystem::is_regular_file(p)) {
    error(key, fmt::format("cannot read file \"{}\"", p.string()));
    return std::nullopt;
  }
  resolved_.insert_or_assign(key, s->get());
  return p;
}

std::vector<std::string> ConfigReader::string_list(std::string_view key,
                                                   std::vector<std::string> fallback) {
  const ConfigNode* c = find(key);
  std::vector<std::string> out = std::move(fallback);
  if (c != nullptr) {
    const auto* arr = c->value != nullptr ? c->value->as_array() : nullptr;
    if (arr == nullptr) {
      error(key, fmt::format("expected an array of strings, got {}", got(c)));
      return {};
    }
    out.clear();
    for (const auto& item : *arr) {
      if (const auto* s = item.as_string()) {
        out.push_back(s->get());
      } else {
        errors_.push_back(fmt::format("{}: {}: expected an array of strings, got {} in it",
                                      where(&item), key_path(key), describe(item)));
        return {};
      }
    }
  }
  toml::array echo;
  for (const auto& s : out) echo.push_back(s);
  resolved_.insert_or_assign(key, std::move(echo));
  return out;
}

Bytes ConfigReader::byte_count(std::string_view key, Bytes fallback) {
  const ConfigNode* c = find(key);
  if (c != nullptr && c->value != nullptr && c->value->is_integer())
    return Bytes(integer(key, std::nullopt, 1, std::numeric_limits<std::int64_t>::max()));
  return bytes(key, fallback, false);
}

template <class T, class Parse>
T ConfigReader::quantity(std::string_view key, std::optional<T> fallback, bool allow_zero,
                         Parse parse) {
  const ConfigNode* c = find(key);
  T out{};
  if (c == nullptr) {
    if (!fallback) {
      missing(key,
              fmt::format("written with its unit, e.g. \"{}\"", to_string(parse(std::nullopt))));
      return T{};
    }
    out = *fallback;
  } else {
    const auto* s = c->value != nullptr ? c->value->as_string() : nullptr;
    try {
      if (s == nullptr) {
        const std::string shown = got(c);
        error(key, fmt::format("expected a quoted value with its unit, e.g. \"{}\", got {}",
                               to_string(parse(std::nullopt)), shown));
        return T{};
      }
      out = parse(s->get());
    } catch (const UnitError& e) {
      error(key, e.what());
      return T{};
    }
    if (!allow_zero && out == T{}) {
      error(key, fmt::format("must be greater than zero, got \"{}\"", s->get()));
      return T{};
    }
  }
  resolved_.insert_or_assign(key, to_string(out));
  return out;
}

Time ConfigReader::time(std::string_view key, std::optional<Time> fallback, bool allow_zero) {
  return quantity<Time>(key, fallback, allow_zero, [](std::optional<std::string> s) {
    return s ? parse_time(*s) : Time::from_ps(1'500'000);
  });
}

Bytes ConfigReader::bytes(std::string_view key, std::optional<Bytes> fallback, bool allow_zero) {
  return quantity<Bytes>(key, fallback, allow_zero, [](std::optional<std::string> s) {
    return s ? parse_bytes(*s) : Bytes(65536);
  });
}

Bandwidth ConfigReader::bandwidth(std::string_view key, std::optional<Bandwidth> fallback,
                                  bool allow_zero) {
  return quantity<Bandwidth>(key, fallback, allow_zero, [](std::optional<std::string> s) {
    return s ? parse_bandwidth(*s) : Bandwidth::from_bps(100'000'000'000);
  });
}

ConfigReader ConfigReader::table(std::string_view key) {
  const ConfigNode* c = find(key);
  if (c != nullptr && !c->is_table()) {
    error(key, fmt::format("expected a table, got {}", describe(*c->value)));
    c = nullptr;
  }
  auto [it, inserted] = resolved_.insert_or_assign(key, toml::table{});
  (void)inserted;
  return ConfigReader(c, key_path(key), origin_, errors_, *it->second.as_table(), positions_);
}

void ConfigReader::not_applicable(const std::vector<std::string_view>& keys, std::string_view why) {
  for (const auto key : keys)
    if (find(key) != nullptr) error(key, fmt::format("does not apply: {}", why));
}

void ConfigReader::finish() {
  if (node_ == nullptr) return;
  for (const auto& [key, child] : node_->children) {
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    const auto near = nearest_key(key, known_);
    errors_.push_back(fmt::format(
        "{}: unknown key '{}'{}", where(child.value != nullptr ? child.value : node_->value),
        key_path(key), near ? fmt::format("; did you mean '{}'?", *near) : std::string{}));
  }
}

}  // namespace fabricsim
