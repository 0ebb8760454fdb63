#include "topo/analysis.hpp"

#include <boost/pending/disjoint_sets.hpp>

#include <fmt/format.h>
#include <algorithm>
#include <boost/graph/push_relabel_max_flow.hpp>
#include <cctype>
#include <map>

namespace fabricsim {

double cut_bandwidth_gbps(const Topology& topo, const std::vector<std::size_t>& a,
                          const std::vector<std::size_t>& b) {
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using FlowGraph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<
          boost::edge_capacity_t, long,
          boost::property<boost::edge_residual_capacity_t, long,
                          boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  const auto& g = topo.graph();
  const std::size_t n = boost::num_vertices(g);
  FlowGraph f(n + 2);
  auto cap = boost::get(boost::edge_capacity, f);
  auto rev = boost::get(boost::edge_reverse, f);
  const auto arc = [&](std::size_t u, std::size_t v, long c) {
    const auto e = boost::add_edge(u, v, f).first;
    const auto r = boost::add_edge(v, u, f).first;
    cap[e] = c;
    cap[r] = 0;
    rev[e] = r;
    rev[r] = e;
  };
  for (auto [it, end] = boost::edges(g); it != end; ++it) {
    if (g[*it].kind != LinkKind::kNetwork) continue;
    const long mbps = g[*it].rate.bps() / 1'000'000;  // capacities in Mb/s, exact for real rates
    arc(boost::source(*it, g), boost::target(*it, g), mbps);
    arc(boost::target(*it, g), boost::source(*it, g), mbps);
  }
  const std::size_t source = n, sink = n + 1;
  constexpr long kInfinite = 1L << 50;
  for (const std::size_t e : a) arc(source, topo.endpoints()[e], kInfinite);
  for (const std::size_t e : b) arc(topo.endpoints()[e], sink, kInfinite);
  return static_cast<double>(boost::push_relabel_max_flow(f, source, sink)) / 1e3;
}

namespace {

std::string tier_name(const std::string& switch_name) {
  std::string out;
  for (const char c : switch_name) {
    if (std::isdigit(static_cast<unsigned char>(c))) break;
    out += c;
  }
  return out;
}

}  // namespace

TopologySummary analyse(const Topology& topo, const Routing& routing, const AnalysisOptions& opt) {
  TopologySummary s;
  const auto& g = topo.graph();
  s.servers = static_cast<int>(topo.servers());
  for (auto [it, end] = boost::vertices(g); it != end; ++it) {
    switch (g[*it].kind) {
      case NodeKind::kGpu:
        ++s.gpus;
        break;
      case NodeKind::kNic:
        ++s.nics;
        break;
      case NodeKind::kNvSwitch:
        ++s.nvswitches;
        break;
      case NodeKind::kPcieSwitch:
        ++s.pcie_switches;
        break;
      case NodeKind::kCpu:
        ++s.cpus;
        break;
      case NodeKind::kSwitch:
        ++s.switches;
        break;
      case NodeKind::kAggregator:  // inside its switch: no port, cable or tier bandwidth
        ++s.aggregators;
        break;
    }
  }
  std::map<int, TierSummary> tiers;
  for (std::size_t sw = 0; sw < routing.switch_count(); ++sw) {
    const NodeInfo& info = g[routing.switch_vertex(sw)];
    TierSummary& t = tiers[info.tier];
    t.tier = info.tier;
    if (t.name.empty()) t.name = tier_name(info.name);
    ++t.switches;
    for (const auto& p : routing.ports(sw)) {
      const NodeInfo& peer = g[p.peer];
      if (peer.kind == NodeKind::kAggregator) continue;
      const double gbps = g[p.edge].rate.gbps();
      if (peer.kind != NodeKind::kSwitch || peer.tier < info.tier)
        t.down_gbps += gbps;
      else if (peer.tier > info.tier)
        t.up_gbps += gbps;
    }
  }
  for (auto& [tier, t] : tiers) s.tiers.push_back(t);

  Bandwidth host_rate;
  for (auto [it, end] = boost::edges(g); it != end; ++it) {
    ++s.links;
    const LinkInfo& l = g[*it];
    if (l.kind != LinkKind::kNetwork) continue;
    if (g[boost::source(*it, g)].kind == NodeKind::kAggregator ||
        g[boost::target(*it, g)].kind == NodeKind::kAggregator)
      continue;  // a switch's internal port
    const bool host = g[boost::source(*it, g)].kind != NodeKind::kSwitch ||
                      g[boost::target(*it, g)].kind != NodeKind::kSwitch;
    (host ? s.host_cables : s.fabric_cables) += 1;
    if (host) host_rate = std::max(host_rate, l.rate);
    if (l.length_m > opt.copper_max_m) {
      ++s.optical_cables;
      s.transceivers += 2;
    } else {
      ++s.copper_cables;
    }
  }
  if (opt.nic_rate.bps() > 0 && host_rate.bps() > 0 && host_rate < opt.nic_rate)
    s.warnings.push_back(
        fmt::format("NICs run at {} but their switch ports at {}: the NICs negotiate "
                    "down to {}",
                    to_string(opt.nic_rate), to_string(host_rate), to_string(host_rate)));
  for (const auto& t : s.tiers)
    if (t.up_gbps > 0 && t.oversubscription() > 1.0 + 1e-9)
      s.warnings.push_back(
          fmt::format("{} tier is oversubscribed {:.3g}:1 ({:.0f} Gb/s down, {:.0f} Gb/s up)",
                      t.name, t.oversubscription(), t.down_gbps, t.up_gbps));

  // Bisection: servers (all NICs of a server on one side) split into contiguous halves and into
  // even/odd halves; the smaller max-flow is reported. For the symmetric fabrics built here the
  // contiguous split is the worst balanced cut; the interleaved one guards other orderings.
  const std::size_t E = topo.endpoints().size();
  if (E >= 2) {
    std::vector<int> server_of(E);
    for (std::size_t e = 0; e < E; ++e) server_of[e] = g[topo.endpoints()[e]].server;
    const int servers = std::max(1, s.servers);
    std::vector<std::size_t> a1, b1, a2, b2;
    for (std::size_t e = 0; e < E; ++e) {
      const bool first_half = servers >= 2 ? server_of[e] < servers / 2 : e < E / 2;
      (first_half ? a1 : b1).push_back(e);
      const bool even = servers >= 2 ? server_of[e] % 2 == 0 : e % 2 == 0;
      (even ? a2 : b2).push_back(e);
    }
    s.bisection_gbps = cut_bandwidth_gbps(topo, a1, b1);
    if (servers >= 2 && !a2.empty() && !b2.empty())
      s.bisection_gbps = std::min(s.bisection_gbps, cut_bandwidth_gbps(topo, a2, b2));
    s.full_bisection_gbps = static_cast<double>(std::min(a1.size(), b1.size())) * host_rate.gbps();
    // A rail-optimized fabric puts NIC i of every server under one leaf, so halves of the
    // servers meet inside each leaf and never load the uplinks: the server splits cannot see
    // an oversubscribed tier there. Each tier cut splits the fabric where that tier's uplinks
    // are the only way across.
    std::vector<int> tier_levels;
    for (const auto& t : s.tiers)
      if (t.up_gbps > 0) tier_levels.push_back(t.tier);
    for (const int level : tier_levels) {
      // Groups: connected components of the switches of tier <= level (union-find over them).
      const std::size_t n = routing.switch_count();
      boost::disjoint_sets_with_storage<> sets(n);
      for (std::size_t i = 0; i < n; ++i) sets.make_set(i);
      const auto find = [&](std::size_t x) { return sets.find_set(x); };
      std::map<Vertex, std::size_t> index_of;
      for (std::size_t sw = 0; sw < n; ++sw) index_of[routing.switch_vertex(sw)] = sw;
      for (std::size_t sw = 0; sw < n; ++sw) {
        if (g[routing.switch_vertex(sw)].tier > level) continue;
        for (const auto& p : routing.ports(sw)) {
          const auto it = index_of.find(p.peer);
          if (it != index_of.end() && g[p.peer].tier <= level) sets.union_set(sw, it->second);
        }
      }
      std::map<std::size_t, int> group_of_root;  // root -> group, in first-switch order
      std::vector<int> group(E);
      for (std::size_t e = 0; e < E; ++e) {
        const std::size_t root = find(routing.endpoint_switch(e));
        group[e] =
            group_of_root.try_emplace(root, static_cast<int>(group_of_root.size())).first->second;
      }
      const int groups = static_cast<int>(group_of_root.size());
      if (groups < 2) continue;
      std::vector<std::size_t> a, b;
      for (std::size_t e = 0; e < E; ++e) (group[e] < groups / 2 ? a : b).push_back(e);
      TierCut cut;
      cut.tier = s.tiers[static_cast<std::size_t>(
                             std::find_if(s.tiers.begin(), s.tiers.end(),
                                          [&](const TierSummary& t) { return t.tier == level; }) -
                             s.tiers.begin())]
                     .name;
      cut.groups = groups;
      cut.gbps = cut_bandwidth_gbps(topo, a, b);
      cut.full_gbps = static_cast<double>(std::min(a.size(), b.size())) * host_rate.gbps();
      s.tier_cuts.push_back(cut);
      // The reported bisection is the worst fraction of full bisection over every cut.
      if (cut.full_gbps > 0 && s.full_bisection_gbps > 0 &&
          cut.fraction() < s.bisection_gbps / s.full_bisection_gbps)
        s.bisection_gbps = cut.fraction() * s.full_bisection_gbps;
    }

    // Hop counts from the leaf-to-leaf distance table: links = switch hops + 2 host links.
    std::map<std::size_t, std::pair<std::size_t, std::size_t>>
        leaves;  // switch -> (count, endpoint)
    for (std::size_t e = 0; e < E; ++e) {
      auto& entry = leaves[routing.endpoint_switch(e)];
      if (entry.first++ == 0) entry.second = e;
    }
    double total = 0;
    for (const auto& [sa, a] : leaves)
      for (const auto& [sb, b] : leaves) {
        const int links = routing.switch_distance(a.second, b.second) + 2;
        const double pairs = sa == sb ? static_cast<double>(a.first * (a.first - 1))
                                      : static_cast<double>(a.first * b.first);
        if (pairs > 0) s.diameter_links = std::max(s.diameter_links, links);
        total += pairs * links;
      }
    s.mean_links = total / (static_cast<double>(E) * static_cast<double>(E - 1));
  }

  const auto price = [&](const char* item, std::optional<double> unit, int count) {
    if (unit && count > 0) {
      s.cost[item] = *unit * count;
      s.cost["total"] += *unit * count;
    }
  };
  price("servers", opt.prices.server, s.gpus > 0 ? s.servers : 0);
  price("switches", opt.prices.switch_unit, s.switches);
  price("nics", opt.prices.nic, s.nics);
  price("copper_cables", opt.prices.copper_cable, s.copper_cables);
  price("optical_cables", opt.prices.optical_cable, s.optical_cables);
  price("transceivers", opt.prices.transceiver, s.transceivers);
  return s;
}

}  // namespace fabricsim
