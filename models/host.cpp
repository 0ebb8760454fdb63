#include "models/host.hpp"

#include <fmt/format.h>
#include <algorithm>

namespace fabricsim {

Host::Host(Simulation& sim, Pool<Packet>& pool, std::vector<Message>& log, std::uint32_t index,
           const std::string& name, const PacketFormat& format, const PortConfig& nic)
    : sim_(sim),
      pool_(pool),
      log_(log),
      index_(index),
      format_(format),
      nic_(sim, pool, name + ".nic", nic),
      start_(sim.bind<&Host::on_message_start>(*this)),
      rx_bytes_(sim.probes().counter(name + ".rx_payload_bytes")),
      messages_done_(sim.probes().counter(name + ".rx_messages")) {
  nic_.set_source(this);
}

void Host::schedule_message(std::uint64_t id) {
  sim_.schedule_at(log_[id].start, start_, id);
}

void Host::on_message_start(std::uint64_t id) {
  sending_.push_back(id);
  nic_.kick();
}

Packet* Host::pull() {
  while (!sending_.empty()) {
    Message& m = log_[sending_.front()];
    const Bytes left = m.size - m.sent;
    if (left.count() == 0) {
      sending_.pop_front();
      continue;
    }
    const Bytes payload = std::min(left, format_.mtu);
    m.sent += payload;
    Packet* p = pool_.acquire();
    p->message = sending_.front();
    p->src = index_;
    p->dst = m.dst;
    p->payload = static_cast<std::uint32_t>(payload.count());
    p->wire_bytes = static_cast<std::uint32_t>((payload + format_.header).count());
    return p;
  }
  return nullptr;
}

void Host::receive(Packet* p) {
  Message& m = log_[p->message];
  m.received += Bytes(p->payload);
  rx_bytes_.add(p->payload);
  if (m.received == m.size) {
    m.finish = sim_.now();
    messages_done_.add();
  }
  pool_.release(p);
}

Switch::Switch(Simulation& sim, Pool<Packet>& pool, std::string name, std::uint32_t index,
               Forwarding& forwarding)
    : sim_(sim), pool_(pool), name_(std::move(name)), index_(index), forwarding_(forwarding) {}

EgressPort& Switch::add_port(const PortConfig& cfg) {
  ports_.push_back(std::make_unique<EgressPort>(
      sim_, pool_, fmt::format("{}.port{}", name_, ports_.size()), cfg));
  return *ports_.back();
}

}  // namespace fabricsim
