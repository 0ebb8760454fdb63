#pragma once
// Star fabric: every host's NIC on one switch port. Host h uses switch port h.
// The switch's fixed forwarding latency is folded into the host->switch hop (a constant
// delay on a FIFO path commutes with the queue), so each hop is one EgressPort.

#include <memory>
#include <vector>

#include "models/host.hpp"

namespace fabricsim {

struct StarSpec {
  std::uint32_t hosts = 2;
  Bandwidth link_rate{};
  Time cable_latency{};
  Time switch_latency{};
  Bytes port_buffer{};
  PacketFormat format{};
};

class StarFabric {
 public:
  StarFabric(Simulation& sim, const StarSpec& spec);
  StarFabric(const StarFabric&) = delete;
  StarFabric& operator=(const StarFabric&) = delete;

  const StarSpec& spec() const { return spec_; }
  Host& host(std::size_t i) { return *hosts_[i]; }
  std::size_t host_count() const { return hosts_.size(); }
  Switch& core() { return switch_; }
  // The message log: add messages, then start_messages() schedules every one.
  std::vector<Message>& messages() { return messages_; }
  void start_messages();
  const Pool<Packet>& packet_pool() const { return pool_; }

 private:
  StarSpec spec_{};
  Pool<Packet> pool_;
  std::vector<Message> messages_;
  Switch switch_;
  std::vector<std::unique_ptr<Host>> hosts_;
};

}  // namespace fabricsim
