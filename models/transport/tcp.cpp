// TCP's reliability (reliability.hpp): cumulative ACKs, NewReno recovery, RTO with backoff.
// The congestion window is the congestion control's (newreno.*, dctcp.*).

#include <algorithm>

#include "models/transport/nic.hpp"

namespace fabricsim {

class TcpReliability final : public Reliability {
 public:
  Time start_delay(const RdmaConfig& cfg) const override { return cfg.tcp.host_latency; }
  bool uses_send_engine() const override { return false; }
  void receive(RdmaNic& nic, Packet* p) const override {
    if (p->kind == PacketKind::kData) on_data(nic, p);
    if (p->kind == PacketKind::kAck) on_ack(nic, p->message, p->psn, p->ecn);
  }
  Time base_timeout(const RdmaConfig& cfg) const override { return cfg.tcp.min_rto; }
  // Backed off exponentially (up to 64 x) while no progress is made.
  Time timeout(const RdmaConfig& cfg, const QueuePair& qp) const override {
    return cfg.tcp.min_rto * (Time::rep{1} << std::min(qp.retries, 6));
  }
  void on_timeout(RdmaNic& nic, std::uint64_t qp) const override { on_timeout_expired(nic, qp); }

 private:
  void on_data(RdmaNic& nic, Packet* p) const;
  void on_ack(RdmaNic& nic, std::uint64_t id, std::uint32_t cumulative, bool ece) const;
  void on_timeout_expired(RdmaNic& nic, std::uint64_t id) const;
};

namespace {
const TcpReliability kTcp{};
}  // namespace

const Reliability& tcp_reliability() {
  return kTcp;
}

void TcpReliability::on_data(RdmaNic& nic, Packet* p) const {
  QueuePair& qp = nic.qps_[p->message];
  if (p->psn >= qp.expected && qp.out_of_order.size() < qp.packets)
    qp.out_of_order.resize(qp.packets);
  if (p->psn == qp.expected) {
    // Deliver this segment and every held one that now follows in order.
    do {
      nic.deliver_in_order(qp, qp.expected, nic.sim_.now() + nic.cfg_.tcp.host_latency);
      ++qp.expected;
    } while (qp.expected < qp.packets && qp.out_of_order[qp.expected]);
  } else if (p->psn > qp.expected) {
    qp.out_of_order[p->psn] = true;
  }
  // Cumulative ACK (the next segment expected), echoing a CE mark.
  Packet* ack = nic.pool_.acquire();
  ack->kind = PacketKind::kAck;
  ack->message = p->message;
  ack->src = nic.index_;
  ack->dst = p->src;
  ack->psn = qp.expected;
  ack->ecn = p->ecn;
  ack->wire_bytes = static_cast<std::uint32_t>(nic.cfg_.control_bytes.count());
  ack->priority = nic.cfg_.priority;
  nic.acks_sent_.add();
  nic.port_.enqueue(ack);
}

void TcpReliability::on_ack(RdmaNic& nic, std::uint64_t id, std::uint32_t cumulative,
                            bool ece) const {
  QueuePair& qp = nic.qps_[id];
  if (!qp.active) return;
  if (cumulative > qp.una) {
    CcAck ack{.newly_acked = cumulative - qp.una, .ece = ece, .in_recovery = qp.in_recovery};
    qp.una = cumulative;
    qp.next_psn = std::max(qp.next_psn, qp.una);
    qp.last_progress = nic.sim_.now();
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
    nic.cc_->on_ack(qp.cc, ack);
    if (qp.una >= qp.packets) {
      nic.finish_sender(id);
      return;
    }
  } else if (cumulative == qp.una && qp.next_psn > qp.una) {
    if (++qp.dupacks == 3 && !qp.in_recovery) {
      // Fast retransmit, fast recovery.
      nic.cc_->on_fast_retransmit(qp.cc);
      qp.recover = qp.next_psn;
      qp.in_recovery = true;
      qp.retx = qp.una;
    } else if (qp.in_recovery) {
      nic.cc_->on_recovery_dupack(qp.cc);
    }
  }
  nic.port_.kick();
}

void TcpReliability::on_timeout_expired(RdmaNic& nic, std::uint64_t id) const {
  QueuePair& qp = nic.qps_[id];
  nic.cc_->on_timeout(qp.cc);
  if (qp.next_psn > qp.una) nic.retransmitted_.add(qp.next_psn - qp.una);
  qp.next_psn = qp.una;
  qp.in_recovery = false;
  qp.dupacks = 0;
  qp.retx = UINT32_MAX;
  ++qp.retries;
  qp.last_progress = nic.sim_.now();
  nic.arm_rto(id, nic.sim_.now() + timeout(nic.cfg_, qp));
  nic.port_.kick();
}

}  // namespace fabricsim
