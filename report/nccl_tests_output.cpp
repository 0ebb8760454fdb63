#include "report/nccl_tests_output.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>
#include <cstdio>
#include <map>

namespace fabricsim {

namespace {

// Below this the busiest link's layer counts as evenly loaded and no imbalance is printed
// (links of one layer differ by a few per cent from headers and fill alone).
constexpr double kImbalanceShown = 1.1;

// nccl-tests' getFloatStr: %.2f, else %.1f, else %.0f, else %.1e / %.0e, to fit `width`.
std::string float_str(double value, int width) {
  char buf[64];
  for (const char* f : {"%*.2f", "%*.1f", "%*.0f"}) {
    if (std::snprintf(buf, sizeof buf, f, width, value) <= width) return buf;
  }
  std::snprintf(buf, sizeof buf, width >= 7 ? "%*.1e" : "%*.0e", width, value);
  return std::string(buf).substr(0, static_cast<std::size_t>(width));
}

std::string printf_g(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::string nccl_tests_text(const NcclTestsArgs& a, const NcclTestsResult& r) {
  std::string out;
  const auto line = [&](const std::string& s) { out += s + "\n"; };
  line("# nccl-tests version 2.19.6 nccl-headers=23007 nccl-library=23007");
  line("# Collective test starting: " + a.binary);
  line(fmt::format(
      "# nThread {} nGpus {} minBytes {} maxBytes {} step: {}({}) warmup iters: {} "
      "iters: {} agg iters: {} validation: {} graph: {} unalign: {}",
      a.nthreads, a.ngpus, a.min_bytes, a.max_bytes,
      a.step_factor > 1 ? a.step_factor : a.step_bytes, a.step_factor > 1 ? "factor" : "bytes",
      a.warmup, a.iters, a.agg_iters, 0, a.graph, 0));
  line("#");
  line("# Using devices");
  for (const auto& l : r.rank_lines) line(l);
  line("#");
  line(fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}{}out-of-place{}in-place{}", "", "", "",
                   "", "", std::string(11, ' '), std::string(23, ' '), std::string(10, ' ')));
  line(
      fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  "
                  "{:>6}  {:>6}  {:>6} ",
                  "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                  "time", "algbw", "busbw", "#wrong"));
  line(
      fmt::format("# {:>10}  {:>12}  {:>8}  {:>6}  {:>6}  {:>7}  {:>6}  {:>6}  {:>6}  {:>7}  "
                  "{:>6}  {:>6}  {:>6} ",
                  "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                  "(GB/s)", ""));
  const bool rooted = a.op == CollOp::kBroadcast || a.op == CollOp::kReduce;
  const std::string redop =
      a.op == CollOp::kAllReduce || a.op == CollOp::kReduce || a.op == CollOp::kReduceScatter
          ? a.redop
          : "none";
  for (const auto& row : r.rows) {
    std::string s = fmt::format("{:>12}  {:>12}  {:>8}  {:>6}  {:>6}", row.size, row.count,
                                a.datatype, redop, rooted ? a.root : -1);
    for (int p = 0; p < 2; ++p)
      s += fmt::format("  {:>7}  {:>6}  {:>6}    N/A", float_str(row.time_us[p], 7),
                       float_str(row.algbw[p], 6), float_str(row.busbw[p], 6));
    line(s);
  }
  line(fmt::format("# {:<20} : {} {}", "Out of bounds values", 0, "OK"));
  line(fmt::format("# {:<20} : {} ", "Avg bus bandwidth", printf_g(r.avg_busbw)));
  line("#");
  line("# Collective test concluded: " + a.binary);
  line("");
  // What the model chose, as comment lines a parser of nccl-tests output skips.
  line("# fabricsim: simulated; #wrong is N/A because the model moves bytes, not values");
  for (const auto& row : r.rows) {
    // An uneven layer (ECMP collisions) says how far its busiest link sits above the mean.
    std::string bound;
    if (!row.bounded_by.empty()) bound = ", bounded by " + row.bounded_by;
    if (row.tuner_fallback)
      bound +=
          "; no enabled algorithm/protocol applies here (NCCL would fail the call), the model "
          "ran this instead";
    if (row.bounded_by_imbalance >= kImbalanceShown)
      bound += fmt::format(" (busiest link {:.2f} x the layer's mean)", row.bounded_by_imbalance);
    if (!row.congestion.empty()) {
      const CongestionTotals c = congestion_totals(row.congestion);
      bound += fmt::format("; PFC {} pause frames on {} links in {} layers, {} ECN marks",
                           c.pause_frames, c.paused_links, c.paused_tiers, c.ecn_marked);
    }
    line(fmt::format("# fabricsim: {:>12} B {} {}/{} {} channels (NCCL tuner estimate {:.1f} us){}",
                     row.size, to_string(a.op), to_string(row.algo), to_string(row.proto),
                     row.channels, row.tuner_us, bound));
  }
  if (!r.seeds.empty()) {
    line(fmt::format("# fabricsim: times are means over seeds {} to {}; busbw min to max:",
                     r.seeds.front(), r.seeds.back()));
    for (const auto& row : r.rows)
      line(fmt::format(
          "# fabricsim: {:>12} B out-of-place {:.2f} to {:.2f}, in-place {:.2f} to "
          "{:.2f} GB/s",
          row.size, row.busbw_min[0], row.busbw_max[0], row.busbw_min[1], row.busbw_max[1]));
    for (const auto& w : r.warnings) line("# fabricsim warning: " + w);
  }
  for (const auto& e : r.errors) line("# fabricsim error: " + e);
  return out;
}

std::string nccl_tests_json(const Scenario& scenario, const NcclTestsArgs& a,
                            const NcclTestsResult& r) {
  toml::array rows;
  for (const auto& row : r.rows) {
    toml::table t{{"size", static_cast<std::int64_t>(row.size)},
                  {"count", static_cast<std::int64_t>(row.count)},
                  {"algorithm", std::string(to_string(row.algo))},
                  {"protocol", std::string(to_string(row.proto))},
                  {"channels", row.channels},
                  {"nccl_tuner_us", row.tuner_us},
                  {"bounded_by", row.bounded_by},
                  {"bounded_by_imbalance", row.bounded_by_imbalance},
                  {"tuner_fallback", row.tuner_fallback}};
    if (!row.congestion.empty()) {
      const CongestionTotals c = congestion_totals(row.congestion);
      toml::table congestion{{"pfc_pause_frames", static_cast<std::int64_t>(c.pause_frames)},
                             {"ecn_marked_packets", static_cast<std::int64_t>(c.ecn_marked)}};
      for (const auto& m : congestion_metrics(row.congestion))
        congestion.insert_or_assign(m.name, m.value);
      t.insert_or_assign("congestion", std::move(congestion));
    }
    const char* names[] = {"out_of_place", "in_place"};
    for (int p = 0; p < 2; ++p) {
      // GB/s (10^9 bytes per second), as nccl-tests prints them. `*_gbps` are the same
      // values under their old names, kept for one release (they never held Gb/s).
      toml::table placement{{"time_us", row.time_us[p]},
                            {"algbw_gbyte_per_s", row.algbw[p]},
                            {"busbw_gbyte_per_s", row.busbw[p]},
                            {"algbw_gbps", row.algbw[p]},
                            {"busbw_gbps", row.busbw[p]}};
      if (!r.seeds.empty()) {
        placement.insert("busbw_min_gbyte_per_s", row.busbw_min[p]);
        placement.insert("busbw_max_gbyte_per_s", row.busbw_max[p]);
      }
      t.insert(names[p], std::move(placement));
    }
    rows.push_back(std::move(t));
  }
  toml::array errors;
  for (const auto& e : r.errors) errors.push_back(e);
  toml::table doc{{"scenario", scenario.name},
                  {"binary", a.binary},
                  {"operation", std::string(to_string(a.op))},
                  {"type", a.datatype},
                  {"redop", a.redop},
                  {"nranks", r.nranks},
                  {"results", std::move(rows)},
                  {"avg_bus_bandwidth_gbyte_per_s", r.avg_busbw},
                  {"avg_bus_bandwidth_gbps", r.avg_busbw},
                  {"errors", std::move(errors)}};
  if (!r.seeds.empty()) {
    toml::array seeds, warnings;
    for (const auto seed : r.seeds) seeds.push_back(static_cast<std::int64_t>(seed));
    for (const auto& w : r.warnings) warnings.push_back(w);
    doc.insert("seeds", std::move(seeds));
    doc.insert("seed_warnings", std::move(warnings));
  }
  std::ostringstream os;
  os << toml::json_formatter(doc) << '\n';
  return os.str();
}

std::string nccl_tests_csv(const NcclTestsResult& r) {
  std::string out =
      "size,count,algorithm,protocol,channels,oop_time_us,oop_algbw_gbps,oop_busbw_gbps,"
      "ip_time_us,ip_algbw_gbps,ip_busbw_gbps,oop_algbw_gbyte_per_s,oop_busbw_gbyte_per_s,"
      "ip_algbw_gbyte_per_s,ip_busbw_gbyte_per_s\n";
  // The `_gbps` columns hold GB/s like the `_gbyte_per_s` ones after them: old names, kept
  // for one release in their old places so positional readers keep working.
  for (const auto& row : r.rows)
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", row.size, row.count,
                       to_string(row.algo), to_string(row.proto), row.channels, row.time_us[0],
                       row.algbw[0], row.busbw[0], row.time_us[1], row.algbw[1], row.busbw[1],
                       row.algbw[0], row.busbw[0], row.algbw[1], row.busbw[1]);
  return out;
}

}  // namespace fabricsim
