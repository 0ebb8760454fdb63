#include "models/switch/switch.hpp"

#include <fmt/format.h>
#include <bit>
#include <stdexcept>

namespace fabricsim {

Switch::Switch(Simulation& sim, Pool<Packet>& pool, std::string name, std::uint32_t index,
               Forwarding& forwarding, const BufferConfig& buffer)
    : sim_(sim),
      pool_(pool),
      name_(std::move(name)),
      index_(index),
      forwarding_(forwarding),
      cfg_(buffer),
      rng_(sim.rng().stream(name_ + ".ecn")),
      refresh_(sim.bind<&Switch::on_refresh>(*this)),
      drops_(sim.probes().counter(name_ + ".drop_packets")),
      lossless_drops_(sim.probes().counter(name_ + ".lossless_drop_packets")),
      buffer_used_(sim.probes().gauge(name_ + ".buffer_bytes")) {}

EgressPort& Switch::add_port(const PortConfig& cfg) {
  ports_.push_back(std::make_unique<EgressPort>(
      sim_, pool_, fmt::format("{}.port{}", name_, ports_.size()), cfg));
  const auto slot = static_cast<std::uint32_t>(ports_.size() - 1);
  ports_.back()->set_owner(this, false, slot);
  // Marks count per egress port, as switches count them per port and traffic class.
  if (cfg_.ecn.enabled)
    ecn_marked_.push_back(&sim_.probes().counter(ports_.back()->name() + ".ecn_marked_packets"));
  return *ports_.back();
}

Bytes shared_pool_of(const BufferConfig& cfg, std::size_t ports) {
  const auto lossless_count = cfg.pfc ? std::popcount(cfg.lossless) : 0;
  const auto n = static_cast<Bytes::rep>(ports);
  return cfg.buffer - cfg.reserved * (n * (lossless_count + 1)) -
         cfg.headroom * (n * lossless_count);
}

std::string buffer_shortfall(const BufferConfig& cfg, std::size_t ports) {
  if (shared_pool_of(cfg, ports) >= Bytes(0)) return {};
  const auto lossless_count = cfg.pfc ? std::popcount(cfg.lossless) : 0;
  const auto n = static_cast<Bytes::rep>(ports);
  return fmt::format(
      "buffer {} is smaller than the reserved ({} x {}) and headroom ({} x {}) space of {} "
      "ports; raise switch.buffer or lower switch.reserved / switch.headroom",
      to_string(cfg.buffer), n * (lossless_count + 1), to_string(cfg.reserved), n * lossless_count,
      to_string(cfg.headroom), ports);
}

void Switch::seal() {
  queues_.assign(ports_.size() * 8, IngressQueue{});
  shared_pool_ = shared_pool_of(cfg_, ports_.size());
  if (shared_pool_ < Bytes(0))
    throw std::invalid_argument(
        fmt::format("switch {}: {}", name_, buffer_shortfall(cfg_, ports_.size())));
}

Bytes Switch::threshold() const {
  const double free = static_cast<double>((shared_pool_ - shared_used_).count());
  return Bytes(static_cast<Bytes::rep>(cfg_.alpha * free));
}

Time Switch::pause_time(std::size_t ingress) const {
  return tx_time(Bytes(64LL * cfg_.pause_quanta), ports_[ingress]->config().rate);
}

void Switch::receive(Packet* p, PortIndex ingress) {
  p->ingress = ingress;
  EgressPort& out = *ports_[forwarding_.egress(index_, *p)];
  IngressQueue& q = queues_[ingress * 8u + p->priority];
  const Bytes size(p->wire_bytes);
  if (cfg_.vl_credits > Bytes(0)) {
    // The upstream port held credits for these bytes: room is guaranteed.
    q.reserved += size;
    p->charge = kReserved;
  } else if (q.reserved + size <= cfg_.reserved) {
    q.reserved += size;
    p->charge = kReserved;
  } else if (q.shared + size <= threshold() && shared_used_ + size <= shared_pool_) {
    q.shared += size;
    shared_used_ += size;
    p->charge = kShared;
  } else if (lossless(p->priority) && q.headroom + size <= cfg_.headroom) {
    q.headroom += size;
    p->charge = kHeadroom;
  } else {
    drops_.add();
    if (lossless(p->priority)) lossless_drops_.add();
    pool_.release(p);
    return;
  }
  used_ += size;
  buffer_used_.set(static_cast<double>(used_.count()));
  const std::uint8_t prio = p->priority;
  out.enqueue(p);
  if (lossless(prio)) check_xoff(ingress, prio);
}

void Switch::check_xoff(std::size_t ingress, std::uint8_t priority) {
  IngressQueue& q = queues_[ingress * 8 + priority];
  if (q.xoff) return;
  if (cfg_.pfc_xoff > Bytes(0) ? q.reserved + q.shared + q.headroom < cfg_.pfc_xoff
                               : q.headroom == Bytes(0) && q.shared < threshold())
    return;
  q.xoff = true;
  ++q.refresh_generation;
  ports_[ingress]->send_pause(priority, cfg_.pause_quanta);
  sim_.schedule_in(pause_time(ingress) / 2, refresh_,
                   (std::uint64_t{q.refresh_generation} << 32) | (ingress * 8 + priority));
}

void Switch::check_xon(std::size_t ingress, std::uint8_t priority) {
  IngressQueue& q = queues_[ingress * 8 + priority];
  if (!q.xoff) return;
  if (cfg_.pfc_xoff > Bytes(0)
          ? q.reserved + q.shared + q.headroom > cfg_.pfc_xon
          : q.headroom > Bytes(0) || q.shared + cfg_.resume_offset > threshold())
    return;
  q.xoff = false;
  ++q.refresh_generation;
  ports_[ingress]->send_pause(priority, 0);
}

void Switch::on_refresh(std::uint64_t payload) {
  const auto slot = static_cast<std::size_t>(payload & 0xffffffffu);
  IngressQueue& q = queues_[slot];
  if (!q.xoff || q.refresh_generation != static_cast<std::uint32_t>(payload >> 32)) return;
  const std::size_t ingress = slot / 8;
  const auto priority = static_cast<std::uint8_t>(slot % 8);
  check_xon(ingress, priority);
  if (!q.xoff) return;
  // Still congested: renew the pause before the upstream timer runs out.
  ports_[ingress]->send_pause(priority, cfg_.pause_quanta);
  sim_.schedule_in(pause_time(ingress) / 2, refresh_, payload);
}

void Switch::on_dequeue(EgressPort& port, Packet& p) {
  IngressQueue& q = queues_[p.ingress * 8u + p.priority];
  const Bytes size(p.wire_bytes);
  switch (p.charge) {
    case kReserved:
      q.reserved -= size;
      break;
    case kShared:
      q.shared -= size;
      shared_used_ -= size;
      break;
    default:
      q.headroom -= size;
      break;
  }
  used_ -= size;
  buffer_used_.set(static_cast<double>(used_.count()));
  // The buffer the packet held on its ingress is free again: give the credits back upstream.
  if (cfg_.vl_credits > Bytes(0))
    ports_[p.ingress]->reverse()->return_credit(p.priority, p.wire_bytes);
  if (cfg_.ecn.enabled && (cfg_.ecn_priorities >> p.priority & 1) && p.kind == PacketKind::kData) {
    const Bytes qlen = port.queued(p.priority);
    double mark = 0;
    if (qlen > cfg_.ecn.kmax) {
      mark = 1;
    } else if (qlen > cfg_.ecn.kmin) {
      mark = cfg_.ecn.pmax * static_cast<double>((qlen - cfg_.ecn.kmin).count()) /
             static_cast<double>((cfg_.ecn.kmax - cfg_.ecn.kmin).count());
    }
    if (mark > 0 && rng_.uniform01() < mark) {
      p.ecn = true;
      ecn_marked_[port.owner_slot()]->add();
    }
  }
  if (lossless(p.priority)) check_xon(p.ingress, p.priority);
}

}  // namespace fabricsim
