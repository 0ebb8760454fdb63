#include "models/port.hpp"

#include <algorithm>

namespace fabricsim {

EgressPort::EgressPort(Simulation& sim, Pool<Packet>& pool, const std::string& name,
                       const PortConfig& cfg)
    : sim_(sim),
      pool_(pool),
      cfg_(cfg),
      tx_done_(sim.bind<&EgressPort::on_tx_done>(*this)),
      arrival_(sim.bind<&EgressPort::on_arrival>(*this)),
      queue_gauge_(sim.probes().gauge(name + ".queue_bytes")),
      tx_packets_(sim.probes().counter(name + ".tx_packets")),
      tx_bytes_(sim.probes().counter(name + ".tx_bytes")),
      drops_(sim.probes().counter(name + ".drop_packets")),
      drop_bytes_(sim.probes().counter(name + ".drop_bytes")) {}

void EgressPort::enqueue(Packet* p) {
  if (!transmitting_ && queue_.empty()) {
    start_transmission(p);
    return;
  }
  const Bytes size(p->wire_bytes);
  if (queued_ + size > cfg_.capacity) {
    drops_.add();
    drop_bytes_.add(p->wire_bytes);
    pool_.release(p);
    return;
  }
  queue_.push_back(p);
  queued_ += size;
  peak_queued_ = std::max(peak_queued_, queued_);
  queue_gauge_.set(static_cast<double>(queued_.count()));
}

void EgressPort::kick() {
  if (transmitting_) return;
  if (Packet* p = next_packet()) start_transmission(p);
}

Packet* EgressPort::next_packet() {
  if (!queue_.empty()) {
    Packet* p = queue_.front();
    queue_.pop_front();
    queued_ -= Bytes(p->wire_bytes);
    queue_gauge_.set(static_cast<double>(queued_.count()));
    return p;
  }
  return source_ != nullptr ? source_->pull() : nullptr;
}

void EgressPort::start_transmission(Packet* p) {
  transmitting_ = true;
  const Time done = sim_.now() + tx_time(Bytes(p->wire_bytes), cfg_.rate);
  tx_packets_.add();
  tx_bytes_.add(p->wire_bytes);
  sim_.schedule_at(done, tx_done_);
  if (wire_.empty()) sim_.schedule_at(done + cfg_.latency, arrival_);
  wire_.push_back({done + cfg_.latency, p});
}

void EgressPort::on_tx_done(std::uint64_t) {
  transmitting_ = false;
  if (Packet* p = next_packet()) start_transmission(p);
}

void EgressPort::on_arrival(std::uint64_t) {
  Packet* p = wire_.front().packet;
  wire_.pop_front();
  if (!wire_.empty()) sim_.schedule_at(wire_.front().arrival, arrival_);
  sink_->receive(p);
}

}  // namespace fabricsim
