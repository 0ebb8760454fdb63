#include "cli/output.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <boost/graph/graphviz.hpp>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "fabricsim/version.hpp"

namespace fabricsim {
namespace fs = std::filesystem;

std::string results_json(const Scenario& scenario, const RunResult& result) {
  toml::table metrics;
  for (const auto& m : result.metrics) metrics.insert_or_assign(m.name, m.value);
  toml::table counters;
  for (const auto& [name, value] : result.counters)
    counters.insert_or_assign(name, static_cast<std::int64_t>(value));
  toml::array series;
  for (const auto& n : result.series_names) series.push_back(n);
  toml::array errors;
  for (const auto& e : result.errors) errors.push_back(e);

  toml::table root{
      {"fabricsim_version", kVersion},
      {"scenario", scenario.resolved},
      {"seed", static_cast<std::int64_t>(scenario.seed)},
      {"status", result.status},
      {"sim_time_ps", result.sim_time.ps()},
      {"events", static_cast<std::int64_t>(result.events)},
      {"errors", errors},
      {"metrics", std::move(metrics)},
      {"counters", std::move(counters)},
      {"timeseries", toml::table{{"file", result.series_names.empty() ? "" : "timeseries.csv"},
                                 {"series", std::move(series)}}},
  };
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
                     c.fabric.technology, endpoints, to_string(c.fabric.link_rate),
                     to_string(n.buffer.buffer), to_string(n.nic.format.mtu),
                     to_string(n.nic.format.header));
  out += fmt::format("  PFC {}, ECN {}, DCQCN {}, IB timeout {} / retry count {}\n",
                     n.buffer.pfc ? "on" : "off", n.buffer.ecn.enabled ? "on" : "off",
                     n.nic.dcqcn.enabled ? "on" : "off", n.nic.ib_timeout, n.nic.ib_retry_cnt);
  out += fmt::format("  status: {} at simulated time {} after {} events\n", result.status,
                     to_string(result.sim_time), result.events);
  for (const auto& e : result.errors) out += fmt::format("  error: {}\n", e);
  out += "\n";
  std::size_t width = 0;
  for (const auto& m : result.metrics) width = std::max(width, m.name.size());
  for (const auto& m : result.metrics) {
    const bool whole = m.value == std::floor(m.value) && std::fabs(m.value) < 1e15;
    out += whole ? fmt::format("  {:<{}}  {:>14.0f} {}\n", m.name, width, m.value, m.unit)
                 : fmt::format("  {:<{}}  {:>14.3f} {}\n", m.name, width, m.value, m.unit);
  }
  return out;
}

void write_file_atomically(const fs::path& file, const std::string& content) {
  const fs::path tmp = file.string() + fmt::format(".tmp.{}", ::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw std::runtime_error(fmt::format("cannot write {}", tmp.string()));
    }
  }
  fs::rename(tmp, file);
}

void write_results(const fs::path& dir, const Scenario& scenario, const RunResult& result) {
  fs::create_directories(dir);
  write_file_atomically(dir / "results.json", results_json(scenario, result));
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
  const int ports = c.fabric.switch_ports > 0 ? c.fabric.switch_ports : c.fabric.k;
  out += fmt::format("  network switches: {} ({}, {} ports, {})\n", t.switches, c.fabric.technology,
                     ports > 0 ? fmt::format("{}", ports) : "unlimited",
                     to_string(c.fabric.link_rate));
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
      {"tiers", std::move(tiers)},
      {"links", t.links},
      {"host_cables", t.host_cables},
      {"fabric_cables", t.fabric_cables},
      {"copper_cables", t.copper_cables},
      {"optical_cables", t.optical_cables},
      {"transceivers", t.transceivers},
      {"bisection_gbps", t.bisection_gbps},
      {"full_bisection_gbps", t.full_bisection_gbps},
      {"diameter_links", t.diameter_links},
      {"mean_links", t.mean_links},
      {"warnings", std::move(warnings)},
      {"cost", std::move(cost)},
  };
  std::ostringstream out;
  out << toml::json_formatter(root) << '\n';
  return out.str();
}

std::string topology_dot(const Topology& topology) {
  const auto& g = topology.graph();
  std::ostringstream out;
  boost::write_graphviz(
      out, g,
      [&](std::ostream& o, Vertex v) {
        o << fmt::format("[label=\"{}\",kind=\"{}\"]", g[v].name, to_string(g[v].kind));
      },
      [&](std::ostream& o, Edge e) {
        o << fmt::format("[label=\"{}\",kind=\"{}\"]", to_string(g[e].rate), to_string(g[e].kind));
      });
  return out.str();
}

}  // namespace fabricsim
