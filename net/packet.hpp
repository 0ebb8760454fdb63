#pragma once
// The common packet header. Kept small; transport state lives in the NICs' queue pairs, keyed
// by the message id the packet carries.

#include <cstddef>
#include <cstdint>
#include <iterator>

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

// 64-byte aligned: a pool slot is one cache line, so the header a port or a NIC reads costs one
// miss, never two.
struct alignas(64) Packet {
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
  // Owned by the one PacketFifo (port queue or wire) the packet is in: a packet is in at most
  // one at a time, so the queues need no storage of their own.
  Packet* fifo_next = nullptr;
  Time wire_arrival{};  // on a wire: when its last bit reaches the far end
};
static_assert(sizeof(Packet) == 64, "a packet header is one cache line");

// A first-in first-out queue of packets linked through Packet::fifo_next: two pointers, no
// allocation, O(1) push and pop. Replaces std::deque in the ports, whose 512-byte blocks and
// map spread one port's queues over a dozen cache lines (issue 19).
class PacketFifo {
 public:
  bool empty() const { return head_ == nullptr; }
  Packet* front() const { return head_; }
  void push_back(Packet* p) {
    p->fifo_next = nullptr;
    (tail_ != nullptr ? tail_->fifo_next : head_) = p;
    tail_ = p;
  }
  Packet* pop_front() {
    Packet* p = head_;
    head_ = p->fifo_next;
    if (head_ == nullptr) tail_ = nullptr;
    p->fifo_next = nullptr;
    return p;
  }

  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = const Packet*;
    using difference_type = std::ptrdiff_t;
    using pointer = const Packet* const*;
    using reference = const Packet*;
    const_iterator() = default;
    explicit const_iterator(const Packet* p) : p_(p) {}
    const Packet* operator*() const { return p_; }
    const_iterator& operator++() {
      p_ = p_->fifo_next;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const const_iterator&) const = default;

   private:
    const Packet* p_ = nullptr;
  };
  const_iterator begin() const { return const_iterator(head_); }
  const_iterator end() const { return const_iterator(); }

 private:
  Packet* head_ = nullptr;
  Packet* tail_ = nullptr;
};

// Something that accepts packets: `ingress` is the receiver's local port the packet came in on.
class PacketSink {
 public:
  virtual void receive(Packet* p, PortIndex ingress) = 0;

 protected:
  ~PacketSink() = default;
};

}  // namespace fabricsim
