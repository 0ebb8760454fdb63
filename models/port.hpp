#pragma once
// An egress port: a drop-tail FIFO queue feeding one unidirectional link.
//
// Link model: a packet of w wire bytes occupies the transmitter for tx_time(w, rate) (exact,
// sim/units.hpp) and arrives at the far end `latency` after its last bit left (propagation
// plus the receiver's fixed forwarding latency). Packets on the wire are kept in FIFO order
// with their arrival times; since latency is constant they arrive in order, so only the head
// arrival is scheduled: a port has at most two pending events (transmit done, next arrival),
// however many packets are queued or in flight.
//
// Queue: holds at most `capacity` bytes of waiting packets (the packet on the transmitter is
// not counted); a packet that does not fit is dropped and counted. When the queue is empty the
// port pulls from its PacketSource, if any, so senders need not queue whole messages.

#include <cstdint>
#include <deque>
#include <string>

#include "models/packet.hpp"
#include "sim/pool.hpp"
#include "sim/simulation.hpp"

namespace fabricsim {

struct PortConfig {
  Bandwidth rate{};
  Time latency{};
  Bytes capacity = Bytes(std::numeric_limits<Bytes::rep>::max());
};

class EgressPort {
 public:
  EgressPort(Simulation& sim, Pool<Packet>& pool, const std::string& name, const PortConfig& cfg);
  EgressPort(const EgressPort&) = delete;
  EgressPort& operator=(const EgressPort&) = delete;

  void connect(PacketSink* far_end) { sink_ = far_end; }
  void set_source(PacketSource* source) { source_ = source; }
  const PortConfig& config() const { return cfg_; }

  // Queues a packet (or drops it when the queue is full).
  void enqueue(Packet* p);
  // Tells an idle port that its source may have packets now.
  void kick();
  Bytes queued() const { return queued_; }
  Bytes peak_queued() const { return peak_queued_; }
  std::uint64_t tx_bytes() const { return tx_bytes_.value; }

 private:
  void start_transmission(Packet* p);
  void on_tx_done(std::uint64_t);
  void on_arrival(std::uint64_t);
  Packet* next_packet();

  struct InFlight {
    Time arrival{};
    Packet* packet;
  };

  Simulation& sim_;
  Pool<Packet>& pool_;
  PortConfig cfg_;
  PacketSink* sink_ = nullptr;
  PacketSource* source_ = nullptr;
  HandlerId tx_done_;
  HandlerId arrival_;
  bool transmitting_ = false;
  std::deque<Packet*> queue_;
  std::deque<InFlight> wire_;
  Bytes queued_{0};
  Bytes peak_queued_{0};
  Gauge& queue_gauge_;
  Counter& tx_packets_;
  Counter& tx_bytes_;
  Counter& drops_;
  Counter& drop_bytes_;
};

}  // namespace fabricsim
