#pragma once
// The hybrid fidelity: packets where PFC, ECN and DCQCN act, flows inside the servers. A
// message between two GPUs of one server through its NVSwitches (and each half of an NVLS
// transfer) is a max-min fluid flow on the GPUs' NVLink bundles (FlowNetwork, scope
// kNvSwitchOnly); every other message - across the network, GPU to NIC over PCIe, through
// host memory, PCIe peer to peer, direct NVLink - runs packet by packet (PacketNetwork).
// Collectives inside one server may stream as pipelines (the flow level's execution); those
// that cross the network run primitive by primitive, their in-server hand-offs as flows.
//
// Why this split is exact where it matters: the NVSwitch routes use NVLink only, which the
// packet network's messages do not, with one exception: PXN relays a network message over
// NVLink to the GPU beside the NIC, and that leg stays on the packet network's NVLink ports,
// so it does not share capacity with in-server flows (docs/fidelity.md measures the error
// against full packet level).
//
// Ids: the hybrid's connections pair one of each network's; its message ids map to (network,
// inner id), and completions are passed on under the hybrid's ids. Probe names are the
// packet network's, plus the flow level's "<gpu>.nvlink_out" / "_in" bundles.

#include <memory>
#include <vector>

#include "fabric/flow_network.hpp"
#include "fabric/packet_network.hpp"

namespace fabricsim {

class HybridNetwork final : public Fabric, private CompletionListener, private PipelinePort {
 public:
  HybridNetwork(Simulation& sim, const Topology& topo, const Routing& routing,
                const NetworkParams& params, const FlowEfficiency& efficiency = {});
  HybridNetwork(const HybridNetwork&) = delete;
  HybridNetwork& operator=(const HybridNetwork&) = delete;

  std::string_view level() const override { return "hybrid"; }
  std::uint32_t open_connection() override;
  std::uint64_t post(const Message& m) override;
  const Message& message(std::uint64_t id) const override;
  void set_listener(CompletionListener* listener) override { listener_ = listener; }
  void set_recycle(bool on) override;
  PipelinePort* pipelines() override { return this; }
  // A traffic pattern's messages run between endpoints, on the packet network.
  MessageLog& messages() override { return packet_.messages(); }
  const MessageLog& messages() const override { return packet_.messages(); }
  void start_messages() override { packet_.start_messages(); }
  const std::vector<TransportError>& errors() const override { return packet_.errors(); }
  void watch(const MonitorConfig& cfg) override { packet_.watch(cfg); }
  std::optional<Verdict> verdict() const override { return packet_.verdict(); }
  // The packet level's figures, then the flow level's solver work.
  std::vector<Metric> level_metrics() const override;
  // The packet network's links, then the NVLink bundles the flows used.
  void for_each_link(const std::function<void(const Link&)>& f) const override;

  const PacketNetwork& packet() const { return packet_; }
  const FlowNetwork& flow() const { return flow_; }

 private:
  enum Level : std::uint8_t { kPacket, kFlow };
  struct Ref {
    Level level;
    std::uint64_t id;  // in that network
  };
  void on_message_complete(std::uint64_t inner) override;  // from the packet network
  std::uint64_t post_pipeline(std::span<const Message> members, Bytes bytes, double rate_cap,
                              Time floor, Time tail) override;
  Time path_latency(const Message& m) override { return flow_.path_latency(m); }
  bool streams_network() const override { return false; }
  // Gives a message an inner network took its hybrid id (a recycled one when there is one).
  std::uint64_t adopt(Level level, std::uint64_t inner);
  // Tells the listener message `id` completed and frees the id when recycling.
  void complete(std::uint64_t id);

  // Passes the flow network's completions on (its log's listener).
  struct FlowCompletions final : CompletionListener {
    HybridNetwork* self = nullptr;
    void on_message_complete(std::uint64_t inner) override;
  };

  PacketNetwork packet_;
  FlowNetwork flow_;
  FlowCompletions flow_completions_;
  CompletionListener* listener_ = nullptr;
  bool recycle_ = false;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> connections_;  // (packet, flow)
  std::vector<Ref> refs_;                                             // hybrid id -> inner
  std::vector<std::uint64_t> from_packet_, from_flow_;                // inner id -> hybrid
  std::vector<std::uint64_t> free_ids_;
};

}  // namespace fabricsim
