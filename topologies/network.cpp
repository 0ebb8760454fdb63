#include "topologies/network.hpp"

namespace fabricsim {

PacketNetwork::PacketNetwork(Simulation& sim, const Topology& topo, const Routing& routing,
                             const NetworkParams& params)
    : routing_(routing), params_(params) {
  const auto& g = topo.graph();
  std::vector<std::int32_t> switch_of_vertex(boost::num_vertices(g), -1);
  for (std::size_t s = 0; s < routing.switch_count(); ++s) {
    const Vertex v = routing.switch_vertex(s);
    switch_of_vertex[v] = static_cast<std::int32_t>(s);
    switches_.push_back(
        std::make_unique<Switch>(sim, pool_, g[v].name, static_cast<std::uint32_t>(s), *this));
  }
  std::vector<std::int32_t> endpoint_of_vertex(boost::num_vertices(g), -1);
  for (std::size_t e = 0; e < routing.endpoint_count(); ++e) {
    endpoint_of_vertex[topo.endpoints()[e]] = static_cast<std::int32_t>(e);
    const LinkInfo& link = g[routing.endpoint_link(e)];
    const PortConfig nic{.rate = link.rate, .latency = link.latency + params.switch_latency};
    hosts_.push_back(std::make_unique<Host>(sim, pool_, messages_, static_cast<std::uint32_t>(e),
                                            g[topo.endpoints()[e]].name, params.format, nic));
    hosts_.back()->nic().connect(switches_[routing.endpoint_switch(e)].get());
  }
  for (std::size_t s = 0; s < routing.switch_count(); ++s) {
    for (const auto& port : routing.ports(s)) {
      const LinkInfo& link = g[port.edge];
      const std::int32_t peer_switch = switch_of_vertex[port.peer];
      const PortConfig cfg{
          .rate = link.rate,
          .latency = link.latency + (peer_switch >= 0 ? params.switch_latency : Time::zero()),
          .capacity = params.port_buffer};
      EgressPort& egress = switches_[s]->add_port(cfg);
      if (peer_switch >= 0) {
        egress.connect(switches_[peer_switch].get());
      } else {
        egress.connect(hosts_[endpoint_of_vertex[port.peer]].get());
      }
    }
  }
}

std::uint16_t PacketNetwork::egress(std::uint32_t switch_index, const Packet& p) {
  const std::uint64_t flow =
      params_.path_selection == PathSelection::kSpray ? spray_counter_++ : p.message;
  return routing_.select(switch_index, p.dst, flow, params_.path_selection);
}

void PacketNetwork::start_messages() {
  for (std::size_t id = 0; id < messages_.size(); ++id)
    hosts_[messages_[id].src]->schedule_message(id);
}

}  // namespace fabricsim
