#pragma once
// An output-queued switch with a shared buffer, PFC and ECN.
//
// Buffer (MMU) model, after the Broadcom/Mellanox shared-buffer schemes as the HPCC simulator
// models them (../shared/reference/protocols.md section 2). Bytes are charged to the ingress
// (port, priority) a packet arrived on, in this order:
//   1. reserved: up to `reserved` bytes per ingress queue, always admitted;
//   2. shared:   while the queue's shared bytes stay below the dynamic threshold
//                T = alpha x (shared pool - shared bytes in use), the pool being the buffer
//                less all reserved and headroom space;
//   3. headroom: lossless priorities only, up to `headroom` bytes per ingress queue: what
//                arrives between sending XOFF and the upstream port stopping;
//   otherwise the packet is dropped (for a lossless priority that means headroom was too
//   small: it is counted separately).
// PFC: an ingress queue of a lossless priority sends XOFF upstream when it uses headroom or its
// shared bytes reach T, refreshes the pause every half pause time while that holds, and sends
// XON when headroom is empty and shared + resume_offset <= T. With static thresholds instead:
// XOFF when its occupancy (reserved + shared + headroom) reaches pfc_xoff, XON at pfc_xon.
// Bytes are released when the packet leaves its egress queue.
// ECN: when a packet of an ECN-enabled priority leaves its egress queue, it is CE-marked with
// probability 0 below Kmin bytes queued (that priority, that port), rising linearly to Pmax at
// Kmax, and 1 above Kmax (DCQCN's RED-like marking, at dequeue as in the HPCC simulator).

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "models/switch/config.hpp"
#include "net/port.hpp"
#include "sim/rng.hpp"

namespace fabricsim {

class Forwarding {
 public:
  virtual PortIndex egress(std::uint32_t switch_index, const Packet& p) = 0;

 protected:
  ~Forwarding() = default;
};

class Switch final : public PacketSink, public PortOwner {
 public:
  Switch(Simulation& sim, Pool<Packet>& pool, std::string name, std::uint32_t index,
         Forwarding& forwarding, const BufferConfig& buffer);
  EgressPort& add_port(const PortConfig& cfg);
  // Call once every port is added: sizes the per-ingress bookkeeping.
  void seal();
  EgressPort& port(std::size_t i) { return *ports_[i]; }
  const EgressPort& port(std::size_t i) const { return *ports_[i]; }
  std::size_t port_count() const { return ports_.size(); }
  const std::string& name() const { return name_; }
  std::uint32_t index() const { return index_; }
  void receive(Packet* p, PortIndex ingress) override;
  void on_dequeue(EgressPort& port, Packet& p) override;

 private:
  enum Charge : std::uint8_t { kReserved, kShared, kHeadroom };
  struct IngressQueue {
    Bytes reserved{}, shared{}, headroom{};
    bool xoff = false;
    std::uint32_t refresh_generation = 0;
  };
  Bytes threshold() const;
  void check_xoff(std::size_t ingress, std::uint8_t priority);
  void check_xon(std::size_t ingress, std::uint8_t priority);
  void on_refresh(std::uint64_t payload);
  Time pause_time(std::size_t ingress) const;
  bool lossless(std::uint8_t priority) const { return cfg_.pfc && (cfg_.lossless >> priority & 1); }

  Simulation& sim_;
  Pool<Packet>& pool_;
  std::string name_;
  std::uint32_t index_;
  Forwarding& forwarding_;
  BufferConfig cfg_;
  Rng rng_;
  HandlerId refresh_;
  std::vector<std::unique_ptr<EgressPort>> ports_;
  std::vector<IngressQueue> queues_;  // [ingress port * 8 + priority]
  Bytes shared_pool_{};
  Bytes shared_used_{};
  Counter& drops_;
  Counter& lossless_drops_;
  std::vector<Counter*> ecn_marked_;  // per port, when ECN is on
  Gauge& buffer_used_;
  Bytes used_{};
};

}  // namespace fabricsim
