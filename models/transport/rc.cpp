// InfiniBand/RoCE Reliable Connection (reliability.hpp): ACK/NAK, go-back-N, CNPs, retries.

#include <fmt/format.h>
#include <algorithm>

#include "models/transport/nic.hpp"

namespace fabricsim {

class RcReliability final : public Reliability {
 public:
  Time start_delay(const RdmaConfig&) const override { return Time::zero(); }
  bool uses_send_engine() const override { return true; }
  void receive(RdmaNic& nic, Packet* p) const override;
  Time base_timeout(const RdmaConfig& cfg) const override {
    // IBA 12.7.34: 4.096 us x 2^timeout; 0 means infinite.
    if (cfg.ib_timeout <= 0 || cfg.ib_timeout >= 32) return Time::max();
    return Time::from_ps(4'096'000LL << cfg.ib_timeout);
  }
  Time timeout(const RdmaConfig& cfg, const QueuePair&) const override { return base_timeout(cfg); }
  void on_timeout(RdmaNic& nic, std::uint64_t qp) const override {
    retry(nic, qp, "local ACK timeout");
  }

 private:
  void on_data_any_order(RdmaNic& nic, Packet* p) const;
  void on_data(RdmaNic& nic, Packet* p) const;
  void on_ack(RdmaNic& nic, std::uint64_t id, std::uint32_t psn) const;
  void on_nak(RdmaNic& nic, std::uint64_t id, std::uint32_t psn) const;
  void retry(RdmaNic& nic, std::uint64_t id, const char* why) const;
  void on_cnp(RdmaNic& nic, std::uint64_t id) const;
};

namespace {
const RcReliability kRc{};
}  // namespace

const Reliability& rc_reliability() {
  return kRc;
}

void RcReliability::receive(RdmaNic& nic, Packet* p) const {
  switch (p->kind) {
    case PacketKind::kData:
      on_data(nic, p);
      break;
    case PacketKind::kAck:
      on_ack(nic, p->message, p->psn);
      break;
    case PacketKind::kNak:
      on_nak(nic, p->message, p->psn);
      break;
    case PacketKind::kCnp:
      on_cnp(nic, p->message);
      break;
    case PacketKind::kPause:
    case PacketKind::kDma:
      break;  // consumed by the port
  }
}

void RcReliability::on_data_any_order(RdmaNic& nic, Packet* p) const {
  QueuePair& qp = nic.qps_[p->message];
  if (qp.out_of_order.size() < qp.packets) qp.out_of_order.resize(qp.packets);
  if (p->psn < qp.expected || qp.out_of_order[p->psn]) {
    if (qp.expected > 0) nic.send_control(PacketKind::kAck, p->message, p->src, qp.expected - 1);
    return;  // a duplicate: already placed
  }
  qp.out_of_order[p->psn] = true;
  // Placement at the packet's own offset. The message completes when its last byte is in,
  // whichever packet carried it (HostFabric and add_received count bytes, not positions).
  const RdmaNic::SegmentRef seg = nic.segment_at(qp, p->psn, qp.rx_segment);
  const std::uint32_t payload = nic.payload_of(seg, p->psn);
  nic.rx_bytes_.add(payload);
  if (nic.host_ != nullptr) {
    nic.host_->deliver(seg.message, p->psn - seg.first, payload, p->psn + 1 == seg.end);
  } else {
    nic.log_.add_received(seg.message, Bytes(payload));
    if (nic.log_[seg.message].received == nic.log_[seg.message].size)
      nic.log_.complete(seg.message, nic.sim_.now());
  }
  const std::uint32_t before = qp.expected;
  bool segment_done = false;
  while (qp.expected < qp.packets && qp.out_of_order[qp.expected]) {
    if (qp.expected + 1 == nic.segment_at(qp, qp.expected, qp.rx_segment).end) {
      nic.rx_messages_.add();
      segment_done = true;
    }
    ++qp.expected;
  }
  if (qp.expected == before) return;
  const auto interval = static_cast<std::uint32_t>(nic.cfg_.ack_interval);
  if (segment_done || qp.expected / interval != before / interval)
    nic.send_control(PacketKind::kAck, p->message, p->src, qp.expected - 1);
}

void RcReliability::on_data(RdmaNic& nic, Packet* p) const {
  QueuePair& qp = nic.qps_[p->message];
  const Time now = nic.sim_.now();
  if (p->ecn) {
    if (qp.last_cnp == Time::max() || now - qp.last_cnp >= nic.cfg_.dcqcn.min_time_between_cnps) {
      qp.last_cnp = now;
      nic.cnps_sent_.add();
      nic.send_control(PacketKind::kCnp, p->message, p->src, 0);
    }
  }
  if (nic.cfg_.out_of_order_placement) {
    on_data_any_order(nic, p);
    return;
  }
  if (p->psn == qp.expected) {
    ++qp.expected;
    qp.nak_sent = false;
    nic.deliver_in_order(qp, p->psn, now);
    if (p->last || qp.expected % static_cast<std::uint32_t>(nic.cfg_.ack_interval) == 0)
      nic.send_control(PacketKind::kAck, p->message, p->src, p->psn);
  } else if (p->psn > qp.expected) {
    if (!qp.nak_sent) {
      qp.nak_sent = true;
      nic.naks_sent_.add();
      nic.send_control(PacketKind::kNak, p->message, p->src, qp.expected);
    }
  } else if (qp.expected > 0) {
    nic.send_control(PacketKind::kAck, p->message, p->src, qp.expected - 1);  // duplicate
  }
}

void RcReliability::on_ack(RdmaNic& nic, std::uint64_t id, std::uint32_t psn) const {
  QueuePair& qp = nic.qps_[id];
  if (!qp.active || psn + 1 <= qp.una) return;
  qp.una = psn + 1;
  qp.next_psn = std::max(qp.next_psn, qp.una);
  qp.retries = 0;
  qp.last_progress = nic.sim_.now();
  if (qp.una >= qp.packets) {
    nic.finish_sender(id);
    return;
  }
  if (nic.rto() != Time::max()) nic.arm_rto(id, qp.last_progress + nic.rto());  // no-op while armed
}

void RcReliability::on_nak(RdmaNic& nic, std::uint64_t id, std::uint32_t psn) const {
  QueuePair& qp = nic.qps_[id];
  if (!qp.active || psn < qp.una) return;
  if (psn > qp.una) {
    qp.una = psn;
    qp.retries = 0;
  }
  qp.last_progress = nic.sim_.now();
  retry(nic, id, "sequence error NAK");
}

void RcReliability::retry(RdmaNic& nic, std::uint64_t id, const char* why) const {
  QueuePair& qp = nic.qps_[id];
  if (++qp.retries > nic.cfg_.ib_retry_cnt) {
    // The QP enters the error state: its unfinished messages (and any posted later) fail.
    qp.failed = true;
    const std::uint64_t first = nic.segment_at(qp, qp.una).message;
    for (const auto& s : qp.segments)
      if (!nic.log_[s.message].complete()) nic.log_[s.message].failed = true;
    nic.qp_errors_.add();
    nic.errors_.push_back(
        {nic.sim_.now(), first,
         fmt::format("{}: ibv_poll_cq error 12 (transport retry counter exceeded) on QP {} "
                     "(message {}) to endpoint {} after {} retries ({}), {} of {} packets "
                     "acknowledged",
                     nic.name_, id, first, qp.dst, nic.cfg_.ib_retry_cnt, why, qp.una,
                     qp.packets)});
    nic.finish_sender(id);
    return;
  }
  // Go-back-N from the first unacknowledged packet. A NAK can name a PSN beyond what this QP
  // has (re)sent since an earlier go-back (it answers packets of the first pass), so una may
  // exceed next_psn: nothing between them is resent, and the count never goes negative.
  if (qp.next_psn > qp.una) nic.retransmitted_.add(qp.next_psn - qp.una);
  qp.next_psn = qp.una;
  qp.next_send = nic.sim_.now();
  if (nic.rto() != Time::max())
    nic.arm_rto(id, nic.sim_.now() + nic.rto());  // keeps an earlier pending one
  nic.port_.kick();
}

void RcReliability::on_cnp(RdmaNic& nic, std::uint64_t id) const {
  nic.cnps_received_.add();
  const QueuePair& qp = nic.qps_[id];
  if (qp.active) nic.cc_->on_cnp(qp.cc);
}

}  // namespace fabricsim
