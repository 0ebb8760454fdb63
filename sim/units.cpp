#include "sim/units.hpp"

#include <fmt/format.h>
#include <array>
#include <cctype>

namespace fabricsim {
namespace {

using i128 = __int128;

struct UnitDef {
  std::string_view suffix;
  i128 multiplier;  // base units (ps, B, bps) per 1 of this unit
};

constexpr i128 kInt64Max = std::numeric_limits<std::int64_t>::max();

constexpr std::array kTimeUnits{
    UnitDef{"ps", 1},
    UnitDef{"ns", 1'000},
    UnitDef{"us", 1'000'000},
    UnitDef{"\xC2\xB5s", 1'000'000},  // µs
    UnitDef{"ms", 1'000'000'000},
    UnitDef{"s", 1'000'000'000'000},
};

constexpr std::array kByteUnits{
    UnitDef{"B", 1},
    UnitDef{"KB", 1'000},
    UnitDef{"MB", 1'000'000},
    UnitDef{"GB", 1'000'000'000},
    UnitDef{"TB", 1'000'000'000'000},
    UnitDef{"KiB", i128{1} << 10},
    UnitDef{"MiB", i128{1} << 20},
    UnitDef{"GiB", i128{1} << 30},
    UnitDef{"TiB", i128{1} << 40},
};

constexpr std::array kBandwidthUnits{
    UnitDef{"bps", 1},
    UnitDef{"Kbps", 1'000},
    UnitDef{"Mbps", 1'000'000},
    UnitDef{"Gbps", 1'000'000'000},
    UnitDef{"Tbps", 1'000'000'000'000},
    UnitDef{"b/s", 1},
    UnitDef{"Kb/s", 1'000},
    UnitDef{"Mb/s", 1'000'000},
    UnitDef{"Gb/s", 1'000'000'000},
    UnitDef{"Tb/s", 1'000'000'000'000},
    UnitDef{"B/s", 8},
    UnitDef{"KB/s", 8'000},
    UnitDef{"MB/s", 8'000'000},
    UnitDef{"GB/s", 8'000'000'000},
    UnitDef{"TB/s", 8'000'000'000'000},
};

template <std::size_t N>
std::string unit_list(const std::array<UnitDef, N>& units) {
  std::string out;
  for (const auto& u : units) {
    if (u.suffix == "\xC2\xB5s") continue;
    if (!out.empty()) out += ", ";
    out += u.suffix;
  }
  return out;
}

// Exact decimal-with-unit to integer conversion. `what` names the quantity for messages,
// `example` shows a valid spelling.
template <std::size_t N>
std::int64_t parse_quantity(std::string_view text, const std::array<UnitDef, N>& units,
                            std::string_view what, std::string_view base_unit,
                            std::string_view example) {
  const auto fail = [&](std::string_view why) -> std::int64_t {
    throw UnitError(fmt::format("expected a {} such as \"{}\" ({}), got \"{}\": {}", what, example,
                                unit_list(units), text, why));
  };
  std::size_t i = 0;
  const auto n = text.size();
  while (i < n && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i < n && text[i] == '-') return fail("it must not be negative");
  if (i < n && text[i] == '+') ++i;
  i128 mantissa = 0;
  int significant = 0, frac_digits = 0, digits = 0;
  bool in_fraction = false;
  for (; i < n; ++i) {
    const char c = text[i];
    if (c == '.' && !in_fraction) {
      in_fraction = true;
      continue;
    }
    if (c == '_' && digits > 0) continue;  // 1_000_000ps, as TOML integers allow
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    ++digits;
    if (in_fraction) ++frac_digits;
    if (mantissa == 0 && c == '0') continue;
    if (++significant > 19) return fail("too many digits");
    mantissa = mantissa * 10 + (c - '0');
  }
  if (digits == 0) return fail("no number");
  int exponent = 0;
  if (i < n && (text[i] == 'e' || text[i] == 'E') && i + 1 < n &&
      (std::isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '-' ||
       text[i + 1] == '+')) {
    ++i;
    bool negative = false;
    if (text[i] == '-' || text[i] == '+') negative = text[i++] == '-';
    int e = 0, edigits = 0;
    for (; i < n && std::isdigit(static_cast<unsigned char>(text[i])); ++i, ++edigits) {
      if (e > 100) return fail("exponent out of range");
      e = e * 10 + (text[i] - '0');
    }
    if (edigits == 0) return fail("no exponent digits");
    exponent = negative ? -e : e;
  }
  while (i < n && text[i] == ' ') ++i;
  std::string_view suffix = text.substr(i);
  while (!suffix.empty() && std::isspace(static_cast<unsigned char>(suffix.back())))
    suffix.remove_suffix(1);
  if (suffix.empty()) return fail("the unit is missing");
  const UnitDef* unit = nullptr;
  for (const auto& u : units)
    if (u.suffix == suffix) unit = &u;
  if (unit == nullptr) return fail(fmt::format("unknown unit \"{}\"", suffix));

  i128 value = mantissa * unit->multiplier;  // < 1e19 * 8e12, fits in 128 bits
  int scale = exponent - frac_digits;
  if (scale > 40 || scale < -60) return fail("out of range");
  for (; scale > 0; --scale) {
    value *= 10;
    if (value > kInt64Max) return fail("out of range");
  }
  for (; scale < 0; ++scale) {
    if (value % 10 != 0) return fail(fmt::format("it is not a whole number of {}", base_unit));
    value /= 10;
  }
  if (value > kInt64Max) return fail("out of range");
  return static_cast<std::int64_t>(value);
}

// Renders value/divisor exactly as a decimal ("1.2", "64", "0.000001").
std::string exact_decimal(std::int64_t value, std::int64_t divisor) {
  const bool negative = value < 0;
  const std::uint64_t v = negative ? 0 - static_cast<std::uint64_t>(value) : value;
  const auto d = static_cast<std::uint64_t>(divisor);
  std::string out = fmt::format("{}{}", negative ? "-" : "", v / d);
  std::uint64_t rem = v % d;
  if (rem == 0) return out;
  out += '.';
  for (std::uint64_t place = d / 10; rem != 0 && place > 0; place /= 10) {
    out += static_cast<char>('0' + rem / place);
    rem %= place;
  }
  return out;
}

struct Rendering {
  std::string_view suffix;
  std::int64_t divisor;
  bool exact_only;  // use only when the value is an exact multiple
};

std::string render(std::int64_t value, std::initializer_list<Rendering> options) {
  const std::uint64_t magnitude =
      value < 0 ? 0 - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
  for (const auto& r : options) {
    const auto d = static_cast<std::uint64_t>(r.divisor);
    if (magnitude == 0 || magnitude < d) continue;
    if (r.exact_only && magnitude % d != 0) continue;
    return exact_decimal(value, r.divisor) + std::string(r.suffix);
  }
  const auto& last = *(options.end() - 1);
  return exact_decimal(value, last.divisor) + std::string(last.suffix);
}

}  // namespace

Time parse_time(std::string_view text) {
  return Time::from_ps(parse_quantity(text, kTimeUnits, "time", "picoseconds", "1.2us"));
}

Bytes parse_bytes(std::string_view text) {
  return Bytes(parse_quantity(text, kByteUnits, "size", "bytes", "64KiB"));
}

Bandwidth parse_bandwidth(std::string_view text) {
  return Bandwidth::from_bps(
      parse_quantity(text, kBandwidthUnits, "bandwidth", "bits per second", "100Gbps"));
}

std::string to_string(Time t) {
  return render(t.ps(), {{"s", 1'000'000'000'000, false},
                         {"ms", 1'000'000'000, false},
                         {"us", 1'000'000, false},
                         {"ns", 1'000, false},
                         {"ps", 1, false}});
}

std::string to_string(Bytes b) {
  return render(b.count(), {{"TiB", std::int64_t{1} << 40, true},
                            {"GiB", std::int64_t{1} << 30, true},
                            {"MiB", std::int64_t{1} << 20, true},
                            {"KiB", std::int64_t{1} << 10, true},
                            {"TB", 1'000'000'000'000, false},
                            {"GB", 1'000'000'000, false},
                            {"MB", 1'000'000, false},
                            {"KB", 1'000, false},
                            {"B", 1, false}});
}

std::string to_string(Bandwidth r) {
  return render(r.bps(), {{"Tbps", 1'000'000'000'000, false},
                          {"Gbps", 1'000'000'000, false},
                          {"Mbps", 1'000'000, false},
                          {"Kbps", 1'000, false},
                          {"bps", 1, false}});
}

}  // namespace fabricsim
