#include "topo/builders.hpp"

#include <fmt/format.h>
#include <cmath>
#include <type_traits>
#include <variant>

namespace fabricsim {

std::string_view to_string(Technology t) {
  return t == Technology::kInfiniband ? "infiniband" : "ethernet";
}

namespace {

int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}

class Builder {
 public:
  Builder(Topology& topo, const FabricSpec& f, Bandwidth host_rate)
      : topo_(topo), f_(f), host_rate_(host_rate) {}

  Vertex add_switch(std::string name, int tier) {
    return topo_.add_node(
        {NodeKind::kSwitch, std::move(name), -1, count_++, tier, f_.switch_ports, 0});
  }
  void host_link(Vertex endpoint, Vertex sw) { link(endpoint, sw, host_rate_, f_.host_cable_m); }
  void fabric_link(Vertex a, Vertex b) { link(a, b, f_.link_rate, f_.fabric_cable_m); }

 private:
  void link(Vertex a, Vertex b, Bandwidth rate, double length_m) {
    const auto propagation = Time::from_ps(static_cast<Time::rep>(
        std::llround(length_m * static_cast<double>(f_.propagation_per_m.ps()))));
    topo_.add_link(a, b, {LinkKind::kNetwork, rate, propagation, 1, length_m});
  }
  Topology& topo_;
  const FabricSpec& f_;
  Bandwidth host_rate_;
  int count_ = 0;
};

void need_ports(const FabricSpec& f, int needed, std::string_view what, std::string_view fix) {
  if (f.switch_ports > 0 && needed > f.switch_ports)
    throw FabricError(fmt::format("{} needs {} ports but fabric.switch_ports = {}: {}", what,
                                  needed, f.switch_ports, fix));
}

void build_star(Builder& b, const FabricSpec& f, const std::vector<Vertex>& eps) {
  need_ports(f, static_cast<int>(eps.size()), "the star switch",
             "raise switch_ports or use kind = \"leaf-spine\"");
  const Vertex sw = b.add_switch("switch0", 1);
  for (const Vertex e : eps) b.host_link(e, sw);
}

void build_ring(Builder& b, const FabricSpec& f, const RingSpec& ring,
                const std::vector<Vertex>& eps) {
  const int n = ring.switches;
  if (n < 3) throw FabricError(fmt::format("a ring needs fabric.ring_switches >= 3, got {}", n));
  const int per = ceil_div(static_cast<int>(eps.size()), n);
  need_ports(f, per + 2, fmt::format("each ring switch ({} endpoints + 2 ring links)", per),
             "raise switch_ports or ring_switches");
  std::vector<Vertex> sw;
  for (int i = 0; i < n; ++i) sw.push_back(b.add_switch(fmt::format("ring{}", i), 1));
  for (int i = 0; i < n; ++i) b.fabric_link(sw[i], sw[(i + 1) % n]);
  for (std::size_t e = 0; e < eps.size(); ++e) b.host_link(eps[e], sw[e / per]);
}

void build_leaf_spine(Builder& b, const FabricSpec& f, const LeafSpineSpec& ls,
                      const std::vector<Vertex>& eps) {
  const int h = ls.hosts_per_leaf;
  if (h < 1) throw FabricError("leaf-spine needs fabric.hosts_per_leaf >= 1");
  const int leaves = ceil_div(static_cast<int>(eps.size()), h);
  int up = ls.uplinks_per_leaf;
  if (up == 0) {
    if (!(ls.oversubscription >= 1))
      throw FabricError(
          fmt::format("fabric.oversubscription must be >= 1, got {}", ls.oversubscription));
    const double exact = h / ls.oversubscription;
    up = static_cast<int>(std::lround(exact));
    if (up < 1 || std::fabs(exact - up) > 1e-9)
      throw FabricError(fmt::format(
          "hosts_per_leaf {} / oversubscription {} = {:.3g} uplinks per leaf, not a whole number: "
          "set fabric.uplinks_per_leaf or pick values that divide",
          h, ls.oversubscription, exact));
  }
  // Default spine count: the fewest spines whose ports take every leaf's uplinks (a divisor s
  // of the uplinks per leaf with leaves x uplinks / s <= switch_ports), so each leaf reaches
  // every spine over up / s parallel cables; without a port count, one spine per uplink.
  int spines = ls.spines;
  if (spines <= 0) {
    spines = up;
    if (f.switch_ports > 0)
      for (int s = 1; s <= up; ++s)
        if (up % s == 0 && static_cast<long>(leaves) * (up / s) <= f.switch_ports) {
          spines = s;
          break;
        }
  }
  if (up % spines != 0)
    throw FabricError(
        fmt::format("fabric.uplinks_per_leaf ({}) must be a multiple of fabric.spines ({}) "
                    "so each leaf reaches every spine equally",
                    up, spines));
  const int cables = up / spines;
  need_ports(f, h + up, fmt::format("each leaf ({} hosts + {} uplinks)", h, up),
             "raise switch_ports, lower hosts_per_leaf or raise oversubscription");
  need_ports(f, leaves * cables, fmt::format("each spine ({} leaves x {} cables)", leaves, cables),
             "raise switch_ports, add spines, or use kind = \"fat-tree\"");
  std::vector<Vertex> leaf, spine;
  for (int i = 0; i < leaves; ++i) leaf.push_back(b.add_switch(fmt::format("leaf{}", i), 1));
  for (int i = 0; i < spines; ++i) spine.push_back(b.add_switch(fmt::format("spine{}", i), 2));
  for (int l = 0; l < leaves; ++l)
    for (int c = 0; c < cables; ++c)
      for (int s = 0; s < spines; ++s) b.fabric_link(leaf[l], spine[s]);
  for (std::size_t e = 0; e < eps.size(); ++e) b.host_link(eps[e], leaf[e / h]);
}

void build_fat_tree(Builder& b, const FabricSpec& f, const FatTreeSpec& tree,
                    const std::vector<Vertex>& eps) {
  const int k = tree.k;
  if (k < 2 || k % 2 != 0)
    throw FabricError(fmt::format("fat-tree fabric.k must be even and >= 2, got {}", k));
  if (f.switch_ports > 0 && f.switch_ports != k)
    throw FabricError(
        fmt::format("a k-ary fat-tree uses k-port switches: fabric.k = {} but "
                    "fabric.switch_ports = {}; make them equal",
                    k, f.switch_ports));
  const int half = k / 2;
  const long capacity = static_cast<long>(k) * k * k / 4;
  const long n = static_cast<long>(eps.size());
  if (n > capacity) {
    int kmin = k;
    while (static_cast<long>(kmin) * kmin * kmin / 4 < n) kmin += 2;
    throw FabricError(
        fmt::format("a fat-tree with k = {} holds {} hosts but the cluster has {} "
                    "endpoints: use fabric.k >= {}",
                    k, capacity, n, kmin));
  }
  const int pods = static_cast<int>((n + half * half - 1) / (half * half));
  std::vector<Vertex> core;
  for (int c = 0; c < half * half; ++c) core.push_back(b.add_switch(fmt::format("core{}", c), 3));
  std::vector<Vertex> edges;
  for (int p = 0; p < pods; ++p) {
    std::vector<Vertex> agg;
    for (int a = 0; a < half; ++a) {
      agg.push_back(b.add_switch(fmt::format("agg{}", p * half + a), 2));
      for (int c = 0; c < half; ++c) b.fabric_link(agg.back(), core[a * half + c]);
    }
    for (int e = 0; e < half; ++e) {
      edges.push_back(b.add_switch(fmt::format("edge{}", p * half + e), 1));
      for (const Vertex a : agg) b.fabric_link(edges.back(), a);
    }
  }
  for (std::size_t e = 0; e < eps.size(); ++e) b.host_link(eps[e], edges[e / half]);
}

// One aggregation node per switch (SHARP's aggregation node in the switch ASIC): a fabric
// endpoint hanging off its switch by an internal port, no cable. Its rate is what the switch
// can take in and send out for reductions: by default every port at line rate at once (SHARP
// v2/v3 streaming aggregation runs at line rate per port), as the node receives a child's data
// on one port while it sends the partial result up another.
void add_aggregators(Topology& topo, const FabricSpec& f) {
  auto& g = topo.graph();
  const std::vector<Vertex> switches = topo.switches();  // add_node may grow the list's vector
  for (const Vertex sw : switches) {
    Bandwidth::rep ports = 0;
    for (auto [e, end] = boost::out_edges(sw, g); e != end; ++e) ports += g[*e].rate.bps();
    const Bandwidth rate = f.sharp_rate.bps() > 0 ? f.sharp_rate : Bandwidth::from_bps(ports);
    const NodeInfo s = g[sw];
    const Vertex agg =
        topo.add_node({NodeKind::kAggregator, s.name + ".sharp", -1, s.index, s.tier, 0, 0});
    topo.add_link(agg, sw, {LinkKind::kNetwork, rate, Time::zero(), 1, 0});
  }
}

}  // namespace

std::vector<Vertex> placement_order(const Topology& topo, const ClusterSpec& spec) {
  std::vector<Vertex> order = topo.endpoints();
  if (spec.fabric.rail_optimized && spec.servers > 0) {
    const std::size_t rails = spec.server.nics.size();
    order.clear();
    for (std::size_t r = 0; r < rails; ++r)
      for (int s = 0; s < spec.servers; ++s) order.push_back(topo.endpoints()[s * rails + r]);
  }
  return order;
}

Topology build_cluster(const ClusterSpec& spec) {
  Topology topo;
  Bandwidth host_rate = spec.fabric.link_rate;
  if (spec.servers > 0) {
    if (spec.server.nics.empty())
      throw FabricError("the server model has no NICs to connect to the fabric");
    for (int s = 0; s < spec.servers; ++s)
      for (const Vertex nic : add_server(topo, spec.server, s)) topo.add_endpoint(nic);
    topo.set_servers(static_cast<std::size_t>(spec.servers));
    // A NIC and its switch port run at the slower of the two (auto-negotiation).
    host_rate = std::min(spec.server.nic_rate, spec.fabric.link_rate);
  } else {
    if (spec.hosts < 1) throw FabricError("the cluster has no hosts: set fabric.hosts or [server]");
    for (int h = 0; h < spec.hosts; ++h)
      topo.add_endpoint(topo.add_node({NodeKind::kNic, fmt::format("host{}", h), h, 0, 0, 0, 0}));
    topo.set_servers(static_cast<std::size_t>(spec.hosts));
  }
  Builder b(topo, spec.fabric, host_rate);
  const auto eps = placement_order(topo, spec);
  const FabricSpec& f = spec.fabric;
  std::visit(
      [&](const auto& shape) {
        using S = std::decay_t<decltype(shape)>;
        if constexpr (std::is_same_v<S, StarSpec>) build_star(b, f, eps);
        if constexpr (std::is_same_v<S, RingSpec>) build_ring(b, f, shape, eps);
        if constexpr (std::is_same_v<S, LeafSpineSpec>) build_leaf_spine(b, f, shape, eps);
        if constexpr (std::is_same_v<S, FatTreeSpec>) build_fat_tree(b, f, shape, eps);
      },
      f.shape);
  if (f.sharp) add_aggregators(topo, f);
  return topo;
}

}  // namespace fabricsim
