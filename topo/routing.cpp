#include "topo/routing.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <deque>
#include <limits>
#include <map>

#include "sim/checked.hpp"

namespace fabricsim {

namespace {
constexpr std::uint16_t kUnreachable = std::numeric_limits<std::uint16_t>::max();

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}
}  // namespace

Routing Routing::compute(const Topology& topo, std::uint64_t seed) {
  Routing r;
  r.seed_ = seed;
  const auto& g = topo.graph();
  std::vector<std::int32_t> index_of(boost::num_vertices(g), -1);
  for (const Vertex v : topo.switches()) {
    index_of[v] = static_cast<std::int32_t>(r.switch_vertex_.size());
    r.switch_vertex_.push_back(v);
  }
  const std::size_t S = r.switch_vertex_.size();
  if (S == 0) throw FabricError("the fabric has no switches");
  r.ports_.resize(S);
  for (std::size_t s = 0; s < S; ++s)
    for (auto [it, end] = boost::out_edges(r.switch_vertex_[s], g); it != end; ++it)
      if (g[*it].kind == LinkKind::kNetwork) r.ports_[s].push_back({*it, boost::target(*it, g)});

  // Endpoints: exactly one network link, to a switch. The switch-side port of every
  // endpoint, found in one pass over the switches' ports (searching each switch's port list
  // per endpoint was quadratic on a star: 262k hosts took 117 s).
  std::vector<PortIndex> port_to_endpoint(boost::num_vertices(g),
                                          std::numeric_limits<PortIndex>::max());
  for (std::size_t s = 0; s < S; ++s)
    for (std::size_t p = 0; p < r.ports_[s].size(); ++p)
      if (index_of[r.ports_[s][p].peer] < 0)
        port_to_endpoint[r.ports_[s][p].peer] = checked_narrow<PortIndex>(p, "switch port index");
  r.leaf_of_switch_.assign(S, -1);
  // Every fabric endpoint: the hosts' NICs, then the switches' aggregation nodes (SHARP).
  for (std::size_t e = 0; e < topo.fabric_endpoint_count(); ++e) {
    const Vertex ep = topo.fabric_endpoint(e);
    bool found = false;
    for (auto [it, end] = boost::out_edges(ep, g); it != end; ++it) {
      if (g[*it].kind != LinkKind::kNetwork) continue;
      const Vertex sw = boost::target(*it, g);
      const auto s = static_cast<std::size_t>(index_of[sw]);
      r.endpoint_switch_.push_back(checked_narrow<std::uint32_t>(s, "switch index"));
      r.endpoint_port_.push_back(port_to_endpoint[ep]);
      r.endpoint_link_.push_back(*it);
      if (r.leaf_of_switch_[s] < 0) r.leaf_of_switch_[s] = static_cast<std::int32_t>(r.leaves_++);
      found = true;
      break;
    }
    if (!found) throw FabricError(fmt::format("endpoint {} has no link to the fabric", g[ep].name));
  }

  // Tree ranks: leaf offsets in leaf order, then each endpoint's position under its leaf. The
  // hosts' ranks alone (aggregation nodes numbered after them): a SHARP-capable fabric routes
  // host traffic as the same fabric without SHARP does.
  {
    const std::size_t hosts = topo.endpoints().size();
    std::vector<std::uint32_t> next(r.leaves_ + 1, 0);
    for (std::size_t e = 0; e < hosts; ++e)
      ++next[static_cast<std::size_t>(r.leaf_of_switch_[r.endpoint_switch_[e]]) + 1];
    for (std::size_t l = 1; l <= r.leaves_; ++l) next[l] += next[l - 1];
    r.tree_rank_.reserve(r.endpoint_switch_.size());
    for (std::size_t e = 0; e < r.endpoint_switch_.size(); ++e)
      r.tree_rank_.push_back(
          e < hosts ? next[static_cast<std::size_t>(r.leaf_of_switch_[r.endpoint_switch_[e]])]++
                    : static_cast<std::uint32_t>(e));
  }
  r.switch_index_ = index_of;
  const std::size_t L = r.leaves_;
  r.table_.assign(S * L, 0);
  r.distance_.assign(S * L, kUnreachable);
  r.group_start_ = {0};
  std::map<std::vector<PortIndex>, std::uint32_t> groups;
  std::vector<std::uint16_t> dist(S);
  std::vector<PortIndex> hops;
  std::deque<std::size_t> queue;
  for (std::size_t d = 0; d < S; ++d) {
    if (r.leaf_of_switch_[d] < 0) continue;
    const auto leaf = static_cast<std::size_t>(r.leaf_of_switch_[d]);
    std::fill(dist.begin(), dist.end(), kUnreachable);
    dist[d] = 0;
    queue.assign(1, d);
    while (!queue.empty()) {
      const std::size_t s = queue.front();
      queue.pop_front();
      for (const Port& p : r.ports_[s]) {
        const std::int32_t t = index_of[p.peer];
        if (t >= 0 && dist[t] == kUnreachable) {
          dist[t] = checked_narrow<std::uint16_t>(dist[s] + 1, "switch hop count");
          queue.push_back(static_cast<std::size_t>(t));
        }
      }
    }
    for (std::size_t s = 0; s < S; ++s) {
      r.distance_[s * L + leaf] = dist[s];
      if (s == d || dist[s] == kUnreachable) continue;
      hops.clear();
      for (std::size_t p = 0; p < r.ports_[s].size(); ++p) {
        const std::int32_t t = index_of[r.ports_[s][p].peer];
        if (t >= 0 && dist[t] + 1 == dist[s]) hops.push_back(static_cast<PortIndex>(p));
      }
      auto [it, inserted] = groups.try_emplace(hops, static_cast<std::uint32_t>(groups.size()));
      if (inserted) {
        r.group_ports_.insert(r.group_ports_.end(), hops.begin(), hops.end());
        r.group_start_.push_back(static_cast<std::uint32_t>(r.group_ports_.size()));
        r.add_dmodk_group(s, hops);
      }
      r.table_[s * L + leaf] = it->second;
    }
  }
  r.leaf_up_switches_.assign(L, 0);
  for (std::size_t s = 0; s < S; ++s)
    if (r.leaf_of_switch_[s] >= 0) {
      std::vector<std::int32_t> above;
      for (const Port& p : r.ports_[s])
        if (index_of[p.peer] >= 0 &&
            std::find(above.begin(), above.end(), index_of[p.peer]) == above.end())
          above.push_back(index_of[p.peer]);
      r.leaf_up_switches_[static_cast<std::size_t>(r.leaf_of_switch_[s])] =
          static_cast<std::uint32_t>(above.size());
    }
  for (std::size_t a = 0; a < r.endpoint_count(); ++a) {
    const std::size_t leaf = static_cast<std::size_t>(r.leaf_of_switch_[r.endpoint_switch_[a]]);
    for (std::size_t s = 0; s < S; ++s)
      if (r.leaf_of_switch_[s] >= 0 && r.distance_[s * L + leaf] == kUnreachable)
        throw FabricError(fmt::format(
            "switch {} cannot reach switch {}: the fabric is disconnected",
            g[r.switch_vertex_[s]].name, g[r.switch_vertex_[r.endpoint_switch_[a]]].name));
  }
  return r;
}

void Routing::add_dmodk_group(std::size_t s, const std::vector<PortIndex>& hops) {
  std::vector<Vertex> peers;
  std::vector<std::vector<PortIndex>> links;
  for (const PortIndex p : hops) {
    const Vertex peer = ports_[s][p].peer;
    const auto at = std::find(peers.begin(), peers.end(), peer);
    if (at == peers.end()) {
      peers.push_back(peer);
      links.push_back({p});
    } else {
      links[static_cast<std::size_t>(at - peers.begin())].push_back(p);
    }
  }
  bool uniform = true;
  for (const auto& l : links) uniform = uniform && l.size() == links.front().size();
  for (const auto& l : links) dmodk_ports_.insert(dmodk_ports_.end(), l.begin(), l.end());
  group_switches_.push_back(static_cast<std::uint32_t>(peers.size()));
  group_parallel_.push_back(uniform ? static_cast<std::uint32_t>(links.front().size()) : 0);
}

std::span<const PortIndex> Routing::next_hops(std::size_t s, std::size_t dst) const {
  if (endpoint_switch_[dst] == s) return {&endpoint_port_[dst], 1};
  const std::uint32_t g = group_of(s, dst);
  return {group_ports_.data() + group_start_[g], group_start_[g + 1] - group_start_[g]};
}

PortIndex Routing::select(std::size_t s, std::size_t dst, std::uint64_t flow,
                          PathSelection mode) const {
  if (endpoint_switch_[dst] == s) return endpoint_port_[dst];
  const std::uint32_t g = group_of(s, dst);
  const std::uint32_t count = group_start_[g + 1] - group_start_[g];
  if (count == 1) return group_ports_[group_start_[g]];
  if (mode != PathSelection::kDestModK)
    return group_ports_[group_start_[g] + mix(flow ^ mix(seed_ + s)) % count];
  const std::uint64_t rank = tree_rank_[dst];
  const std::uint32_t switches = group_switches_[g], parallel = group_parallel_[g];
  const PortIndex* ports = dmodk_ports_.data() + group_start_[g];
  if (parallel == 0) return ports[rank % count];
  // Up: the next switch by rank, the link to it by what is left of the rank. Down (one next
  // switch): the same link index the destination's traffic went up on.
  const std::uint64_t stride =
      switches > 1 ? switches
                   : std::max<std::uint32_t>(1, leaf_up_switches_[static_cast<std::size_t>(
                                                    leaf_of_switch_[endpoint_switch_[dst]])]);
  return ports[(rank % switches) * parallel + (rank / stride) % parallel];
}

int Routing::switch_distance(std::size_t src, std::size_t dst) const {
  const std::size_t leaf = static_cast<std::size_t>(leaf_of_switch_[endpoint_switch_[dst]]);
  return distance_[endpoint_switch_[src] * leaves_ + leaf];
}

std::vector<Edge> Routing::path(std::size_t src, std::size_t dst, std::uint64_t flow,
                                PathSelection mode) const {
  std::vector<Edge> out{endpoint_link_[src]};
  std::size_t s = endpoint_switch_[src];
  for (int guard = 0; guard < 64; ++guard) {
    const Port& p = ports_[s][select(s, dst, flow, mode)];
    out.push_back(p.edge);
    if (s == endpoint_switch_[dst]) return out;
    s = static_cast<std::size_t>(switch_index_[p.peer]);
  }
  throw FabricError("routing loop");  // impossible with shortest-path tables; kept as a guard
}

std::vector<Vertex> ring_order(const Topology& topo, const Routing& routing,
                               const std::vector<int>& server_order) {
  const auto& g = topo.graph();
  const int servers = static_cast<int>(topo.servers());
  std::vector<int> order = server_order;
  if (order.empty()) {
    // Leaf of each server's first endpoint; stable sort keeps server index order per leaf.
    std::vector<std::size_t> first_endpoint(servers, SIZE_MAX);
    for (std::size_t e = 0; e < topo.endpoints().size(); ++e) {
      const int s = g[topo.endpoints()[e]].server;
      if (first_endpoint[s] == SIZE_MAX) first_endpoint[s] = e;
    }
    order.resize(servers);
    for (int s = 0; s < servers; ++s) order[s] = s;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return routing.endpoint_switch(first_endpoint[a]) <
             routing.endpoint_switch(first_endpoint[b]);
    });
  }
  std::vector<std::vector<Vertex>> gpus(servers);
  for (auto [it, end] = boost::vertices(g); it != end; ++it)
    if (g[*it].kind == NodeKind::kGpu) gpus[g[*it].server].push_back(*it);
  std::vector<Vertex> ring;
  for (const int s : order) {
    std::sort(gpus[s].begin(), gpus[s].end(),
              [&](Vertex a, Vertex b) { return g[a].index < g[b].index; });
    ring.insert(ring.end(), gpus[s].begin(), gpus[s].end());
  }
  return ring;
}

}  // namespace fabricsim
