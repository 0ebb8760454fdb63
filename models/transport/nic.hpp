#pragma once
// A NIC's queue-pair engine, RoCEv2/InfiniBand reliable connection or TCP: one queue pair per
// connection, messages cut into MTU packets with real per-packet overhead; ACK/NAK; go-back-N
// retransmission with the IB local ACK timeout (TCP: NewReno's fast retransmit and RTO).
// Two seams: the transport's reliability rules (reliability.hpp; rc.cpp, tcp.cpp) and
// congestion control (congestion_control.hpp): the engine paces each QP at the rate its
// algorithm sets and, for window-based ones, keeps at most a window of packets outstanding.
// The rules below are RC's as rc.cpp implements them.
//
// Sender: QPs with packets to send take turns (round robin); a QP sends at its rate RC
// (the next packet may start wire_bytes/RC after the previous one started). A NAK (sequence
// error) or an ACK timeout of 4.096 us x 2^ib_timeout without progress rewinds the QP to its
// first unacknowledged packet (go-back-N) and counts one retry; more than ib_retry_cnt retries
// without progress fail the QP, as a real NIC completes with "transport retry counter exceeded"
// (ibv_poll_cq status 12). Progress resets the count.
// Receiver: accepts only the next expected PSN; the first out-of-order packet after an
// in-order one triggers one NAK (the IB responder's PSN sequence error, sent once until the
// expected PSN arrives, so a reordered tail waits for the ACK timeout as on real RC QPs);
// the packet whose PSN is a multiple of `ack_interval` and each message's last packet are
// ACKed, cumulatively (ConnectX's default coalescing, config.hpp). With out_of_order_placement
// (ConnectX-7 class adaptive-routing support) the responder instead places every new packet
// where it belongs whatever its order, a message completes once all its packets are in, and
// the cumulative ACK names the last PSN of the contiguous prefix: no NAK for a gap. A CE-marked
// packet triggers a CNP (at the CNP priority) unless one was sent for that QP less than
// dcqcn.min_time_between_cnps ago (the DCQCN notification point).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "models/transport/config.hpp"
#include "models/transport/congestion_control.hpp"
#include "models/transport/reliability.hpp"
#include "net/message.hpp"
#include "net/port.hpp"

namespace fabricsim {

// A NIC's send engine (RdmaConfig::message_rate_mpps), at both fidelity levels: it takes the
// messages posted to it one at a time, in posting order, each for 1 / rate.
class SendEngine {
 public:
  SendEngine() = default;
  explicit SendEngine(const RdmaConfig& cfg)
      : gap_(cfg.transport == Transport::kRdma && cfg.message_rate_mpps > 0
                 ? Time::from_ps(static_cast<Time::rep>(std::llround(1e6 / cfg.message_rate_mpps)))
                 : Time::zero()) {}
  bool limits() const { return gap_ > Time::zero(); }
  // When a message posted at `now` leaves the engine: now, unless earlier ones still pass.
  Time admit(Time now) {
    if (!limits()) return now;
    const Time ready = std::max(now, free_);
    free_ = ready + gap_;
    return ready;
  }

 private:
  Time gap_{};
  Time free_{};
};

// Per-connection transport state, shared by the NICs of a network (indexed by connection id).
// The messages posted on a QP form one packet sequence: message k occupies PSNs
// [segments[k].first_psn, segments[k+1].first_psn); a message's last packet may be short.
struct QueuePair {
  struct Segment {
    std::uint32_t first_psn = 0;
    std::uint64_t message = 0;
  };
  std::vector<Segment> segments;
  std::uint32_t dst = 0;     // destination endpoint
  bool initialised = false;  // congestion control and probes set up (on its first message)
  bool failed = false;       // retries exhausted: the QP is in the error state
  std::size_t fetched = 0;   // segments handed to the host side (in order)
  // The sender's and the receiver's last segment lookups (RdmaNic::segment_at): both walk the
  // PSNs in order but for retransmissions, so the next lookup is mostly in the same segment
  // (answered from here, without touching `segments`) or the one after it. A segment's end
  // never changes: a message posted later starts where the last one ended.
  struct SegmentCursor {
    std::uint32_t index = 0, first = 0, end = 0;  // end 0: nothing looked up yet
    std::uint64_t message = 0;
  };
  SegmentCursor tx_segment, rx_segment;
  bool fetching = false;  // the last of them is still leaving its source
  // sender
  std::uint32_t cc = 0;  // its slot in the sender's congestion control
  std::uint32_t packets = 0;
  std::uint32_t next_psn = 0;
  std::uint32_t una = 0;  // first unacknowledged PSN
  int retries = 0;
  Time next_send{};
  Time last_progress{};
  double rate_bps = 0;  // pacing rate, as the congestion control last set it
  EventHandle rto_timer{};
  bool rto_armed = false;
  bool active = false;      // in its sender's round-robin list
  std::uint32_t ready = 0;  // packets whose data the NIC can read (DMA done)
  Gauge* rate_gauge = nullptr;
  // TCP sender: NewReno loss recovery
  int dupacks = 0;
  bool in_recovery = false;
  std::uint32_t recover = 0, retx = UINT32_MAX;
  // receiver
  std::vector<bool> out_of_order;  // TCP: segments held beyond `expected`
  std::uint32_t expected = 0;
  Time last_cnp = Time::max();
  bool nak_sent = false;
};

// The server side of a NIC: moving data between GPU memory and the NIC over PCIe (and host
// memory when not using GPUDirect). Without one, data is in NIC-reachable memory from the start
// and delivered when it reaches the destination NIC.
class HostSide {
 public:
  // Source: start copying message `id` to the NIC; each packet's worth that arrives is
  // reported with RdmaNic::on_dma_ready(id).
  virtual void fetch(std::uint64_t id) = 0;
  // Destination: move in-order payload from the NIC to GPU memory; the host side marks the
  // message complete when its last byte lands.
  virtual void deliver(std::uint64_t id, std::uint32_t psn, std::uint32_t payload, bool last) = 0;
  // A message between two endpoints of one server moves GPU to GPU inside it (NVLink, or PCIe
  // peer-to-peer) without the NIC; returns false when the message must use the network.
  virtual bool transfer_local(std::uint64_t id) = 0;

 protected:
  ~HostSide() = default;
};

struct TransportError {
  Time time{};
  std::uint64_t message = 0;
  std::string text;
};

class RdmaNic final : public PacketSink, public PortOwner, private CcHost {
 public:
  RdmaNic(Simulation& sim, Pool<Packet>& pool, MessageLog& log, std::deque<QueuePair>& qps,
          std::vector<TransportError>& errors, std::uint32_t index, const std::string& name,
          const RdmaConfig& cfg, const PortConfig& port);
  EgressPort& port() { return port_; }
  const std::string& name() const { return name_; }
  // Schedules message `id` (this NIC is its source) to start at its start time, on its
  // connection (a QP of this NIC).
  void schedule_message(std::uint64_t id);

  void receive(Packet* p, PortIndex ingress) override;
  Packet* pull(EgressPort& port) override;
  void set_host_side(HostSide* host) { host_ = host; }
  // One more packet's worth of message `id` has been copied into the NIC's reach.
  void on_dma_ready(std::uint64_t id);
  // The last chunk of message `id` has left its source: the host side may stream the QP's
  // next message behind it. Its chunks take the same route through FIFO ports, so they reach
  // the NIC in PSN order, and consecutive messages stream without a gap (a NIC keeps several
  // DMA reads in flight).
  void on_fetch_sent(std::uint64_t id);

 private:
  // CcHost
  Time cc_now() const override { return sim_.now(); }
  void schedule_cc_timer(std::uint64_t qp, std::uint32_t tag, Time at) override;
  void set_cc_rate(std::uint64_t qp, double bps) override;
  void cc_kick() override { port_.kick(); }

  void on_message_start(std::uint64_t id);
  // A message for the wire, after the NIC's per-message overhead: it joins its QP.
  void on_wire_start(std::uint64_t id);
  // Hands the QP's next message to the host side, if it has one not handed yet.
  void fetch_next(QueuePair& qp);
  void on_wakeup(std::uint64_t generation);
  // Timer events carry (QP << 24) | tag: the congestion control's tags (below kCcTagLimit)
  // and the engine's ACK timer, kRtoTag.
  void on_timer(std::uint64_t payload);
  // (Re)starts the ACK timer of a QP: cancelled in O(1) when ACKs make progress, so finished
  // QPs leave no timer behind.
  void arm_rto(std::uint64_t id, Time at);
  void send_control(PacketKind kind, std::uint64_t message, std::uint32_t dst, std::uint32_t psn);
  // The QP has nothing left to send or to have acknowledged (or has failed).
  void finish_sender(std::uint64_t id);
  // The message of a QP that PSN `psn` belongs to, with its PSN range.
  struct SegmentRef {
    std::uint64_t message;
    std::uint32_t first, end;
  };
  SegmentRef segment_at(const QueuePair& qp, std::uint32_t psn) const;
  // The same, starting from `cursor` (a QP's tx_segment or rx_segment), which it moves to the
  // segment found: O(1) for in-order PSNs instead of a binary search over every message the
  // QP has carried.
  SegmentRef segment_at(const QueuePair& qp, std::uint32_t psn,
                        QueuePair::SegmentCursor& cursor) const;
  void deliver_in_order(QueuePair& qp, std::uint32_t psn, Time finish);
  std::uint32_t packets_of(Bytes size) const;
  // Payload bytes of packet `psn` of the message `seg` (every packet full but its last).
  std::uint32_t payload_of(const SegmentRef& seg, std::uint32_t psn) const;
  // The ACK timer's base period (the transport's; Time::max(): never).
  Time rto() const { return rto_; }
  // The transports' rules act on the engine's state.
  friend class RcReliability;
  friend class TcpReliability;

  Simulation& sim_;
  Pool<Packet>& pool_;
  MessageLog& log_;
  std::deque<QueuePair>& qps_;
  std::vector<TransportError>& errors_;
  std::uint32_t index_;
  std::string name_;
  RdmaConfig cfg_;
  const Reliability& rel_;
  Time rto_;  // rel_.base_timeout(cfg_), fixed: read on every packet sent
  HostSide* host_ = nullptr;
  double line_bps_;
  EgressPort port_;
  HandlerId start_, wire_start_, wakeup_, timer_;
  SendEngine engine_;
  std::unique_ptr<CongestionControl> cc_;
  CongestionControl::Needs cc_needs_;
  std::vector<std::uint64_t> active_;  // QPs of this NIC with data to send or unacked
  std::size_t round_robin_ = 0;
  std::uint32_t wakeup_generation_ = 0;
  Time wakeup_at_ = Time::max();
  Counter& rx_bytes_;
  Counter& rx_messages_;
  Counter& retransmitted_;
  Counter& timeouts_;
  Counter& acks_sent_;
  Counter& naks_sent_;
  Counter& cnps_sent_;
  Counter& cnps_received_;
  Counter& qp_errors_;
};

}  // namespace fabricsim
