#include "topologies/star.hpp"

namespace fabricsim {

StarFabric::StarFabric(Simulation& sim, const StarSpec& spec)
    : spec_(spec), switch_(sim, pool_, "switch0") {
  const PortConfig nic{.rate = spec.link_rate, .latency = spec.cable_latency + spec.switch_latency};
  const PortConfig down{
      .rate = spec.link_rate, .latency = spec.cable_latency, .capacity = spec.port_buffer};
  for (std::uint32_t h = 0; h < spec.hosts; ++h) {
    hosts_.push_back(std::make_unique<Host>(sim, pool_, messages_, h, spec.format, nic));
    EgressPort& port = switch_.add_port(down);
    port.connect(hosts_.back().get());
    hosts_.back()->nic().connect(&switch_);
    switch_.set_route(h, h);
  }
}

void StarFabric::start_messages() {
  for (std::size_t id = 0; id < messages_.size(); ++id)
    hosts_[messages_[id].src]->schedule_message(id);
}

}  // namespace fabricsim
