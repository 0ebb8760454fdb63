#include "topo/topology.hpp"

#include <fmt/format.h>

#include <stdexcept>

#include <algorithm>

#include <deque>

#include <map>

namespace fabricsim {

std::string_view to_string(NodeKind k) {
  switch (k) {
    case NodeKind::kGpu:
      return "gpu";
    case NodeKind::kNvSwitch:
      return "nvswitch";
    case NodeKind::kPcieSwitch:
      return "pcie-switch";
    case NodeKind::kCpu:
      return "cpu";
    case NodeKind::kNic:
      return "nic";
    case NodeKind::kSwitch:
      return "switch";
    case NodeKind::kAggregator:
      return "aggregator";
  }
  return "?";
}

std::string_view to_string(LinkKind k) {
  switch (k) {
    case LinkKind::kNvLink:
      return "nvlink";
    case LinkKind::kPcie:
      return "pcie";
    case LinkKind::kInterSocket:
      return "inter-socket";
    case LinkKind::kNetwork:
      return "network";
  }
  return "?";
}

std::string_view link_layer(const TopologyGraph& g, Vertex from, Vertex to, LinkKind kind) {
  switch (kind) {
    case LinkKind::kNvLink:
      return "NVLink";
    case LinkKind::kPcie:
      return "PCIe";
    case LinkKind::kInterSocket:
      return "inter-socket";
    case LinkKind::kNetwork:
      break;
  }
  const NodeInfo& n = g[from];
  if (n.kind == NodeKind::kAggregator || g[to].kind == NodeKind::kAggregator) return "SHARP";
  if (n.kind != NodeKind::kSwitch) return "NIC";
  if (n.tier <= 1) return g[to].kind == NodeKind::kSwitch ? "leaf uplink" : "leaf downlink";
  return n.tier == 2 ? "spine" : "core";
}

Vertex Topology::add_node(NodeInfo info) {
  const NodeKind kind = info.kind;
  const Vertex v = boost::add_vertex(std::move(info), g_);
  if (kind == NodeKind::kSwitch) switches_.push_back(v);
  if (kind == NodeKind::kAggregator) aggregators_.push_back(v);
  return v;
}

Edge Topology::add_link(Vertex a, Vertex b, LinkInfo info) {
  return boost::add_edge(a, b, std::move(info), g_).first;
}

std::vector<Vertex> pcie_path(const TopologyGraph& g, Vertex from, Vertex to) {
  std::map<Vertex, Vertex> parent{{from, from}};
  std::deque<Vertex> queue{from};
  while (!queue.empty() && !parent.contains(to)) {
    const Vertex u = queue.front();
    queue.pop_front();
    for (auto [it, end] = boost::out_edges(u, g); it != end; ++it) {
      const LinkInfo& l = g[*it];
      if (l.kind != LinkKind::kPcie && l.kind != LinkKind::kInterSocket) continue;
      if (parent.emplace(boost::target(*it, g), u).second) queue.push_back(boost::target(*it, g));
    }
  }
  if (!parent.contains(to))
    throw std::invalid_argument(
        fmt::format("no PCIe path from {} to {}", g[from].name, g[to].name));
  std::vector<Vertex> vertices{to};
  for (Vertex v = to; v != from; v = parent.at(v)) vertices.push_back(parent.at(v));
  std::reverse(vertices.begin(), vertices.end());
  return vertices;
}

}  // namespace fabricsim
