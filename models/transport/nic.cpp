#include "models/transport/nic.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>

namespace fabricsim {

namespace {
constexpr std::uint64_t kRtoTag = kCcTagLimit;  // the ACK timer: above every algorithm's tag
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
      rel_(reliability_of(cfg)),
      rto_(rel_.base_timeout(cfg_)),
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
      acks_sent_(sim.probes().counter(name + ".ack_sent")),
      naks_sent_(sim.probes().counter(name + ".nak_sent")),
      cnps_sent_(sim.probes().counter(name + ".cnp_sent")),
      cnps_received_(sim.probes().counter(name + ".cnp_received")),
      qp_errors_(sim.probes().counter(name + ".qp_errors")) {
  port_.set_owner(this, /*pulls=*/true);
}

const Reliability& rc_reliability();   // rc.cpp
const Reliability& tcp_reliability();  // tcp.cpp

const Reliability& reliability_of(const RdmaConfig& cfg) {
  return cfg.transport == Transport::kTcp ? tcp_reliability() : rc_reliability();
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
  sim_.schedule_at(log_[id].start + rel_.start_delay(cfg_), start_, id);
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
  if (!rel_.uses_send_engine()) {
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
    const SegmentRef seg = segment_at(qp, psn, qp.tx_segment);
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
  if (kind == PacketKind::kAck) acks_sent_.add();
  port_.enqueue(p);
}

RdmaNic::SegmentRef RdmaNic::segment_at(const QueuePair& qp, std::uint32_t psn) const {
  const auto it = std::upper_bound(
      qp.segments.begin(), qp.segments.end(), psn,
      [](std::uint32_t v, const QueuePair::Segment& s) { return v < s.first_psn; });
  const auto& s = *std::prev(it);
  return {s.message, s.first_psn, it == qp.segments.end() ? qp.packets : it->first_psn};
}

RdmaNic::SegmentRef RdmaNic::segment_at(const QueuePair& qp, std::uint32_t psn,
                                        QueuePair::SegmentCursor& cursor) const {
  if (psn >= cursor.first && psn < cursor.end) return {cursor.message, cursor.first, cursor.end};
  const auto& segs = qp.segments;
  std::size_t k = cursor.index;
  if (cursor.end != 0 && psn >= cursor.end && k + 1 < segs.size() && segs[k + 1].first_psn <= psn) {
    ++k;  // the next message: every message has at least one packet, so it starts here
    while (k + 1 < segs.size() && segs[k + 1].first_psn <= psn) ++k;
  } else {
    // Behind the cursor (a retransmission) or the first lookup: search.
    k = static_cast<std::size_t>(std::upper_bound(segs.begin(), segs.end(), psn,
                                                  [](std::uint32_t v, const QueuePair::Segment& s) {
                                                    return v < s.first_psn;
                                                  }) -
                                 segs.begin() - 1);
  }
  cursor = {static_cast<std::uint32_t>(k), segs[k].first_psn,
            k + 1 < segs.size() ? segs[k + 1].first_psn : qp.packets, segs[k].message};
  return {cursor.message, cursor.first, cursor.end};
}

std::uint32_t RdmaNic::payload_of(const SegmentRef& seg, std::uint32_t psn) const {
  const auto mtu = cfg_.format.mtu.count();
  return static_cast<std::uint32_t>(std::min<Bytes::rep>(
      mtu, log_[seg.message].size.count() - static_cast<Bytes::rep>(psn - seg.first) * mtu));
}

void RdmaNic::deliver_in_order(QueuePair& qp, std::uint32_t psn, Time finish) {
  const SegmentRef seg = segment_at(qp, psn, qp.rx_segment);
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
  rel_.receive(*this, p);
  pool_.release(p);
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
  const Time timeout = rel_.timeout(cfg_, qp);
  if (sim_.now() - qp.last_progress < timeout) {
    arm_rto(id, qp.last_progress + timeout);  // progress since it was armed
    return;
  }
  timeouts_.add();
  rel_.on_timeout(*this, id);
}

}  // namespace fabricsim
