#pragma once
// Paths inside a server, as NCCL classifies them: the PCIe distance of a GPU-NIC pair, the
// socket a NIC hangs off, NVLink reachability, and which GPU's memory a NIC reads (GPUDirect,
// PXN). Graph queries only; fabric/host_fabric.hpp runs traffic over them.

#include "topo/topology.hpp"

namespace fabricsim {

// PCIe distance classes, as NCCL_NET_GDR_LEVEL and NCCL_P2P_LEVEL name them (graph/topo.h
// PATH_PIX, PATH_PXB, PATH_PHB, PATH_SYS).
enum class PcieDistance { kPix = 0, kPxb = 1, kPhb = 2, kSys = 3 };

// NCCL's distance class of two PCIe devices of a server (a GPU and a NIC, or two GPUs): no CPU
// on their path and one PCIe switch of one level between them PIX, a two-level switch PXB; one
// CPU PHB; more SYS.
PcieDistance pcie_distance(const TopologyGraph& g, Vertex gpu, Vertex nic);
// The CPU (socket) a NIC hangs off: where a transfer without GPUDirect is staged.
Vertex nic_socket_cpu(const TopologyGraph& g, Vertex nic);
// Whether two GPUs of a server share NVLink: a direct link or one NVSwitch they both reach.
bool nvlink_connected(const TopologyGraph& g, Vertex a, Vertex b);

// How two GPUs of a server move data (NCCL's transport choice): NVLink or PCIe peer to peer
// (the P2P transport), or staged through host memory (the SHM transport).
enum class GpuPath { kNvLink, kPcieP2p, kHostMemory };

struct HostFabricParams {
  bool gpudirect = true;
  // NCCL_P2P_LEVEL as NCCL's path types (graph/topo.h: LOC 0, NVL 1, PIX 4, PXB 5, PHB 8, SYS
  // 9): two GPUs use P2P when their path is of this type or closer, else SHM. NCCL's default
  // PXB (paths.cc ncclTopoCheckP2p: no P2P across a CPU host bridge); NCCL_P2P_DISABLE=1 is LOC.
  int p2p_level = 5;
  // GPUDirect is used for a GPU-NIC pair only if their PCIe path is no longer than this:
  // kPxb under one PCIe switch, kPhb through their CPU, kSys across sockets (NCCL's rule).
  PcieDistance gdr_level = PcieDistance::kPxb;
  Bytes pcie_max_payload{256};
  Bytes pcie_tlp_overhead{24};
  // NVLink as the SMs drive it: a thread block's stores reach the link one 128-byte cache
  // line per write packet, and each packet carries a 16-byte header flit and a 16-byte
  // byte-enable flit besides its data flits (NVLink packet format: Foley & Danskin, "Ultra-
  // Performance Pascal GPU and NVLink Interconnect", IEEE Micro 37(2), 2017; the flit layout
  // is unchanged through NVLink 4). Payload share 128 / 160 = 0.80 of the signalling rate:
  // 20.0 GB/s of a 25 GB/s NVLink 3 link, NCCL's own measured per-link figure for Ampere
  // (src/graph/topo.h SM80_NVLINK_BW 20.0; SM90_NVLINK_BW 20.6 is 0.82 of NVLink 4's 25).
  // Until 2026-12 this was 256 B with a 16 B header (0.94), which let NVLink-bound
  // collectives reach 94 % of the signalling rate, above any published run.
  Bytes nvlink_max_payload{128};
  Bytes nvlink_overhead{32};
  Bandwidth host_memory_rate = Bandwidth::from_bps(1'600'000'000'000);  // 200 GB/s per socket
  Time host_memory_latency = Time::from_ps(100'000);                    // 100 ns
  // NCCL's PXN (NCCL_PXN_DISABLE=0, its default; paths.cc marks GPU-NIC paths PATH_PXN): a
  // GPU whose PCIe path to a NIC crosses a CPU, when a GPU it shares NVLink with sits within
  // one PCIe switch of that NIC (and may use GPUDirect with it), moves its data over NVLink
  // into that GPU's memory and the NIC reads it from there; no byte crosses the CPU.
  bool pxn = true;
  // NCCL_NET_GDR_READ (paths.cc:460, default -2: on from compute capability 8.0, which every
  // preset has): 0 turns GPUDirect off for sends (the NIC reading GPU memory), so send data is
  // staged through host memory; receives keep it.
  bool gdr_read = true;
  // GPUDirect for this GPU-NIC pair (on, and within gdr_level; for a send also gdr_read).
  bool gpudirect_between(const TopologyGraph& g, Vertex gpu, Vertex nic, bool to_nic) const {
    return gpudirect && (gdr_read || !to_nic) && pcie_distance(g, gpu, nic) <= gdr_level;
  }
  // The GPU whose memory `nic` reads `gpu`'s data from (to_nic) or writes it to: `gpu`
  // itself, or with PXN the nearest GPU of the server (fewest PCIe hops, then the lowest
  // index) that is under the NIC's PCIe switch, NVLink-connected to `gpu` and
  // GPUDirect-capable with the NIC in that direction.
  Vertex nic_gpu(const TopologyGraph& g, Vertex gpu, Vertex nic, bool to_nic) const;
  // The path between two GPUs of a server: NVLink when they share it (type NVL), else PCIe
  // peer to peer (PXB under switches only, PHB through one CPU, SYS across sockets; a single
  // switch, PIX, counts as PXB), each only within p2p_level; otherwise host memory.
  GpuPath gpu_path(const TopologyGraph& g, Vertex a, Vertex b) const;
};

}  // namespace fabricsim
