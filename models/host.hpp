#pragma once
// Hosts, a store-and-forward output-queued switch, and the message log they share.
//
// Host: sends its messages one after another (FIFO) through its NIC port, cut into packets of
// at most `mtu` payload bytes, each carrying `header` bytes of per-packet wire overhead.
// Packets are made only when the NIC can transmit (the port pulls them), so the host has no
// queue of its own. A message completes when all its payload bytes reached the destination;
// with drops and no retransmission (lossy fabric, no transport yet) it may never complete.
//
// Switch: output-queued; a packet arriving on any port goes to the egress port its forwarding
// function picks (a compiled routing table; see topologies/routing.hpp).

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "models/port.hpp"

namespace fabricsim {

struct Message {
  std::uint32_t src = 0;
  std::uint32_t dst = 0;
  Bytes size{};
  Time start{};
  Bytes sent{};
  Bytes received{};
  Time finish = Time::max();  // Time::max() while incomplete
  bool complete() const { return finish != Time::max(); }
};

struct PacketFormat {
  Bytes mtu{};     // payload bytes per packet, at most
  Bytes header{};  // wire overhead per packet (headers, trailers, preamble, inter-frame gap)
};

class Host final : public PacketSink, public PacketSource {
 public:
  Host(Simulation& sim, Pool<Packet>& pool, std::vector<Message>& log, std::uint32_t index,
       const std::string& name, const PacketFormat& format, const PortConfig& nic);
  EgressPort& nic() { return nic_; }
  // Schedules message `id` (already in the log with this host as source) to start at its time.
  void schedule_message(std::uint64_t id);

  void receive(Packet* p) override;
  Packet* pull() override;

 private:
  void on_message_start(std::uint64_t id);
  Simulation& sim_;
  Pool<Packet>& pool_;
  std::vector<Message>& log_;
  std::uint32_t index_;
  PacketFormat format_{};
  EgressPort nic_;
  HandlerId start_;
  std::deque<std::uint64_t> sending_;
  Counter& rx_bytes_;
  Counter& messages_done_;
};

// Picks the egress port of switch `switch_index` for a packet.
class Forwarding {
 public:
  virtual std::uint16_t egress(std::uint32_t switch_index, const Packet& p) = 0;

 protected:
  ~Forwarding() = default;
};

class Switch final : public PacketSink {
 public:
  Switch(Simulation& sim, Pool<Packet>& pool, std::string name, std::uint32_t index,
         Forwarding& forwarding);
  EgressPort& add_port(const PortConfig& cfg);
  EgressPort& port(std::size_t i) { return *ports_[i]; }
  std::size_t port_count() const { return ports_.size(); }
  const std::string& name() const { return name_; }
  void receive(Packet* p) override { ports_[forwarding_.egress(index_, *p)]->enqueue(p); }

 private:
  Simulation& sim_;
  Pool<Packet>& pool_;
  std::string name_;
  std::uint32_t index_;
  Forwarding& forwarding_;
  std::vector<std::unique_ptr<EgressPort>> ports_;
};

}  // namespace fabricsim
