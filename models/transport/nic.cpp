#include "models/transport/nic.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>

namespace fabricsim {

namespace {
constexpr std::uint64_t kRtoTag = kCcTagLimit;  // kind 3 of the 2-bit timer kinds
static_assert(kRtoTag < (1u << 24));
}  // namespace

RdmaNic::RdmaNic(Simulation& sim, Pool<Packet>& pool, MessageLog& log, std::deque<QueuePair>& qps,
                 std::vector<TransportError>& errors, std::uint32_t index, const std::string& name,
                 const RdmaConfig& cfg, const PortConfig& port)
    : sim_(sim),
      pool_(pool),
      log_(log),
      qps_(qps),
      errors_(errors),
      index_(index),
      name_(name),
      cfg_(cfg),
      line_bps_(static_cast<double>(port.rate.bps())),
      port_(sim, pool, name + ".nic", port),
      start_(sim.bind<&RdmaNic::on_message_start>(*this)),
      wire_start_(sim.bind<&RdmaNic::on_wire_start>(*this)),
      wakeup_(sim.bind<&RdmaNic::on_wakeup>(*this)),
      timer_(sim.bind<&RdmaNic::on_timer>(*this)),
      engine_(cfg),
      cc_(cfg.congestion->make(cfg, *this, line_bps_)),
      cc_needs_(cc_->needs()),
      rx_bytes_(sim.probes().counter(name + ".rx_payload_bytes")),
      rx_messages_(sim.probes().counter(name + ".rx_messages")),
      retransmitted_(sim.probes().counter(name + ".retransmitted_packets")),
      timeouts_(sim.probes().counter(name + ".ack_timeouts")),
      naks_sent_(sim.probes().counter(name + ".nak_sent")),
      cnps_sent_(sim.probes().counter(name + ".cnp_sent")),
      cnps_received_(sim.probes().counter(name + ".cnp_received")),
      qp_errors_(sim.probes().counter(name + ".qp_errors")) {
  port_.set_owner(this, /*pulls=*/true);
}

Time RdmaNic::rto() const {
  if (tcp()) return cfg_.tcp.min_rto;
  // IBA 12.7.34: 4.096 us x 2^timeout; 0 means infinite.
  if (cfg_.ib_timeout <= 0 || cfg_.ib_timeout >= 32) return Time::max();
  return Time::from_ps(4'096'000LL << cfg_.ib_timeout);
}

void RdmaNic::schedule_message(std::uint64_t id) {
  const Message& m = log_[id];
  QueuePair& qp = qps_[m.connection];
  if (!qp.initialised) {  // the QP's first message: its gauge exists from now on
    qp.initialised = true;
    qp.dst = m.dst;
    qp.rate_bps = line_bps_;
    qp.rate_gauge = &sim_.probes().gauge(fmt::format("{}.qp{}.rate_gbps", name_, m.connection));
    qp.rate_gauge->set(line_bps_ * 1e-9);
    qp.cc = cc_->open(m.connection);
  }
  sim_.schedule_at(log_[id].start + (tcp() ? cfg_.tcp.host_latency : Time::zero()), start_, id);
}

std::uint32_t RdmaNic::packets_of(Bytes size) const {
  const auto mtu = cfg_.format.mtu.count();
  return static_cast<std::uint32_t>(std::max<Bytes::rep>(1, (size.count() + mtu - 1) / mtu));
}

void RdmaNic::set_cc_rate(std::uint64_t id, double bps) {
  QueuePair& qp = qps_[id];
  qp.rate_bps = bps;
  qp.rate_gauge->set(bps * 1e-9);
}

void RdmaNic::schedule_cc_timer(std::uint64_t id, std::uint32_t tag, Time at) {
  sim_.schedule_at(at, timer_, (id << 24) | tag);
}

void RdmaNic::on_message_start(std::uint64_t id) {
  if (host_ != nullptr && host_->transfer_local(id)) return;
  if (tcp()) {
    on_wire_start(id);
    return;
  }
  // The send engine takes messages one at a time in posting order, then every message waits
  // the same overhead: the wire starts keep the posting order, so a QP's messages stay in it.
  const Time ready = engine_.admit(sim_.now()) + cfg_.message_overhead;
  if (ready > sim_.now())
    sim_.schedule_at(ready, wire_start_, id);
  else
    on_wire_start(id);
}

void RdmaNic::on_wire_start(std::uint64_t id) {
  Message& m = log_[id];
  const std::uint64_t q = m.connection;
  QueuePair& qp = qps_[q];
  if (qp.failed) {
    m.failed = true;  // posted on a QP in the error state
    return;
  }
  qp.segments.push_back({qp.packets, id});
  qp.packets += packets_of(m.size);
  if (host_ != nullptr) {
    // The host side streams a QP's messages one after the other: this one now unless an
    // earlier one is still leaving the source (on_fetch_sent starts it then).
    if (!qp.fetching) fetch_next(qp);
  } else {
    qp.ready = qp.packets;
  }
  if (!qp.active) {
    cc_->on_resume(qp.cc);
    qp.active = true;
    qp.last_progress = sim_.now();
    active_.push_back(q);
  }
  port_.kick();
}

Packet* RdmaNic::pull(EgressPort& port) {
  const auto largest = static_cast<std::uint32_t>((cfg_.format.mtu + cfg_.format.header).count());
  if (port.paused(cfg_.priority) || !port.has_credit(cfg_.priority, largest) || active_.empty())
    return nullptr;
  const Time now = sim_.now();
  Time earliest = Time::max();
  const std::size_t n = active_.size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t slot = (round_robin_ + k) % n;
    const std::uint64_t id = active_[slot];
    QueuePair& qp = qps_[id];
    const bool retransmit = qp.retx != UINT32_MAX;
    if (!retransmit && qp.next_psn >= qp.packets) continue;  // all sent, waiting for ACKs
    if (!retransmit && qp.next_psn >= qp.ready) continue;    // data not in reach yet (DMA)
    if (cc_needs_.window && !retransmit &&
        qp.next_psn >= qp.una + static_cast<std::uint32_t>(cc_->window(qp.cc)))
      continue;  // window full
    if (qp.next_send > now) {
      earliest = std::min(earliest, qp.next_send);
      continue;
    }
    round_robin_ = slot + 1;
    const std::uint32_t psn = retransmit ? qp.retx : qp.next_psn;
    const SegmentRef seg = segment_at(qp, psn);
    const Bytes::rep payload = payload_of(seg, psn);
    Packet* p = pool_.acquire();
    p->kind = PacketKind::kData;
    p->message = id;
    p->src = index_;
    p->dst = qp.dst;
    p->psn = psn;
    p->payload = static_cast<std::uint32_t>(payload);
    p->wire_bytes = static_cast<std::uint32_t>(payload + cfg_.format.header.count());
    p->priority = cfg_.priority;
    p->last = psn + 1 == seg.end;
    if (qp.next_psn == qp.una && rto() != Time::max()) {
      // First packet outstanding: the ACK timer starts now.
      qp.last_progress = now;
      arm_rto(id, now + rto());
    }
    if (retransmit) {
      qp.retx = UINT32_MAX;
      retransmitted_.add();
    } else {
      ++qp.next_psn;
    }
    if (cc_needs_.bytes_sent) cc_->on_sent(qp.cc, p->wire_bytes);
    // Pacing at RC: the next packet of this QP may start wire_bytes / RC from now, by the
    // links' one rounding rule (tx_time: up to the picosecond) with RC in whole bits/s
    // (rounded down: a paced QP never runs above its rate).
    if (qp.rate_bps < line_bps_)
      qp.next_send =
          now + tx_time(Bytes(p->wire_bytes), Bandwidth::from_bps(std::max<Bandwidth::rep>(
                                                  1, static_cast<Bandwidth::rep>(qp.rate_bps))));
    return p;
  }
  if (earliest != Time::max() && earliest < wakeup_at_) {
    wakeup_at_ = earliest;
    sim_.schedule_at(earliest, wakeup_, ++wakeup_generation_);
  }
  return nullptr;
}

void RdmaNic::on_dma_ready(std::uint64_t id) {
  ++qps_[log_[id].connection].ready;
  port_.kick();
}

void RdmaNic::on_fetch_sent(std::uint64_t id) {
  QueuePair& qp = qps_[log_[id].connection];
  qp.fetching = false;
  fetch_next(qp);
}

void RdmaNic::fetch_next(QueuePair& qp) {
  if (qp.fetched == qp.segments.size()) return;
  qp.fetching = true;
  host_->fetch(qp.segments[qp.fetched++].message);
}

void RdmaNic::on_wakeup(std::uint64_t generation) {
  if (generation != wakeup_generation_) return;
  wakeup_at_ = Time::max();
  port_.kick();
}

void RdmaNic::arm_rto(std::uint64_t id, Time at) {
  // Lazy timer: ACK progress only moves last_progress; a pending timer that fires early re-arms
  // itself for last_progress + rto. So a QP has at most one timer event per timeout period,
  // not one per ACK.
  QueuePair& qp = qps_[id];
  if (qp.rto_armed) return;
  qp.rto_armed = true;
  qp.rto_timer = sim_.schedule_cancellable_at(at, timer_, (id << 24) | kRtoTag);
}

void RdmaNic::send_control(PacketKind kind, std::uint64_t message, std::uint32_t dst,
                           std::uint32_t psn) {
  Packet* p = pool_.acquire();
  p->kind = kind;
  p->message = message;
  p->src = index_;
  p->dst = dst;
  p->psn = psn;
  p->wire_bytes = static_cast<std::uint32_t>(cfg_.control_bytes.count());
  p->priority = kind == PacketKind::kCnp ? cfg_.cnp_priority : cfg_.priority;
  port_.enqueue(p);
}

RdmaNic::SegmentRef RdmaNic::segment_at(const QueuePair& qp, std::uint32_t psn) const {
  const auto it = std::upper_bound(
      qp.segments.begin(), qp.segments.end(), psn,
      [](std::uint32_t v, const QueuePair::Segment& s) { return v < s.first_psn; });
  const auto& s = *std::prev(it);
  return {s.message, s.first_psn, it == qp.segments.end() ? qp.packets : it->first_psn};
}

std::uint32_t RdmaNic::payload_of(const SegmentRef& seg, std::uint32_t psn) const {
  const auto mtu = cfg_.format.mtu.count();
  return static_cast<std::uint32_t>(std::min<Bytes::rep>(
      mtu, log_[seg.message].size.count() - static_cast<Bytes::rep>(psn - seg.first) * mtu));
}

void RdmaNic::deliver_in_order(QueuePair& qp, std::uint32_t psn, Time finish) {
  const SegmentRef seg = segment_at(qp, psn);
  const std::uint32_t payload = payload_of(seg, psn);
  const bool last = psn + 1 == seg.end;
  rx_bytes_.add(payload);
  if (last) rx_messages_.add();
  if (host_ != nullptr) {
    host_->deliver(seg.message, psn - seg.first, payload, last);
    return;
  }
  log_.add_received(seg.message, Bytes(payload));
  if (last) log_.complete(seg.message, finish);
}

void RdmaNic::receive(Packet* p, PortIndex) {
  port_.reverse()->return_credit(p->priority, p->wire_bytes);  // consumed at once (IB credits)
  if (tcp()) {
    if (p->kind == PacketKind::kData) tcp_on_data(p);
    if (p->kind == PacketKind::kAck) tcp_on_ack(p->message, p->psn, p->ecn);
    pool_.release(p);
    return;
  }
  switch (p->kind) {
    case PacketKind::kData:
      on_data(p);
      break;
    case PacketKind::kAck:
      on_ack(p->message, p->psn);
      break;
    case PacketKind::kNak:
      on_nak(p->message, p->psn);
      break;
    case PacketKind::kCnp:
      on_cnp(p->message);
      break;
    case PacketKind::kPause:
    case PacketKind::kDma:
      break;  // consumed by the port
  }
  pool_.release(p);
}

void RdmaNic::on_data_any_order(Packet* p) {
  QueuePair& qp = qps_[p->message];
  if (qp.out_of_order.size() < qp.packets) qp.out_of_order.resize(qp.packets);
  if (p->psn < qp.expected || qp.out_of_order[p->psn]) {
    if (qp.expected > 0) send_control(PacketKind::kAck, p->message, p->src, qp.expected - 1);
    return;  // a duplicate: already placed
  }
  qp.out_of_order[p->psn] = true;
  // Placement at the packet's own offset. The message completes when its last byte is in,
  // whichever packet carried it (HostFabric and add_received count bytes, not positions).
  const SegmentRef seg = segment_at(qp, p->psn);
  const std::uint32_t payload = payload_of(seg, p->psn);
  rx_bytes_.add(payload);
  if (host_ != nullptr) {
    host_->deliver(seg.message, p->psn - seg.first, payload, p->psn + 1 == seg.end);
  } else {
    log_.add_received(seg.message, Bytes(payload));
    if (log_[seg.message].received == log_[seg.message].size)
      log_.complete(seg.message, sim_.now());
  }
  const std::uint32_t before = qp.expected;
  bool segment_done = false;
  while (qp.expected < qp.packets && qp.out_of_order[qp.expected]) {
    if (qp.expected + 1 == segment_at(qp, qp.expected).end) {
      rx_messages_.add();
      segment_done = true;
    }
    ++qp.expected;
  }
  if (qp.expected == before) return;
  const auto interval = static_cast<std::uint32_t>(cfg_.ack_interval);
  if (segment_done || qp.expected / interval != before / interval)
    send_control(PacketKind::kAck, p->message, p->src, qp.expected - 1);
}

void RdmaNic::on_data(Packet* p) {
  QueuePair& qp = qps_[p->message];
  const Time now = sim_.now();
  if (p->ecn) {
    if (qp.last_cnp == Time::max() || now - qp.last_cnp >= cfg_.dcqcn.min_time_between_cnps) {
      qp.last_cnp = now;
      cnps_sent_.add();
      send_control(PacketKind::kCnp, p->message, p->src, 0);
    }
  }
  if (cfg_.out_of_order_placement) {
    on_data_any_order(p);
    return;
  }
  if (p->psn == qp.expected) {
    ++qp.expected;
    qp.nak_sent = false;
    deliver_in_order(qp, p->psn, now);
    if (p->last || qp.expected % static_cast<std::uint32_t>(cfg_.ack_interval) == 0)
      send_control(PacketKind::kAck, p->message, p->src, p->psn);
  } else if (p->psn > qp.expected) {
    if (!qp.nak_sent) {
      qp.nak_sent = true;
      naks_sent_.add();
      send_control(PacketKind::kNak, p->message, p->src, qp.expected);
    }
  } else if (qp.expected > 0) {
    send_control(PacketKind::kAck, p->message, p->src, qp.expected - 1);  // duplicate
  }
}

void RdmaNic::on_ack(std::uint64_t id, std::uint32_t psn) {
  QueuePair& qp = qps_[id];
  if (!qp.active || psn + 1 <= qp.una) return;
  qp.una = psn + 1;
  qp.next_psn = std::max(qp.next_psn, qp.una);
  qp.retries = 0;
  qp.last_progress = sim_.now();
  if (qp.una >= qp.packets) {
    finish_sender(id);
    return;
  }
  if (rto() != Time::max()) arm_rto(id, qp.last_progress + rto());  // no-op while armed
}

void RdmaNic::on_nak(std::uint64_t id, std::uint32_t psn) {
  QueuePair& qp = qps_[id];
  if (!qp.active || psn < qp.una) return;
  if (psn > qp.una) {
    qp.una = psn;
    qp.retries = 0;
  }
  qp.last_progress = sim_.now();
  retry(id, "sequence error NAK");
}

void RdmaNic::retry(std::uint64_t id, const char* why) {
  QueuePair& qp = qps_[id];
  if (++qp.retries > cfg_.ib_retry_cnt) {
    // The QP enters the error state: its unfinished messages (and any posted later) fail.
    qp.failed = true;
    const std::uint64_t first = segment_at(qp, qp.una).message;
    for (const auto& s : qp.segments)
      if (!log_[s.message].complete()) log_[s.message].failed = true;
    qp_errors_.add();
    errors_.push_back(
        {sim_.now(), first,
         fmt::format("{}: ibv_poll_cq error 12 (transport retry counter exceeded) on QP {} "
                     "(message {}) to endpoint {} after {} retries ({}), {} of {} packets "
                     "acknowledged",
                     name_, id, first, qp.dst, cfg_.ib_retry_cnt, why, qp.una, qp.packets)});
    finish_sender(id);
    return;
  }
  // Go-back-N from the first unacknowledged packet. A NAK can name a PSN beyond what this QP
  // has (re)sent since an earlier go-back (it answers packets of the first pass), so una may
  // exceed next_psn: nothing between them is resent, and the count never goes negative.
  if (qp.next_psn > qp.una) retransmitted_.add(qp.next_psn - qp.una);
  qp.next_psn = qp.una;
  qp.next_send = sim_.now();
  if (rto() != Time::max()) arm_rto(id, sim_.now() + rto());  // keeps an earlier pending one
  port_.kick();
}

void RdmaNic::finish_sender(std::uint64_t id) {
  QueuePair& qp = qps_[id];
  qp.active = false;
  cc_->on_stop(qp.cc);
  sim_.cancel(qp.rto_timer);
  qp.rto_armed = false;
  const auto it = std::find(active_.begin(), active_.end(), id);
  if (it != active_.end()) {
    const auto pos = static_cast<std::size_t>(it - active_.begin());
    active_.erase(it);
    if (round_robin_ > pos) --round_robin_;
  }
}

void RdmaNic::on_cnp(std::uint64_t id) {
  cnps_received_.add();
  const QueuePair& qp = qps_[id];
  if (qp.active) cc_->on_cnp(qp.cc);
}

void RdmaNic::on_timer(std::uint64_t payload) {
  const std::uint64_t id = payload >> 24;
  const auto tag = static_cast<std::uint32_t>(payload & 0xffffff);
  QueuePair& qp = qps_[id];
  if (tag != kRtoTag) {
    cc_->on_timer(qp.cc, tag);
    return;
  }
  qp.rto_armed = false;
  if (!qp.active) return;
  // TCP backs the timer off exponentially (up to 64 x) while no progress is made.
  const Time timeout = tcp() ? rto() * (Time::rep{1} << std::min(qp.retries, 6)) : rto();
  if (sim_.now() - qp.last_progress < timeout) {
    arm_rto(id, qp.last_progress + timeout);  // progress since it was armed
    return;
  }
  timeouts_.add();
  if (tcp()) {
    tcp_timeout(id);
    return;
  }
  retry(id, "local ACK timeout");
}

void RdmaNic::tcp_on_data(Packet* p) {
  QueuePair& qp = qps_[p->message];
  if (p->psn >= qp.expected && qp.out_of_order.size() < qp.packets)
    qp.out_of_order.resize(qp.packets);
  if (p->psn == qp.expected) {
    // Deliver this segment and every held one that now follows in order.
    do {
      deliver_in_order(qp, qp.expected, sim_.now() + cfg_.tcp.host_latency);
      ++qp.expected;
    } while (qp.expected < qp.packets && qp.out_of_order[qp.expected]);
  } else if (p->psn > qp.expected) {
    qp.out_of_order[p->psn] = true;
  }
  // Cumulative ACK (the next segment expected), echoing a CE mark.
  Packet* ack = pool_.acquire();
  ack->kind = PacketKind::kAck;
  ack->message = p->message;
  ack->src = index_;
  ack->dst = p->src;
  ack->psn = qp.expected;
  ack->ecn = p->ecn;
  ack->wire_bytes = static_cast<std::uint32_t>(cfg_.control_bytes.count());
  ack->priority = cfg_.priority;
  port_.enqueue(ack);
}

void RdmaNic::tcp_on_ack(std::uint64_t id, std::uint32_t cumulative, bool ece) {
  QueuePair& qp = qps_[id];
  if (!qp.active) return;
  if (cumulative > qp.una) {
    CcAck ack{.newly_acked = cumulative - qp.una, .ece = ece, .in_recovery = qp.in_recovery};
    qp.una = cumulative;
    qp.next_psn = std::max(qp.next_psn, qp.una);
    qp.last_progress = sim_.now();
    qp.retries = 0;
    qp.dupacks = 0;
    if (qp.retx != UINT32_MAX && qp.retx < qp.una) qp.retx = UINT32_MAX;
    if (qp.in_recovery) {
      if (qp.una >= qp.recover) {
        qp.in_recovery = false;
        ack.recovery_done = true;
      } else {
        qp.retx = qp.una;  // NewReno partial ACK: the next hole
      }
    }
    ack.una = qp.una;
    ack.next_psn = qp.next_psn;
    cc_->on_ack(qp.cc, ack);
    if (qp.una >= qp.packets) {
      finish_sender(id);
      return;
    }
  } else if (cumulative == qp.una && qp.next_psn > qp.una) {
    if (++qp.dupacks == 3 && !qp.in_recovery) {
      // Fast retransmit, fast recovery.
      cc_->on_fast_retransmit(qp.cc);
      qp.recover = qp.next_psn;
      qp.in_recovery = true;
      qp.retx = qp.una;
    } else if (qp.in_recovery) {
      cc_->on_recovery_dupack(qp.cc);
    }
  }
  port_.kick();
}

void RdmaNic::tcp_timeout(std::uint64_t id) {
  QueuePair& qp = qps_[id];
  cc_->on_timeout(qp.cc);
  if (qp.next_psn > qp.una) retransmitted_.add(qp.next_psn - qp.una);
  qp.next_psn = qp.una;
  qp.in_recovery = false;
  qp.dupacks = 0;
  qp.retx = UINT32_MAX;
  ++qp.retries;
  qp.last_progress = sim_.now();
  arm_rto(id, sim_.now() + rto() * (Time::rep{1} << std::min(qp.retries, 6)));
  port_.kick();
}

}  // namespace fabricsim
