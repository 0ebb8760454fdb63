#pragma once
// Fabrics between servers, built as graphs from plain specs.
//
//  star        all endpoints on one switch.
//  ring        `ring_switches` switches in a bidirectional ring, endpoints spread evenly.
//  leaf-spine  two tiers: leaves with `hosts_per_leaf` endpoints and `uplinks_per_leaf`
//              uplinks spread evenly over `spines` spines (uplinks_per_leaf / spines parallel
//              cables to each); uplinks default to hosts_per_leaf / oversubscription.
//  fat-tree    three-tier k-ary fat-tree (Al-Fares et al. 2008): k pods of k/2 edge and k/2
//              aggregation switches, (k/2)^2 core switches, k^3/4 hosts. Only the pods that
//              endpoints occupy are built.
// Rail-optimized placement connects NIC i of every server to rail i's leaves: endpoints are
// placed rail-major (NIC 0 of all servers, then NIC 1, ...) instead of server-major.
//
// Every problem a spec can have (too few ports, uneven uplinks, k odd, too many endpoints) is
// reported as a FabricError whose message says which number to change.

#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "topo/server.hpp"

namespace fabricsim {

enum class FabricKind { kStar, kRing, kLeafSpine, kFatTree };
// The switch family: Ethernet switches (RoCE: PFC, ECN) or InfiniBand (credits per VL).
enum class Technology { kEthernet, kInfiniband };
std::string_view to_string(Technology t);  // "ethernet", "infiniband" (the scenario's words)

class FabricError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One spec per fabric kind: only the fields that kind reads exist in it.
struct StarSpec {};
struct RingSpec {
  int switches = 0;  // switches in the ring (>= 3); endpoints spread evenly
};
struct LeafSpineSpec {
  int hosts_per_leaf = 0;
  int spines = 0;               // 0: the fewest whose ports take every leaf's uplinks
  int uplinks_per_leaf = 0;     // 0: hosts_per_leaf / oversubscription
  double oversubscription = 1;  // downlink : uplink bandwidth at the leaves
};
struct FatTreeSpec {
  int k = 0;  // switch radix (even)
};
// In FabricKind's order, so that the alternative's index is the kind.
using FabricShape = std::variant<StarSpec, RingSpec, LeafSpineSpec, FatTreeSpec>;

struct FabricSpec {
  FabricShape shape{};
  Technology technology = Technology::kEthernet;
  int switch_ports = 0;        // ports per switch; 0 = as many as needed (star only)
  Bandwidth link_rate{};       // host links and switch ports, per direction
  Time switch_latency{};       // fixed port-to-port forwarding latency
  double host_cable_m = 3;     // endpoint <-> leaf cable length
  double fabric_cable_m = 30;  // switch <-> switch cable length
  Time propagation_per_m = Time::from_ps(5'000);  // ~0.67c in fibre or copper
  bool rail_optimized = false;
  // In-network aggregation (InfiniBand SHARP): every switch gets an aggregation node, a fabric
  // endpoint behind an internal port of `sharp_rate` (0: the switch's port rates together).
  bool sharp = false;
  Bandwidth sharp_rate{};
  int sharp_trees = 0;  // streaming-aggregation trees per switch, 0: one per port
  FabricKind kind() const { return static_cast<FabricKind>(shape.index()); }
};

struct ClusterSpec {
  int servers = 0;  // 0: plain hosts with one NIC each (`hosts` of them)
  int hosts = 0;
  ServerSpec server{};  // used when servers > 0
  FabricSpec fabric{};
};

// Builds servers (if any) and the fabric; throws FabricError.
Topology build_cluster(const ClusterSpec& spec);

// Order in which endpoints fill switch ports: server-major, or rail-major when rail-optimized.
std::vector<Vertex> placement_order(const Topology& topo, const ClusterSpec& spec);

}  // namespace fabricsim
