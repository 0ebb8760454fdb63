#pragma once
// What a buyer asks of a topology: counts, cables and optics, bisection bandwidth, hop counts,
// oversubscription per tier, rate mismatches, and a priced bill of materials.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topo/routing.hpp"

namespace fabricsim {

struct Prices {
  // Unit prices in any one currency; absent = not priced.
  std::optional<double> server, switch_unit, nic, copper_cable, optical_cable, transceiver;
};

struct TierSummary {
  int tier = 0;
  std::string name;  // "leaf", "spine", "core", ...
  int switches = 0;
  double down_gbps = 0;  // capacity towards endpoints / lower tiers
  double up_gbps = 0;    // capacity towards higher tiers
  double oversubscription() const { return up_gbps > 0 ? down_gbps / up_gbps : 0; }
};

// The cut above one switch tier: the tier's groups (switches of this tier and below that stay
// connected without the tiers above: single leaves for the leaf tier, pods for a fat-tree's
// aggregation tier) split into two halves in index order, and the max-flow between their
// endpoints.
struct TierCut {
  std::string tier;      // the tier whose uplinks the cut crosses ("leaf", "agg", ...)
  int groups = 0;        // groups of that tier (leaves, pods)
  double gbps = 0;       // max-flow across, one direction
  double full_gbps = 0;  // min(endpoints per half) x host link rate
  double fraction() const { return full_gbps > 0 ? gbps / full_gbps : 0; }
};

struct TopologySummary {
  int servers = 0, gpus = 0, nics = 0, nvswitches = 0, pcie_switches = 0, cpus = 0;
  int switches = 0;
  int aggregators = 0;  // SHARP aggregation nodes (one per switch that can aggregate)
  std::vector<TierSummary> tiers;
  int links = 0;          // all edges, in-server included
  int host_cables = 0;    // endpoint <-> switch
  int fabric_cables = 0;  // switch <-> switch
  int copper_cables = 0, optical_cables = 0, transceivers = 0;
  // One direction, the minimum over the cuts tried, relative to full_bisection_gbps: servers
  // split in contiguous and interleaved halves, and every tier cut (see analysis.cpp).
  double bisection_gbps = 0;
  double full_bisection_gbps = 0;  // endpoints/2 x host link rate: what no oversubscription gives
  std::vector<TierCut> tier_cuts;  // per switch tier with uplinks, lowest tier first
  int diameter_links = 0;          // longest endpoint-to-endpoint path, in links
  double mean_links = 0;           // mean over ordered endpoint pairs
  std::vector<std::string> warnings;   // rate mismatches and the like
  std::map<std::string, double> cost;  // item -> total, plus "total"
};

struct AnalysisOptions {
  double copper_max_m = 3;  // longer cables are optical with two transceivers
  Bandwidth nic_rate{};     // servers' NIC rate, for mismatch warnings (0 = none)
  Prices prices{};
};

TopologySummary analyse(const Topology& topo, const Routing& routing, const AnalysisOptions& opt);

// Maximum flow (Gb/s, one direction) from endpoints in `a` to endpoints in `b`, over every
// link at its rate, with Boost's push-relabel algorithm.
double cut_bandwidth_gbps(const Topology& topo, const std::vector<std::size_t>& a,
                          const std::vector<std::size_t>& b);

}  // namespace fabricsim
