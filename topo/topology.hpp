#pragma once
// The cluster as a graph: GPUs, NVSwitches, PCIe switches, CPU sockets and NICs inside servers,
// and the network switches between them. Vertices and edges carry plain structs; Boost.Graph
// holds them (undirected: every link is full duplex, its rate is per direction).
//
// Endpoints are the NICs (or plain hosts when no server model is given): the network's
// sources and destinations. Network switches carry a tier (1 = leaf/edge, 2 = spine/aggregation,
// 3 = core) used for oversubscription and up/down checks.

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/units.hpp"

namespace fabricsim {

// kAggregator: a network switch's in-network reduction engine (InfiniBand SHARP's aggregation
// node), an endpoint of the fabric hanging off its switch by one internal link.
enum class NodeKind : std::uint8_t {
  kGpu,
  kNvSwitch,
  kPcieSwitch,
  kCpu,
  kNic,
  kSwitch,
  kAggregator
};
enum class LinkKind : std::uint8_t { kNvLink, kPcie, kInterSocket, kNetwork };

std::string_view to_string(NodeKind k);
std::string_view to_string(LinkKind k);

struct NodeInfo {
  NodeKind kind = NodeKind::kSwitch;
  std::string name;
  int server = -1;  // server index for in-server components, -1 for network switches
  int index = 0;    // index within its kind and server (GPU 3, NIC 5), or among switches
  int tier = 0;     // network switches: 1 leaf/edge, 2 spine/aggregation, 3 core
  int ports = 0;    // network switches: port count (0 = unlimited)
  int socket = 0;   // in-server components: CPU socket (NUMA node) they hang off
  // PCIe switches: 1 when the devices below it are PIX to each other (one switch), 2 when they
  // are PXB (a two-level switch: several bridges between them, no host bridge).
  int pcie_levels = 1;
};

struct LinkInfo {
  LinkKind kind = LinkKind::kNetwork;
  Bandwidth rate{};     // per direction, all lanes together
  Time latency{};       // propagation + fixed per-hop latency
  int lanes = 1;        // NVLink links bonded in this edge; 1 otherwise
  double length_m = 0;  // cable length (network links)
};

using TopologyGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, NodeInfo, LinkInfo>;
using Vertex = TopologyGraph::vertex_descriptor;
using Edge = TopologyGraph::edge_descriptor;

// Edge descriptors of an undirected Boost graph point into the graph's edge list, so anything
// that keeps them (Routing) must be computed once the Topology is in its final place. Copying
// is disabled so a copy can never leave such descriptors pointing into a destroyed graph.
class Topology {
 public:
  Topology() = default;
  Topology(const Topology&) = delete;
  Topology& operator=(const Topology&) = delete;
  Topology(Topology&&) = default;
  Topology& operator=(Topology&&) = default;

  Vertex add_node(NodeInfo info);
  Edge add_link(Vertex a, Vertex b, LinkInfo info);

  const TopologyGraph& graph() const { return g_; }
  TopologyGraph& graph() { return g_; }
  const NodeInfo& node(Vertex v) const { return g_[v]; }
  const LinkInfo& link(Edge e) const { return g_[e]; }
  std::size_t node_count() const { return boost::num_vertices(g_); }
  std::size_t link_count() const { return boost::num_edges(g_); }

  // Network endpoints in build order (server-major: server 0's NICs, then server 1's, ...).
  const std::vector<Vertex>& endpoints() const { return endpoints_; }
  void add_endpoint(Vertex v) { endpoints_.push_back(v); }
  const std::vector<Vertex>& switches() const { return switches_; }
  // Aggregation nodes (NodeKind::kAggregator), one per SHARP-capable switch, in switch order.
  const std::vector<Vertex>& aggregators() const { return aggregators_; }
  // What the fabrics address: the endpoints (ids 0 .. endpoints - 1), then the aggregators.
  std::size_t fabric_endpoint_count() const { return endpoints_.size() + aggregators_.size(); }
  Vertex fabric_endpoint(std::size_t e) const {
    return e < endpoints_.size() ? endpoints_[e] : aggregators_[e - endpoints_.size()];
  }
  std::size_t servers() const { return servers_; }
  void set_servers(std::size_t n) { servers_ = n; }

 private:
  TopologyGraph g_;
  std::vector<Vertex> endpoints_;
  std::vector<Vertex> switches_;
  std::vector<Vertex> aggregators_;
  std::size_t servers_ = 0;
};

// The vertices of the shortest path from `from` to `to` over PCIe and inter-socket links
// (never NVLink or the network), both ends included. Throws std::invalid_argument when none.
std::vector<Vertex> pcie_path(const TopologyGraph& g, Vertex from, Vertex to);

// The layer a link direction belongs to in bottleneck summaries: "NVLink", "PCIe",
// "inter-socket"; for the network "NIC" leaving a host, else by the switch's tier "leaf uplink"
// (towards a switch) or "leaf downlink", "spine", "core".
std::string_view link_layer(const TopologyGraph& g, Vertex from, Vertex to, LinkKind kind);

}  // namespace fabricsim
