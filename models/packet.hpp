#pragma once
// The common packet header. Kept small: model-specific state (transport, congestion control)
// will live in its own types keyed by flow, not in every packet.

#include <cstdint>

#include "sim/units.hpp"

namespace fabricsim {

struct Packet {
  std::uint64_t message = 0;     // message (transfer) this packet belongs to
  std::uint32_t src = 0;         // source host index
  std::uint32_t dst = 0;         // destination host index
  std::uint32_t payload = 0;     // application bytes carried
  std::uint32_t wire_bytes = 0;  // bytes serialized on a link: payload + all per-packet overhead
};

// Something that accepts packets (a host's receive path, a switch's ingress).
class PacketSink {
 public:
  virtual void receive(Packet* p) = 0;

 protected:
  ~PacketSink() = default;
};

// Something an idle egress port pulls its next packet from (a host's send path).
class PacketSource {
 public:
  virtual Packet* pull() = 0;

 protected:
  ~PacketSource() = default;
};

}  // namespace fabricsim
