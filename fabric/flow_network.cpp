#include "fabric/flow_network.hpp"

#include <set>

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <deque>
#include <stdexcept>

namespace fabricsim {

namespace {

constexpr Priority kLast = 250;  // after everything else at the same instant

// Payload share of a link class: payload per (payload + per-unit overhead) for full units.
double payload_share(Bytes unit, Bytes overhead_per_unit) {
  const auto u = static_cast<double>(unit.count());
  return u / (u + static_cast<double>(overhead_per_unit.count()));
}

// A GPU's NVLink bundle: its links' rates together (only those to NVSwitches with
// `switches_only`), and one link's rate and latency (all alike in the servers built here).
struct NvLinkBundle {
  Bandwidth::rep total = 0;
  Bandwidth link{};
  Time latency{};
};
NvLinkBundle nvlink_bundle(const TopologyGraph& g, Vertex gpu, bool switches_only) {
  NvLinkBundle b;
  for (auto [e, end] = boost::out_edges(gpu, g); e != end; ++e) {
    if (g[*e].kind != LinkKind::kNvLink) continue;
    if (switches_only && g[boost::target(*e, g)].kind != NodeKind::kNvSwitch) continue;
    b.total += g[*e].rate.bps();
    b.link = g[*e].rate;
    b.latency = g[*e].latency;
  }
  return b;
}

}  // namespace

FlowNetwork::FlowNetwork(Simulation& sim, const Topology& topo, const Routing& routing,
                         const NetworkParams& params, const FlowEfficiency& efficiency,
                         FlowScope scope)
    : sim_(sim),
      topo_(topo),
      routing_(routing),
      params_(params),
      efficiency_(efficiency),
      start_(sim.bind<&FlowNetwork::on_start>(*this)),
      enqueue_(sim.bind<&FlowNetwork::enqueue>(*this)),
      update_(sim.bind<&FlowNetwork::on_update>(*this)),
      drain_(sim.bind<&FlowNetwork::on_drain>(*this)) {
  // One path per flow: per-packet spraying has no flow-level equivalent here (the loader
  // refuses it with the scenario's position).
  if (params.path_selection == PathSelection::kSpray && scope == FlowScope::kWhole)
    throw std::invalid_argument("the flow level cannot spray packets: use ECMP or dmodk");
  const auto& g = topo.graph();
  std::map<std::pair<int, int>, Vertex> gpus;
  std::map<int, int> gpus_per_server, nics_per_server;
  for (auto [v, end] = boost::vertices(g); v != end; ++v) {
    if (g[*v].kind == NodeKind::kGpu) {
      gpus[{g[*v].server, g[*v].index}] = *v;
      ++gpus_per_server[g[*v].server];
    }
    if (g[*v].kind == NodeKind::kNic) ++nics_per_server[g[*v].server];
  }
  for (const auto& [key, v] : gpus) gpus_.push_back(v);
  engines_.assign(topo.fabric_endpoint_count(), SendEngine(params.nic));
  for (std::size_t e = 0; e < topo.fabric_endpoint_count(); ++e) {
    const Vertex nic = topo.fabric_endpoint(e);
    const NodeInfo& n = g[nic];
    if (gpus.empty() || !params.host_side || n.kind == NodeKind::kAggregator) {
      paired_.push_back(nic);
      continue;
    }
    paired_.push_back(
        gpus.at({n.server, n.index * gpus_per_server[n.server] / nics_per_server[n.server]}));
  }
  sim.probes().set_gauge_source(this, [this, scope](const ProbeRegistry::GaugeVisitor& visit) {
    visit_utilization_gauges(scope, visit);
  });
  if (scope == FlowScope::kNvSwitchOnly) {
    sim.probes().set_refresher(this, [this] { refresh_counters(); });
    return;
  }
  // Switch ports, named as the packet model names them, for per-port byte counts.
  for (std::size_t s = 0; s < routing.switch_count(); ++s)
    switch_of_vertex_[routing.switch_vertex(s)] = s;
  for (std::size_t s = 0; s < routing.switch_count(); ++s) {
    const Vertex sv = routing.switch_vertex(s);
    for (std::size_t p = 0; p < routing.ports(s).size(); ++p) {
      const auto& port = routing.ports(s)[p];
      const auto res =
          link_resource(sv, port.peer, g[port.edge], fmt::format("{}.port{}", g[sv].name, p));
      res_info_[res].switch_port = true;
      port_res_[{s, p}] = res;
    }
  }
  for (std::size_t e = 0; e < topo.fabric_endpoint_count(); ++e) {
    const Vertex nic = topo.fabric_endpoint(e);
    rx_payload_.push_back(&sim.probes().counter(g[nic].name + ".rx_payload_bytes"));
    rx_messages_.push_back(&sim.probes().counter(g[nic].name + ".rx_messages"));
  }
  // The links' tx_bytes are derived from the bytes each resource carried, when read.
  sim.probes().set_refresher(this, [this] { refresh_counters(); });
}

double FlowNetwork::utilization(MaxMinSolver::Res r) const {
  return solver_.load(r) / solver_.capacity(r);
}

void FlowNetwork::visit_utilization_gauges(FlowScope scope,
                                           const ProbeRegistry::GaugeVisitor& visit) const {
  // `<link>.utilization`: the share of the link direction's payload capacity its flows get at
  // the sampling instant (0..1), named as the bottleneck table names the link. Every link of
  // the scope is named, so that simulation.timeseries can be checked before the run; the
  // solver resource behind an in-server link is made when a route first uses it, and until
  // then the link carries nothing (0).
  const auto& g = topo_.graph();
  for (const auto& [key, res] : port_res_)
    visit(res_info_[res].name + ".utilization", [this, res = res] { return utilization(res); });
  const auto lookup = [this](const auto& map, auto key) {
    return [this, &map, key] {
      const auto it = map.find(key);
      return it == map.end() ? 0.0 : utilization(it->second);
    };
  };
  for (const Vertex gpu : gpus_)
    for (const bool out : {true, false})
      visit(fmt::format("{}.nvlink_{}.utilization", g[gpu].name, out ? "out" : "in"),
            lookup(nvlink_res_, std::pair{gpu, out}));
  if (scope == FlowScope::kNvSwitchOnly) return;
  std::set<std::string> named;
  for (auto [e, end] = boost::edges(g); e != end; ++e) {
    const LinkInfo& link = g[*e];
    for (const auto& [from, to] : {std::pair{boost::source(*e, g), boost::target(*e, g)},
                                   std::pair{boost::target(*e, g), boost::source(*e, g)}}) {
      if (g[from].kind == NodeKind::kSwitch) continue;  // a switch port, named above
      if (link.kind == LinkKind::kNvLink &&
          (g[from].kind == NodeKind::kNvSwitch || g[to].kind == NodeKind::kNvSwitch))
        continue;  // the GPU's NVLink bundle, named above
      const std::string name = link.kind == LinkKind::kNetwork
                                   ? g[from].name + ".nic"
                                   : fmt::format("{}>{}", g[from].name, g[to].name);
      // Parallel edges (bonded cables named alike) share the first one's name, as in the
      // bottleneck table.
      if (named.insert(name).second)
        visit(name + ".utilization", lookup(link_res_, std::pair{&link, from}));
    }
  }
}

void FlowNetwork::name_resource(MaxMinSolver::Res r, std::string layer, std::string name,
                                Bandwidth line_rate) {
  ResInfo& info = res_info_[r];
  info.tx_bytes = &sim_.probes().counter(name + ".tx_bytes");
  info.wire_per_payload = static_cast<double>(line_rate.bps()) / 8 / solver_.capacity(r);
  info.layer = std::move(layer);
  info.name = std::move(name);
}

FlowNetwork::~FlowNetwork() {
  sim_.probes().clear_refresher(this);
  sim_.probes().clear_gauge_source(this);
}

void FlowNetwork::refresh_counters() const {
  for (MaxMinSolver::Res r = 0; r < res_info_.size(); ++r)
    if (Counter* c = res_info_[r].tx_bytes)
      c->value = static_cast<std::uint64_t>(
          std::llround(static_cast<double>(res_bytes_[r]) * res_info_[r].wire_per_payload));
}

void FlowNetwork::for_each_link(const std::function<void(const Link&)>& f) const {
  for (MaxMinSolver::Res r = 0; r < res_info_.size(); ++r)
    if (!res_info_[r].layer.empty())
      f({res_info_[r].layer, res_info_[r].name, res_bytes_[r], solver_.capacity(r),
         res_info_[r].switch_port});
}

std::vector<Metric> FlowNetwork::level_metrics() const {
  return {{"rate_updates", static_cast<double>(updates_), ""},
          {"flows_resolved", static_cast<double>(resolved_), ""}};
}

MaxMinSolver::Res FlowNetwork::link_resource(Vertex from, Vertex to, const LinkInfo& link,
                                             std::string name) {
  auto [it, inserted] = link_res_.try_emplace({&link, from}, 0);
  if (!inserted) return it->second;
  const auto& g = topo_.graph();
  const double bytes_per_s = static_cast<double>(link.rate.bps()) / 8;
  double share = 1;
  switch (link.kind) {
    case LinkKind::kNetwork:
      share =
          payload_share(params_.nic.format.mtu, params_.nic.format.header) * efficiency_.network;
      break;
    case LinkKind::kPcie:
      share = payload_share(params_.host.pcie_max_payload, params_.host.pcie_tlp_overhead) *
              efficiency_.pcie;
      break;
    case LinkKind::kNvLink:
      share = payload_share(params_.host.nvlink_max_payload, params_.host.nvlink_overhead) *
              efficiency_.nvlink;
      break;
    case LinkKind::kInterSocket:
      break;
  }
  it->second = new_resource(bytes_per_s * share);
  // Named as the packet model names the port sending into this direction: a switch's port
  // (given), a NIC's port, or an in-server link direction.
  if (name.empty())
    name = link.kind == LinkKind::kNetwork ? g[from].name + ".nic"
                                           : fmt::format("{}>{}", g[from].name, g[to].name);
  name_resource(it->second, std::string(link_layer(g, from, to, link.kind)), std::move(name),
                link.rate);
  return it->second;
}

MaxMinSolver::Res FlowNetwork::new_resource(double bytes_per_s) {
  res_bytes_.push_back(0);
  res_info_.emplace_back();
  return solver_.add_resource(bytes_per_s);
}

void FlowNetwork::add_hop(Route& r, Vertex from, Vertex to, const LinkInfo& link, Units wire) {
  r.resources.push_back(link_resource(from, to, link));
  r.latency += link.latency;
  hop_times_.emplace_back(tx_time(wire.first, link.rate), tx_time(wire.last, link.rate));
}

void FlowNetwork::add_pcie_path(Route& r, Vertex from, Vertex to, Units chunk) {
  const auto& g = topo_.graph();
  const auto path = pcie_path(g, from, to);
  const auto tlps = [&](Bytes c) {
    return c + params_.host.pcie_tlp_overhead *
                   ((c.count() + params_.host.pcie_max_payload.count() - 1) /
                    params_.host.pcie_max_payload.count());
  };
  for (std::size_t i = 0; i + 1 < path.size(); ++i) {
    const auto e = boost::edge(path[i], path[i + 1], g).first;
    add_hop(r, path[i], path[i + 1], g[e], {tlps(chunk.first), tlps(chunk.last), chunk.packets});
  }
}

Vertex FlowNetwork::gpu_vertex(std::uint32_t endpoint, std::uint32_t gpu) const {
  return gpu == Message::kPairedGpu ? paired_[endpoint] : gpus_.at(gpu);
}

FlowNetwork::Units FlowNetwork::packet_units(const Message& m) const {
  const auto mtu = params_.nic.format.mtu.count();
  const auto size = std::max<Bytes::rep>(m.size.count(), 1);
  const auto packets = (size + mtu - 1) / mtu;
  return {Bytes(std::min(mtu, size)), Bytes(size - (packets - 1) * mtu), packets};
}

bool FlowNetwork::inside_server(const Message& m) const {
  if (!params_.host_side || gpus_.empty()) return false;
  if (m.src_gpu == Message::kNvSwitch || m.dst_gpu == Message::kNvSwitch) return true;
  const auto& g = topo_.graph();
  const Vertex src_gpu = gpu_vertex(m.src, m.src_gpu), dst_gpu = gpu_vertex(m.dst, m.dst_gpu);
  // Aggregation nodes (server -1) are in no server.
  return g[src_gpu].server == g[dst_gpu].server && g[src_gpu].server >= 0 && src_gpu != dst_gpu;
}

bool FlowNetwork::nvswitch_route(const Message& m) const {
  if (!inside_server(m)) return false;
  if (m.src_gpu == Message::kNvSwitch || m.dst_gpu == Message::kNvSwitch) return true;
  const auto& g = topo_.graph();
  const Vertex src = gpu_vertex(m.src, m.src_gpu), dst = gpu_vertex(m.dst, m.dst_gpu);
  if (params_.host.gpu_path(g, src, dst) != GpuPath::kNvLink) return false;
  bool via_switch = false;  // as route_hops: a direct NVLink wins over the switches
  for (auto [e, end] = boost::out_edges(src, g); e != end; ++e) {
    if (g[*e].kind != LinkKind::kNvLink) continue;
    const Vertex peer = boost::target(*e, g);
    if (peer == dst) return false;
    via_switch =
        via_switch || (g[peer].kind == NodeKind::kNvSwitch && boost::edge(peer, dst, g).second);
  }
  return via_switch;
}

FlowNetwork::Route FlowNetwork::route_of(const Message& m) {
  hop_times_.clear();
  const Units units = packet_units(m);
  Route r = route_hops(m, units);
  if (hop_times_.empty()) return r;
  // Store and forward of k packets over the hops (f_h: a full packet's time on hop h, l_h the
  // last packet's): packet p leaves hop h at T(p, h) = max(T(p-1, h), T(p, h-1)) + its time,
  // plus fixed delays (already in r.latency). Packets 1..k-1 being alike, the last one's exit
  // is T = max over i of [sum_{h<=i} f_h + (k-2) max_{h<=i} f_h + sum_{h>=i} l_h] (k >= 2), or
  // sum l_h (k = 1). The flow's drain is its bytes at the bottleneck b (the slowest hop),
  // (k-1) f_b + l_b, so the route's latency holds T minus that: an uncongested flow ends when
  // the packet model's last packet does, whatever its size.
  const auto k = static_cast<Time::rep>(units.packets);
  Time last_total{};
  for (const auto& [full, last] : hop_times_) last_total += last;
  Time exit = last_total;
  if (k >= 2) {
    Time full_sum{}, full_max{}, last_rest = last_total;
    exit = Time::zero();
    for (const auto& [full, last] : hop_times_) {
      full_sum += full;
      full_max = std::max(full_max, full);
      exit = std::max(exit, full_sum + full_max * (k - 2) + last_rest);
      last_rest -= last;
    }
  }
  const auto b = std::max_element(hop_times_.begin(), hop_times_.end(),
                                  [](const auto& x, const auto& y) { return x.first < y.first; });
  r.latency += exit - (b->first * (k - 1) + b->second);
  return r;
}

void FlowNetwork::stage_in_host_memory(Route& r, Vertex from, Vertex cpu, Vertex to,
                                       const Units& unit) {
  // PCIe to the socket, a pass through its memory (one resource per socket, shared by all that
  // is staged there), PCIe from it.
  const auto& g = topo_.graph();
  add_pcie_path(r, from, cpu, unit);
  auto [it, inserted] = memory_res_.try_emplace(cpu, 0);
  if (inserted) {
    it->second = new_resource(static_cast<double>(params_.host.host_memory_rate.bps()) / 8);
    name_resource(it->second, "host memory", fmt::format("{}.memory", g[cpu].name),
                  params_.host.host_memory_rate);
  }
  r.resources.push_back(it->second);
  r.latency += params_.host.host_memory_latency;
  add_pcie_path(r, cpu, to, unit);
}

MaxMinSolver::Res FlowNetwork::nvlink_resource(Vertex gpu, bool outgoing, Bandwidth::rep bps) {
  // One resource per GPU and direction for its NVLink bundle (all switch planes together).
  auto [it, inserted] = nvlink_res_.try_emplace({gpu, outgoing}, 0);
  if (inserted) {
    it->second =
        new_resource(static_cast<double>(bps) / 8 *
                     payload_share(params_.host.nvlink_max_payload, params_.host.nvlink_overhead) *
                     efficiency_.nvlink);
    name_resource(it->second, "NVLink",
                  fmt::format("{}.nvlink_{}", topo_.graph()[gpu].name, outgoing ? "out" : "in"),
                  Bandwidth::from_bps(bps));
  }
  return it->second;
}

FlowNetwork::Route FlowNetwork::route_hops(const Message& m, const Units& unit) {
  const auto& g = topo_.graph();
  Route r;
  const bool host = params_.host_side && !gpus_.empty();
  if (host && (m.src_gpu == Message::kNvSwitch || m.dst_gpu == Message::kNvSwitch)) {
    // Half an NVLink transfer: the GPU's NVLink bundle towards the NVSwitches, or from them,
    // one hop's latency.
    const bool up = m.dst_gpu == Message::kNvSwitch;
    const Vertex gpu = up ? gpu_vertex(m.src, m.src_gpu) : gpu_vertex(m.dst, m.dst_gpu);
    const NvLinkBundle bundle = nvlink_bundle(g, gpu, true);
    if (bundle.total == 0)
      throw std::logic_error(fmt::format("{} has no NVLink to an NVSwitch", g[gpu].name));
    r.latency = bundle.latency;
    r.resources.push_back(nvlink_resource(gpu, up, bundle.total));
    return r;
  }
  const Vertex src_gpu = gpu_vertex(m.src, m.src_gpu), dst_gpu = gpu_vertex(m.dst, m.dst_gpu);
  if (inside_server(m)) {
    // Inside a server: NVLink through the NVSwitches (striped: the GPU's links together) or
    // a direct NVLink, else PCIe peer to peer, each where NCCL_P2P_LEVEL allows it; else
    // NCCL's SHM transport, staged through the receiving GPU's socket's memory.
    const GpuPath path = params_.host.gpu_path(g, src_gpu, dst_gpu);
    if (path == GpuPath::kHostMemory) {
      stage_in_host_memory(r, src_gpu, nic_socket_cpu(g, dst_gpu), dst_gpu, unit);
      return r;
    }
    if (path == GpuPath::kPcieP2p) {
      add_pcie_path(r, src_gpu, dst_gpu, unit);
      return r;
    }
    const auto flits = [&](Bytes u) {
      return u + params_.host.nvlink_overhead *
                     ((u.count() + params_.host.nvlink_max_payload.count() - 1) /
                      params_.host.nvlink_max_payload.count());
    };
    const Units flit{flits(unit.first), flits(unit.last), unit.packets};
    Bandwidth::rep out = 0, in = 0;
    Bandwidth hop_rate{};  // one switch-to-GPU link: where the last flit is stored and forwarded
    Time latency{};
    bool any = false;
    for (auto [e, end] = boost::out_edges(src_gpu, g); e != end; ++e) {
      if (g[*e].kind != LinkKind::kNvLink) continue;
      const Vertex peer = boost::target(*e, g);
      if (peer == dst_gpu) {
        add_hop(r, src_gpu, peer, g[*e], flit);
        return r;
      }
      if (g[peer].kind != NodeKind::kNvSwitch || !boost::edge(peer, dst_gpu, g).second) continue;
      out += g[*e].rate.bps();
      in += g[boost::edge(peer, dst_gpu, g).first].rate.bps();
      hop_rate = g[boost::edge(peer, dst_gpu, g).first].rate;
      latency = g[*e].latency;
      any = true;
    }
    if (any) {
      r.resources.push_back(nvlink_resource(src_gpu, true, out));
      r.resources.push_back(nvlink_resource(dst_gpu, false, in));
      r.latency = latency * 2 + tx_time(flit.first, hop_rate);
      return r;
    }
    add_pcie_path(r, src_gpu, dst_gpu, unit);
    return r;
  }
  const Vertex src_nic = topo_.fabric_endpoint(m.src), dst_nic = topo_.fabric_endpoint(m.dst);
  const auto host_leg = [&](Vertex gpu, Vertex nic, bool to_nic) {
    // GPUDirect when the pair's PCIe path crosses at most gdr_level CPUs; else staged through
    // host memory on the NIC's socket.
    const Vertex from = to_nic ? gpu : nic, to = to_nic ? nic : gpu;
    // PXN (HostFabricParams::nic_gpu): over NVLink to the GPU under the NIC's switch, then
    // PCIe from there; the NVLink leg counts on both GPUs' NVLink bundles, as at packet level.
    if (const Vertex via = params_.host.nic_gpu(g, gpu, nic, to_nic); via != gpu) {
      const NvLinkBundle bundle = nvlink_bundle(g, gpu, false);
      const auto flit = [&](Bytes u) {
        return u + params_.host.pcie_tlp_overhead *
                       ((u.count() + params_.host.pcie_max_payload.count() - 1) /
                        params_.host.pcie_max_payload.count());
      };
      const auto nvlink = [&] {
        r.resources.push_back(nvlink_resource(to_nic ? gpu : via, true, bundle.total));
        r.resources.push_back(nvlink_resource(to_nic ? via : gpu, false, bundle.total));
        r.latency += bundle.latency * 2;
        hop_times_.emplace_back(tx_time(flit(unit.first), bundle.link),
                                tx_time(flit(unit.last), bundle.link));
      };
      if (to_nic) nvlink();
      add_pcie_path(r, to_nic ? via : nic, to_nic ? nic : via, unit);
      if (!to_nic) nvlink();
      return;
    }
    if (params_.host.gpudirect_between(g, gpu, nic, to_nic)) {
      add_pcie_path(r, from, to, unit);
      return;
    }
    stage_in_host_memory(r, from, nic_socket_cpu(g, nic), to, unit);
  };
  // An aggregation node (SHARP) has no host side: its data starts and ends in the switch.
  if (host && g[src_nic].kind != NodeKind::kAggregator) host_leg(src_gpu, src_nic, true);
  if (m.src != m.dst) {
    // The network path the packet model's ECMP picks for this queue pair's data.
    const Bytes header = params_.nic.format.header;
    const Units packet{unit.first + header, unit.last + header, unit.packets};
    if (m.size > Bytes(0)) {
      const auto mtu = static_cast<double>(params_.nic.format.mtu.count());
      const auto size = static_cast<double>(m.size.count());
      r.volume = static_cast<double>((m.size + header * unit.packets).count()) * mtu /
                 (size * (mtu + static_cast<double>(header.count())));
    }
    std::size_t s = routing_.endpoint_switch(m.src);
    const LinkInfo& first_link = g[routing_.endpoint_link(m.src)];
    add_hop(r, src_nic, routing_.switch_vertex(s), first_link, packet);
    r.latency += params_.switch_latency;
    // The sending NIC's per-message overhead (RDMA; as RdmaNic adds it at packet level).
    if (params_.nic.transport == Transport::kRdma) r.latency += params_.nic.message_overhead;
    const std::uint64_t flow = std::uint64_t{m.connection} << 1;
    for (int guard = 0; guard < 64; ++guard) {
      const PortIndex p = routing_.select(s, m.dst, flow, params_.path_selection);
      const auto& port = routing_.ports(s)[p];
      r.resources.push_back(port_res_.at({s, p}));
      r.latency += g[port.edge].latency;
      hop_times_.emplace_back(tx_time(packet.first, g[port.edge].rate),
                              tx_time(packet.last, g[port.edge].rate));
      if (s == routing_.endpoint_switch(m.dst)) break;
      r.latency += params_.switch_latency;
      s = switch_of_vertex_.at(port.peer);
    }
  }
  if (host && g[dst_nic].kind != NodeKind::kAggregator) host_leg(dst_gpu, dst_nic, false);
  return r;
}

std::size_t FlowNetwork::RouteKeyHash::operator()(const RouteKey& k) const {
  // FNV-1a over the fields (the key is small and hashed once per lookup).
  std::uint64_t h = 1469598103934665603ull;
  for (const std::uint64_t v :
       {std::uint64_t{k.src}, std::uint64_t{k.dst}, std::uint64_t{k.src_gpu},
        std::uint64_t{k.dst_gpu}, std::uint64_t{k.connection}, static_cast<std::uint64_t>(k.unit),
        static_cast<std::uint64_t>(k.last)})
    h = (h ^ v) * 1099511628211ull;
  return static_cast<std::size_t>(h);
}

const FlowNetwork::Route& FlowNetwork::connection_route(const Message& m) {
  // The key holds everything route_of reads of the message: its ends, its connection (the
  // ECMP hash) and the packet it sizes latencies with.
  const Units units = packet_units(m);
  const RouteKey key{
      m.src, m.dst, m.src_gpu, m.dst_gpu, m.connection, units.first.count(), units.last.count()};
  auto it = route_cache_.find(key);
  if (it == route_cache_.end()) it = route_cache_.emplace(key, route_of(m)).first;
  return it->second;
}

std::uint32_t FlowNetwork::open_connection() {
  connections_.emplace_back();
  return static_cast<std::uint32_t>(connections_.size() - 1);
}

std::uint64_t FlowNetwork::new_message(const Message& m) {
  std::uint64_t id = log_.size();
  if (!free_messages_.empty()) {
    id = free_messages_.back();
    free_messages_.pop_back();
    log_[id] = m;
  } else {
    log_.push_back(m);
  }
  return id;
}

std::uint64_t FlowNetwork::post(const Message& m) {
  const std::uint64_t id = new_message(m);
  if (log_[id].connection == Message::kOwnConnection) log_[id].connection = open_connection();
  sim_.schedule_at(m.start, start_, id);
  return id;
}

void FlowNetwork::start_messages() {
  for (std::uint64_t id = 0; id < log_.size(); ++id) {
    if (log_[id].connection == Message::kOwnConnection) log_[id].connection = open_connection();
    sim_.schedule_at(log_[id].start, start_, id);
  }
}

void FlowNetwork::on_start(std::uint64_t id) {
  // A network message first passes its NIC's send engine (RDMA message rate), one at a time
  // in posting order, as RdmaNic's at packet level.
  const Message& m = log_[id];
  if (engines_[m.src].limits() && m.src != m.dst && !inside_server(m)) {
    const Time ready = engines_[m.src].admit(sim_.now());
    if (ready > sim_.now()) {
      sim_.schedule_at(ready, enqueue_, id);
      return;
    }
  }
  enqueue(id);
}

void FlowNetwork::enqueue(std::uint64_t id) {
  auto& queue = connections_[log_[id].connection];
  queue.push_back(id);
  if (queue.size() == 1) activate(id);  // otherwise it waits for the QP's earlier messages
}

void FlowNetwork::activate(std::uint64_t id) {
  const Route r = route_of(log_[id]);
  flows_[start_flow(id, r.resources, r.latency)].remaining *= r.volume;
}

std::uint64_t FlowNetwork::post_pipeline(std::span<const Message> members, Bytes bytes,
                                         double rate_cap, Time floor, Time tail) {
  Message m = members.front();
  m.size = bytes;
  m.start = sim_.now();
  const std::uint64_t id = new_message(m);
  scratch_.clear();
  for (const Message& member : members) {
    const Route& r = connection_route(member);
    scratch_.insert(scratch_.end(), r.resources.begin(), r.resources.end());
  }
  // The copy engines' limit: a resource of the pipeline's own.
  MaxMinSolver::Res cap;
  if (!free_caps_.empty()) {
    cap = free_caps_.back();
    free_caps_.pop_back();
    solver_.set_capacity(cap, rate_cap);
  } else {
    cap = new_resource(rate_cap);
  }
  scratch_.push_back(cap);
  const std::uint32_t f = start_flow(id, scratch_, tail);
  flows_[f].cap = cap;
  flows_[f].queued = false;
  flows_[f].rx_nics.reserve(members.size());
  for (const Message& member : members)
    if (member.src != member.dst && !inside_server(member)) flows_[f].rx_nics.push_back(member.dst);
  flows_[f].not_before = sim_.now() + floor;
  return id;
}

std::uint32_t FlowNetwork::start_flow(std::uint64_t id,
                                      std::span<const MaxMinSolver::Res> resources, Time latency) {
  std::uint32_t f;
  if (!free_flows_.empty()) {
    f = free_flows_.back();
    free_flows_.pop_back();
  } else {
    f = static_cast<std::uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  Flow& flow = flows_[f];
  flow = Flow{};
  flow.message = id;
  flow.remaining = static_cast<double>(log_[id].size.count());
  flow.last = sim_.now();
  flow.latency = latency;
  if (resources.empty() || log_[id].size == Bytes(0)) {
    // Nothing to share (a message to itself, or empty): only the latency.
    flow.var = UINT32_MAX;
    flow.drain = sim_.schedule_cancellable_at(sim_.now(), drain_, f);
    return f;
  }
  flow.var = solver_.add_variable(resources);
  if (flow_of_var_.size() <= flow.var) flow_of_var_.resize(flow.var + 1);
  flow_of_var_[flow.var] = f;
  request_update();
  return f;
}

void FlowNetwork::request_update() {
  if (update_pending_) return;
  update_pending_ = true;
  sim_.schedule_at(sim_.now(), update_, 0, kLast);
}

void FlowNetwork::on_update(std::uint64_t) {
  update_pending_ = false;
  changed_.clear();
  resolved_ += solver_.solve(&changed_);
  ++updates_;
  const Time now = sim_.now();
  for (const MaxMinSolver::Var v : changed_) {
    Flow& flow = flows_[flow_of_var_[v]];
    flow.remaining = std::max(0.0, flow.remaining - flow.rate * (now - flow.last).seconds());
    flow.last = now;
    flow.rate = solver_.rate(v);
    sim_.cancel(flow.drain);
    if (flow.rate <= 0) continue;
    const double ps = std::ceil(flow.remaining / flow.rate * 1e12);
    flow.drain = sim_.schedule_cancellable_at(now + Time::from_ps(static_cast<Time::rep>(ps)),
                                              drain_, flow_of_var_[v]);
  }
}

void FlowNetwork::on_drain(std::uint64_t f) {
  Flow& flow = flows_[f];
  const std::uint64_t id = flow.message;
  if (flow.var != UINT32_MAX) {
    for (const auto r : solver_.resources(flow.var))
      res_bytes_[r] += static_cast<std::uint64_t>(log_[id].size.count());
    solver_.remove_variable(flow.var);
    request_update();
  }
  free_flows_.push_back(static_cast<std::uint32_t>(f));
  if (flow.cap != kNoCap) free_caps_.push_back(flow.cap);
  const bool queued = flow.queued;
  const Time done = std::max(sim_.now(), flow.not_before) + flow.latency;
  // The NICs' receive counters: a message that crossed the network, or each network-crossing
  // member of a pipeline (its bytes; a pipeline stands for many messages, so no message count).
  const Message& m = log_[id];
  const auto size = static_cast<std::uint64_t>(m.size.count());
  if (!flow.queued) {
    for (const std::uint32_t dst : flow.rx_nics) rx_payload_[dst]->add(size);
  } else if (m.src != m.dst && !inside_server(m)) {
    rx_payload_[m.dst]->add(size);
    rx_messages_[m.dst]->add();
  }
  log_.add_received(id, log_[id].size);
  log_.complete(id, done);
  if (recycle_) free_messages_.push_back(id);
  if (!queued) return;
  auto& queue = connections_[log_[id].connection];
  queue.pop_front();
  if (!queue.empty()) activate(queue.front());
}

}  // namespace fabricsim
