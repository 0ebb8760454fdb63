#pragma once
// Routing compiled into flat tables: no graph search on the packet path.
//
// For every leaf/edge switch d (a switch with endpoints), a breadth-first search over the
// switch graph gives each switch's distance to d; the equal-cost next hops of switch s towards
// d are its ports whose peer is one hop closer. On Fat-Trees and leaf-spines every shortest
// path is an up*/down* path (up to the lowest common ancestor tier, then down), so these tables
// are up/down routing. Next-hop sets are deduplicated and the table stores one 32-bit group id
// per (switch, leaf): 2,048 switches x 512 leaves is 4 MiB.
//
// Path choice among equal next hops:
//   hash      ECMP: a hash of (flow id, seed, switch) picks the port; the switch index is mixed
//             in so consecutive switches do not make correlated choices (hash polarization).
//   spray     per-packet: the caller passes a per-packet value instead of the flow id.
//   dmodk     destination-mod-k, as InfiniBand subnet managers route Fat-Trees (Zahavi et
//             al., "Optimized InfiniBand fat-tree routing for shift all-to-all communication
//             patterns", 2010; OpenSM's ftree engine): port = destination's tree rank mod
//             (number of next hops), where the tree rank numbers the endpoints leaf by leaf
//             (leaf offset + position under its leaf). Where next hops include parallel
//             links (fewest spines: 8 links from each leaf to each of 4 spines), the next
//             switch is rank mod (next switches) and the link to it (rank / S) mod (parallel
//             links), S being the next switches going up and, going down, the spines above the
//             destination's leaf: a destination then comes down the same parallel index it
//             went up on, and with m endpoints per leaf and m uplinks every link carries the
//             flows to one destination of each leaf. Numbering by endpoint index instead broke
//             on rail-optimized fabrics (a leaf holds every 8th endpoint): a spine sent all of
//             a leaf's destinations over 2 of its 8 links to it.

#include <cstdint>
#include <span>
#include <vector>

#include "net/packet.hpp"
#include "topo/builders.hpp"

namespace fabricsim {

// kAdaptive: the switch picks, per packet, the equal-cost port with the least queued (the
// packet network decides from its queues; without them, as for routes computed ahead of time,
// it is kHash).
enum class PathSelection { kHash, kSpray, kDestModK, kAdaptive };

class Routing {
 public:
  struct Port {
    Edge edge;
    Vertex peer;
  };

  // Throws FabricError when some endpoint cannot reach another.
  static Routing compute(const Topology& topo, std::uint64_t seed = 0);

  std::size_t switch_count() const { return switch_vertex_.size(); }
  std::size_t endpoint_count() const { return endpoint_switch_.size(); }
  Vertex switch_vertex(std::size_t s) const { return switch_vertex_[s]; }
  // Switch-local ports in port order (the order links were built).
  const std::vector<Port>& ports(std::size_t s) const { return ports_[s]; }
  std::size_t endpoint_switch(std::size_t endpoint) const { return endpoint_switch_[endpoint]; }
  PortIndex endpoint_port(std::size_t endpoint) const { return endpoint_port_[endpoint]; }
  Edge endpoint_link(std::size_t endpoint) const { return endpoint_link_[endpoint]; }

  // Equal-cost next-hop ports of switch s towards endpoint dst.
  std::span<const PortIndex> next_hops(std::size_t s, std::size_t dst) const;
  PortIndex select(std::size_t s, std::size_t dst, std::uint64_t flow, PathSelection mode) const;
  // Switch-to-switch hops between the leaves of two endpoints (0 on the same leaf).
  int switch_distance(std::size_t src, std::size_t dst) const;
  // The links a flow crosses from endpoint src to endpoint dst.
  std::vector<Edge> path(std::size_t src, std::size_t dst, std::uint64_t flow,
                         PathSelection mode) const;
  std::size_t group_count() const { return group_start_.size() - 1; }

 private:
  void add_dmodk_group(std::size_t s, const std::vector<PortIndex>& hops);
  // The next-hop group of switch s towards dst's leaf (s not dst's own switch).
  std::uint32_t group_of(std::size_t s, std::size_t dst) const {
    return table_[s * leaves_ + static_cast<std::size_t>(leaf_of_switch_[endpoint_switch_[dst]])];
  }
  std::vector<Vertex> switch_vertex_;
  std::vector<std::vector<Port>> ports_;
  std::vector<std::uint32_t> endpoint_switch_;
  std::vector<PortIndex> endpoint_port_;
  std::vector<Edge> endpoint_link_;
  std::vector<std::uint32_t> tree_rank_;      // [endpoint] -> leaf-by-leaf number (dmodk)
  std::vector<std::int32_t> switch_index_;    // [vertex] -> switch index, -1 if not a switch
  std::vector<std::int32_t> leaf_of_switch_;  // leaf index of a switch, -1 if none
  std::vector<std::uint32_t> table_;          // [switch * leaves + leaf] -> group
  std::vector<std::uint16_t> distance_;       // [switch * leaves + leaf] -> hops
  std::vector<std::uint32_t> group_start_;    // groups: ports_flat_[start[g] .. start[g+1])
  std::vector<PortIndex> group_ports_;
  // dmodk per group: its ports ordered by next switch (first-seen order), then port order;
  // the number of next switches and of links to each (0 when they differ: plain rank mod).
  std::vector<PortIndex> dmodk_ports_;  // same offsets as group_ports_
  std::vector<std::uint32_t> group_switches_, group_parallel_;
  std::vector<std::uint32_t> leaf_up_switches_;  // [leaf] -> distinct switches above it
  std::size_t leaves_ = 0;
  std::uint64_t seed_ = 0;
};

// Topology-aware ring order of the GPUs: servers in the order of the leaf their NIC 0 hangs
// off (servers under one leaf adjacent), GPUs inside a server in index order (along NVLink).
// A ring in this order crosses each server boundary once. `server_order` (from an NCCL
// topology file or the user) replaces the leaf-based server order when not empty.
std::vector<Vertex> ring_order(const Topology& topo, const Routing& routing,
                               const std::vector<int>& server_order = {});

}  // namespace fabricsim
