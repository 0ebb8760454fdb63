#include "net/port.hpp"

#include <fmt/format.h>
#include <algorithm>

namespace fabricsim {

EgressPort::EgressPort(Simulation& sim, Pool<Packet>& pool, const std::string& name,
                       const PortConfig& cfg)
    : sim_(sim),
      pool_(pool),
      name_(name),
      cfg_(cfg),
      tx_done_(sim.bind<&EgressPort::on_tx_done>(*this)),
      arrival_(sim.bind<&EgressPort::on_arrival>(*this)),
      pause_expiry_(sim.bind<&EgressPort::on_pause_expiry>(*this)),
      watchdog_(sim.bind<&EgressPort::on_watchdog>(*this)),
      credit_(sim.bind<&EgressPort::on_credit>(*this)),
      queue_gauge_(sim.probes().gauge(name + ".queue_bytes")),
      tx_bytes_gauge_(sim.probes().gauge(name + ".tx_bytes_cumulative")),
      tx_packets_(sim.probes().counter(name + ".tx_packets")),
      tx_bytes_(sim.probes().counter(name + ".tx_bytes")),
      tx_data_packets_(sim.probes().counter(name + ".tx_data_packets")) {
  credits_.fill(cfg.vl_credits);
  for (int p = 0; p < kPriorities; ++p) {
    if ((cfg.lossless >> p & 1) == 0) continue;
    tx_pause_[p] = &sim.probes().counter(fmt::format("{}.tx_prio{}_pause", name, p));
    rx_pause_[p] = &sim.probes().counter(fmt::format("{}.rx_prio{}_pause", name, p));
    prio_queue_gauge_[p] = &sim.probes().gauge(fmt::format("{}.prio{}_queue_bytes", name, p));
    paused_gauge_[p] = &sim.probes().gauge(fmt::format("{}.prio{}_paused", name, p));
    rx_pause_duration_ns_[p] =
        &sim.probes().counter(fmt::format("{}.rx_prio{}_pause_duration_ns", name, p));
    if (cfg.watchdog > Time::zero()) {
      watchdog_storms_[p] =
          &sim.probes().counter(fmt::format("{}.pfc_watchdog_prio{}_storms", name, p));
      watchdog_dropped_[p] =
          &sim.probes().counter(fmt::format("{}.pfc_watchdog_prio{}_dropped", name, p));
    }
  }
}

void EgressPort::account(Packet* p, bool added) {
  const Bytes size(p->wire_bytes);
  if (added) {
    queued_[p->priority] += size;
    total_queued_ += size;
    peak_queued_ = std::max(peak_queued_, total_queued_);
  } else {
    queued_[p->priority] -= size;
    total_queued_ -= size;
  }
  queue_gauge_.set(static_cast<double>(total_queued_.count()));
  if (prio_queue_gauge_[p->priority] != nullptr)
    prio_queue_gauge_[p->priority]->set(static_cast<double>(queued_[p->priority].count()));
}

void EgressPort::discard(Packet* p) {
  if (owner_ != nullptr) owner_->on_dequeue(*this, *p);  // give back its buffer
  watchdog_dropped_[p->priority]->add();
  pool_.release(p);
}

void EgressPort::enqueue(Packet* p) {
  if (storm_[p->priority] && cfg_.watchdog_drop) {
    discard(p);
    return;
  }
  queues_[p->priority].push_back(p);
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
    Packet* p = control_.front();
    control_.pop_front();
    --waiting_;
    return p;
  }
  const auto eligible = [&](int prio) {
    const auto& q = queues_[prio];
    return !q.empty() && !paused(static_cast<std::uint8_t>(prio)) &&
           has_credit(static_cast<std::uint8_t>(prio), q.front()->wire_bytes);
  };
  const auto take = [&](int prio) {
    Packet* p = queues_[prio].front();
    queues_[prio].pop_front();
    --waiting_;
    account(p, false);
    if (owner_ != nullptr) owner_->on_dequeue(*this, *p);
    return p;
  };
  // Strict priorities first (all of them unless DWRR is configured), highest first.
  for (int prio = kPriorities - 1; prio >= 0; --prio)
    if ((cfg_.strict >> prio & 1) && eligible(prio)) return take(prio);
  if (cfg_.strict != 0xff) {
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
        const Bytes head(queues_[prio].front()->wire_bytes);
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
  if (cfg_.vl_credits > Bytes(0) && p->kind != PacketKind::kPause)
    credits_[p->priority] -= Bytes(p->wire_bytes);
  tx_packets_.add();
  tx_bytes_.add(p->wire_bytes);
  tx_bytes_gauge_.set(static_cast<double>(tx_bytes_.value));
  if (p->kind == PacketKind::kData) tx_data_packets_.add();
  busy_until_ = done;
  if (waiting_ > 0 || owner_pulls_) schedule_tx_done(done);
  if (wire_.empty()) sim_.schedule_at(done + cfg_.latency, arrival_);
  wire_.push_back({done + cfg_.latency, p});
}

void EgressPort::return_credit(std::uint8_t priority, std::uint32_t bytes) {
  if (cfg_.vl_credits == Bytes(0)) return;
  sim_.schedule_in(cfg_.latency, credit_, (std::uint64_t{priority} << 32) | bytes);
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
  Packet* p = wire_.front().packet;
  wire_.pop_front();
  if (!wire_.empty()) sim_.schedule_at(wire_.front().arrival, arrival_);
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
    paused_until_[priority] = now;
    end_pause(priority);
    kick();
    return;
  }
  if (!was_paused && !storm_[priority] && cfg_.watchdog > Time::zero() &&
      (cfg_.lossless >> priority & 1)) {
    sim_.cancel(watchdog_timer_[priority]);
    watchdog_timer_[priority] =
        sim_.schedule_cancellable_at(now + cfg_.watchdog, watchdog_, priority);
  }
  // One quantum is 512 bit times at this link's rate: 64 bytes' serialization time.
  paused_until_[priority] = now + tx_time(Bytes(64LL * quanta), cfg_.rate);
  if (paused_gauge_[priority] != nullptr) paused_gauge_[priority]->set(1);
  pause_started_[priority] = now;
  pause_timer_[priority] =
      sim_.schedule_cancellable_at(paused_until_[priority], pause_expiry_, priority);
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
  sim_.cancel(watchdog_timer_[priority]);
  storm_[priority] = false;
}

void EgressPort::on_watchdog(std::uint64_t priority) {
  // Paused without a break for the whole detection time: a pause storm (or a deadlock).
  const auto prio = static_cast<std::uint8_t>(priority);
  storm_[prio] = true;
  watchdog_storms_[prio]->add();
  if (cfg_.watchdog_drop) {
    auto& q = queues_[prio];
    while (!q.empty()) {
      Packet* p = q.front();
      q.pop_front();
      --waiting_;
      account(p, false);
      discard(p);
    }
  }
  kick();
}

}  // namespace fabricsim
