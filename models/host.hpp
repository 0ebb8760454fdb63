#pragma once
// Hosts, a store-and-forward output-queued switch, and the message log they share.
//
// Host: sends its messages one after another (FIFO) through its NIC port, cut into packets of
// at most `mtu` payload bytes, each carrying `header` bytes of per-packet wire overhead.
// Packets are made only when the NIC can transmit (the port pulls them), so the host has no
// queue of its own. A message completes when all its payload bytes reached the destination;
// with drops and no retransmission (lossy fabric, no transport yet) it may never complete.
//
// Switch: output-queued; a packet arriving on any port goes to the egress port its route
// table names for the destination host.

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
       const PacketFormat& format, const PortConfig& nic);
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

class Switch final : public PacketSink {
 public:
  Switch(Simulation& sim, Pool<Packet>& pool, std::string name);
  EgressPort& add_port(const PortConfig& cfg);
  EgressPort& port(std::size_t i) { return *ports_[i]; }
  std::size_t port_count() const { return ports_.size(); }
  void set_route(std::uint32_t dst_host, std::uint32_t port) {
    if (routes_.size() <= dst_host) routes_.resize(dst_host + 1);
    routes_[dst_host] = port;
  }
  void receive(Packet* p) override { ports_[routes_[p->dst]]->enqueue(p); }

 private:
  Simulation& sim_;
  Pool<Packet>& pool_;
  std::string name_;
  std::vector<std::unique_ptr<EgressPort>> ports_;
  std::vector<std::uint32_t> routes_;
};

}  // namespace fabricsim
