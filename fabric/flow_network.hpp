#pragma once
// The flow-level backend: every message is a fluid flow on the route the packet model would
// use (same ECMP hash of its queue pair, same GPU-NIC PCIe paths with or without GPUDirect,
// NVLink for GPUs of one server), and rates are max-min fair over every link direction it
// crosses (solver/maxmin.hpp). Rates change only when a flow starts or ends; all starts and
// ends at one instant are gathered into one rate update (an event at the lowest priority of
// that instant), which re-solves only the components they touch.
//
// Per link class, capacity in payload bytes = rate x payload share of the wire: network
// packets carry mtu of payload for mtu + header bytes, PCIe chunks pay a TLP header per
// max_payload, NVLink a header per 256 B flit group; optional per-class efficiency factors
// (calibration data, `[flow]`) multiply it; a network message whose last packet is not full
// carries proportionally more bytes (Route::volume). A flow ends when its last byte has crossed its
// bottleneck plus the path's latency: every hop's propagation and switch latency, plus one
// packet's serialization at each hop but the slowest (store and forward: the first packet's
// before it, the last packet's after it; the slowest hop's share is the drain itself), so an
// uncongested flow completes when the packet model's does.
// Messages of one connection (queue pair) go one after the other, as on a QP; with an RDMA
// message rate, network messages first pass their NIC's send engine one per 1 / rate.
// Not modelled at this level: PFC, ECN/DCQCN, drops and retransmission, ACK traffic.

#include <array>
#include <deque>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "fabric/fabric.hpp"
#include "fabric/packet_network.hpp"
#include "models/nccl/collective.hpp"
#include "solver/maxmin.hpp"

namespace fabricsim {

// What a flow network carries: everything, or (the hybrid fidelity's in-server part) only
// messages on NVSwitch routes; then it registers no switch-port or NIC probes, which the
// packet network beside it owns.
enum class FlowScope { kWhole, kNvSwitchOnly };

class FlowNetwork final : public Fabric, public PipelinePort {
 public:
  FlowNetwork(Simulation& sim, const Topology& topo, const Routing& routing,
              const NetworkParams& params, const FlowEfficiency& efficiency = {},
              FlowScope scope = FlowScope::kWhole);
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;
  ~FlowNetwork() override;

  std::uint32_t open_connection() override;
  std::uint64_t post(const Message& m) override;
  const Message& message(std::uint64_t id) const override { return log_[id]; }
  void set_listener(CompletionListener* listener) override { log_.listener = listener; }
  PipelinePort* pipelines() override { return this; }
  std::uint64_t post_pipeline(std::span<const Message> members, Bytes bytes, double rate_cap,
                              Time floor, Time tail) override;
  Time path_latency(const Message& m) override { return connection_route(m).latency; }
  std::string_view level() const override { return "flow"; }
  MessageLog& messages() override { return log_; }
  const MessageLog& messages() const override { return log_; }
  void start_messages() override;
  const std::vector<TransportError>& errors() const override { return no_errors_; }
  // Every link direction a route has used (and each GPU's NVLink bundle, "<gpu>.nvlink_out" /
  // "_in"), in the order first used: payload bytes at the payload capacity.
  void for_each_link(const std::function<void(const Link&)>& f) const override;
  void set_recycle(bool on) override { recycle_ = on; }
  // rate_updates, flows_resolved.
  std::vector<Metric> level_metrics() const override;
  std::uint64_t rate_updates() const { return updates_; }
  // Whether m goes GPU to GPU of one server through its NVSwitches (or is half of an NVLS
  // transfer): a route of the GPUs' NVLink bundles alone.
  bool nvswitch_route(const Message& m) const;
  std::uint64_t flows_resolved() const { return resolved_; }

 private:
  struct Flow {
    std::uint64_t message = 0;
    MaxMinSolver::Var var = 0;
    double remaining = 0;  // payload bytes
    Time last{};
    double rate = 0;  // payload bytes per second
    Time latency{};
    EventHandle drain{};
    MaxMinSolver::Res cap = kNoCap;  // a pipeline's private rate cap
    bool queued = true;              // a message on its connection's queue (not a pipeline)
    Time not_before{};               // a pipeline's floor
    // A pipeline's network-crossing members: the endpoints whose NICs receive its bytes.
    std::vector<std::uint32_t> rx_nics;
  };
  static constexpr MaxMinSolver::Res kNoCap = UINT32_MAX;
  struct Route {
    std::vector<MaxMinSolver::Res> resources;
    Time latency{};
    // Fluid bytes per payload byte: network capacities count payload in full-MTU packets, so a
    // message whose packets are not all full (k = ceil(S / mtu) packets, header h) carries
    // (S + k h) mtu / (S (mtu + h)) MTU-equivalent bytes, and crosses a network link in the
    // time its packets take. 1 off the network. Its other resources (PCIe, host memory) see
    // the same volume: an overestimate there for small messages, where they are rarely the
    // bottleneck.
    double volume = 1;
  };
  // The resource of one direction of a link (leaving `from`).
  // `name`: the packet model's name of the port (derived when empty).
  MaxMinSolver::Res link_resource(Vertex from, Vertex to, const LinkInfo& link,
                                  std::string name = {});
  // A solver resource of this capacity (payload bytes per second), with its byte counter.
  MaxMinSolver::Res new_resource(double bytes_per_s);
  double utilization(MaxMinSolver::Res r) const;
  // Names each link of the scope's `<link>.utilization` gauge (ProbeRegistry gauge source).
  void visit_utilization_gauges(FlowScope scope, const ProbeRegistry::GaugeVisitor& visit) const;
  // A message's first and last packet (or chunk, or flit): what a route's hops store and
  // forward before and after its bottleneck.
  struct Units {
    Bytes first, last;
    Bytes::rep packets = 1;  // how many: all full but the last
  };
  // Adds the hop's resource and latency, and its first and last unit's time to hop_times_.
  void add_hop(Route& r, Vertex from, Vertex to, const LinkInfo& link, Units wire);
  void add_pcie_path(Route& r, Vertex from, Vertex to, Units chunk);
  // A GPU's NVLink bundle in one direction as a resource (created at `bps` on first use).
  MaxMinSolver::Res nvlink_resource(Vertex gpu, bool outgoing, Bandwidth::rep bps);
  Route route_of(const Message& m);
  // route_of without the store-and-forward times, which it leaves in hop_times_.
  Route route_hops(const Message& m, const Units& unit);
  // GPU to GPU of one server: NVLink or PCIe peer to peer, never the NICs.
  bool inside_server(const Message& m) const;
  // The message's first and last packet: up to one MTU, the last what remains.
  Units packet_units(const Message& m) const;
  // route_of for the members of streamed pipelines, computed once per connection and packet
  // size: the collective engine asks for a member's latency while planning (often more than
  // once) and for its resources when the pipeline starts. Bounded by the communicators'
  // connections (ordinary messages, often on connections of their own, are not cached).
  const Route& connection_route(const Message& m);
  // Adds `from` -> `cpu` over PCIe, a pass through that socket's memory, `cpu` -> `to`.
  void stage_in_host_memory(Route& r, Vertex from, Vertex cpu, Vertex to, const Units& unit);
  struct RouteKey {
    std::uint32_t src, dst, src_gpu, dst_gpu, connection;
    Bytes::rep unit, last;
    bool operator==(const RouteKey&) const = default;
  };
  struct RouteKeyHash {
    std::size_t operator()(const RouteKey& k) const;
  };
  std::unordered_map<RouteKey, Route, RouteKeyHash> route_cache_;
  std::uint64_t new_message(const Message& m);  // a log slot (recycled when allowed)
  void on_start(std::uint64_t id);
  // The message joins its connection's queue (after its NIC's send engine).
  void enqueue(std::uint64_t id);
  void activate(std::uint64_t id);
  // Starts the flow of message `id` on these resources, draining in `latency` after its bytes.
  std::uint32_t start_flow(std::uint64_t id, std::span<const MaxMinSolver::Res> resources,
                           Time latency);
  void on_update(std::uint64_t);
  void on_drain(std::uint64_t flow);
  void request_update();
  Vertex gpu_vertex(std::uint32_t endpoint, std::uint32_t gpu) const;

  Simulation& sim_;
  const Topology& topo_;
  const Routing& routing_;
  NetworkParams params_;
  FlowEfficiency efficiency_;
  MaxMinSolver solver_;
  MessageLog log_;
  std::map<std::pair<const LinkInfo*, Vertex>, MaxMinSolver::Res> link_res_;
  std::map<Vertex, MaxMinSolver::Res> memory_res_;
  std::map<std::pair<Vertex, bool>, MaxMinSolver::Res> nvlink_res_;  // (GPU, outgoing)
  std::vector<std::uint64_t> res_bytes_;  // payload bytes carried, per resource
  struct ResInfo {
    std::string layer, name;  // empty for pipeline caps
    // `<name>.tx_bytes` and its wire bytes per payload byte (line rate / payload capacity).
    Counter* tx_bytes = nullptr;
    double wire_per_payload = 1;
    bool switch_port = false;
  };
  // Names resource `r` as the packet model names its port and registers its counter.
  void name_resource(MaxMinSolver::Res r, std::string layer, std::string name, Bandwidth line_rate);
  // Sets every link's tx_bytes counter from the payload its resource carried.
  void refresh_counters() const;
  // Per endpoint: what its NIC received from the network (as the packet model's NIC counts).
  std::vector<Counter*> rx_payload_, rx_messages_;
  std::vector<TransportError> no_errors_;
  std::vector<ResInfo> res_info_;
  std::map<std::pair<std::size_t, std::size_t>, MaxMinSolver::Res> port_res_;  // (switch, port)
  std::vector<std::deque<std::uint64_t>> connections_;  // waiting messages, head in flight
  std::vector<Flow> flows_;
  std::vector<std::uint32_t> free_flows_;
  std::vector<std::uint32_t> flow_of_var_;
  std::vector<Vertex> gpus_;    // by GPU ordinal
  std::vector<Vertex> paired_;  // per endpoint: its paired GPU (host model)
  std::map<Vertex, std::size_t> switch_of_vertex_;
  bool update_pending_ = false;
  bool recycle_ = false;
  std::vector<std::uint64_t> free_messages_;
  std::uint64_t updates_ = 0, resolved_ = 0;
  HandlerId start_, enqueue_, update_, drain_;
  std::vector<SendEngine> engines_;  // per endpoint: its NIC's send engine
  std::vector<MaxMinSolver::Var> changed_;
  std::vector<MaxMinSolver::Res> free_caps_;  // pipeline caps no longer in use
  std::vector<MaxMinSolver::Res> scratch_;
  std::vector<std::pair<Time, Time>> hop_times_;  // route_of's hops: (first, last) unit time
};

}  // namespace fabricsim
