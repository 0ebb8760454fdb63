#include "fabric/host_fabric.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <deque>
#include <limits>

namespace fabricsim {

HostFabric::HostFabric(Simulation& sim, Pool<Packet>& pool, const Topology& topo, MessageLog& log,
                       std::vector<RdmaNic*> nics, const PacketFormat& format,
                       const HostFabricParams& params)
    : sim_(sim),
      pool_(pool),
      topo_(topo),
      log_(log),
      nics_(std::move(nics)),
      format_(format),
      params_(params) {
  const auto& g = topo.graph();
  // GPUs, NICs and CPUs of every server, by index.
  std::map<int, std::map<int, Vertex>> gpus;
  std::map<int, int> nic_count;
  for (auto [it, end] = boost::vertices(g); it != end; ++it) {
    const NodeInfo& n = g[*it];
    if (n.kind == NodeKind::kGpu) gpus[n.server][n.index] = *it;
    if (n.kind == NodeKind::kNic) ++nic_count[n.server];
  }
  for (const auto& [server, by_index] : gpus)
    for (const auto& [index, v] : by_index) gpu_vertex_.push_back(v);
  for (std::size_t e = 0; e < topo.endpoints().size(); ++e) {
    const NodeInfo& info = g[topo.endpoints()[e]];
    const auto& server_gpus = gpus[info.server];
    const int gpu_index =
        info.index * static_cast<int>(server_gpus.size()) / nic_count[info.server];
    gpu_of_.push_back(server_gpus.at(gpu_index));
    nic_route(gpu_of_.back(), e, true);
    nic_route(gpu_of_.back(), e, false);
    gdr_.push_back(routes_[nic_routes_.at({gpu_of_.back(), e, true})].gpudirect);
    nics_[e]->set_host_side(this);
  }
}

std::size_t HostFabric::nic_route(Vertex gpu, std::size_t e, bool to_nic) {
  auto [it, inserted] = nic_routes_.try_emplace({gpu, e, to_nic}, routes_.size());
  if (!inserted) return it->second;
  const auto& g = topo_.graph();
  const Vertex nic = topo_.endpoints()[e];
  Route r{{}, e, to_nic};
  // With PXN the data crosses NVLink to the GPU under the NIC's switch first (or last).
  const Vertex via = params_.nic_gpu(g, gpu, nic, to_nic);
  // The pair's PCIe distance decides GPUDirect for transfers between them (NCCL's rule).
  r.gpudirect = params_.gpudirect_between(g, via, nic, to_nic);
  if (via != gpu) {
    // One NVSwitch plane per NIC (index mod planes), so a server's NICs spread their PXN
    // traffic over the planes. Chunks keep PCIe TLP framing on the NVLink hops too (the
    // larger of the two overheads: an approximation of under 4 % on those hops).
    const auto nv = nvlink_hops(to_nic ? gpu : via, to_nic ? via : gpu, g[nic].index);
    const auto pcie = to_nic ? path(via, nic) : path(nic, via);
    r.hops = to_nic ? nv : pcie;
    for (EgressPort* p : to_nic ? pcie : nv) r.hops.push_back(p);
  } else if (r.gpudirect) {
    r.hops = to_nic ? path(gpu, nic) : path(nic, gpu);
  } else {
    // Bounce buffer in host memory on the NIC's socket.
    const Vertex cpu = nic_socket_cpu(g, nic);
    const Vertex from = to_nic ? gpu : nic, to = to_nic ? nic : gpu;
    r.hops = path(from, cpu);
    r.hops.push_back(memory_port(cpu));
    for (EgressPort* p : path(cpu, to)) r.hops.push_back(p);
  }
  if (routes_.size() > std::numeric_limits<std::uint16_t>::max())
    throw std::length_error("in-server routes exceed the packet's 16-bit route field");
  routes_.push_back(std::move(r));
  return it->second;
}

Vertex HostFabric::source_gpu(const Message& m) const {
  return m.src_gpu == Message::kPairedGpu ? gpu_of_[m.src] : gpu_vertex_.at(m.src_gpu);
}

Vertex HostFabric::destination_gpu(const Message& m) const {
  return m.dst_gpu == Message::kPairedGpu ? gpu_of_[m.dst] : gpu_vertex_.at(m.dst_gpu);
}

EgressPort* HostFabric::link_port(Vertex from, Vertex to, const LinkInfo& link) {
  auto& slot = link_ports_[{&link, from}];
  if (!slot) {
    const auto& g = topo_.graph();
    slot = std::make_unique<EgressPort>(sim_, pool_, fmt::format("{}>{}", g[from].name, g[to].name),
                                        PortConfig{.rate = link.rate, .latency = link.latency});
    slot->connect(this, 0);
    slot->set_owner(this);
  }
  return slot.get();
}

EgressPort* HostFabric::memory_port(Vertex cpu) {
  auto& slot = memory_ports_[cpu];
  if (!slot) {
    slot = std::make_unique<EgressPort>(
        sim_, pool_, fmt::format("{}.memory", topo_.graph()[cpu].name),
        PortConfig{.rate = params_.host_memory_rate, .latency = params_.host_memory_latency});
    slot->connect(this, 0);
    slot->set_owner(this);
  }
  return slot.get();
}

std::vector<EgressPort*> HostFabric::nvlink_hops(Vertex from, Vertex to, int plane) {
  const auto& g = topo_.graph();
  std::vector<std::pair<Vertex, const LinkInfo*>> planes;
  for (auto [e, end] = boost::out_edges(from, g); e != end; ++e) {
    if (g[*e].kind != LinkKind::kNvLink) continue;
    const Vertex peer = boost::target(*e, g);
    if (peer == to) return {link_port(from, to, g[*e])};
    if (g[peer].kind == NodeKind::kNvSwitch && boost::edge(peer, to, g).second)
      planes.emplace_back(peer, &g[*e]);
  }
  if (planes.empty())
    throw std::logic_error(fmt::format("{} has no NVLink to {}", g[from].name, g[to].name));
  const auto& [sw, link] = planes[static_cast<std::size_t>(plane) % planes.size()];
  return {link_port(from, sw, *link), link_port(sw, to, g[boost::edge(sw, to, g).first])};
}

std::vector<Vertex> HostFabric::vertex_path(Vertex from, Vertex to) const {
  return pcie_path(topo_.graph(), from, to);
}

std::vector<EgressPort*> HostFabric::path(Vertex from, Vertex to) {
  const auto& g = topo_.graph();
  const auto vertices = vertex_path(from, to);
  std::vector<EgressPort*> hops;
  for (std::size_t i = 0; i + 1 < vertices.size(); ++i) {
    const auto edge = boost::edge(vertices[i], vertices[i + 1], g);
    hops.push_back(link_port(vertices[i], vertices[i + 1], g[edge.first]));
  }
  return hops;
}

std::uint32_t HostFabric::chunk_wire_bytes(std::uint32_t payload, bool nvlink) const {
  const auto unit = static_cast<std::uint32_t>(
      (nvlink ? params_.nvlink_max_payload : params_.pcie_max_payload).count());
  const auto overhead = static_cast<std::uint32_t>(
      (nvlink ? params_.nvlink_overhead : params_.pcie_tlp_overhead).count());
  return payload + (payload + unit - 1) / unit * overhead;
}

void HostFabric::start_source(EgressPort* first, std::uint64_t id, std::size_t route) {
  if (next_chunk_.size() < log_.size()) next_chunk_.resize(log_.size());
  first->set_owner(this, /*pulls=*/true);
  sources_[first].messages.emplace_back(id, route);
  // Not the port being pulled from: it is about to transmit and pulls again when done.
  if (first != pulling_) first->kick();
}

void HostFabric::fetch(std::uint64_t id) {
  const Message& m = log_[id];
  const std::size_t route = nic_route(source_gpu(m), m.src, true);
  start_source(routes_[route].hops.front(), id, route);
}

std::size_t HostFabric::route_between(Vertex from_gpu, Vertex to_gpu, EgressPort* first,
                                      bool nvlink) {
  auto [it, inserted] = local_routes_.try_emplace({first, to_gpu}, routes_.size());
  if (inserted) {
    Route r{{first}, 0, false, nvlink};
    if (nvlink) {
      // `first` is GPU -> peer; a peer NVSwitch forwards to the destination GPU.
      const auto& g = topo_.graph();
      for (auto [e, end] = boost::out_edges(from_gpu, g); e != end; ++e) {
        const Vertex peer = boost::target(*e, g);
        if (g[*e].kind != LinkKind::kNvLink || link_port(from_gpu, peer, g[*e]) != first) continue;
        if (peer != to_gpu)
          r.hops.push_back(link_port(peer, to_gpu, g[boost::edge(peer, to_gpu, g).first]));
      }
    } else {
      r.hops = path(from_gpu, to_gpu);
    }
    routes_.push_back(std::move(r));
  }
  return it->second;
}

bool HostFabric::transfer_local(std::uint64_t id) {
  const Message& m = log_[id];
  const auto& g = topo_.graph();
  if (m.src_gpu == Message::kNvSwitch || m.dst_gpu == Message::kNvSwitch) {
    // Half an NVLink transfer (NVLS multimem traffic): striped over the GPU's links to the
    // NVSwitches, or over the switches' links to it, as a message between GPUs is; the data
    // ends (or starts) in the switch. A switch-to-GPU port serves packets forwarded to it
    // first and pulls these when idle.
    const bool up = m.dst_gpu == Message::kNvSwitch;
    const Vertex gpu = up ? source_gpu(m) : destination_gpu(m);
    for (auto [e, end] = boost::out_edges(gpu, g); e != end; ++e) {
      const Vertex sw = boost::target(*e, g);
      if (g[*e].kind != LinkKind::kNvLink || g[sw].kind != NodeKind::kNvSwitch) continue;
      EgressPort* port =
          up ? link_port(gpu, sw, g[*e]) : link_port(sw, gpu, g[boost::edge(sw, gpu, g).first]);
      auto [it, inserted] = local_routes_.try_emplace({port, up ? sw : gpu}, routes_.size());
      if (inserted) routes_.push_back(Route{{port}, 0, false, true});
      start_source(port, id, it->second);
    }
    return true;
  }
  // To or from an aggregation node (SHARP, ids after the hosts): through the network.
  if (m.src >= gpu_of_.size() || m.dst >= gpu_of_.size()) return false;
  const Vertex from = source_gpu(m), to = destination_gpu(m);
  if (from == to || g[from].server != g[to].server) return false;
  const GpuPath gpu_path = params_.gpu_path(g, from, to);
  if (gpu_path == GpuPath::kHostMemory) {
    // NCCL's SHM transport: PCIe to the receiving GPU's socket, its memory, PCIe to the GPU.
    const Vertex cpu = nic_socket_cpu(g, to);
    EgressPort* memory = memory_port(cpu);
    auto [it, inserted] = local_routes_.try_emplace({memory, to}, routes_.size());
    if (inserted) {
      Route r{path(from, cpu), 0, false, false};
      r.hops.push_back(memory);
      for (EgressPort* hop : path(cpu, to)) r.hops.push_back(hop);
      routes_.push_back(std::move(r));
    }
    start_source(routes_[it->second].hops.front(), id, it->second);
    return true;
  }
  // NVLink: every link bundle out of the source GPU that reaches the destination (directly or
  // through an NVSwitch) is a source port; each pulls the next chunk when free, so the message
  // is striped over the bundles in proportion to their rates. Without NVLink: PCIe peer to peer.
  bool any = false;
  for (auto [e, end] = boost::out_edges(from, g); e != end && gpu_path == GpuPath::kNvLink; ++e) {
    if (g[*e].kind != LinkKind::kNvLink) continue;
    const Vertex peer = boost::target(*e, g);
    if (peer != to && (g[peer].kind != NodeKind::kNvSwitch || !boost::edge(peer, to, g).second))
      continue;
    EgressPort* first = link_port(from, peer, g[*e]);
    start_source(first, id, route_between(from, to, first, true));
    any = true;
  }
  if (!any) {
    EgressPort* first = path(from, to).front();
    start_source(first, id, route_between(from, to, first, false));
  }
  return true;
}

Packet* HostFabric::pull(EgressPort& port) {
  const auto it = sources_.find(&port);
  if (it == sources_.end() || it->second.messages.empty()) return nullptr;
  auto& messages = it->second.messages;
  const auto mtu = format_.mtu.count();
  const auto packets_of = [&](std::uint64_t id) {
    return static_cast<std::uint32_t>(
        std::max<Bytes::rep>(1, (log_[id].size.count() + mtu - 1) / mtu));
  };
  // Drop messages whose chunks other ports (stripes) have already taken.
  while (!messages.empty() &&
         next_chunk_[messages.front().first] >= packets_of(messages.front().first))
    messages.pop_front();
  if (messages.empty()) return nullptr;
  const auto [id, route] = messages.front();
  messages.pop_front();
  const Message& m = log_[id];
  const std::uint32_t psn = next_chunk_[id]++;
  const auto packets = packets_of(id);
  Packet* p = pool_.acquire();
  p->kind = PacketKind::kDma;
  p->message = id;
  p->psn = psn;
  p->payload = static_cast<std::uint32_t>(std::min<Bytes::rep>(mtu, m.size.count() - psn * mtu));
  p->wire_bytes = chunk_wire_bytes(p->payload, routes_[route].nvlink);
  p->last = psn + 1 == packets;
  p->route = static_cast<std::uint16_t>(route);
  p->hop = 0;
  if (!p->last) {
    messages.emplace_back(id, route);  // round robin among this port's messages
  } else if (routes_[route].to_nic) {
    pulling_ = &port;
    nics_[routes_[route].nic]->on_fetch_sent(id);
    pulling_ = nullptr;
  }
  return p;
}

void HostFabric::deliver(std::uint64_t id, std::uint32_t psn, std::uint32_t payload, bool last) {
  Packet* p = pool_.acquire();
  p->kind = PacketKind::kDma;
  p->message = id;
  p->psn = psn;
  p->payload = payload;
  p->wire_bytes = chunk_wire_bytes(payload, false);
  p->last = last;
  p->route = static_cast<std::uint16_t>(nic_route(destination_gpu(log_[id]), log_[id].dst, false));
  p->hop = 0;
  routes_[p->route].hops.front()->enqueue(p);
}

void HostFabric::receive(Packet* p, PortIndex) {
  const Route& r = routes_[p->route];
  if (++p->hop < r.hops.size()) {
    r.hops[p->hop]->enqueue(p);
    return;
  }
  if (r.to_nic) {
    nics_[r.nic]->on_dma_ready(p->message);
  } else {
    log_.add_received(p->message, Bytes(p->payload));
    if (log_[p->message].received == log_[p->message].size) log_.complete(p->message, sim_.now());
  }
  pool_.release(p);
}

std::vector<std::string> HostFabric::route_names(std::size_t nic, bool source) const {
  std::vector<std::string> names;
  const auto route = nic_routes_.at({gpu_of_[nic], nic, source});
  for (const EgressPort* p : routes_[route].hops) names.push_back(p->name());
  return names;
}

}  // namespace fabricsim
