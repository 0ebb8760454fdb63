#pragma once
// The packet-level network of a topology: one Host per endpoint, one Switch per network switch,
// one EgressPort per direction of every network link, wired as the graph says and forwarding
// by the compiled routing tables.
//
// Latency of a hop = cable propagation (from the link's length) + the fixed forwarding latency
// of the switch the packet enters (folded into the hop that leads into the switch: a constant
// delay on a FIFO path commutes with the queue behind it).

#include <memory>
#include <vector>

#include "models/host.hpp"
#include "topologies/routing.hpp"

namespace fabricsim {

struct NetworkParams {
  Time switch_latency{};
  Bytes port_buffer{};  // per switch egress queue
  PacketFormat format{};
  PathSelection path_selection = PathSelection::kHash;
};

class PacketNetwork final : public Forwarding {
 public:
  PacketNetwork(Simulation& sim, const Topology& topo, const Routing& routing,
                const NetworkParams& params);
  PacketNetwork(const PacketNetwork&) = delete;
  PacketNetwork& operator=(const PacketNetwork&) = delete;

  Host& host(std::size_t endpoint) { return *hosts_[endpoint]; }
  std::size_t host_count() const { return hosts_.size(); }
  Switch& network_switch(std::size_t s) { return *switches_[s]; }
  std::size_t switch_count() const { return switches_.size(); }
  // The message log: add messages, then start_messages() schedules every one.
  std::vector<Message>& messages() { return messages_; }
  void start_messages();
  const Pool<Packet>& packet_pool() const { return pool_; }

  std::uint16_t egress(std::uint32_t switch_index, const Packet& p) override;

 private:
  const Routing& routing_;
  NetworkParams params_;
  Pool<Packet> pool_;
  std::vector<Message> messages_;
  std::vector<std::unique_ptr<Switch>> switches_;
  std::vector<std::unique_ptr<Host>> hosts_;
  std::uint64_t spray_counter_ = 0;
};

}  // namespace fabricsim
