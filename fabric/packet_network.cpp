#include "fabric/packet_network.hpp"

#include <fmt/format.h>
#include <map>

#include "fabric/monitor.hpp"

namespace fabricsim {

PacketNetwork::PacketNetwork(Simulation& sim, const Topology& topo, const Routing& routing,
                             const NetworkParams& params)
    : sim_(sim), topo_(topo), routing_(routing), params_(params) {
  const auto& g = topo.graph();
  const std::uint8_t lossless = params.buffer.pfc ? params.buffer.lossless : 0;
  std::vector<std::int32_t> switch_of_vertex(boost::num_vertices(g), -1);
  for (std::size_t s = 0; s < routing.switch_count(); ++s) {
    const Vertex v = routing.switch_vertex(s);
    switch_of_vertex[v] = static_cast<std::int32_t>(s);
    switches_.push_back(std::make_unique<Switch>(
        sim, pool_, g[v].name, static_cast<std::uint32_t>(s), *this, params.buffer));
  }
  // InfiniBand: the credits an upstream port holds are the receive buffer its far end set aside
  // for that (port, VL). A switch carves its one buffer into those receive buffers, so it can
  // promise at most buffer / (ports x VLs in use) each: with vl_buffer 256 KiB on a 1 MiB,
  // 8-port switch every (port, VL) gets 64 KiB, and the switch never holds more than its
  // buffer. VLs in use: the NICs' data priority and their CNP priority. A NIC's own receive
  // buffer (host memory) is vl_buffer.
  const int vls = params.nic.priority == params.nic.cnp_priority ? 1 : 2;
  // A SHARP aggregation node's internal port carries k ports' worth (its rate over the
  // switch's fastest cable, rounded up: every port at once by default), so it counts as k
  // ports and its far end gets k shares: with one share it could keep only a few of the
  // egress ports its results fan out to busy, which the ASIC's aggregation unit, writing into
  // the shared buffer directly, does not suffer.
  std::vector<Bytes> receive_buffer(routing.switch_count(), params.buffer.vl_credits);
  std::vector<Bytes::rep> aggregator_shares(routing.switch_count(), 1);
  if (params.buffer.vl_credits > Bytes(0))
    for (std::size_t s = 0; s < routing.switch_count(); ++s) {
      Bandwidth::rep fastest = 1, internal = 0;
      for (const auto& port : routing.ports(s)) {
        Bandwidth::rep& max = g[port.peer].kind == NodeKind::kAggregator ? internal : fastest;
        max = std::max(max, g[port.edge].rate.bps());
      }
      Bytes::rep shares = static_cast<Bytes::rep>(routing.ports(s).size());
      if (internal > 0) {
        aggregator_shares[s] = std::max<Bytes::rep>(1, (internal + fastest - 1) / fastest);
        shares += aggregator_shares[s] - 1;
      }
      receive_buffer[s] =
          std::min(params.buffer.vl_credits,
                   Bytes(params.buffer.buffer.count() / std::max<Bytes::rep>(1, shares * vls)));
    }
  std::vector<std::int32_t> endpoint_of_vertex(boost::num_vertices(g), -1);
  for (std::size_t e = 0; e < routing.endpoint_count(); ++e) {
    endpoint_of_vertex[topo.fabric_endpoint(e)] = static_cast<std::int32_t>(e);
    const LinkInfo& link = g[routing.endpoint_link(e)];
    const PortConfig port{.rate = link.rate,
                          .latency = link.latency + params.switch_latency,
                          .lossless = lossless,
                          .vl_credits = receive_buffer[routing.endpoint_switch(e)] *
                                        (g[topo.fabric_endpoint(e)].kind == NodeKind::kAggregator
                                             ? aggregator_shares[routing.endpoint_switch(e)]
                                             : 1)};
    nics_.push_back(std::make_unique<RdmaNic>(sim, pool_, messages_, qps_, errors_,
                                              static_cast<std::uint32_t>(e),
                                              g[topo.fabric_endpoint(e)].name, params.nic, port));
  }
  // Both directions of every cable: (switch, port) at each end, keyed by the link's properties.
  std::map<const LinkInfo*, std::vector<std::pair<std::size_t, PortIndex>>> ends;
  for (std::size_t s = 0; s < routing.switch_count(); ++s) {
    for (std::size_t p = 0; p < routing.ports(s).size(); ++p) {
      const auto& port = routing.ports(s)[p];
      const LinkInfo& link = g[port.edge];
      const std::int32_t peer_switch = switch_of_vertex[port.peer];
      switches_[s]->add_port(
          {.rate = link.rate,
           .latency = link.latency + (peer_switch >= 0 ? params.switch_latency : Time::zero()),
           .lossless = lossless,
           .watchdog = params.buffer.pfc_watchdog,
           .watchdog_drop = params.buffer.pfc_watchdog_drop,
           .vl_credits = peer_switch >= 0 ? receive_buffer[static_cast<std::size_t>(peer_switch)]
                                          : params.buffer.vl_credits,
           .strict = params.buffer.strict,
           .dwrr_weight = params.buffer.dwrr_weight});
      ends[&link].emplace_back(s, static_cast<PortIndex>(p));
    }
  }
  for (auto& sw : switches_) sw->seal();
  if (params.host_side) {
    std::vector<RdmaNic*> nics;
    for (auto& n : nics_) nics.push_back(n.get());
    host_ = std::make_unique<HostFabric>(sim, pool_, topo, messages_, std::move(nics),
                                         params.nic.format, params.host);
  }
  for (std::size_t s = 0; s < routing.switch_count(); ++s) {
    for (std::size_t p = 0; p < routing.ports(s).size(); ++p) {
      const auto& port = routing.ports(s)[p];
      EgressPort& out = switches_[s]->port(p);
      const std::int32_t peer_switch = switch_of_vertex[port.peer];
      if (peer_switch >= 0) {
        for (const auto& [t, q] : ends[&g[port.edge]]) {
          if (t == s && q == p) continue;
          out.connect(switches_[t].get(), q);
          out.set_reverse(&switches_[t]->port(q));
        }
      } else {
        RdmaNic& nic = *nics_[endpoint_of_vertex[port.peer]];
        out.connect(&nic, 0);
        out.set_reverse(&nic.port());
        nic.port().connect(switches_[s].get(), static_cast<PortIndex>(p));
        nic.port().set_reverse(&out);
      }
    }
  }
}

PortIndex PacketNetwork::egress(std::uint32_t switch_index, const Packet& p) {
  // Flow identity: the message (queue pair) and direction; control packets follow their QP.
  const std::uint64_t flow = params_.path_selection == PathSelection::kSpray
                                 ? spray_counter_++
                                 : (p.message << 1) | (p.kind == PacketKind::kData ? 0 : 1);
  if (params_.path_selection == PathSelection::kAdaptive) {
    // Adaptive routing (InfiniBand AR, Spectrum-X): the equal-cost port whose queue of the
    // packet's priority holds the fewest bytes now; among equal queues the first from a
    // per-flow starting point, so idle ports share flows as ECMP would.
    const auto hops = routing_.next_hops(switch_index, p.dst);
    const Switch& sw = *switches_[switch_index];
    const std::size_t start = (flow * 0x9E3779B97F4A7C15ull >> 32) % hops.size();
    PortIndex best = hops[start];
    Bytes least = sw.port(best).queued(p.priority);
    for (std::size_t k = 1; k < hops.size() && least > Bytes(0); ++k) {
      const PortIndex candidate = hops[(start + k) % hops.size()];
      if (const Bytes q = sw.port(candidate).queued(p.priority); q < least) {
        best = candidate;
        least = q;
      }
    }
    return best;
  }
  return routing_.select(switch_index, p.dst, flow, params_.path_selection);
}

void PacketNetwork::start_messages() {
  for (std::size_t id = 0; id < messages_.size(); ++id) {
    Message& m = messages_[id];
    if (m.connection == Message::kOwnConnection) m.connection = open_connection();
    nics_[m.src]->schedule_message(id);
  }
}

std::uint32_t PacketNetwork::open_connection() {
  qps_.emplace_back();
  return static_cast<std::uint32_t>(qps_.size() - 1);
}

std::uint64_t PacketNetwork::post(const Message& m) {
  const std::uint64_t id = messages_.size();
  messages_.messages.push_back(m);
  Message& added = messages_[id];
  if (added.connection == Message::kOwnConnection) added.connection = open_connection();
  nics_[added.src]->schedule_message(id);
  return id;
}

void PacketNetwork::for_each_link(const std::function<void(const Link&)>& f) const {
  // Wire bytes at the line rate (rate / 8 scales by a power of two: exact).
  bool switch_port = false;
  const auto visit = [&](std::string_view layer, const EgressPort& port) {
    f({layer, port.name(), port.tx_bytes(), static_cast<double>(port.config().rate.bps()) / 8,
       switch_port});
  };
  if (host_) host_->for_each_port(visit);
  for (const auto& nic : nics_) visit("NIC", nic->port());
  const auto& g = topo_.graph();
  switch_port = true;
  for (std::size_t s = 0; s < switches_.size(); ++s)
    for (std::size_t p = 0; p < routing_.ports(s).size(); ++p)
      visit(link_layer(g, routing_.switch_vertex(s), routing_.ports(s)[p].peer, LinkKind::kNetwork),
            switches_[s]->port(p));
}

PacketNetwork::~PacketNetwork() = default;

void PacketNetwork::watch(const MonitorConfig& cfg) {
  monitor_ = std::make_unique<FabricMonitor>(sim_, *this, cfg);
}

std::optional<Fabric::Verdict> PacketNetwork::verdict() const {
  if (!monitor_ || !monitor_->verdict()) return std::nullopt;
  return Verdict{*monitor_->verdict(), monitor_->report()};
}

std::vector<Metric> PacketNetwork::level_metrics() const {
  // Sums over this network's own probes: every NIC's and switch's counters of one kind.
  std::uint64_t drops = 0, pauses = 0, marks = 0, cnps = 0, resent = 0;
  for (const auto& c : sim_.probes().counters()) {
    const std::string_view n = c.name;
    if (n.ends_with(".drop_packets")) drops += c.value;
    if (is_pfc_pause_sent(n)) pauses += c.value;
    if (n.ends_with(".ecn_marked_packets")) marks += c.value;
    if (n.ends_with(".cnp_sent")) cnps += c.value;
    if (n.ends_with(".retransmitted_packets")) resent += c.value;
  }
  Bytes peak_queue{0};
  for (const auto& sw : switches_)
    for (std::size_t i = 0; i < sw->port_count(); ++i)
      peak_queue = std::max(peak_queue, sw->port(i).peak_queued());
  return {
      {"dropped_packets", static_cast<double>(drops), ""},
      {"pfc_pause_frames", static_cast<double>(pauses), ""},
      {"ecn_marked_packets", static_cast<double>(marks), ""},
      {"cnp_sent", static_cast<double>(cnps), ""},
      {"retransmitted_packets", static_cast<double>(resent), ""},
      {"qp_errors", static_cast<double>(errors_.size()), ""},
      {"peak_switch_queue_bytes", static_cast<double>(peak_queue.count()), "B"},
  };
}

}  // namespace fabricsim
