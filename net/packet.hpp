#pragma once
// The common packet header. Kept small; transport state lives in the NICs' queue pairs, keyed
// by the message id the packet carries.

#include <cstdint>

#include "sim/units.hpp"

namespace fabricsim {

enum class PacketKind : std::uint8_t {
  kData,   // RDMA write/send payload
  kAck,    // RoCE/IB ACK: psn = highest in-order PSN received
  kNak,    // sequence-error NAK: psn = PSN expected (go back to it)
  kCnp,    // DCQCN congestion notification packet
  kPause,  // 802.1Qbb PFC frame for one priority; quanta in `psn` (0 = XON)
  kDma,    // data moving inside a server (PCIe, host memory) between GPU memory and a NIC
};

// A switch-local port index. 32 bits: a star of a million hosts has a million ports on its
// one switch (16 bits misrouted every host past 65,535).
using PortIndex = std::uint32_t;

struct Packet {
  std::uint64_t message = 0;     // message / queue pair this packet belongs to
  std::uint32_t src = 0;         // source endpoint
  std::uint32_t dst = 0;         // destination endpoint
  std::uint32_t payload = 0;     // application bytes carried
  std::uint32_t wire_bytes = 0;  // bytes serialized: payload + all per-packet overhead
  std::uint32_t psn = 0;         // packet sequence number (or pause quanta)
  PortIndex ingress = 0;         // switch-local ingress port, set on arrival at a switch
  std::uint8_t priority = 0;     // 802.1p / traffic class 0..7 (7 served first)
  PacketKind kind = PacketKind::kData;
  std::uint8_t charge = 0;  // which switch buffer pool holds it (MMU bookkeeping)
  bool ecn = false;         // congestion experienced (CE) mark
  bool last = false;        // last packet of its message
  std::uint8_t hop = 0;     // kDma: position along its in-server route
  std::uint16_t route = 0;  // kDma: which in-server route
};

// Something that accepts packets: `ingress` is the receiver's local port the packet came in on.
class PacketSink {
 public:
  virtual void receive(Packet* p, PortIndex ingress) = 0;

 protected:
  ~PacketSink() = default;
};

}  // namespace fabricsim
