#pragma once
// How a queue pair gets its data across reliably: the transport's rules, behind one seam so
// the NIC's engine (nic.hpp: queue pairs, segments, pacing, the wire, timers) has no branch on
// the transport. An implementation is stateless (a constant object): per-QP state lives in
// QueuePair, and it acts through the engine it is handed (a friend of RdmaNic).
//   RC (rc.cpp): per-packet or coalesced ACKs, a sequence-error NAK per gap, go-back-N from
//     the first unacknowledged PSN, CNPs for ECN-marked packets, a fixed local ACK timeout
//     (4.096 us x 2^ib_timeout) and ib_retry_cnt retries before the QP enters the error state.
//   TCP (tcp.cpp): cumulative ACKs echoing CE, out-of-order segments held at the receiver,
//     NewReno fast retransmit and partial-ACK recovery, an RTO from min_rto with exponential
//     backoff (to 64x), the host stack's latency at both ends, no per-message send engine.

#include <cstdint>

#include "net/packet.hpp"
#include "sim/units.hpp"

namespace fabricsim {

class RdmaNic;
struct QueuePair;
struct RdmaConfig;

class Reliability {
 public:
  // The time between a message's post and its first byte leaving the host (TCP's stack).
  virtual Time start_delay(const RdmaConfig& cfg) const = 0;
  // Whether messages pass the NIC's send engine (message rate and per-message overhead).
  virtual bool uses_send_engine() const = 0;
  // Every packet the NIC receives (PFC frames and DMA chunks never reach it); the engine
  // releases it afterwards.
  virtual void receive(RdmaNic& nic, Packet* p) const = 0;
  // The ACK timer's base period (Time::max(): never), and how long a QP may go without
  // progress before the timer counts as expired.
  virtual Time base_timeout(const RdmaConfig& cfg) const = 0;
  virtual Time timeout(const RdmaConfig& cfg, const QueuePair& qp) const = 0;
  // The ACK timer expired without progress.
  virtual void on_timeout(RdmaNic& nic, std::uint64_t qp) const = 0;

 protected:
  ~Reliability() = default;
};

// The reliability of RdmaConfig::transport.
const Reliability& reliability_of(const RdmaConfig& cfg);

}  // namespace fabricsim
