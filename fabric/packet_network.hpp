#pragma once
// The packet-level network of a topology: one RDMA NIC per endpoint, one Switch per network
// switch, one EgressPort per direction of every network link, wired as the graph says
// (including which port of the same cable sends back, for PFC) and forwarding by the compiled
// routing tables.
//
// Latency of a hop = cable propagation (from the link's length) + the fixed forwarding latency
// of the switch the packet enters (folded into the hop that leads into the switch: a constant
// delay on a FIFO path commutes with the queue behind it).

#include <memory>
#include <vector>

#include "fabric/fabric.hpp"
#include "fabric/host_fabric.hpp"
#include "fabric/params.hpp"
#include "models/nccl/collective.hpp"
#include "models/switch/switch.hpp"
#include "models/transport/nic.hpp"
#include "topo/routing.hpp"

namespace fabricsim {

class FabricMonitor;

class PacketNetwork final : public Forwarding, public Fabric {
 public:
  PacketNetwork(Simulation& sim, const Topology& topo, const Routing& routing,
                const NetworkParams& params);
  PacketNetwork(const PacketNetwork&) = delete;
  PacketNetwork& operator=(const PacketNetwork&) = delete;
  ~PacketNetwork() override;

  RdmaNic& nic(std::size_t endpoint) { return *nics_[endpoint]; }
  std::size_t nic_count() const { return nics_.size(); }
  Switch& network_switch(std::size_t s) { return *switches_[s]; }
  const Switch& network_switch(std::size_t s) const { return *switches_[s]; }
  std::size_t switch_count() const { return switches_.size(); }
  std::string_view level() const override { return "packet"; }
  MessageLog& messages() override { return messages_; }
  const MessageLog& messages() const override { return messages_; }
  void start_messages() override;
  void watch(const MonitorConfig& cfg) override;
  std::optional<Verdict> verdict() const override;
  std::vector<Metric> level_metrics() const override;
  // The servers' in-server ports, then the NICs' ports, then every switch port.
  void for_each_link(const std::function<void(const Link&)>& f) const override;
  // A new connection (queue pair) for messages that must go out in order on one QP.
  std::uint32_t open_connection() override;
  // Adds a message (start >= now) and schedules it; returns its id.
  std::uint64_t post(const Message& m) override;
  const Message& message(std::uint64_t id) const override { return messages_[id]; }
  void set_listener(CompletionListener* listener) override { messages_.listener = listener; }
  const std::vector<TransportError>& errors() const override { return errors_; }
  const Pool<Packet>& packet_pool() const { return pool_; }
  const Routing& routing() const { return routing_; }
  const HostFabric* host_fabric() const { return host_.get(); }

  PortIndex egress(std::uint32_t switch_index, const Packet& p) override;

 private:
  Simulation& sim_;
  const Topology& topo_;
  const Routing& routing_;
  NetworkParams params_;
  Pool<Packet> pool_;
  MessageLog messages_;
  std::deque<QueuePair> qps_;
  std::vector<TransportError> errors_;
  std::vector<std::unique_ptr<Switch>> switches_;
  std::vector<std::unique_ptr<RdmaNic>> nics_;
  std::unique_ptr<HostFabric> host_;
  std::uint64_t spray_counter_ = 0;
  std::unique_ptr<FabricMonitor> monitor_;
};

}  // namespace fabricsim
