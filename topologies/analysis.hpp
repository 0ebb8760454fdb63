#pragma once
// What a buyer asks of a topology: counts, cables and optics, bisection bandwidth, hop counts,
// oversubscription per tier, rate mismatches, and a priced bill of materials.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topologies/routing.hpp"

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

struct TopologySummary {
  int servers = 0, gpus = 0, nics = 0, nvswitches = 0, pcie_switches = 0, cpus = 0;
  int switches = 0;
  std::vector<TierSummary> tiers;
  int links = 0;          // all edges, in-server included
  int host_cables = 0;    // endpoint <-> switch
  int fabric_cables = 0;  // switch <-> switch
  int copper_cables = 0, optical_cables = 0, transceivers = 0;
  double bisection_gbps = 0;       // one direction, min over the halves tried (see analysis.cpp)
  double full_bisection_gbps = 0;  // endpoints/2 x host link rate: what no oversubscription gives
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
