#include "net/port.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <bit>

namespace fabricsim {

EgressPort::EgressPort(Simulation& sim, Pool<Packet>& pool, const std::string& name,
                       const PortConfig& cfg)
    : sim_(sim),
      latency_(cfg.latency),
      strict_(cfg.strict),
      lossless_(cfg.lossless),
      credit_flow_(cfg.vl_credits > Bytes(0)),
      tx_done_(sim.bind<&EgressPort::on_tx_done>(*this)),
      arrival_(sim.bind<&EgressPort::on_arrival>(*this)),
      pool_(pool),
      cfg_(cfg),
      name_(name),
      pause_expiry_(sim.bind<&EgressPort::on_pause_expiry>(*this)),
      watchdog_(sim.bind<&EgressPort::on_watchdog>(*this)),
      credit_(sim.bind<&EgressPort::on_credit>(*this)) {
  ProbeRegistry& probes = sim.probes();
  probes.attach(name + ".queue_bytes", queue_gauge_);
  probes.attach(name + ".tx_bytes_cumulative", tx_bytes_gauge_);
  probes.attach(name + ".tx_packets", tx_packets_);
  probes.attach(name + ".tx_bytes", tx_bytes_);
  probes.attach(name + ".tx_data_packets", tx_data_packets_);
  credits_.fill(cfg.vl_credits);
  pause_span_.fill(ProbeRegistry::kNoSpan);
  for (int p = 0; p < kPriorities; ++p) {
    if ((lossless_ >> p & 1) == 0) continue;
    tx_pause_[p] = &probes.counter(fmt::format("{}.tx_prio{}_pause", name, p));
    rx_pause_[p] = &probes.counter(fmt::format("{}.rx_prio{}_pause", name, p));
    probes.attach(fmt::format("{}.prio{}_queue_bytes", name, p), prio_[p].queue_gauge);
    paused_gauge_[p] = &probes.gauge(fmt::format("{}.prio{}_paused", name, p));
    pause_span_name_[p] = probes.span_name(fmt::format("{}.prio{}_paused", name, p));
    rx_pause_duration_ns_[p] =
        &probes.counter(fmt::format("{}.rx_prio{}_pause_duration_ns", name, p));
    if (cfg.watchdog > Time::zero()) {
      watchdog_storms_[p] = &probes.counter(fmt::format("{}.pfc_watchdog_prio{}_storms", name, p));
      watchdog_dropped_[p] =
          &probes.counter(fmt::format("{}.pfc_watchdog_prio{}_dropped", name, p));
    }
  }
}

void EgressPort::account(Packet* p, bool added) {
  const Bytes size(p->wire_bytes);
  Priority& q = prio_[p->priority];
  if (added) {
    q.queued += size;
    total_queued_ += size;
    peak_queued_ = std::max(peak_queued_, total_queued_);
  } else {
    q.queued -= size;
    total_queued_ -= size;
  }
  queue_gauge_.set(static_cast<double>(total_queued_.count()));
  if (lossless_ >> p->priority & 1) q.queue_gauge.set(static_cast<double>(q.queued.count()));
}

void EgressPort::discard(Packet* p) {
  if (owner_ != nullptr) owner_->on_dequeue(*this, *p);  // give back its buffer
  watchdog_dropped_[p->priority]->add();
  pool_.release(p);
}

void EgressPort::enqueue(Packet* p) {
  if (prio_[p->priority].storm && cfg_.watchdog_drop) {
    discard(p);
    return;
  }
  prio_[p->priority].queue.push_back(p);
  nonempty_ |= static_cast<std::uint8_t>(1u << p->priority);
  ++waiting_;
  account(p, true);
  kick();
}

void EgressPort::send_pause(std::uint8_t priority, std::uint16_t quanta) {
  Packet* p = pool_.acquire();
  p->kind = PacketKind::kPause;
  p->priority = priority;
  p->psn = quanta;
  p->wire_bytes = static_cast<std::uint32_t>(kPauseFrameWireBytes.count());
  control_.push_back(p);
  ++waiting_;
  if (tx_pause_[priority] != nullptr) tx_pause_[priority]->add();
  kick();
}

void EgressPort::kick() {
  if (sim_.now() < busy_until_) {
    // Busy: make sure the transmitter wakes up for what waits.
    if (!tx_done_pending_ && (waiting_ > 0 || owner_pulls_)) schedule_tx_done(busy_until_);
    return;
  }
  if (Packet* p = next_packet()) start_transmission(p);
}

Packet* EgressPort::next_packet() {
  if (!control_.empty()) {
    --waiting_;
    return control_.pop_front();
  }
  // Only the priorities holding packets are looked at (nonempty_), so an idle priority costs
  // nothing and the usual one-priority fabric reads one queue.
  const auto eligible = [&](int prio) {
    return (nonempty_ >> prio & 1) && !paused(static_cast<std::uint8_t>(prio)) &&
           has_credit(static_cast<std::uint8_t>(prio), prio_[prio].queue.front()->wire_bytes);
  };
  const auto take = [&](int prio) {
    Packet* p = prio_[prio].queue.pop_front();
    if (prio_[prio].queue.empty()) nonempty_ &= static_cast<std::uint8_t>(~(1u << prio));
    --waiting_;
    account(p, false);
    if (owner_ != nullptr) owner_->on_dequeue(*this, *p);
    return p;
  };
  // Strict priorities first (all of them unless DWRR is configured), highest first.
  for (unsigned m = nonempty_ & strict_; m != 0;) {
    const int prio = std::bit_width(m) - 1;
    if (eligible(prio)) return take(prio);
    m &= ~(1u << prio);
  }
  if (strict_ != 0xff) {
    // Deficit weighted round robin over the other priorities (Shreedhar and Varghese): a
    // visited queue earns weight x quantum bytes of credit and sends while its head fits;
    // an empty or blocked queue keeps no credit.
    for (int visits = 0; visits < 2 * kPriorities + 1; ++visits) {
      const int prio = dwrr_next_;
      if ((cfg_.strict >> prio & 1) == 0 && eligible(prio)) {
        if (!dwrr_credited_) {  // once per turn
          dwrr_deficit_[prio] += kDwrrQuantum * cfg_.dwrr_weight[prio];
          dwrr_credited_ = true;
        }
        const Bytes head(prio_[prio].queue.front()->wire_bytes);
        if (dwrr_deficit_[prio] >= head) {
          dwrr_deficit_[prio] -= head;
          return take(prio);
        }
      } else {
        dwrr_deficit_[prio] = Bytes(0);
      }
      dwrr_next_ = (dwrr_next_ + 1) % kPriorities;
      dwrr_credited_ = false;
    }
  }
  return owner_ != nullptr ? owner_->pull(*this) : nullptr;
}

void EgressPort::start_transmission(Packet* p) {
  if (p->wire_bytes != cached_wire_bytes_) {
    cached_wire_bytes_ = p->wire_bytes;
    cached_tx_time_ = tx_time(Bytes(p->wire_bytes), cfg_.rate);
  }
  const Time done = sim_.now() + cached_tx_time_;
  if (credit_flow_ && p->kind != PacketKind::kPause) credits_[p->priority] -= Bytes(p->wire_bytes);
  tx_packets_.add();
  tx_bytes_.add(p->wire_bytes);
  tx_bytes_gauge_.set(static_cast<double>(tx_bytes_.value));
  if (p->kind == PacketKind::kData) tx_data_packets_.add();
  busy_until_ = done;
  if (waiting_ > 0 || owner_pulls_) schedule_tx_done(done);
  p->wire_arrival = done + latency_;
  if (wire_.empty()) sim_.schedule_at(p->wire_arrival, arrival_);
  wire_.push_back(p);
}

void EgressPort::return_credit(std::uint8_t priority, std::uint32_t bytes) {
  if (!credit_flow_) return;
  sim_.schedule_in(latency_, credit_, (std::uint64_t{priority} << 32) | bytes);
}

void EgressPort::on_credit(std::uint64_t payload) {
  credits_[payload >> 32] += Bytes(static_cast<Bytes::rep>(payload & 0xffffffffu));
  kick();
}

void EgressPort::schedule_tx_done(Time at) {
  // A transmission can start at the very instant an older transmission-done event is still
  // queued (another event at that time kicked the port first); the generation makes that old
  // event stale, so there is never more than one live one.
  tx_done_pending_ = true;
  sim_.schedule_at(at, tx_done_, ++tx_generation_);
}

void EgressPort::on_tx_done(std::uint64_t generation) {
  if (generation != tx_generation_) return;
  tx_done_pending_ = false;
  kick();
}

void EgressPort::on_arrival(std::uint64_t) {
  Packet* p = wire_.pop_front();
  if (!wire_.empty()) sim_.schedule_at(wire_.front()->wire_arrival, arrival_);
  if (p->kind == PacketKind::kPause) {
    // A PFC frame is consumed by the receiving MAC and pauses its transmitter on this cable.
    reverse_->apply_pause(p->priority, static_cast<std::uint16_t>(p->psn));
    pool_.release(p);
    return;
  }
  sink_->receive(p, far_port_);
}

void EgressPort::apply_pause(std::uint8_t priority, std::uint16_t quanta) {
  const Time now = sim_.now();
  const bool was_paused = paused(priority);
  if (rx_pause_[priority] != nullptr) rx_pause_[priority]->add();
  if (was_paused && rx_pause_duration_ns_[priority] != nullptr)
    rx_pause_duration_ns_[priority]->add(
        static_cast<std::uint64_t>((now - pause_started_[priority]).ps() / 1000));
  sim_.cancel(pause_timer_[priority]);
  if (quanta == 0) {
    prio_[priority].paused_until = now;
    end_pause(priority);
    kick();
    return;
  }
  if (!was_paused && !prio_[priority].storm && cfg_.watchdog > Time::zero() &&
      (lossless_ >> priority & 1)) {
    sim_.cancel(watchdog_timer_[priority]);
    watchdog_timer_[priority] =
        sim_.schedule_cancellable_at(now + cfg_.watchdog, watchdog_, priority);
  }
  // One quantum is 512 bit times at this link's rate: 64 bytes' serialization time.
  prio_[priority].paused_until = now + tx_time(Bytes(64LL * quanta), cfg_.rate);
  if (paused_gauge_[priority] != nullptr) paused_gauge_[priority]->set(1);
  if (pause_span_[priority] == ProbeRegistry::kNoSpan && (lossless_ >> priority & 1))
    pause_span_[priority] = sim_.probes().open_span(pause_span_name_[priority], now);
  pause_started_[priority] = now;
  pause_timer_[priority] =
      sim_.schedule_cancellable_at(prio_[priority].paused_until, pause_expiry_, priority);
}

void EgressPort::on_pause_expiry(std::uint64_t priority) {
  const auto prio = static_cast<std::uint8_t>(priority);
  if (rx_pause_duration_ns_[prio] != nullptr)
    rx_pause_duration_ns_[prio]->add(
        static_cast<std::uint64_t>((sim_.now() - pause_started_[prio]).ps() / 1000));
  end_pause(prio);
  kick();
}

void EgressPort::end_pause(std::uint8_t priority) {
  if (paused_gauge_[priority] != nullptr) paused_gauge_[priority]->set(0);
  sim_.probes().close_span(pause_span_[priority], sim_.now());
  pause_span_[priority] = ProbeRegistry::kNoSpan;
  sim_.cancel(watchdog_timer_[priority]);
  prio_[priority].storm = false;
}

void EgressPort::on_watchdog(std::uint64_t priority) {
  // Paused without a break for the whole detection time: a pause storm (or a deadlock).
  const auto prio = static_cast<std::uint8_t>(priority);
  prio_[prio].storm = true;
  watchdog_storms_[prio]->add();
  if (cfg_.watchdog_drop) {
    PacketFifo& q = prio_[prio].queue;
    nonempty_ &= static_cast<std::uint8_t>(~(1u << prio));
    while (!q.empty()) {
      Packet* p = q.pop_front();
      --waiting_;
      account(p, false);
      discard(p);
    }
  }
  kick();
}

}  // namespace fabricsim
