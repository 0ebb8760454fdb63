#include "topo/host_paths.hpp"

#include <fmt/format.h>
#include <limits>
#include <stdexcept>

namespace fabricsim {

PcieDistance pcie_distance(const TopologyGraph& g, Vertex gpu, Vertex nic) {
  int cpus = 0, levels = 0;
  for (const Vertex v : pcie_path(g, gpu, nic)) {
    cpus += g[v].kind == NodeKind::kCpu;
    if (g[v].kind == NodeKind::kPcieSwitch) levels += g[v].pcie_levels;
  }
  if (cpus == 0) return levels <= 1 ? PcieDistance::kPix : PcieDistance::kPxb;
  return cpus == 1 ? PcieDistance::kPhb : PcieDistance::kSys;
}

Vertex nic_socket_cpu(const TopologyGraph& g, Vertex nic) {
  for (auto [v, end] = boost::vertices(g); v != end; ++v)
    if (g[*v].kind == NodeKind::kCpu && g[*v].server == g[nic].server &&
        g[*v].index == g[nic].socket)
      return *v;
  throw std::invalid_argument(fmt::format("{} has no CPU socket {}", g[nic].name, g[nic].socket));
}

bool nvlink_connected(const TopologyGraph& g, Vertex a, Vertex b) {
  for (auto [e, end] = boost::out_edges(a, g); e != end; ++e) {
    if (g[*e].kind != LinkKind::kNvLink) continue;
    const Vertex peer = boost::target(*e, g);
    if (peer == b) return true;
    if (g[peer].kind == NodeKind::kNvSwitch && boost::edge(peer, b, g).second) return true;
  }
  return false;
}

GpuPath HostFabricParams::gpu_path(const TopologyGraph& g, Vertex a, Vertex b) const {
  constexpr int kNvl = 1, kPix = 4, kPxb = 5, kPhb = 8, kSys = 9;  // NCCL's PATH_* (topo.h)
  if (nvlink_connected(g, a, b)) return p2p_level >= kNvl ? GpuPath::kNvLink : GpuPath::kHostMemory;
  const PcieDistance d = pcie_distance(g, a, b);
  const int type = d == PcieDistance::kPix   ? kPix
                   : d == PcieDistance::kPxb ? kPxb
                   : d == PcieDistance::kPhb ? kPhb
                                             : kSys;
  return p2p_level >= type ? GpuPath::kPcieP2p : GpuPath::kHostMemory;
}

Vertex HostFabricParams::nic_gpu(const TopologyGraph& g, Vertex gpu, Vertex nic,
                                 bool to_nic) const {
  if (!pxn || !gpudirect || pcie_distance(g, gpu, nic) <= PcieDistance::kPxb) return gpu;
  Vertex best = gpu;
  std::size_t best_hops = std::numeric_limits<std::size_t>::max();
  int best_index = 0;
  for (auto [v, end] = boost::vertices(g); v != end; ++v) {
    if (g[*v].kind != NodeKind::kGpu || g[*v].server != g[gpu].server || *v == gpu) continue;
    if (pcie_distance(g, *v, nic) > PcieDistance::kPxb || !gpudirect_between(g, *v, nic, to_nic) ||
        !nvlink_connected(g, gpu, *v))
      continue;
    const std::size_t hops = pcie_path(g, *v, nic).size();
    if (hops < best_hops || (hops == best_hops && g[*v].index < best_index)) {
      best = *v;
      best_hops = hops;
      best_index = g[*v].index;
    }
  }
  return best;
}

}  // namespace fabricsim
