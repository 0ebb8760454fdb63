#pragma once
// The seam between a NIC's queue-pair engine (models/transport/nic.hpp) and its congestion
// control. The engine owns reliability (PSNs, ACKs, NAKs, retransmission, timeouts) and the
// wire; an algorithm owns its per-QP state and turns the engine's signals (packets sent,
// CNPs, ACKs with ECN echo, losses, its own timers) into the two things the engine obeys:
// a pacing rate and, for window-based algorithms, a window in packets.
//
// An algorithm is a `CcAlgorithm`: a name and a factory, defined in its own
// models/transport/<name>.cpp. The scenario loader picks one and stores a pointer to it in
// RdmaConfig::congestion, so adding an algorithm touches only its own files, the loader's key
// for it, and its tests; the engine never names one.
//
// Invariants the engine relies on:
//  - rates are reported through CcHost::set_rate before they act (the engine caches the pacing
//    rate per QP, so the packet path makes no virtual call for it);
//  - an algorithm's timers are scheduled through CcHost::schedule_cc_timer with a tag below
//    kCcTagLimit (the engine keeps the tags above it for its own ACK timer) and must check
//    their own generation: the engine never cancels them;
//  - a QP that stopped (on_stop) gets no timer work until on_resume: idle QPs keep no events
//    alive, and on_resume applies what the timers would have done meanwhile.

#include <cstdint>
#include <memory>
#include <string_view>

#include "sim/units.hpp"

namespace fabricsim {

struct RdmaConfig;

// Timer tags an algorithm may use: 22 bits of generation under 2 bits of kind, kinds 0..2.
inline constexpr std::uint32_t kCcTagLimit = 3u << 22;
inline constexpr std::uint32_t kCcGenerationMask = (1u << 22) - 1;
inline constexpr std::uint32_t cc_tag(std::uint32_t kind, std::uint32_t generation) {
  return (kind << 22) | (generation & kCcGenerationMask);
}

// What an algorithm may ask of the NIC that runs it.
class CcHost {
 public:
  virtual Time cc_now() const = 0;
  // Calls on_timer(slot of `qp`, tag) at `at`; tag < kCcTagLimit.
  virtual void schedule_cc_timer(std::uint64_t qp, std::uint32_t tag, Time at) = 0;
  // The pacing rate of `qp` is now `bps` (the engine records it and its probe).
  virtual void set_cc_rate(std::uint64_t qp, double bps) = 0;
  // Something may be sendable sooner than the engine thinks (a rate rose): look again.
  virtual void cc_kick() = 0;

 protected:
  ~CcHost() = default;
};

// A cumulative ACK that made progress (window-based transports).
struct CcAck {
  std::uint32_t newly_acked = 0;  // packets newly acknowledged
  bool ece = false;               // the ACK echoes a CE mark
  std::uint32_t una = 0;          // first unacknowledged PSN after it
  std::uint32_t next_psn = 0;     // next new PSN the sender will send
  bool in_recovery = false;       // the sender was in fast recovery when it arrived
  bool recovery_done = false;     // ... and this ACK ended it
};

class CongestionControl {
 public:
  // What the engine must consult: a window (TCP) and/or a count of bytes sent (byte counters).
  struct Needs {
    bool window = false;
    bool bytes_sent = false;
  };
  virtual ~CongestionControl() = default;
  virtual Needs needs() const = 0;
  // A QP's first message: creates its state and returns the slot the engine passes back.
  // Every QP starts at line rate.
  virtual std::uint32_t open(std::uint64_t qp) = 0;
  // Packets that may be outstanding beyond the first unacknowledged one (Needs::window).
  virtual double window(std::uint32_t) const { return 0; }
  // One packet of `wire_bytes` left the NIC (Needs::bytes_sent).
  virtual void on_sent(std::uint32_t, std::uint32_t /*wire_bytes*/) {}
  // A congestion notification packet arrived for an active QP (RoCE).
  virtual void on_cnp(std::uint32_t) {}
  virtual void on_ack(std::uint32_t, const CcAck&) {}
  // Three duplicate ACKs: the engine retransmits the first unacknowledged packet.
  virtual void on_fast_retransmit(std::uint32_t) {}
  // A further duplicate ACK during fast recovery (one more packet left the network).
  virtual void on_recovery_dupack(std::uint32_t) {}
  // The retransmission timer fired without progress.
  virtual void on_timeout(std::uint32_t) {}
  // The QP has nothing left to send (everything acknowledged) / has data again.
  virtual void on_stop(std::uint32_t) {}
  virtual void on_resume(std::uint32_t) {}
  virtual void on_timer(std::uint32_t, std::uint32_t /*tag*/) {}
};

// A congestion-control algorithm as the configuration names it.
struct CcAlgorithm {
  std::string_view name;
  std::unique_ptr<CongestionControl> (*make)(const RdmaConfig& cfg, CcHost& host, double line_bps);
};

// No congestion control: every QP sends at line rate, whatever it is told.
extern const CcAlgorithm kNoCongestionControl;

}  // namespace fabricsim
