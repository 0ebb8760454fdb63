#include "report/results.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "fabricsim/version.hpp"
#include "models/transport/dcqcn_paper.hpp"

namespace fabricsim {
namespace fs = std::filesystem;

FidelityScope fidelity_scope(const Scenario& s) {
  const auto& n = s.network;
  const bool ib = s.cluster.fabric.technology == Technology::kInfiniband;
  const bool tcp = n.nic.transport == Transport::kTcp;
  const bool dcqcn = n.nic.congestion == &kDcqcnFirmware || n.nic.congestion == &kDcqcnPaper;
  FidelityScope f;
  f.level = std::string(to_string(s.fidelity));
  f.models = {"link rates and packet headers", "routes (ECMP, spraying, d-mod-k)",
              "store-and-forward latency", "NVLink, PCIe and host-memory paths",
              "NIC message rate"};
  if (s.fidelity == Fidelity::kFlow) {
    // The flow level shares link capacity max-min fairly among fluid flows on the same routes
    // (fabric/flow_network.hpp): nothing queues, pauses, marks or is lost there, so every
    // mechanism that acts on queues is switched off whatever the scenario sets.
    f.models.push_back("max-min fair sharing of every link");
    if (n.buffer.pfc) f.inactive.push_back("PFC");
    if (n.buffer.ecn.enabled) f.inactive.push_back("ECN");
    if (dcqcn) f.inactive.push_back("DCQCN");
    if (tcp) f.inactive.push_back("TCP congestion control");
    f.ignores = {"switch queues and buffers", "PFC pauses", "ECN marks and congestion control",
                 "packet loss and retransmission", "InfiniBand credits"};
  } else {
    f.models.push_back("switch queues and shared buffers");
    if (ib) f.models.push_back("InfiniBand credit flow control");
    if (n.buffer.pfc) f.models.push_back("PFC");
    if (n.buffer.ecn.enabled) f.models.push_back("ECN marking");
    if (n.nic.congestion == &kDcqcnFirmware) f.models.push_back("DCQCN");
    if (n.nic.congestion == &kDcqcnPaper) f.models.push_back("DCQCN (the paper's rules)");
    f.models.push_back(tcp ? "TCP (NewReno/DCTCP) with retransmission"
                           : "go-back-N retransmission");
  }
  return f;
}

std::string seeds_report(const SeedsResult& seeds) {
  std::size_t width = 6;
  for (const auto& m : seeds.metrics) width = std::max(width, m.name.size());
  std::string out = fmt::format(
      "\n  over {} seeds ({}..{}):\n  {:<{}}  {:>14} {:>14} {:>14} {:>8}\n", seeds.seeds.size(),
      seeds.seeds.front(), seeds.seeds.back(), "metric", width, "mean", "min", "max", "spread");
  for (const auto& m : seeds.metrics)
    out += fmt::format("  {:<{}}  {:>14.3f} {:>14.3f} {:>14.3f} {:>7.1f}%\n", m.name, width, m.mean,
                       m.min, m.max, 100 * m.spread());
  for (const auto& w : seeds.warnings) out += fmt::format("  warning: {}\n", w);
  return out;
}

std::string results_json(const Scenario& scenario, const RunResult& result,
                         const SeedsResult* seeds) {
  // Everything the text report's metric table shows: value, unit and, where the scenario
  // replays a case ([expected]), the case's value beside the model's.
  toml::table metrics, units, expected;
  for (const auto& m : result.metrics) {
    metrics.insert_or_assign(m.name, m.value);
    if (!m.unit.empty()) units.insert_or_assign(m.name, m.unit);
    for (const auto& [key, value] : scenario.expected)
      if (key == m.name) {
        toml::table row{{"case", value}};
        if (value != 0) row.insert_or_assign("model_over_case", m.value / value);
        expected.insert_or_assign(m.name, std::move(row));
      }
  }
  toml::array notes;
  for (const auto& n : scenario.notes) notes.push_back(n);
  toml::table counters;
  for (const auto& [name, value] : result.counters)
    counters.insert_or_assign(name, static_cast<std::int64_t>(value));
  toml::array series;
  for (const auto& n : result.series_names) series.push_back(n);
  toml::array errors;
  for (const auto& e : result.errors) errors.push_back(e);
  toml::array bottlenecks;
  for (const auto& l : result.bottlenecks)
    bottlenecks.push_back(toml::table{{"layer", l.layer},
                                      {"port", l.port},
                                      {"utilization", l.utilization},
                                      {"paused_us", l.paused_us},
                                      {"layer_mean_utilization", l.layer_mean}});

  toml::array congestion;
  for (const auto& t : result.congestion)
    congestion.push_back(
        toml::table{{"layer", t.layer},
                    {"links", static_cast<std::int64_t>(t.links)},
                    {"paused_links", static_cast<std::int64_t>(t.paused_links)},
                    {"pause_frames", static_cast<std::int64_t>(t.pause_frames)},
                    {"paused_us", t.paused_us},
                    {"max_paused_share", t.max_paused_share},
                    {"ecn_marked_packets", static_cast<std::int64_t>(t.ecn_marked)}});

  const FidelityScope scope = fidelity_scope(scenario);
  const auto list = [](const std::vector<std::string>& v) {
    toml::array a;
    for (const auto& x : v) a.push_back(x);
    return a;
  };
  toml::table root{
      {"fabricsim_version", kVersion},
      {"scenario", scenario.resolved},
      {"fidelity", toml::table{{"level", scope.level},
                               {"models", list(scope.models)},
                               {"set_but_inactive", list(scope.inactive)},
                               {"ignores", list(scope.ignores)}}},
      {"seed", static_cast<std::int64_t>(scenario.seed)},
      {"status", result.status},
      {"sim_time_ps", result.sim_time.ps()},
      {"bottleneck_span_ps", result.bottleneck_span.ps()},
      {"events", static_cast<std::int64_t>(result.events)},
      {"errors", errors},
      {"bottlenecks", std::move(bottlenecks)},
      {"bounded_by", result.bottlenecks.empty() ? std::string() : result.bottlenecks.front().layer},
      {"congestion_by_tier", std::move(congestion)},
      {"metrics", std::move(metrics)},
      {"metric_units", std::move(units)},
      {"expected", std::move(expected)},
      {"notes", std::move(notes)},
      {"counters", std::move(counters)},
      {"timeseries", toml::table{{"file", result.series_names.empty() ? "" : "timeseries.csv"},
                                 {"series", std::move(series)}}},
  };
  if (seeds != nullptr) {
    toml::array list, warnings;
    for (const auto seed : seeds->seeds) list.push_back(static_cast<std::int64_t>(seed));
    for (const auto& w : seeds->warnings) warnings.push_back(w);
    toml::table per_metric;
    for (const auto& m : seeds->metrics)
      per_metric.insert_or_assign(
          m.name,
          toml::table{{"mean", m.mean}, {"min", m.min}, {"max", m.max}, {"spread", m.spread()}});
    root.insert_or_assign("seeds", toml::table{{"seeds", std::move(list)},
                                               {"metrics", std::move(per_metric)},
                                               {"warnings", std::move(warnings)}});
  }
  std::ostringstream out;
  out << toml::json_formatter(root) << '\n';
  return out.str();
}

std::string timeseries_csv(const RunResult& result) {
  std::string out = "time_ps";
  for (const auto& n : result.series_names) out += "," + n;
  out += '\n';
  for (std::size_t row = 0; row < result.series_times.size(); ++row) {
    out += fmt::format("{}", result.series_times[row].ps());
    for (const auto& column : result.series_values) out += fmt::format(",{}", column[row]);
    out += '\n';
  }
  return out;
}

std::string text_report(const Scenario& scenario, const RunResult& result) {
  std::string out = fmt::format("fabricsim {} - scenario '{}' (seed {})\n", kVersion, scenario.name,
                                scenario.seed);
  if (!scenario.description.empty()) out += fmt::format("  {}\n", scenario.description);
  const auto& c = scenario.cluster;
  const std::string endpoints = c.servers > 0 ? fmt::format("{} x {} ({} NICs each)", c.servers,
                                                            c.server.model, c.server.nics.size())
                                              : fmt::format("{} hosts", c.hosts);
  const auto& n = scenario.network;
  out += fmt::format("  fabric: {} {}, {} at {}, switch buffer {}, MTU {} + {} overhead\n",
                     scenario.resolved["fabric"]["kind"].value_or(std::string("star")),
                     to_string(c.fabric.technology), endpoints, to_string(c.fabric.link_rate),
                     to_string(n.buffer.buffer), to_string(n.nic.format.mtu),
                     to_string(n.nic.format.header));
  const FidelityScope scope = fidelity_scope(scenario);
  if (scenario.fidelity == Fidelity::kFlow) {
    out += fmt::format("  fidelity: flow level - models {}; does not model {}\n",
                       fmt::join(scope.models, ", "), fmt::join(scope.ignores, ", "));
    if (!scope.inactive.empty())
      out += fmt::format("  set in the scenario but inactive at flow level: {}\n",
                         fmt::join(scope.inactive, ", "));
  } else {
    const auto* cc = n.nic.congestion;
    out += fmt::format("  PFC {}, ECN {}, DCQCN {}, IB timeout {} / retry count {}\n",
                       n.buffer.pfc ? "on" : "off", n.buffer.ecn.enabled ? "on" : "off",
                       cc == &kDcqcnFirmware ? "on"
                       : cc == &kDcqcnPaper  ? "on (paper variant)"
                                             : "off",
                       n.nic.ib_timeout, n.nic.ib_retry_cnt);
  }
  out += fmt::format("  status: {} at simulated time {} after {} events\n", result.status,
                     to_string(result.sim_time), result.events);
  for (const auto& e : result.errors) out += fmt::format("  error: {}\n", e);
  out += "\n";
  std::size_t width = 0;
  for (const auto& m : result.metrics) width = std::max(width, m.name.size());
  const auto number = [](double v) {
    const bool whole = v == std::floor(v) && std::fabs(v) < 1e15;
    return whole ? fmt::format("{:>14.0f}", v) : fmt::format("{:>14.3f}", v);
  };
  if (!scenario.expected.empty())
    out += fmt::format("  {:<{}}  {:>14} {:<9} {:>14}  {}\n", "", width, "model", "", "case",
                       "model / case");
  for (const auto& m : result.metrics) {
    out += fmt::format("  {:<{}}  {} {:<9}", m.name, width, number(m.value), m.unit);
    for (const auto& [key, value] : scenario.expected)
      if (key == m.name)
        out += fmt::format(" {}  {}", number(value),
                           value != 0 ? fmt::format("{:.2f}", m.value / value) : std::string("-"));
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
  }
  for (const auto& note : scenario.notes) out += fmt::format("  note: {}\n", note);
  if (!result.bottlenecks.empty()) {
    out += fmt::format(
        "\n  bottlenecks (busiest links per layer, busy time over {}, and the layer's mean over "
        "all its links; bounded by: {}):\n",
        to_string(result.bottleneck_span), result.bottlenecks.front().layer);
    for (const auto& l : result.bottlenecks)
      out += fmt::format("    {:<14} {:<40} {:>6.1f} %  layer mean {:>5.1f} %  paused {:.1f} us\n",
                         l.layer, l.port, l.utilization * 100, l.layer_mean * 100, l.paused_us);
  }
  if (!result.congestion.empty()) {
    out += fmt::format(
        "\n  PFC and ECN by layer (over {}; paused: link directions PFC paused at least once; "
        "pauses in more than one layer have spread):\n    {:<14} {:>6} {:>7} {:>13} {:>14} "
        "{:>12} {:>12}\n",
        to_string(result.bottleneck_span), "layer", "links", "paused", "pause frames",
        "paused time", "most paused", "ECN marks");
    for (const auto& t : result.congestion)
      out += fmt::format(
          "    {:<14} {:>6} {:>7} {:>13} {:>14} {:>10.2f} % {:>12}\n", t.layer, t.links,
          t.paused_links, t.pause_frames,
          to_string(Time::from_ps(static_cast<Time::rep>(std::llround(t.paused_us * 1e6)))),
          t.max_paused_share * 100, t.ecn_marked);
  }
  return out;
}

std::vector<std::string> metric_names(const std::vector<RunResult>& results) {
  std::vector<std::string> names;
  for (const auto& r : results)
    for (const auto& m : r.metrics)
      if (std::find(names.begin(), names.end(), m.name) == names.end()) names.push_back(m.name);
  return names;
}

std::string compare_report(const std::vector<Scenario>& scenarios,
                           const std::vector<RunResult>& results) {
  const std::vector<std::string> metrics = metric_names(results);
  std::size_t width = 6;
  for (const auto& m : metrics) width = std::max(width, m.size());
  std::vector<std::vector<std::string>> cells(metrics.size() + 1);
  std::vector<std::size_t> widths;
  for (std::size_t c = 0; c < scenarios.size(); ++c) {
    std::string name = scenarios[c].name;
    std::size_t w = name.size();
    cells[0].push_back(name);
    for (std::size_t row = 0; row < metrics.size(); ++row) {
      std::string cell = "-";
      for (const auto& m : results[c].metrics)
        if (m.name == metrics[row]) {
          const bool whole = m.value == std::floor(m.value) && std::fabs(m.value) < 1e15;
          cell = whole ? fmt::format("{:.0f}", m.value) : fmt::format("{:.3f}", m.value);
        }
      for (const auto& [key, value] : scenarios[c].expected)
        if (key == metrics[row]) cell += fmt::format(" ({:g})", value);
      w = std::max(w, cell.size());
      cells[row + 1].push_back(cell);
    }
    widths.push_back(w);
  }
  std::string out = fmt::format("{:<{}}", "metric", width);
  for (std::size_t c = 0; c < scenarios.size(); ++c)
    out += fmt::format("  {:>{}}", cells[0][c], widths[c]);
  out += '\n';
  // Which level each column ran at: options compared at different levels differ by the
  // levels too (docs/fidelity.md gives the size of that difference).
  bool mixed = false;
  for (const auto& s : scenarios) mixed |= s.fidelity != scenarios.front().fidelity;
  if (mixed) {
    out += fmt::format("{:<{}}", "fidelity", width);
    for (std::size_t c = 0; c < scenarios.size(); ++c)
      out += fmt::format("  {:>{}}", to_string(scenarios[c].fidelity), widths[c]);
    out += '\n';
  }
  for (std::size_t row = 0; row < metrics.size(); ++row) {
    out += fmt::format("{:<{}}", metrics[row], width);
    for (std::size_t c = 0; c < scenarios.size(); ++c)
      out += fmt::format("  {:>{}}", cells[row + 1][c], widths[c]);
    out += '\n';
  }
  bool any_expected = false;
  for (const auto& s : scenarios) any_expected |= !s.expected.empty();
  if (any_expected) out += "(in brackets: what the replayed case reported)\n";
  std::vector<std::string> shown;
  for (const auto& s : scenarios)
    for (const auto& note : s.notes)
      if (std::find(shown.begin(), shown.end(), note) == shown.end()) {
        shown.push_back(note);
        out += fmt::format("note ({}): {}\n", s.name, note);
      }
  for (std::size_t c = 0; c < scenarios.size(); ++c)
    for (const auto& e : results[c].errors)
      out += fmt::format("error ({}): {}\n", scenarios[c].name, e);
  return out;
}

void write_file_atomically(const fs::path& file, const std::string& content) {
  if (file.has_parent_path()) fs::create_directories(file.parent_path());
  const fs::path tmp = file.string() + fmt::format(".tmp.{}", ::getpid());
  {
    errno = 0;
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    // errno of the failing open or write says why: "No space left on device", ...
    if (!out) {
      const int why = errno;
      std::error_code ec;
      fs::remove(tmp, ec);
      throw std::runtime_error(fmt::format("cannot write {}: {}", file.string(),
                                           why != 0 ? std::strerror(why) : "write failed"));
    }
  }
  fs::rename(tmp, file);
}

void write_results(const fs::path& dir, const Scenario& scenario, const RunResult& result,
                   const SeedsResult* seeds) {
  fs::create_directories(dir);
  write_file_atomically(dir / "results.json", results_json(scenario, result, seeds));
  if (!result.series_names.empty())
    write_file_atomically(dir / "timeseries.csv", timeseries_csv(result));
}

}  // namespace fabricsim

namespace fabricsim {

std::string topology_report(const Scenario& scenario, const TopologySummary& t) {
  std::string out = fmt::format("fabricsim {} - topology of '{}'\n", kVersion, scenario.name);
  const auto& c = scenario.cluster;
  if (c.servers > 0)
    out +=
        fmt::format("  servers: {} x {} ({} GPUs, {} NICs of {} each)\n", c.servers, c.server.model,
                    c.server.gpus.size(), c.server.nics.size(), to_string(c.server.nic_rate));
  out += fmt::format("  GPUs {}, NICs {}, NVSwitches {}, PCIe switches {}, CPU sockets {}\n",
                     t.gpus, t.nics, t.nvswitches, t.pcie_switches, t.cpus);
  const auto* tree = std::get_if<FatTreeSpec>(&c.fabric.shape);
  const int ports = c.fabric.switch_ports > 0 ? c.fabric.switch_ports : tree ? tree->k : 0;
  out += fmt::format(
      "  network switches: {} ({}, {} ports, {})\n", t.switches, to_string(c.fabric.technology),
      ports > 0 ? fmt::format("{}", ports) : "unlimited", to_string(c.fabric.link_rate));
  if (t.aggregators > 0)
    out += fmt::format("    SHARP aggregation nodes: {} (one per switch)\n", t.aggregators);
  for (const auto& tier : t.tiers)
    out += fmt::format(
        "    tier {} {:<8} {:>6} switches  down {:>9.0f} Gb/s  up {:>9.0f} Gb/s  {}\n", tier.tier,
        tier.name, tier.switches, tier.down_gbps, tier.up_gbps,
        tier.up_gbps > 0 ? fmt::format("oversubscription {:.3g}:1", tier.oversubscription())
                         : std::string());
  out += fmt::format(
      "  links {} in all; cables: {} host, {} switch-to-switch ({} copper, {} optical, "
      "{} transceivers)\n",
      t.links, t.host_cables, t.fabric_cables, t.copper_cables, t.optical_cables, t.transceivers);
  out += fmt::format(
      "  bisection bandwidth {:.0f} Gb/s one way ({:.1f}% of the {:.0f} Gb/s full "
      "bisection)\n",
      t.bisection_gbps,
      t.full_bisection_gbps > 0 ? 100 * t.bisection_gbps / t.full_bisection_gbps : 0,
      t.full_bisection_gbps);
  for (const auto& cut : t.tier_cuts)
    out += fmt::format(
        "    across the {} tier ({} {} groups in two halves): {:.0f} Gb/s of {:.0f} ({:.1f}%)\n",
        cut.tier, cut.groups, cut.tier, cut.gbps, cut.full_gbps, 100 * cut.fraction());
  out += fmt::format("  endpoint-to-endpoint path: diameter {} links, mean {:.2f} links\n",
                     t.diameter_links, t.mean_links);
  for (const auto& w : t.warnings) out += fmt::format("  warning: {}\n", w);
  if (!t.cost.empty()) {
    out += "  cost:\n";
    for (const auto& [item, value] : t.cost)
      if (item != "total") out += fmt::format("    {:<16} {:>16.2f}\n", item, value);
    out += fmt::format("    {:<16} {:>16.2f}\n", "total", t.cost.at("total"));
  }
  return out;
}

std::string topology_json(const Scenario& scenario, const TopologySummary& t) {
  toml::array tiers;
  for (const auto& tier : t.tiers)
    tiers.push_back(toml::table{{"tier", tier.tier},
                                {"name", tier.name},
                                {"switches", tier.switches},
                                {"down_gbps", tier.down_gbps},
                                {"up_gbps", tier.up_gbps},
                                {"oversubscription", tier.oversubscription()}});
  toml::array cuts;
  for (const auto& cut : t.tier_cuts)
    cuts.push_back(toml::table{{"tier", cut.tier},
                               {"groups", cut.groups},
                               {"gbps", cut.gbps},
                               {"full_gbps", cut.full_gbps},
                               {"fraction", cut.fraction()}});
  toml::array warnings;
  for (const auto& w : t.warnings) warnings.push_back(w);
  toml::table cost;
  for (const auto& [item, value] : t.cost) cost.insert_or_assign(item, value);
  toml::table root{
      {"fabricsim_version", kVersion},
      {"scenario", scenario.name},
      {"servers", t.servers},
      {"gpus", t.gpus},
      {"nics", t.nics},
      {"nvswitches", t.nvswitches},
      {"pcie_switches", t.pcie_switches},
      {"cpus", t.cpus},
      {"switches", t.switches},
      {"sharp_aggregators", t.aggregators},
      {"tiers", std::move(tiers)},
      {"links", t.links},
      {"host_cables", t.host_cables},
      {"fabric_cables", t.fabric_cables},
      {"copper_cables", t.copper_cables},
      {"optical_cables", t.optical_cables},
      {"transceivers", t.transceivers},
      {"bisection_gbps", t.bisection_gbps},
      {"full_bisection_gbps", t.full_bisection_gbps},
      {"tier_cuts", std::move(cuts)},
      {"diameter_links", t.diameter_links},
      {"mean_links", t.mean_links},
      {"warnings", std::move(warnings)},
      {"cost", std::move(cost)},
  };
  std::ostringstream out;
  out << toml::json_formatter(root) << '\n';
  return out.str();
}

namespace {

// A link's rate as people write it, to three significant digits: "400 Gb/s", "504 Gb/s"
// (PCIe Gen5 x16), "1.6 Tb/s".
std::string readable_rate(Bandwidth rate) {
  const double gbps = static_cast<double>(rate.bps()) / 1e9;
  return gbps >= 1000 ? fmt::format("{:.3g} Tb/s", gbps / 1000) : fmt::format("{:.3g} Gb/s", gbps);
}

// Shape and colour per kind, so that a server reads at a glance: GPUs green boxes, NVSwitches
// purple, PCIe switches and CPUs grey, NICs blue, network switches orange.
std::string_view node_style(NodeKind k) {
  switch (k) {
    case NodeKind::kGpu:
      return R"(shape=box,fillcolor="#b7e07a")";
    case NodeKind::kNvSwitch:
      return R"(shape=hexagon,fillcolor="#c9b3e6")";
    case NodeKind::kPcieSwitch:
      return R"(shape=box,style="rounded,filled",fillcolor="#e0e0e0")";
    case NodeKind::kCpu:
      return R"(shape=box3d,fillcolor="#bdbdbd")";
    case NodeKind::kNic:
      return R"(shape=ellipse,fillcolor="#9ecae1")";
    case NodeKind::kSwitch:
      return R"(shape=box,fillcolor="#fdae6b")";
    case NodeKind::kAggregator:
      return R"(shape=diamond,fillcolor="#fdd0a2")";
  }
  return "";
}

std::string_view edge_colour(LinkKind k) {
  switch (k) {
    case LinkKind::kNvLink:
      return "#4a9a1e";
    case LinkKind::kPcie:
      return "#636363";
    case LinkKind::kInterSocket:
      return "#969696";
    case LinkKind::kNetwork:
      return "#3182bd";
  }
  return "black";
}

// DOT's quoted string: quotes and backslashes escaped.
std::string dot_quoted(const std::string& text) {
  std::string out;
  out.push_back('"');
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

}  // namespace

std::string topology_dot(const Topology& topology) {
  // Written directly rather than with boost::write_graphviz, which cannot group vertices into
  // clusters: one cluster per server (its GPUs, switches, CPUs and NICs), the network's
  // switches ranked by tier below them, one edge per link labelled with its rate.
  const auto& g = topology.graph();
  std::map<int, std::vector<Vertex>> by_server;
  std::map<int, std::vector<Vertex>> by_tier;
  for (auto [v, end] = boost::vertices(g); v != end; ++v) {
    if (g[*v].server >= 0) {
      by_server[g[*v].server].push_back(*v);
    } else {
      by_tier[g[*v].tier].push_back(*v);
    }
  }
  const auto node = [&](Vertex v) {
    return fmt::format("    n{} [label={},kind={},{}];\n", v, dot_quoted(g[v].name),
                       dot_quoted(std::string(to_string(g[v].kind))), node_style(g[v].kind));
  };
  std::string out =
      "graph fabric {\n  graph [rankdir=TB,newrank=true,nodesep=0.25,ranksep=0.6,"
      "fontname=\"Helvetica\"];\n  node [fontname=\"Helvetica\",fontsize=10,style=filled];\n"
      "  edge [fontname=\"Helvetica\",fontsize=8];\n";
  for (const auto& [server, vertices] : by_server) {
    out += fmt::format(
        "  subgraph cluster_server{} {{\n    label=\"server {}\";\n    "
        "color=\"#999999\";\n",
        server, server);
    // A row per kind (CPUs, PCIe switches, NICs, GPUs, NVSwitches), so that a server reads
    // top to bottom as its PCIe tree instead of one wide row.
    std::map<NodeKind, std::vector<Vertex>> rows;
    for (const Vertex v : vertices) rows[g[v].kind].push_back(v);
    for (const auto& [kind, row] : rows) {
      out += "    { rank=same;\n";
      for (const Vertex v : row) out += "  " + node(v);
      out += "    }\n";
    }
    out += "  }\n";
  }
  for (const auto& [tier, vertices] : by_tier) {
    out += "  { rank=same;\n";
    for (const Vertex v : vertices) out += node(v);
    out += "  }\n";
  }
  for (auto [e, end] = boost::edges(g); e != end; ++e) {
    const LinkInfo& l = g[*e];
    const std::string rate =
        l.lanes > 1 ? fmt::format("{} x {}", l.lanes,
                                  readable_rate(Bandwidth::from_bps(l.rate.bps() / l.lanes)))
                    : readable_rate(l.rate);
    // Network links carry their rate as a label; the many in-server links as a tooltip (and
    // `rate`), which keeps a server's drawing legible.
    out += fmt::format("  n{} -- n{} [{}={},rate={},kind={},color=\"{}\"];\n", boost::source(*e, g),
                       boost::target(*e, g), l.kind == LinkKind::kNetwork ? "label" : "tooltip",
                       dot_quoted(rate), dot_quoted(rate),
                       dot_quoted(std::string(to_string(l.kind))), edge_colour(l.kind));
  }
  return out + "}\n";
}

namespace {

// RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out;
  out.push_back('"');
  for (char c : text) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

// The value `point` runs with for `key` (a swept key), as the resolved scenario holds it:
// strings as written ("1MiB"), other values in TOML ("4", "true"); "" when the key is not set.
std::string resolved_value(const Scenario& point, const std::string& key) {
  const toml::node_view<const toml::node> node = point.resolved.at_path(key);
  if (!node) return "";
  if (const auto* text = node.as_string()) return text->get();
  std::ostringstream out;
  out << toml::toml_formatter(*node.node());
  return out.str();
}

}  // namespace

std::string long_csv(const std::vector<Scenario>& scenarios, const std::vector<RunResult>& results,
                     const std::vector<std::string>& axis_keys) {
  std::string out = "scenario,fidelity";
  for (const auto& k : axis_keys) out += fmt::format(",{}", csv_field(k));
  out += ",metric,value,expected\n";
  for (std::size_t c = 0; c < scenarios.size() && c < results.size(); ++c) {
    std::string prefix =
        fmt::format("{},{}", csv_field(scenarios[c].name), to_string(scenarios[c].fidelity));
    for (const auto& k : axis_keys)
      prefix += fmt::format(",{}", csv_field(resolved_value(scenarios[c], k)));
    for (const auto& m : results[c].metrics) {
      std::string expected;
      for (const auto& [key, value] : scenarios[c].expected)
        if (key == m.name) expected = fmt::format("{}", value);
      out += fmt::format("{},{},{},{}\n", prefix, csv_field(m.name), m.value, expected);
    }
  }
  return out;
}

int write_sweep_summary(const std::filesystem::path& out_dir,
                        const std::vector<Scenario>& scenarios,
                        const std::vector<std::string>& axis_keys, const SweepOutcome& outcome,
                        std::ostream& out, std::ostream& err) {
  const auto& results = outcome.results;
  const auto& failures = outcome.failures;
  int code = 0;
  for (std::size_t i = 0; i < scenarios.size(); ++i)
    if (!failures[i].empty()) {
      err << fmt::format("fabricsim: point {} ({}) failed: {}\n", i, scenarios[i].name,
                         failures[i]);
      code = 1;
    }
  std::string summary = compare_report(scenarios, results);
  for (std::size_t i = 0; i < scenarios.size(); ++i)
    summary += fmt::format("point-{:03}: {}{}\n", i, scenarios[i].name,
                           failures[i].empty() ? "" : " (FAILED: " + failures[i] + ")");
  std::filesystem::create_directories(out_dir);
  // A summary with failed points must not pass for a complete one (nor leave an older
  // complete summary.txt beside it).
  std::error_code ec;
  if (code != 0) {
    std::filesystem::remove(out_dir / "summary.txt", ec);
    std::filesystem::remove(out_dir / "summary.csv", ec);
    summary = "INCOMPLETE: some points failed; their columns are empty\n" + summary;
  }
  const std::string stem = code == 0 ? "summary" : "summary-incomplete";
  write_file_atomically(out_dir / (stem + ".csv"), long_csv(scenarios, results, axis_keys));
  write_file_atomically(out_dir / (stem + ".txt"), summary);
  out << summary;
  return code;
}

}  // namespace fabricsim
