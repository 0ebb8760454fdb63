#pragma once
// An egress port: eight priority queues feeding one direction of a full-duplex link.
//
// Link model: a packet of w wire bytes occupies the transmitter for tx_time(w, rate) (exact,
// sim/units.hpp) and arrives at the far end `latency` after its last bit left. Arrivals over a
// constant-latency link are FIFO, so only the head arrival is scheduled: a port has at most
// three pending events (transmission done, next arrival, pause expiry) however many packets
// are queued or in flight. The transmission-done event is only scheduled when something waits
// for the transmitter (a queued packet, or an owner that supplies packets on demand): an
// uncongested switch hop costs one event, the arrival.
//
// Scheduling: PFC frames first (they are never paused), then strict priority (7 highest) or,
// when configured, strict for some priorities and DWRR for the rest. A priority paused by the
// far end is skipped; the packet already on the wire completes. When
// no queue has an eligible packet the port asks its owner (a NIC) for one.
//
// PFC (802.1Qbb): a received pause frame for priority p with q quanta stops p for q x 512 bit
// times at this link's rate; q = 0 resumes at once; a refresh extends the pause. Admission
// (buffers) is the owner's business: the port queues what it is given.

#include <array>
#include <cstdint>
#include <string>

#include "net/packet.hpp"
#include "sim/pool.hpp"
#include "sim/simulation.hpp"

namespace fabricsim {

struct PortConfig {
  Bandwidth rate{};
  Time latency{};
  std::uint8_t lossless = 0;  // bitmask of PFC-enabled priorities (named counters for these)
  // PFC watchdog (switch ports): a lossless priority paused without a break for this long is a
  // pause storm; the port then ignores the pause for it until the pause ends (XON or expiry),
  // and with `watchdog_drop` also discards its queued and arriving packets. 0 = off.
  Time watchdog{};
  bool watchdog_drop = true;
  // InfiniBand link-level flow control: the far end's receive buffer per virtual lane (here:
  // per priority), in bytes. A packet is sent only if its bytes fit in the credits left; the
  // far end returns the credits when the packet leaves its buffer, one link latency later
  // (flow-control packets). 0 = no credit flow control (Ethernet).
  Bytes vl_credits{};
  // Scheduling: priorities in `strict` are served first, highest first; the others share the
  // rest by deficit weighted round robin with these weights. All strict = plain strict priority.
  std::uint8_t strict = 0xff;
  std::array<int, 8> dwrr_weight{1, 1, 1, 1, 1, 1, 1, 1};
};

// DWRR credit per visit per unit of weight: one maximum-size Ethernet jumbo frame.
inline constexpr Bytes kDwrrQuantum{9216};

class EgressPort;

// The node that owns a port: hands it packets when it is idle (NICs) and learns when a packet
// leaves a queue (switch buffer release, ECN marking).
class PortOwner {
 public:
  virtual Packet* pull(EgressPort&) { return nullptr; }
  virtual void on_dequeue(EgressPort&, Packet&) {}

 protected:
  ~PortOwner() = default;
};

// Wire size of a PFC frame: 64 B minimum frame + 8 B preamble + 12 B inter-frame gap.
inline constexpr Bytes kPauseFrameWireBytes{84};

class EgressPort {
 public:
  static constexpr int kPriorities = 8;

  EgressPort(Simulation& sim, Pool<Packet>& pool, const std::string& name, const PortConfig& cfg);
  EgressPort(const EgressPort&) = delete;
  EgressPort& operator=(const EgressPort&) = delete;

  // Wiring: the receiving node, its local index for this link, and the port of the same cable
  // that sends the other way (PFC frames that arrive here pause that one).
  void connect(PacketSink* far_end, PortIndex far_port) {
    sink_ = far_end;
    far_port_ = far_port;
  }
  void set_reverse(EgressPort* reverse) { reverse_ = reverse; }
  // `pulls`: the owner hands packets out on demand (a NIC), so the port must wake when free.
  // `slot`: the owner's own index of this port (a switch's port number), for its callbacks.
  void set_owner(PortOwner* owner, bool pulls = false, std::uint32_t slot = 0) {
    owner_ = owner;
    owner_pulls_ = pulls;
    owner_slot_ = slot;
  }
  std::uint32_t owner_slot() const { return owner_slot_; }
  const PortConfig& config() const { return cfg_; }
  const std::string& name() const { return name_; }

  void enqueue(Packet* p);
  // Sends a PFC frame for `priority` (quanta 0 = XON) ahead of all queued data.
  void send_pause(std::uint8_t priority, std::uint16_t quanta);
  // Tells an idle port that its owner may have packets now.
  void kick();

  // Whether a packet of `bytes` of `priority` could go now as far as credits are concerned.
  bool has_credit(std::uint8_t priority, std::uint32_t bytes) const {
    return !credit_flow_ || credits_[priority] >= Bytes(bytes);
  }
  // Credits come back from the far end (called there; they arrive one link latency later).
  void return_credit(std::uint8_t priority, std::uint32_t bytes);
  bool paused(std::uint8_t priority) const {
    return prio_[priority].paused_until > sim_.now() && !prio_[priority].storm;
  }
  Bytes queued(std::uint8_t priority) const { return prio_[priority].queued; }
  Bytes peak_queued() const { return peak_queued_; }
  std::uint64_t tx_bytes() const { return tx_bytes_.value; }
  const PacketFifo& queue(std::uint8_t priority) const { return prio_[priority].queue; }
  EgressPort* reverse() const { return reverse_; }
  PacketSink* far_end() const { return sink_; }
  PortIndex far_port() const { return far_port_; }

 private:
  void start_transmission(Packet* p);
  void on_tx_done(std::uint64_t generation);
  void schedule_tx_done(Time at);
  void on_arrival(std::uint64_t);
  void on_pause_expiry(std::uint64_t);
  void on_watchdog(std::uint64_t);
  void on_credit(std::uint64_t);
  void end_pause(std::uint8_t priority);
  void discard(Packet* p);
  void apply_pause(std::uint8_t priority, std::uint16_t quanta);
  Packet* next_packet();
  void account(Packet* p, bool added);

  // Layout: what every packet touches comes first, in three cache lines (the port of a
  // 4,096-host fabric is one of 16,000: its hot state must not be spread over a kilobyte),
  // with its counters inline; then one block per priority, of which a packet touches its own;
  // then what only PFC, credits, DWRR and the watchdog use.
  Simulation& sim_;
  PacketSink* sink_ = nullptr;
  PortOwner* owner_ = nullptr;
  Time busy_until_{};  // the transmitter is busy before this time
  // Serialization time of the last packet size seen: packets mostly share a few sizes, and this
  // spares a 128-bit division per packet without changing the exact result.
  Time cached_tx_time_{};
  Time latency_{};  // cfg_.latency
  std::uint32_t cached_wire_bytes_ = 0;
  PortIndex far_port_ = 0;
  std::uint32_t waiting_ = 0;   // packets in control_ and the priority queues
  std::uint8_t nonempty_ = 0;   // bit p: priority p's queue holds a packet
  std::uint8_t strict_ = 0xff;  // cfg_.strict
  std::uint8_t lossless_ = 0;   // cfg_.lossless
  bool owner_pulls_ = false;
  std::uint32_t owner_slot_ = 0;
  bool tx_done_pending_ = false;  // a live transmission-done event is scheduled
  bool credit_flow_ = false;      // cfg_.vl_credits > 0
  HandlerId tx_done_, arrival_;
  std::uint64_t tx_generation_ = 0;
  PacketFifo wire_;  // sent, not yet arrived; arrivals are FIFO (constant latency)
  PacketFifo control_;
  Bytes total_queued_{0};
  Bytes peak_queued_{0};
  Counter tx_packets_;
  Counter tx_bytes_;
  Counter tx_data_packets_;
  Gauge queue_gauge_;
  Gauge tx_bytes_gauge_;  // cumulative, for link utilisation time series

  struct alignas(64) Priority {
    PacketFifo queue;
    Bytes queued{0};
    Gauge queue_gauge;  // registered for lossless priorities only
    Time paused_until{};
    bool storm = false;  // the watchdog declared a pause storm: the pause is ignored
  };
  std::array<Priority, kPriorities> prio_;

  // Cold: configuration and the state of PFC, credits, DWRR and the watchdog.
  Pool<Packet>& pool_;
  PortConfig cfg_;
  std::string name_;
  EgressPort* reverse_ = nullptr;
  HandlerId pause_expiry_, watchdog_, credit_;
  std::array<Bytes, kPriorities> credits_{};
  std::array<Bytes, kPriorities> dwrr_deficit_{};
  int dwrr_next_ = 0;
  bool dwrr_credited_ = false;
  std::array<Time, kPriorities> pause_started_{};
  std::array<EventHandle, kPriorities> pause_timer_{};
  std::array<EventHandle, kPriorities> watchdog_timer_{};
  // Per lossless priority: 1 while the far end holds the priority paused.
  std::array<Gauge*, kPriorities> paused_gauge_{};
  // Per lossless priority: the span kind "<port>.prio<p>_paused" and the open span's record
  // (from the first pause frame to the expiry or XON that ends the pause; a refresh extends it).
  std::array<std::uint32_t, kPriorities> pause_span_name_{};
  std::array<std::uint32_t, kPriorities> pause_span_{};
  // ethtool -S style, per lossless priority p: tx_prio<p>_pause (frames sent out this port),
  // rx_prio<p>_pause (frames received on this link, pausing this port), and the time paused.
  std::array<Counter*, kPriorities> tx_pause_{};
  std::array<Counter*, kPriorities> rx_pause_{};
  std::array<Counter*, kPriorities> rx_pause_duration_ns_{};
  std::array<Counter*, kPriorities> watchdog_storms_{};
  std::array<Counter*, kPriorities> watchdog_dropped_{};
};

}  // namespace fabricsim
