#pragma once
// What is inside a GPU server: GPUs, NVLink (through NVSwitch chips or direct), PCIe switches,
// CPU sockets and NICs, as plain data, plus presets, and conversion to and from the text of
// `nvidia-smi topo -m`.
//
// PCIe relations follow nvidia-smi's legend: two devices under one PCIe switch are PIX (one
// bridge) or PXB (a two-level switch, as in the DGX A100, where GPU and NIC sit on different
// downstream switches under one upstream switch); under different switches of one socket NODE;
// one of them on the root complex of their socket PHB; on different sockets SYS.

#include <string>
#include <string_view>
#include <vector>

#include "topo/topology.hpp"

namespace fabricsim {

struct PcieLink {
  int generation = 4;  // 1..6
  int width = 16;      // lanes
  // Usable rate per direction after line coding: Gen1/2 8b/10b, Gen3-5 128b/130b,
  // Gen6 FLIT mode (242/256). Gen4 x16: 16 GT/s * 16 * 128/130 = 252.06 Gb/s = 31.5 GB/s.
  Bandwidth rate() const;
};

struct ServerDevice {
  int pcie_switch = -1;  // index into pcie_switches, or -1 when on the CPU's root complex
  int socket = 0;        // used when pcie_switch == -1
  // The NUMA node the OS numbers it with (nvidia-smi's NUMA Affinity; a NIC takes the node of
  // the GPUs it shares a host bridge with), -1 when unknown. Within the model a socket is the
  // unit that owns a host bridge and memory; the node number is what the user sees and what an
  // export writes back (on AMD NPS4 parts the nodes are not 0..sockets-1).
  int numa = -1;
};

struct PcieSwitchSpec {
  int socket = 0;
  int levels = 1;  // 1: devices below it are PIX to each other; 2: PXB
};

struct ServerSpec {
  std::string model;     // preset name or "custom"/"imported"
  std::string gpu_name;  // e.g. "A100-SXM4-40GB"
  int gpu_sm = 80;       // compute capability x10 (NCCL's "sm")
  int sockets = 2;
  int cores_per_socket = 64;
  Bandwidth inter_socket_rate{};
  Time inter_socket_latency{};
  std::vector<PcieSwitchSpec> pcie_switches;
  PcieLink gpu_pcie{};     // GPU <-> its PCIe switch / root port
  PcieLink nic_pcie{};     // NIC <-> its PCIe switch / root port
  PcieLink uplink_pcie{};  // PCIe switch <-> CPU root port
  Time pcie_latency{};     // per PCIe hop
  std::vector<ServerDevice> gpus;
  std::vector<ServerDevice> nics;
  std::vector<std::string> nic_names;  // mlx5_0, ...
  // NICs an import classified as storage or management (see ImportOptions): kept so that the
  // server's inventory and its matrix stay whole, never part of the fabric.
  std::vector<ServerDevice> storage_nics;
  std::vector<std::string> storage_nic_names;
  // Per GPU, the CPU list nvidia-smi printed (e.g. "48-63,176-191"); empty: derived from the
  // GPU's socket and cores_per_socket.
  std::vector<std::string> gpu_cpu_affinity;
  Bandwidth nic_rate{};     // per NIC port
  Bandwidth nvlink_rate{};  // per NVLink link, per direction
  Time nvlink_latency{};
  // NVLink through NVSwitch chips: every GPU has nvswitch_links[s] links to switch s.
  std::vector<int> nvswitch_links;
  // Direct NVLink between GPU pairs (no NVSwitch): nvlink_pairs[i][j] bonded links.
  std::vector<std::vector<int>> nvlink_pairs;

  // Bonded NVLink count between two GPUs, as nvidia-smi shows it (NV#), 0 if none.
  int nvlink_count(int gpu_a, int gpu_b) const;
  int socket_of(const ServerDevice& d) const;
};

// Known presets: "dgx-a100", "dgx-h100", "pcie-8gpu". Throws std::invalid_argument with the
// list of presets for any other name.
ServerSpec server_preset(std::string_view name);
std::vector<std::string> server_preset_names();

// Adds one server's components and internal links to `topo`; returns its NIC vertices in NIC
// order (they become network endpoints).
std::vector<Vertex> add_server(Topology& topo, const ServerSpec& spec, int server_index);

// nvidia-smi topo -m: the relation matrix of GPUs and NICs.
struct TopoMatrix {
  std::vector<std::string> devices;  // GPU0.., NIC0..
  std::vector<std::vector<std::string>>
      relation;                            // "X", "NV12", "PIX", "PXB", "PHB", "NODE", "SYS"
  std::vector<std::string> cpu_affinity;   // per device ("" when not printed)
  std::vector<std::string> numa_affinity;  // per device ("N/A" when unknown)
  std::vector<std::string> nic_names;      // NIC legend: NIC<i> -> name
};

TopoMatrix topo_matrix(const ServerSpec& spec);
std::string format_topo_matrix(const TopoMatrix& m);
// Accepts the text of `nvidia-smi topo -m` from current and older drivers (SOC for SYS,
// mlx5_N column names, with or without CPU/NUMA columns and legends). Throws
// std::invalid_argument("line N: ...") on text that is not such a matrix.
TopoMatrix parse_topo_matrix(std::string_view text);
struct ImportOptions {
  // NVSwitch chips in the server (lspci shows them; the matrix does not): 0 = unknown, then the
  // NV# links keep the defaults' per-switch split when their sum matches, else one switch.
  int nvswitches = 0;
  // Names of the NICs that carry collective traffic; empty: classify by PCIe placement. A NIC
  // is for compute when it shares a PCIe switch (PIX/PXB) with a GPU, which is where GPUDirect
  // RDMA needs it and where DGX/HGX systems put their compute NICs; the others (reached from
  // every GPU only through a host bridge: PHB, NODE, SYS) are storage or management NICs. When
  // no NIC shares a switch with a GPU (PCIe servers with NICs on root ports) all are compute.
  std::vector<std::string> compute_nics;
  bool include_storage_nics = false;  // true: every NIC is a compute NIC
};

// Reconstructs a server from a matrix: NVLink from NV#, PCIe switches from PIX/PXB groups,
// sockets from NODE/PHB classes and NUMA affinity (devices of one NUMA node share a socket),
// NUMA nodes and CPU lists as printed, storage NICs set apart (ImportOptions). Rates and
// latencies come from `defaults`. Throws std::invalid_argument for a compute_nics name the
// matrix does not have.
ServerSpec server_from_matrix(const TopoMatrix& m, const ServerSpec& defaults,
                              const ImportOptions& options = {});

// NV# links spread over `switches` NVSwitch chips as evenly as links allow, the remainder on the
// first chips (18 over 4: 5, 5, 4, 4, as DGX H100 topology dumps show).
std::vector<int> spread_nvswitch_links(int links, int switches);

}  // namespace fabricsim
