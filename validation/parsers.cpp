#include "validation/parsers.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>

// Boost 1.74's JSON parser includes the deprecated global-placeholder boost/bind.hpp, which
// announces itself unless told the old behaviour is wanted (it is unused here).
#define BOOST_BIND_GLOBAL_PLACEHOLDERS
#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

namespace fabricsim::validation {

ParseError::ParseError(const std::string& source, std::size_t line, const std::string& what)
    : std::runtime_error(fmt::format("{}:{}: {}", source, line, what)), line_(line) {}

namespace {

// Lines of a text with their 1-based numbers ('\r' dropped).
std::vector<std::pair<std::size_t, std::string_view>> lines_of(std::string_view text) {
  std::vector<std::pair<std::size_t, std::string_view>> out;
  std::size_t n = 1;
  while (!text.empty()) {
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.emplace_back(n++, line);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return out;
}

std::vector<std::string_view> tokens(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    const std::size_t b = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c));
  });
}

std::optional<std::uint64_t> to_u64(std::string_view s) {
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> to_i64(std::string_view s) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> to_double(std::string_view s) {
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Reads a field or throws naming the line and the column.
struct Fields {
  const std::string& source;
  std::size_t line;
  const std::vector<std::string_view>& t;
  std::uint64_t u64(std::size_t i, const char* what) const {
    if (const auto v = to_u64(t[i])) return *v;
    throw ParseError(source, line, fmt::format("{} '{}' is not a whole number", what, t[i]));
  }
  double real(std::size_t i, const char* what) const {
    if (const auto v = to_double(t[i])) return *v;
    throw ParseError(source, line, fmt::format("{} '{}' is not a number", what, t[i]));
  }
};

// "key : value" after a prefix (perftest banner lines, nccl-tests' Avg line).
std::optional<std::string_view> value_after(std::string_view line, std::string_view key) {
  const auto k = line.find(key);
  if (k == std::string_view::npos) return std::nullopt;
  const auto colon = line.find(':', k + key.size());
  if (colon == std::string_view::npos) return std::nullopt;
  return trim(line.substr(colon + 1));
}

}  // namespace

// ---------------------------------------------------------------- nccl-tests

bool looks_like_nccl_tests(std::string_view text) {
  return text.find("# Collective test starting") != std::string_view::npos ||
         (text.find("algbw") != std::string_view::npos &&
          text.find("busbw") != std::string_view::npos);
}

NcclTestsOutput parse_nccl_tests(std::string_view text, const std::string& source) {
  NcclTestsOutput out;
  bool header = false, with_root = true;
  std::size_t last = 0;
  for (const auto& [n, line] : lines_of(text)) {
    last = n;
    const std::string_view s = trim(line);
    if (s.empty()) continue;
    if (s.front() == '#') {
      if (const auto v = value_after(s, "Collective test starting")) out.binary = std::string(*v);
      if (const auto v = value_after(s, "Avg bus bandwidth")) {
        const auto bw = to_double(tokens(*v).empty() ? std::string_view{} : tokens(*v).front());
        if (!bw) throw ParseError(source, n, "the average bus bandwidth is not a number");
        out.avg_busbw = *bw;
      }
      const auto t = tokens(s);
      if (t.size() >= 3 && t[1] == "Rank" && all_digits(t[2])) {
        ++out.ranks;
        const auto close = s.rfind(']');
        out.devices.emplace_back(close == std::string_view::npos ? "" : trim(s.substr(close + 1)));
      }
      if (std::find(t.begin(), t.end(), "size") != t.end() &&
          std::find(t.begin(), t.end(), "time") != t.end()) {
        header = true;
        with_root = std::find(t.begin(), t.end(), "root") != t.end();
      }
      for (std::size_t i = 0; i + 2 < t.size(); ++i) {
        if (t[i] == "warmup" && t[i + 1] == "iters:")
          out.warmup_iters = static_cast<int>(to_i64(t[i + 2]).value_or(0));
        if ((i == 0 || (t[i - 1] != "warmup" && t[i - 1] != "agg")) && t[i] == "iters:" &&
            to_i64(t[i + 1]))
          out.iters = static_cast<int>(*to_i64(t[i + 1]));
      }
      continue;
    }
    const auto t = tokens(s);
    // Anything not starting with a size (NCCL INFO lines, warnings) is not a row.
    if (!all_digits(t.front())) continue;
    if (!header)
      throw ParseError(source, n,
                       "result row before the column header (is the file truncated at the top?)");
    const std::size_t base = with_root ? 5 : 4;
    if (t.size() != base + 8)
      throw ParseError(source, n,
                       fmt::format("expected {} columns (size, count, type, redop{}, then time, "
                                   "algbw, busbw, #wrong out of place and in place), found {}",
                                   base + 8, with_root ? ", root" : "", t.size()));
    const Fields f{source, n, t};
    NcclTestsRow row;
    row.line = n;
    row.bytes = f.u64(0, "size");
    row.count = f.u64(1, "count");
    row.type = std::string(t[2]);
    row.redop = std::string(t[3]);
    if (with_root) {
      const auto root = to_i64(t[4]);
      if (!root) throw ParseError(source, n, fmt::format("root '{}' is not a number", t[4]));
      row.root = static_cast<int>(*root);
    }
    for (int p = 0; p < 2; ++p) {
      const std::size_t i = base + 4 * static_cast<std::size_t>(p);
      row.time_us[p] = f.real(i, "time");
      row.algbw[p] = f.real(i + 1, "algbw");
      row.busbw[p] = f.real(i + 2, "busbw");
      // #wrong: a count, N/A when checking is off; old versions print a float error ("0e+00").
      if (t[i + 3] != "N/A") {
        const double wrong = f.real(i + 3, "#wrong");
        if (wrong < 0) throw ParseError(source, n, fmt::format("#wrong {} is negative", wrong));
        row.wrong[p] = static_cast<std::uint64_t>(std::llround(std::min(wrong, 1e18)));
      }
      if (row.time_us[p] <= 0)
        throw ParseError(source, n, fmt::format("time {} us is not positive", row.time_us[p]));
    }
    out.rows.push_back(std::move(row));
  }
  if (out.rows.empty())
    throw ParseError(source, last,
                     header ? "no result rows after the header (truncated?)"
                            : "not nccl-tests output: no column header");
  return out;
}

// ---------------------------------------------------------------- perftest

bool looks_like_perftest(std::string_view text) {
  return text.find("#bytes") != std::string_view::npos &&
         (text.find("BW Test") != std::string_view::npos ||
          text.find("Lat Test") != std::string_view::npos ||
          text.find("[usec]") != std::string_view::npos ||
          text.find("/sec]") != std::string_view::npos);
}

PerftestOutput parse_perftest(std::string_view text, const std::string& source) {
  PerftestOutput out;
  bool header = false, gbits = false;
  std::size_t last = 0;
  for (const auto& [n, line] : lines_of(text)) {
    last = n;
    const std::string_view s = trim(line);
    if (s.empty() || s.front() == '-') continue;
    // "RDMA_Write BW Test", "RDMA_Write Latency Test" (older versions: "... Lat Test").
    const bool lat_title = s.find("Lat Test") != std::string_view::npos ||
                           s.find("Latency Test") != std::string_view::npos;
    if (lat_title || s.find("BW Test") != std::string_view::npos) {
      out.test = std::string(s);
      out.latency = lat_title;
      continue;
    }
    if (const auto v = value_after(s, "Link type")) out.link_type = std::string(*v);
    if (s.starts_with("Mtu")) {
      const auto v = value_after(s, "Mtu");
      const auto digits = v ? v->substr(0, v->find('[')) : std::string_view{};
      if (const auto m = to_u64(trim(digits))) out.mtu = *m;
      continue;
    }
    if (s.starts_with("#bytes")) {
      header = true;
      out.latency = out.latency || s.find("usec") != std::string_view::npos;
      gbits = s.find("Gb/sec") != std::string_view::npos;
      if (!out.latency && !gbits && s.find("MiB/sec") == std::string_view::npos &&
          s.find("MB/sec") == std::string_view::npos)
        throw ParseError(source, n, "bandwidth header names no unit (MiB/sec or Gb/sec)");
      continue;
    }
    const auto t = tokens(s);
    if (!all_digits(t.front()) || !header) continue;  // banner lines ("1 QPs", ...)
    const Fields f{source, n, t};
    PerftestRow row;
    row.line = n;
    if (out.latency) {
      // t_min t_max t_typical t_avg t_stdev 99% 99.9% (older versions stop after t_typical)
      if (t.size() < 5)
        throw ParseError(source, n,
                         fmt::format("expected at least 5 columns (#bytes, #iterations, t_min, "
                                     "t_max, t_typical), found {}",
                                     t.size()));
      row.bytes = f.u64(0, "#bytes");
      row.iterations = f.u64(1, "#iterations");
      double* fields[] = {&row.t_min,   &row.t_max, &row.t_typical, &row.t_avg,
                          &row.t_stdev, &row.p99,   &row.p999};
      for (std::size_t i = 2; i < t.size() && i - 2 < 7; ++i) *fields[i - 2] = f.real(i, "latency");
      if (t.size() < 6) row.t_avg = row.t_typical;
    } else {
      if (t.size() != 5)
        throw ParseError(source, n,
                         fmt::format("expected 5 columns (#bytes, #iterations, BW peak, BW "
                                     "average, MsgRate), found {}",
                                     t.size()));
      row.bytes = f.u64(0, "#bytes");
      row.iterations = f.u64(1, "#iterations");
      // MiB/s (perftest's default, 0x100000 bytes) or decimal Gb/s (--report_gbits).
      const double scale = gbits ? 1.0 : 1048576.0 * 8 / 1e9;
      row.bw_peak_gbps = f.real(2, "BW peak") * scale;
      row.bw_avg_gbps = f.real(3, "BW average") * scale;
      row.msg_rate_mpps = f.real(4, "MsgRate");
    }
    out.rows.push_back(row);
  }
  if (out.rows.empty())
    throw ParseError(source, last,
                     header ? "no result rows after the header (truncated?)"
                            : "not perftest output: no '#bytes' header");
  return out;
}

// ---------------------------------------------------------------- nvidia-smi topo -m

bool looks_like_nvidia_smi_topo(std::string_view text) {
  return text.find("GPU0") != std::string_view::npos &&
         text.find("Legend") != std::string_view::npos;
}

// ---------------------------------------------------------------- ethtool -S

bool looks_like_ethtool_stats(std::string_view text) {
  return text.find("NIC statistics") != std::string_view::npos;
}

EthtoolStats parse_ethtool_stats(std::string_view text, const std::string& source) {
  EthtoolStats out;
  std::size_t last = 0;
  for (const auto& [n, line] : lines_of(text)) {
    last = n;
    const std::string_view s = trim(line);
    if (s.empty() || s.starts_with("NIC statistics")) continue;
    const auto colon = s.rfind(':');
    if (colon == std::string_view::npos || colon == 0)
      throw ParseError(source, n, fmt::format("expected 'name: value', found '{}'", s));
    const std::string_view name = trim(s.substr(0, colon));
    const auto value = to_u64(trim(s.substr(colon + 1)));
    if (!value)
      throw ParseError(source, n,
                       fmt::format("counter {} has no whole-number value ('{}')", name,
                                   trim(s.substr(colon + 1))));
    out.counters[std::string(name)] = *value;
  }
  if (out.counters.empty()) throw ParseError(source, last, "no counters");
  return out;
}

std::uint64_t EthtoolStats::pause_frames() const {
  std::uint64_t sum = 0;
  for (const auto& [name, v] : counters) {
    const bool prio = name.find("prio") != std::string::npos && name.ends_with("_pause");
    if (prio || name == "rx_pause_ctrl_phy" || name == "tx_pause_ctrl_phy") sum += v;
  }
  return sum;
}

std::uint64_t EthtoolStats::ecn_marked() const {
  std::uint64_t sum = 0;
  for (const auto& [name, v] : counters)
    if (name.find("ecn_mark") != std::string::npos) sum += v;
  return sum;
}

std::uint64_t EthtoolStats::cnp() const {
  std::uint64_t sum = 0;
  for (const auto& [name, v] : counters)
    if (name.find("cnp") != std::string::npos) sum += v;
  return sum;
}

// ---------------------------------------------------------------- NCCL_DEBUG=INFO

bool looks_like_nccl_debug_log(std::string_view text) {
  return text.find("NCCL INFO") != std::string_view::npos;
}

NcclDebugLog parse_nccl_debug_log(std::string_view text, const std::string& source) {
  NcclDebugLog out;
  std::size_t last = 0, info = 0;
  for (const auto& [n, line] : lines_of(text)) {
    last = n;
    const auto at = line.find("NCCL INFO ");
    if (at == std::string_view::npos) continue;
    ++info;
    const std::string_view s = trim(line.substr(at + 10));
    const auto t = tokens(s);
    if (t.empty()) continue;
    if (s.starts_with("NCCL version") && t.size() >= 3) {
      out.version = std::string(t[2].substr(0, t[2].find('+')));
    } else if (t[0] == "Channel" && t.size() >= 3 && t[2] == ":") {
      // "Channel 00/16 :    0   1   2   3" (a ring) or "Channel 00/0 : 0[0] -> 1[1] via P2P/..."
      const auto slash = t[1].find('/');
      const auto channel = to_i64(t[1].substr(0, slash));
      if (!channel)
        throw ParseError(source, n, fmt::format("channel number '{}' is not a number", t[1]));
      const auto via = std::find(t.begin(), t.end(), "via");
      if (via != t.end()) {
        if (via + 1 == t.end()) throw ParseError(source, n, "'via' names no transport");
        std::string key;
        for (auto it = t.begin() + 3; it != via; ++it) {
          if (!key.empty()) key.push_back(' ');
          key.append(it->data(), it->size());
        }
        out.transports[key] = std::string(*(via + 1));
        continue;
      }
      std::vector<int> ring;
      for (std::size_t i = 3; i < t.size(); ++i) {
        const auto r = to_i64(t[i]);
        if (!r) throw ParseError(source, n, fmt::format("ring member '{}' is not a rank", t[i]));
        ring.push_back(static_cast<int>(*r));
      }
      out.rings.try_emplace(static_cast<int>(*channel), std::move(ring));
    } else if (t[0] == "Trees") {
      out.trees.emplace_back(trim(s.substr(5)));
    } else if (t.size() >= 6 && t[1] == "coll" && t[2] == "channels,") {
      out.coll_channels = static_cast<int>(to_i64(t[0]).value_or(0));
      for (std::size_t i = 3; i + 2 < t.size(); ++i)
        if (t[i + 1] == "p2p" && t[i + 2].starts_with("channels") && to_i64(t[i])) {
          out.p2p_channels = static_cast<int>(*to_i64(t[i]));
          break;
        }
    } else if (t.size() >= 10 && t[0].ends_with(":") && t[2] == "Bytes" && t[3] == "->" &&
               t[4] == "Algo") {
      // NCCL_DEBUG_SUBSYS=TUNING: "AllReduce: 1048576 Bytes -> Algo 1 proto 2 time 36.46"
      const Fields f{source, n, t};
      NcclDebugLog::Choice c;
      c.op = std::string(t[0].substr(0, t[0].size() - 1));
      c.bytes = f.u64(1, "bytes");
      c.algo = static_cast<int>(f.u64(5, "algorithm"));
      c.proto = static_cast<int>(f.u64(7, "protocol"));
      c.time_us = f.real(9, "time");
      out.choices.push_back(c);
    }
  }
  if (info == 0) throw ParseError(source, last, "no 'NCCL INFO' lines (was NCCL_DEBUG=INFO set?)");
  return out;
}

// ---------------------------------------------------------------- harness JSON

namespace {

namespace pt = boost::property_tree;

// Line (1-based) of byte offset `pos` of `text`.
std::size_t line_at(std::string_view text, std::size_t pos) {
  pos = std::min(pos, text.size());
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + pos, '\n'));
}

// Boost.PropertyTree's parser recurses per nesting level: refuse deep nesting before it does
// (our files nest three levels), so a hostile file cannot exhaust the stack.
void check_nesting(std::string_view text, const std::string& source) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if ((c == '{' || c == '[') && ++depth > 16) {
      throw ParseError(source, line_at(text, i), "JSON nested deeper than 16 levels");
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
}

pt::ptree read_json_tree(std::string_view text, const std::string& source) {
  check_nesting(text, source);
  std::istringstream in{std::string(text)};
  pt::ptree tree;
  try {
    pt::read_json(in, tree);
  } catch (const pt::json_parser_error& e) {
    throw ParseError(source, e.line(), "JSON: " + e.message());
  }
  return tree;
}

// Typed access to one object's keys; errors name the key and the object's line.
class JsonObject {
 public:
  JsonObject(const pt::ptree& node, std::string what, std::size_t line, const std::string& source)
      : node_(node), what_(std::move(what)), line_(line), source_(source) {}
  bool has(const std::string& key) const { return node_.get_child_optional(key).has_value(); }
  std::string text(const std::string& key) const {
    const auto v = node_.get_optional<std::string>(key);
    if (!v) fail(key, "missing");
    return *v;
  }
  double number(const std::string& key) const {
    const std::string t = text(key);
    const auto v = to_double(t);
    if (!v || !std::isfinite(*v) || *v < 0) fail(key, "'" + t + "' is not a number >= 0");
    return *v;
  }
  std::uint64_t count(const std::string& key) const {
    const std::string t = text(key);
    const auto v = to_u64(t);
    if (!v) fail(key, "'" + t + "' is not an integer >= 0");
    return *v;
  }
  int small_count(const std::string& key) const {
    const std::uint64_t v = count(key);
    if (v > 1u << 30) fail(key, fmt::format("{} is out of range", v));
    return static_cast<int>(v);
  }

 private:
  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw ParseError(source_, line_, fmt::format("{}key '{}': {}", what_, key, why));
  }
  const pt::ptree& node_;
  std::string what_;
  std::size_t line_;
  const std::string& source_;
};

// Line of the n-th (0-based) element of the array under "key": the n-th '{' after the key
// (the harness writes one element per line; good enough to find the row in any layout).
std::size_t element_line(std::string_view text, std::string_view key, std::size_t n) {
  std::size_t pos = text.find(fmt::format("\"{}\"", key));
  for (std::size_t k = 0; pos != std::string_view::npos && k <= n; ++k)
    pos = text.find('{', pos + 1);
  return line_at(text, pos == std::string_view::npos ? text.size() : pos);
}

void expect_tool(const JsonObject& top, const std::string& tool, const std::string& source) {
  const std::string t = top.text("tool");
  if (t != tool)
    throw ParseError(source, 1, fmt::format("\"tool\" is '{}', expected '{}'", t, tool));
}

// The text is a JSON object (its first non-blank character opens one).
bool json_object(std::string_view text) {
  const auto start = text.find_first_not_of(" \t\r\n");
  return start != std::string_view::npos && text[start] == '{';
}

}  // namespace

std::string harness_json_tool(std::string_view text) {
  if (!json_object(text)) return {};
  for (const char* tool : {"fabricsim-verbs-bench", "fabricsim-bench"})
    if (text.find(fmt::format("\"tool\": \"{}\"", tool)) != std::string_view::npos) return tool;
  return {};
}

bench::Report parse_bench_json(std::string_view text, const std::string& source) {
  const pt::ptree tree = read_json_tree(text, source);
  const JsonObject top(tree, "", 1, source);
  expect_tool(top, "fabricsim-bench", source);
  bench::Report r;
  r.device = top.text("device");
  r.gpus = top.small_count("gpus");
  r.processes = top.has("processes") ? top.small_count("processes") : 1;
  r.nccl_version = top.small_count("nccl_version");
  if (r.gpus < 1 || r.processes < 1)
    throw ParseError(source, 1, "\"gpus\" and \"processes\" must be at least 1");
  if (top.has("ranks") && top.small_count("ranks") != r.ranks())
    throw ParseError(source, 1,
                     fmt::format("\"ranks\" is {}, but gpus x processes = {}",
                                 top.small_count("ranks"), r.ranks()));
  if (const auto m = tree.get_child_optional("micro")) {
    const JsonObject o(*m, "micro: ", element_line(text, "micro", 0), source);
    r.micro = bench::Micro{o.number("h2d_gbs"),        o.number("d2h_gbs"),
                           o.number("d2d_gbs"),        o.number("h2d_latency_us"),
                           o.number("d2h_latency_us"), o.number("kernel_launch_us")};
  }
  const auto rows = tree.get_child_optional("collectives");
  if (!rows) throw ParseError(source, line_at(text, text.size()), "no \"collectives\" array");
  std::size_t i = 0;
  for (const auto& [name, row] : *rows) {
    const std::size_t line = element_line(text, "collectives", i);
    if (!name.empty()) throw ParseError(source, line, "\"collectives\" must be an array");
    const JsonObject o(row, fmt::format("collectives[{}]: ", i), line, source);
    bench::CollectiveRow c{o.text("op"),          o.count("bytes"),      o.number("time_us"),
                           o.number("algbw_gbs"), o.number("busbw_gbs"), o.count("wrong")};
    if (c.bytes == 0 || c.time_us <= 0)
      throw ParseError(source, line,
                       fmt::format("collectives[{}]: bytes and time_us must be positive", i));
    r.collectives.push_back(std::move(c));
    ++i;
  }
  return r;
}

bool looks_like_results_json(std::string_view text) {
  return json_object(text) && text.find("\"fabricsim_version\"") != std::string_view::npos;
}

SimulationResults parse_results_json(std::string_view text, const std::string& source) {
  const pt::ptree tree = read_json_tree(text, source);
  const JsonObject top(tree, "", 1, source);
  SimulationResults r;
  r.version = top.text("fabricsim_version");
  r.status = top.text("status");
  r.sim_time_ps = top.count("sim_time_ps");
  r.span_ps = top.has("bottleneck_span_ps") ? top.count("bottleneck_span_ps") : r.sim_time_ps;
  std::size_t i = 0;
  if (const auto loads = tree.get_child_optional("bottlenecks")) {
    for (const auto& [name, row] : *loads) {
      const JsonObject o(row, fmt::format("bottlenecks[{}]: ", i),
                         element_line(text, "bottlenecks", i), source);
      r.bottlenecks.push_back(
          {o.text("layer"), o.text("port"), o.number("utilization"), o.number("paused_us")});
      ++i;
    }
  }
  // Keys hold dots ("host0.nic.tx_bytes"): read the children as they are, not as paths.
  const auto read_map = [&](const char* table, const char* item, auto convert, const char* kind,
                            auto& into) {
    const auto node = tree.get_child_optional(table);
    if (!node) return;
    for (const auto& [key, value] : *node) {
      const auto v = convert(value.data());
      if (!v)
        throw ParseError(source, line_at(text, text.find(fmt::format("\"{}\"", key))),
                         fmt::format("{} '{}': '{}' is not {}", item, key, value.data(), kind));
      into[key] = *v;
    }
  };
  read_map("counters", "counter", to_u64, "an integer", r.counters);
  read_map("metrics", "metric", to_double, "a number", r.metrics);
  return r;
}

PerftestOutput parse_verbs_bench_json(std::string_view text, const std::string& source) {
  const pt::ptree tree = read_json_tree(text, source);
  const JsonObject top(tree, "", 1, source);
  expect_tool(top, "fabricsim-verbs-bench", source);
  PerftestOutput o;
  const std::string test = top.text("test");
  PerftestRow row;
  row.bytes = top.count("bytes");
  row.iterations = top.count("iters");
  row.line = 1;
  if (test == "write_bw") {
    o.test = "RDMA_Write BW Test";
    row.bw_peak_gbps = row.bw_avg_gbps = top.number("bw_avg_gbps");
    row.msg_rate_mpps = top.number("msg_rate_mpps");
  } else if (test == "write_lat") {
    o.test = "RDMA_Write Latency Test";
    o.latency = true;
    row.t_min = top.number("t_min_us");
    row.t_typical = top.number("t_typical_us");
    row.t_avg = top.number("t_avg_us");
    row.t_max = top.number("t_max_us");
  } else {
    throw ParseError(source, 1,
                     fmt::format("\"test\" is '{}', expected 'write_bw' or 'write_lat'", test));
  }
  o.rows.push_back(row);
  return o;
}

}  // namespace fabricsim::validation
