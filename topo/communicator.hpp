#pragma once
// Places a communicator's ranks on a cluster and lays out NCCL's channels, as NCCL's graph
// search would on that hardware.
//
// Ranks: GPUs in server order, GPU index order inside a server (as one process per GPU with
// a hostfile in server order places them); without a server model, one rank per endpoint.
// Each rank's own NIC is the one nearest it over PCIe (fewest hops; on ties the one paired
// with the GPU by index). A server's NICs for the communicator are its members' nearest NICs
// (NCCL's local NICs), so a communicator of one GPU per server uses that GPU's own NIC(s).
//
// Channels: across servers 2 per local NIC of a server (NCCL's usual two rings per NIC), so
// channel c leaves and enters every server through local NIC c mod NICs; the ring enters a server
// at the GPU nearest that NIC, visits the server's other GPUs over NVLink and leaves from the GPU
// next nearest the NIC, so each ring crosses every server boundary once and stays on one rail.
// Servers follow `server_order`: hostfile (server index), leaf (servers under one leaf switch
// adjacent: what a topology-aware rank order gives) or an explicit list. Inside one server the
// channel count is the GPU's NVLink bandwidth over NCCL's per-channel NVLink bandwidth
// (rounded up to even), and rings start at a different GPU per channel.
// Trees: channel c uses NCCL's double binary tree c mod 2 over the servers (ncclGetBtree; the
// second tree mirrors it for an even server count, shifts it by one for an odd count), each
// server joined by its ring entry GPU (the head), the other GPUs chained behind it.

#include <string>
#include <vector>

#include "models/nccl/collective.hpp"
#include "models/nccl/plan.hpp"
#include "topo/routing.hpp"

namespace fabricsim {

struct CommunicatorOptions {
  int ranks = 0;          // 0: every GPU (or endpoint)
  int first_rank = 0;     // GPU ordinal of rank 0
  std::vector<int> gpus;  // explicit GPU ordinals instead, in ordinal order
  ServerOrder server_order = ServerOrder::kHostfile;
  std::vector<int> server_list;  // with kList: server indices in ring order
  double channel_gbs = 20;       // NCCL's per-link NVLink figure (GPU model, topo.h)
  int sm_version = 80;           // the GPU's compute capability: NCCL's search speed steps
  // NCCL_CROSS_NIC: 0 rings enter and leave a server through the same NIC; 1 they may leave
  // through another; 2 (NCCL's default, search.cc NCCL_PARAM(CrossNic, .., 2)) as 0 when that
  // finds full-bandwidth rings, which it does on every server this model builds.
  int cross_nic = 2;
  int channels_per_net_peer = 0;  // NCCL_NCHANNELS_PER_NET_PEER (0: NCCL's rule)
  // Whether the fabric models the inside of the servers (server.host_side): without it no
  // transfer crosses an NVSwitch, so the layout offers no NVLS.
  bool host_side = true;
  // SHARP's streaming-aggregation trees a switch can hold at once (switch.sharp_trees): 0 one
  // per port (Quantum-2 and later), n at most n per switch (Quantum HDR: 1).
  int sharp_trees_per_switch = 0;
};

// Throws std::invalid_argument when the ranks or the server list do not fit the cluster.
CommLayout build_communicator(const Topology& topo, const Routing& routing,
                              const CommunicatorOptions& options);

}  // namespace fabricsim
