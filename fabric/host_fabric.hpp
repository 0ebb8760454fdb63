#pragma once
// Inside the servers: moving RDMA data between GPU memory and the NICs over the servers' PCIe
// links, with or without GPUDirect RDMA, as packet-level traffic on the same engine.
//
// Each message has an in-server route at each end. With GPUDirect the NIC reads GPU memory
// directly: GPU -> PCIe switch(es) -> NIC at the source and NIC -> ... -> GPU at the
// destination. Without it the data is staged through host memory on the NIC's socket: GPU ->
// PCIe -> CPU, a pass through host memory (a port at the memory rate, shared by everything
// staged on that socket), then CPU -> PCIe -> NIC, crossing the PCIe switch's uplink twice; the
// destination mirrors it. Routes are shortest paths over PCIe and inter-socket links. Every
// in-server link direction is one EgressPort shared by all routes through it, so two NICs
// staging through one PCIe uplink contend for it.
//
// PCIe carries data as TLPs: a chunk of p bytes (one network packet's payload) costs
// p + ceil(p / max_payload) x tlp_overhead bytes on the link.
// The source GPU streams each message's chunks (round robin among its messages, as fast as its
// link allows; a QP's next message once the previous one's last chunk has left); the NIC may
// send a packet once its chunk has arrived. The destination NIC pushes
// in-order payload into its route; the message completes when its last byte reaches GPU memory.
// Approximations, stated: a go-back-N resend reuses data already in the NIC's reach (a real NIC
// reads it again), and a NIC whose PCIe path is slower than the network queues the excess at its
// PCIe port instead of back-pressuring the network. GPU i of a server pairs with NIC
// i x (NICs / GPUs) rounded down, i.e. NIC n uses GPU n x GPUs / NICs (GPU n on a DGX).

#include <deque>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "models/transport/nic.hpp"
#include "topo/host_paths.hpp"

namespace fabricsim {

class HostFabric final : public HostSide, public PacketSink, public PortOwner {
 public:
  HostFabric(Simulation& sim, Pool<Packet>& pool, const Topology& topo, MessageLog& log,
             std::vector<RdmaNic*> nics, const PacketFormat& format,
             const HostFabricParams& params);
  HostFabric(const HostFabric&) = delete;
  HostFabric& operator=(const HostFabric&) = delete;

  void fetch(std::uint64_t id) override;
  void deliver(std::uint64_t id, std::uint32_t psn, std::uint32_t payload, bool last) override;
  bool transfer_local(std::uint64_t id) override;
  void receive(Packet* p, PortIndex ingress) override;
  Packet* pull(EgressPort& port) override;
  // The in-server route names of endpoint `nic` (source side, destination side), for tests.
  std::vector<std::string> route_names(std::size_t nic, bool source) const;
  bool uses_gpudirect(std::size_t nic) const { return gdr_[nic]; }
  // Every in-server port with its link class ("NVLink", "PCIe", "host memory").
  template <class F>
  void for_each_port(F f) const {
    for (const auto& [key, port] : link_ports_)
      f(key.first->kind == LinkKind::kNvLink ? "NVLink" : "PCIe", *port);
    for (const auto& [cpu, port] : memory_ports_) f("host memory", *port);
  }
  // Cluster-wide GPU ordinals (server-major, then GPU index), as Message::src_gpu names them.
  std::size_t gpu_count() const { return gpu_vertex_.size(); }

 private:
  struct Route {
    std::vector<EgressPort*> hops;
    std::size_t nic = 0;
    bool to_nic = true;   // ends at a NIC (else in GPU memory)
    bool nvlink = false;  // NVLink framing instead of PCIe TLPs
    bool gpudirect = false;
  };
  struct Source {
    std::deque<std::pair<std::uint64_t, std::size_t>> messages;  // (message, route), round robin
  };
  EgressPort* link_port(Vertex from, Vertex to, const LinkInfo& link);
  EgressPort* memory_port(Vertex cpu);
  std::vector<EgressPort*> path(Vertex from, Vertex to);
  // GPU to GPU over NVLink: the direct link, or NVSwitch plane `plane` mod planes.
  std::vector<EgressPort*> nvlink_hops(Vertex from, Vertex to, int plane);
  std::vector<Vertex> vertex_path(Vertex from, Vertex to) const;
  std::uint32_t chunk_wire_bytes(std::uint32_t payload, bool nvlink) const;
  std::size_t route_between(Vertex from_gpu, Vertex to_gpu, EgressPort* first, bool nvlink);
  // The route between a GPU and a NIC of its server (either direction), built on first use.
  std::size_t nic_route(Vertex gpu, std::size_t nic, bool to_nic);
  Vertex source_gpu(const Message& m) const;
  Vertex destination_gpu(const Message& m) const;
  void start_source(EgressPort* first, std::uint64_t id, std::size_t route);

  Simulation& sim_;
  Pool<Packet>& pool_;
  const Topology& topo_;
  MessageLog& log_;
  std::vector<RdmaNic*> nics_;
  PacketFormat format_;
  HostFabricParams params_;
  std::map<std::pair<const LinkInfo*, Vertex>, std::unique_ptr<EgressPort>> link_ports_;
  std::map<Vertex, std::unique_ptr<EgressPort>> memory_ports_;
  std::vector<Route> routes_;
  std::map<EgressPort*, Source> sources_;
  EgressPort* pulling_ = nullptr;  // the port pull() is serving (start_source must not kick it)
  std::vector<std::uint32_t> next_chunk_;  // per message, source side
  std::vector<bool> gdr_;                  // per endpoint: GPUDirect chosen for its GPU-NIC pair
  std::vector<Vertex> gpu_of_;             // per endpoint: its paired GPU
  std::vector<Vertex> gpu_vertex_;         // per GPU ordinal
  std::map<std::tuple<Vertex, std::size_t, bool>, std::size_t> nic_routes_;
  std::map<std::pair<EgressPort*, Vertex>, std::size_t> local_routes_;  // (first port, dst GPU)
};

}  // namespace fabricsim
