#include "topologies/topology.hpp"

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

Vertex Topology::add_node(NodeInfo info) {
  const bool is_switch = info.kind == NodeKind::kSwitch;
  const Vertex v = boost::add_vertex(std::move(info), g_);
  if (is_switch) switches_.push_back(v);
  return v;
}

Edge Topology::add_link(Vertex a, Vertex b, LinkInfo info) {
  return boost::add_edge(a, b, std::move(info), g_).first;
}

}  // namespace fabricsim
