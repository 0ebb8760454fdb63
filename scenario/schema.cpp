#include "scenario/schema.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <map>

#include "scenario/scenario.hpp"

namespace fabricsim {

namespace {

using T = KeyType;
using P = Presence;
using Use = FitSpec::Use;

KeyValue integer(std::int64_t v) {
  return v;
}
KeyValue number(double v) {
  return v;
}
KeyValue text(std::string v) {
  return v;
}

// Calibration's unit for a time is µs.
Time from_us(double us) {
  return Time::from_ps(static_cast<Time::rep>(std::llround(us * 1e6)));
}
constexpr double kMaxInt = static_cast<double>(1LL << 50);

// The physical ranges of calibration's parameters (FitSpec::low, high) and their evidence;
// docs/validation.md lists them.
constexpr std::string_view kLaunchLatencyBasis =
    "a CUDA kernel launch takes 2-5 us on Volta to Blackwell (fabricsim-bench --micro "
    "launch_us) and NCCL's host-side enqueue adds a few; NCCL's baseLat (tuning.cc) is 6.6-14 us. "
    "A floor above 30 us comes from the steps or the transport, not the launch";
constexpr std::string_view kStepLatencyBasis =
    "a factor of 3 either side of NCCL's hwLat for this protocol and link class (tuning.cc), "
    "the spread NCCL's own table shows between GPU generations and link classes";
constexpr std::string_view kNvlinkEfficiencyBasis =
    "NVLink's packet overhead (header and byte-enable flits, 0.80 of the signalling rate) is "
    "modelled; published one-server busbw peaks of DGX A100 and H100 lie within 15 % of that "
    "payload rate";
constexpr std::string_view kPcieEfficiencyBasis =
    "TLP headers, DMA read requests and completions: pinned host copies reach 60-90 % of a "
    "PCIe link's rate (fabricsim-bench --micro h2d/d2h on Gen3 to Gen5)";
constexpr std::string_view kNetworkEfficiencyBasis =
    "RoCE/IB headers and ACKs are modelled; perftest ib_write_bw at 64 KiB and above reaches "
    "over 90 % of a ConnectX-5 to ConnectX-7 port's line rate";
constexpr std::string_view kMessageOverheadBasis =
    "ib_write_lat's one-way latency on ConnectX-4 to ConnectX-7 is 0.8-2 us, of which the wire "
    "and one switch take 0.2-0.6 us";
constexpr std::string_view kMessageRateBasis =
    "NVIDIA's ConnectX-5 and ConnectX-6 product briefs quote up to 200-215 million messages "
    "per second, ConnectX-7 more; virtual and older NICs reach tens";

const char* const kProtos[] = {"ll", "ll128", "simple"};
const char* const kProtoNames[] = {"LL", "LL128", "Simple"};
const char* const kLinks[] = {"nvlink", "pcie", "net"};

std::vector<SectionSpec> make_sections() {
  return {
      {"", "Top level", "", ""},
      {"simulation", "`[simulation]`", "", ""},
      {"server", "`[server]` (optional)",
       "Without it, every endpoint is a plain host with one NIC (`fabric.hosts` of them). With it, "
       "the cluster is `count` servers and the endpoints are their NICs. A server written out in "
       "TOML: each layout key (`gpu_name` … `nvlink_latency`) overrides the preset's (or the "
       "imported file's) value, so a new server is a preset plus the keys that differ.",
       "Presets: `dgx-a100` — 8 × A100-SXM4, 12 NVLink 3 links per GPU (2 to each of 6 "
       "NVSwitches, 25 GB/s per link per direction), 4 PCIe Gen4 two-level switches with 2 GPUs + "
       "2 NICs each, 8 × 200G NICs, 2 sockets. `dgx-h100` — 8 × H100-SXM5, 18 NVLink 4 links (5, "
       "5, 4, 4 to 4 NVSwitches), PCIe Gen5, 8 × 400G NICs (PIX to their GPUs). `dgx-b200` — the "
       "DGX H100 layout with 8 × B200, 18 NVLink 5 links of 50 GB/s (9 to each of 2 NVLink "
       "switch chips), compute capability 10.0. `pcie-8gpu` — 8 "
       "PCIe GPUs on 4 Gen4 switches, no NVLink, 4 × 100G NICs."},
      {"fabric", "`[fabric]`", "",
       "Switch names in probes and reports: `switch0` (star), `ring<i>`, `leaf<i>`/`spine<i>`, "
       "`edge<i>`/`agg<i>`/`core<i>`; ports `<switch>.port<p>` in link build order. Endpoint "
       "names: `host<i>`, or `server<s>.mlx5_<n>` with servers."},
      {"nic", "`[nic]`",
       "RDMA NICs (RoCEv2 reliable connection): one queue pair per message; see "
       "`models/transport/nic.hpp` for the queue-pair engine and "
       "`models/transport/congestion_control.hpp` for the congestion-control seam.",
       ""},
      {"nic.tcp", "`[nic.tcp]`",
       "Plain Ethernet/TCP (with `nic.transport = \"tcp\"`): window-based congestion control on "
       "a lossy class; headers default to 90 B (Eth + IPv4 + TCP with timestamps + FCS + "
       "preamble + gap).",
       ""},
      {"nic.dcqcn", "`[nic.dcqcn]`",
       "DCQCN reaction and notification point; names as mlxconfig prints them. Two variants of "
       "the reaction point: `\"firmware\"` (ConnectX rules, `models/transport/dcqcn.hpp`) and "
       "`\"paper\"` (the SIGCOMM 2015 algorithm with its byte counter, "
       "`models/transport/dcqcn_paper.hpp`). Keys that only one variant has are refused for the "
       "other.",
       ""},
      {"switch", "`[switch]`",
       "Shared-buffer switches with PFC and ECN; see `models/switch/switch.hpp` for the buffer "
       "maths.",
       ""},
      {"traffic", "`[traffic]` (optional)",
       "The traffic `fabricsim run` sends; scenarios used only with `fabricsim nccl-tests` leave "
       "it out.",
       ""},
      {"workload", "`[workload]` (optional)",
       "A training step run by `fabricsim run` instead of `[traffic]` (needs a `[server]` model): "
       "tensor parallelism inside each server, optional pipeline parallelism across groups of "
       "servers (`pipeline_stages`, `micro_batches`), data parallelism across the servers of a "
       "stage (GPU *i* of every replica reduces gradients with GPU *i* of the others); see "
       "`models/workload/workload.hpp` and [case-study.md](case-study.md). With more than one "
       "stage, results add `pp_send_ms` (stage-to-stage sends per step across one boundary) and "
       "`pipeline_bubble_ms` (time per step a server waits for a receive).",
       ""},
      {"study", "`[study]` (optional)",
       "With a `[workload]`: collectives measured nccl-tests style on the same fabric, and the "
       "topology's switch and cable counts, bisection and (with `[prices]`) cost and cost per "
       "token/s, added to the run's metrics (`busbw_all_reduce_1MiB` ..., `switches`, `cables`, "
       "`optical_cables`, `bisection_gbps`, `cost_total`, `cost_per_token_per_s`). See "
       "`scenarios/fat-tree-256/`.",
       ""},
      {"sweep", "`[sweep]` (optional)",
       "Keys are quoted key paths of this scenario, values arrays: `\"switch.buffer\" = "
       "[\"1MiB\", \"4MiB\"]`. `fabricsim run` runs every combination (see the README); "
       "`--no-sweep` ignores the table. `fabricsim check` loads and builds every point; an error "
       "in one is reported at its `[sweep]` key, and a key that is not in this schema is refused "
       "before any point is loaded. More than 10,000 points are refused unless `--force`.",
       ""},
      {"expected", "`[expected]` (optional)",
       "What a replayed case reported, shown beside the model's values by `run` and `compare`; "
       "never used by the models.",
       ""},
      {"nccl", "`[nccl]` (optional)",
       "NCCL's environment, under the names users set (they override the `[nic]` keys they "
       "correspond to), and the collective model's settings; used by `fabricsim nccl-tests`. See "
       "[collectives.md](collectives.md) for the model.",
       ""},
      {"flow", "`[flow]` (optional)",
       "Per link class efficiency factors of the flow level (`fidelity = \"flow\"`), from "
       "calibration: the class's payload capacity is multiplied by the factor. Absent: 1 (none).",
       ""},
      {"prices", "`[prices]` (optional)",
       "Unit prices in any one currency, for the bill of materials of `fabricsim topo`.", ""},
  };
}

void add_top_and_simulation(std::vector<KeySpec>& k) {
  k.push_back({.path = "name",
               .type = T::kString,
               .presence = P::kDerived,
               .note = "file name without `.toml`",
               .type_note = fmt::format("string, 1 … {} characters", kMaxScenarioNameLength),
               .doc = "name of the scenario; results go to `results/<name>/`, so no `/`, `\\`, "
                      "`..` or control characters"});
  k.push_back({.path = "description",
               .type = T::kString,
               .fallback = text(""),
               .doc = "one line shown in the report"});
  k.push_back({.path = "seed",
               .type = T::kInteger,
               .fallback = integer(1),
               .min = 0,
               .doc = "seed of every random stream (start jitter, message gaps)"});
  k.push_back({.path = "fidelity",
               .type = T::kChoice,
               .fallback = text("packet"),
               .choices = {"packet", "flow", "hybrid"},
               .doc = "packet level (every packet, PFC, ECN, DCQCN, retransmission), flow level "
                      "(max-min fair fluid flows on the same routes) or hybrid (packets on the "
                      "network and GPU-NIC paths, flows on the servers' NVSwitch routes); see "
                      "[fidelity.md](fidelity.md); `--fidelity` on the command line overrides "
                      "it"});
  k.push_back({.path = "extends",
               .type = T::kFile,
               .presence = P::kOptional,
               .doc = "base scenario file, relative to this one, or a list of them applied in "
                      "order (each later file, and this one last, sets what it names over what "
                      "came before); at most 64 MiB each, like every input file"});

  k.push_back({.path = "simulation.stop_time",
               .type = T::kTime,
               .fallback = Time::from_ps(1'000'000'000'000),
               .positive = true,
               .doc = "simulated time at which the run ends even if traffic is left (status "
                      "`time-limit`)"});
  k.push_back({.path = "simulation.sample_interval",
               .type = T::kTime,
               .fallback = Time::zero(),
               .note = "(off)",
               .doc = "period at which selected gauges are sampled into `timeseries.csv`; more "
                      "than 10^7 samples per gauge up to `stop_time` is refused unless "
                      "`--force`"});
  k.push_back({.path = "simulation.timeseries",
               .type = T::kStringList,
               .fallback = std::vector<std::string>{},
               .doc = "glob patterns (`*`, `?`) of gauge names to record, in `[traffic]` and "
                      "`[workload]` runs alike, e.g. `\"switch0.port*.queue_bytes\"` (packet "
                      "level: queues, `prio<p>_paused`, `qp<n>.rate_gbps`, switch "
                      "`buffer_bytes`) or `\"*.nic.utilization\"` (flow level: each link's "
                      "share of its capacity in use, named as the bottleneck table names it); "
                      "a pattern matching no gauge of the run is an error naming the nearest "
                      "ones; needs `sample_interval`"});
  k.push_back({.path = "simulation.deadlock_check_interval",
               .type = T::kTime,
               .fallback = Time::from_ps(50'000'000),
               .doc = "how often the paused-queue wait-for graph is checked; a cycle seen at two "
                      "consecutive checks stops the run as a PFC deadlock and reports the cycle "
                      "(0: off)"});
  k.push_back({.path = "simulation.no_progress_timeout",
               .type = T::kTime,
               .fallback = Time::from_ps(1'000'000'000'000),
               .doc = "stop with a report when no payload is delivered for this long while "
                      "messages are incomplete (0: off)"});
  k.push_back({.path = "simulation.seeds",
               .type = T::kInteger,
               .fallback = integer(1),
               .min = 1,
               .max = 1000,
               .doc = "run with seeds seed, seed+1, …; reports give each metric's mean, min and "
                      "max and warn above a 5 % spread (`--seeds` on `run` and `compare` "
                      "overrides)"});
}

void add_server(std::vector<KeySpec>& k) {
  const HostFabricParams h{};
  const auto preset = [&](std::string path, KeyType type, std::string doc, double min = -kUnbounded,
                          double max = kUnbounded) {
    k.push_back({.path = "server." + path,
                 .type = type,
                 .presence = P::kDerived,
                 .note = "the preset's",
                 .min = min,
                 .max = max,
                 .positive = type == T::kTime || type == T::kBandwidth,
                 .doc = std::move(doc)});
  };
  k.push_back({.path = "server.preset",
               .type = T::kChoice,
               .fallback = text("dgx-a100"),
               .choices = server_preset_names(),
               .doc = "server model (sources of each number in `topo/server.cpp`)"});
  k.push_back({.path = "server.count",
               .type = T::kInteger,
               .presence = P::kRequired,
               .min = 1,
               .max = 1 << 20,
               .doc = "number of servers"});
  k.push_back({.path = "server.nvidia_smi",
               .type = T::kFile,
               .presence = P::kOptional,
               .doc = "import the server's layout from the text of `nvidia-smi topo -m` (path "
                      "relative to this scenario file); rates and latencies come from `preset`"});
  k.push_back({.path = "server.include_storage_nics",
               .type = T::kBoolean,
               .fallback = false,
               .doc = "with `nvidia_smi`: a NIC that shares a PCIe switch (PIX/PXB) with a GPU is "
                      "a compute NIC, one that reaches every GPU only through a host bridge "
                      "(PHB/NODE/SYS) a storage or management NIC, left out of the fabric (when "
                      "no NIC shares a switch with a GPU, all are compute); `true` keeps every "
                      "NIC in the fabric"});
  k.push_back({.path = "server.compute_nics",
               .type = T::kStringList,
               .presence = P::kOptional,
               .doc = "with `nvidia_smi`: exactly these NICs (names as in the matrix, e.g. "
                      "`[\"mlx5_0\", \"mlx5_3\"]`) are compute NICs, instead of the PCIe "
                      "rule of `include_storage_nics`"});
  k.push_back({.path = "server.nccl_xml",
               .type = T::kFile,
               .presence = P::kOptional,
               .doc = "import the layout from an NCCL topology XML (`NCCL_TOPO_DUMP_FILE`); give "
                      "`nvidia_smi` or `nccl_xml`, not both"});
  preset("nic_rate", T::kBandwidth, "rate of each NIC port");
  k.push_back(
      {.path = "server.host_side",
       .type = T::kBoolean,
       .fallback = true,
       .doc = "model the inside of the servers: an endpoint is GPU *i* with its NIC (NIC *n* "
              "pairs with GPU *n* × GPUs / NICs); network data moves between GPU memory and the "
              "NIC over the server's PCIe links (and host memory without GPUDirect), and a "
              "message between two endpoints of one server goes GPU to GPU over NVLink (striped "
              "over the NVSwitches), or PCIe peer to peer without NVLink. `false`: data starts "
              "and ends at the NICs and every message uses the network"});
  k.push_back({.path = "server.pcie_max_payload",
               .type = T::kSize,
               .fallback = h.pcie_max_payload,
               .positive = true,
               .doc = "PCIe TLP max payload"});
  k.push_back({.path = "server.pcie_tlp_overhead",
               .type = T::kSize,
               .fallback = h.pcie_tlp_overhead,
               .doc = "per-TLP header, sequence, CRC and framing bytes"});
  k.push_back({.path = "server.nvlink_max_payload",
               .type = T::kSize,
               .fallback = h.nvlink_max_payload,
               .positive = true,
               .doc = "NVLink data bytes per write packet: one 128-byte cache line per SM store"});
  k.push_back({.path = "server.nvlink_overhead",
               .type = T::kSize,
               .fallback = h.nvlink_overhead,
               .doc = "NVLink header and byte-enable flits per packet (16 B each)"});
  k.push_back({.path = "server.host_memory_rate",
               .type = T::kBandwidth,
               .fallback = h.host_memory_rate,
               .positive = true,
               .doc = "host memory bandwidth per socket for staged (non-GPUDirect) data, shared by "
                      "everything staged there"});
  preset("gpu_name", T::kString, "GPU model name");
  preset("gpu_sm", T::kInteger, "compute capability × 10 (80 A100, 90 H100, 100 B200)", 10, 200);
  preset("sockets", T::kInteger, "CPU sockets (NUMA nodes)", 1, 16);
  preset("cores_per_socket", T::kInteger, "cores per socket (CPU affinity in the matrix)", 1, 4096);
  preset("inter_socket_rate", T::kBandwidth, "socket-to-socket link (xGMI/UPI), each direction");
  preset("pcie_generation", T::kInteger, "PCIe generation of every PCIe link", 1, 6);
  preset("pcie_width", T::kInteger, "lanes of every PCIe link", 1, 32);
  preset("pcie_latency", T::kTime, "per PCIe hop");
  preset("pcie_switch_sockets", T::kIntegerList,
         "one entry per PCIe switch: the socket it hangs off", 0, 15);
  k.back().type_note = "array of socket indices";
  preset("pcie_switch_levels", T::kInteger,
         "1: devices under one switch are PIX; 2: two-level switches, PXB", 1, 2);
  preset("gpu_pcie_switch", T::kIntegerList,
         "one entry per GPU: its PCIe switch, or −1 for socket 0's root complex", -1, kUnbounded);
  k.back().type_note = "array of PCIe switch indices";
  preset("nic_pcie_switch", T::kIntegerList, "one entry per NIC, as for GPUs", -1, kUnbounded);
  k.back().type_note = "array of PCIe switch indices";
  k.push_back({.path = "server.nic_names",
               .type = T::kStringList,
               .presence = P::kDerived,
               .note = "`mlx5_<i>`",
               .doc = "NIC names, one per NIC"});
  preset("nvswitch_links", T::kIntegerList,
         "NVLink links from every GPU to each NVSwitch (empty: no NVSwitch)", 0, 64);
  preset("nvlink_rate", T::kBandwidth, "per NVLink link, each direction");
  preset("nvlink_latency", T::kTime, "per NVLink hop");
}

void add_fabric(std::vector<KeySpec>& k) {
  k.push_back({.path = "fabric.kind",
               .type = T::kChoice,
               .fallback = text("star"),
               .choices = {"star", "ring", "leaf-spine", "fat-tree"},
               .doc = "star: every endpoint on one switch; ring: `ring_switches` switches in a "
                      "bidirectional ring; leaf-spine: two tiers; fat-tree: three-tier k-ary "
                      "fat-tree (only the pods that endpoints occupy are built)"});
  k.push_back({.path = "fabric.hosts",
               .type = T::kInteger,
               .presence = P::kRequired,
               .note = "without `[server]`",
               .min = 2,
               .max = 1 << 20,
               .doc = "number of plain hosts (not allowed with `[server]`)"});
  k.push_back({.path = "fabric.technology",
               .type = T::kChoice,
               .fallback = text("ethernet"),
               .choices = {"ethernet", "infiniband"},
               .doc = "switch family: Ethernet (PFC, ECN, RoCEv2 headers) or InfiniBand "
                      "(credit-based flow control, IB headers)"});
  k.push_back({.path = "fabric.link_rate",
               .type = T::kBandwidth,
               .presence = P::kRequired,
               .positive = true,
               .doc = "rate of every fabric link and switch port, each direction; a NIC faster "
                      "than this negotiates down (reported as a warning)"});
  k.push_back({.path = "fabric.switch_ports",
               .type = T::kInteger,
               .fallback = integer(0),
               .note = "(no limit)",
               .min = 0,
               .max = 65535,
               .doc = "ports per switch; a fabric that needs more is an error that says what to "
                      "change"});
  k.push_back({.path = "fabric.switch_latency",
               .type = T::kTime,
               .fallback = Time::from_ps(300'000),
               .doc = "fixed port-to-port forwarding latency of every switch"});
  k.push_back({.path = "fabric.host_cable_length",
               .type = T::kLength,
               .fallback = number(3.0),
               .doc = "endpoint ↔ leaf cable"});
  k.push_back({.path = "fabric.fabric_cable_length",
               .type = T::kLength,
               .fallback = number(30.0),
               .doc = "switch ↔ switch cable"});
  k.push_back({.path = "fabric.propagation_per_m",
               .type = T::kTime,
               .fallback = Time::from_ps(5'000),
               .positive = true,
               .doc = "signal propagation per metre (about 0.67 c in fibre and copper)"});
  k.push_back({.path = "fabric.ring_switches",
               .type = T::kInteger,
               .presence = P::kRequired,
               .note = "for `ring`",
               .min = 3,
               .max = 65535,
               .doc = "switches in the ring; endpoints spread evenly"});
  k.push_back({.path = "fabric.hosts_per_leaf",
               .type = T::kInteger,
               .presence = P::kRequired,
               .note = "for `leaf-spine`",
               .min = 1,
               .max = 65535,
               .doc = "endpoints per leaf; leaves = ⌈endpoints / hosts_per_leaf⌉"});
  k.push_back({.path = "fabric.oversubscription",
               .type = T::kReal,
               .fallback = number(1.0),
               .min = 1,
               .max = 1024,
               .doc = "leaf downlink : uplink ratio; uplinks per leaf = hosts_per_leaf / "
                      "oversubscription"});
  k.push_back({.path = "fabric.uplinks_per_leaf",
               .type = T::kInteger,
               .fallback = integer(0),
               .note = "(from oversubscription)",
               .min = 0,
               .max = 65535,
               .doc = "uplinks per leaf, spread evenly over the spines"});
  k.push_back({.path = "fabric.spines",
               .type = T::kInteger,
               .fallback = integer(0),
               .note = "(automatic)",
               .min = 0,
               .max = 65535,
               .doc = "spine switches; uplinks_per_leaf must be a multiple. Automatic: the fewest "
                      "spines whose `switch_ports` take every leaf's uplinks (each leaf then "
                      "reaches each spine over uplinks/spines parallel cables, spread by ECMP); "
                      "without `switch_ports`, one spine per uplink"});
  k.push_back({.path = "fabric.k",
               .type = T::kInteger,
               .presence = P::kRequired,
               .note = "for `fat-tree`",
               .min = 2,
               .max = 65534,
               .type_note = "even integer 2 … 65534",
               .doc = "switch radix: k pods of k/2 edge + k/2 aggregation switches, (k/2)² core, "
                      "up to k³/4 hosts"});
  k.push_back({.path = "fabric.rail_optimized",
               .type = T::kBoolean,
               .fallback = false,
               .doc = "place NIC *i* of every server on rail *i*'s leaves (rail-major placement) "
                      "instead of a server's NICs together"});
  k.push_back(
      {.path = "fabric.routing",
       .type = T::kChoice,
       .fallback = text("ecmp"),
       .choices = {"ecmp", "spray", "dmodk", "adaptive"},
       .doc = "path choice among equal-cost next hops: per-flow hash (seeded), per-packet "
              "spraying (packet level only), destination-mod-k as InfiniBand subnet managers "
              "route Fat-Trees (destinations numbered leaf by leaf; over parallel links a "
              "destination comes down the link index it went up on: `topo/routing.hpp`), or "
              "adaptive routing (packet level only): per packet the equal-cost port whose queue "
              "of the packet's priority is shortest, as InfiniBand AR and Spectrum-X switches "
              "do. Adaptive and spraying reorder a flow's packets: the NICs need "
              "`nic.out_of_order_placement` (NCCL_IB_ADAPTIVE_ROUTING) or they go back N"});
}

void add_nic(std::vector<KeySpec>& k) {
  const RdmaConfig n{};
  k.push_back({.path = "nic.transport",
               .type = T::kChoice,
               .fallback = text("rdma"),
               .choices = {"rdma", "tcp"},
               .doc = "RDMA reliable connection (RoCEv2 or InfiniBand), or plain Ethernet/TCP "
                      "(see `[nic.tcp]`)"});
  k.push_back({.path = "nic.mtu",
               .type = T::kSize,
               // The largest IB/RoCE path MTU (IBTA: 256 B ... 4 KiB), what NCCL's RoCE and IB
               // transports negotiate on today's NICs.
               .fallback = Bytes(4096),
               .positive = true,
               .type_note = "size > 0, ≤ 1MiB",
               .doc = "payload bytes per packet, at most (the MSS for TCP)"});
  k.push_back(
      {.path = "nic.header",
       .type = T::kSize,
       .presence = P::kDerived,
       .note = "`\"82B\"`; `\"26B\"` on InfiniBand; `\"90B\"` for TCP",
       .doc = "wire overhead per data packet: RoCEv2 headers and trailers (Eth 14 + IPv4 20 + UDP "
              "8 + BTH 12 + ICRC 4 + FCS 4 = 62 B) plus preamble (8 B) and inter-frame gap "
              "(12 B); InfiniBand LRH 8 + BTH 12 + ICRC 4 + VCRC 2; TCP Eth 14 + IPv4 20 + TCP 32 "
              "(with timestamps) + FCS 4 + preamble 8 + gap 12"});
  k.push_back({.path = "nic.control_packet",
               .type = T::kSize,
               .presence = P::kDerived,
               .note = "`\"86B\"`; `\"30B\"` on InfiniBand; `\"90B\"` for TCP",
               .positive = true,
               .doc = "wire size of ACK, NAK and CNP packets (headers + 4 B AETH)"});
  k.push_back({.path = "nic.priority",
               .type = T::kInteger,
               .presence = P::kDerived,
               .note = fmt::format("`{}`; `0` for TCP", n.priority),
               .min = 0,
               .max = 7,
               .doc = "802.1p priority of data, ACKs and NAKs"});
  k.push_back({.path = "nic.cnp_priority",
               .type = T::kInteger,
               .fallback = integer(n.cnp_priority),
               .min = 0,
               .max = 7,
               .doc = "priority of CNPs (ConnectX `cnp_802p_prio`)"});
  k.push_back({.path = "nic.ack_interval",
               .type = T::kInteger,
               .fallback = integer(n.ack_interval),
               .min = 1,
               .max = 1 << 20,
               .doc =
                   "RDMA: ACK every n-th packet and each message's last (ConnectX through verbs: "
                   "256, Linux mlx5_ib MLX5_IB_ACK_REQ_FREQ = 8; 1: one ACK per packet)"});
  k.push_back(
      {.path = "nic.out_of_order_placement",
       .type = T::kBoolean,
       .fallback = n.out_of_order_placement,
       .doc = "RDMA: the responder places packets in any arrival order (ConnectX-7 class support "
              "for adaptive routing and packet spraying) and ACKs the contiguous prefix, never "
              "NAKing a gap. Off, a reliable connection accepts only the next PSN: with "
              "`fabric.routing = \"spray\"` a reordered tail is NAKed once and then waits for the "
              "ACK timeout (4.096 µs × 2^`ib_timeout`), as on real RC QPs"});
  k.push_back({.path = "nic.ib_timeout",
               .type = T::kInteger,
               .fallback = integer(n.ib_timeout),
               .min = 0,
               .max = 31,
               .doc = "local ACK timeout 4.096 µs × 2^n (0: infinite), as `NCCL_IB_TIMEOUT`"});
  k.push_back({.path = "nic.ib_retry_cnt",
               .type = T::kInteger,
               .fallback = integer(n.ib_retry_cnt),
               .min = 0,
               .max = 7,
               .doc = "retries (timeouts or sequence-error NAKs) without progress before the QP "
                      "fails, as `NCCL_IB_RETRY_CNT`"});
  k.push_back(
      {.path = "nic.message_overhead",
       .type = T::kTime,
       .fallback = n.message_overhead,
       .doc = "RDMA only: the NIC's own time per message from the doorbell to its first packet "
              "(WQE fetch, DMA set-up), added to every network message's latency at both "
              "fidelity levels; it does not limit the message rate (consecutive messages' "
              "processing overlaps). What `ib_write_lat` measures beyond the wire; `fabricsim "
              "calibrate` fits it from perftest latency rows",
       .number = {[](const Scenario& s) { return s.network.nic.message_overhead.us(); },
                  [](Scenario& s, double v) { s.network.nic.message_overhead = from_us(v); }},
       // From 0 by default: the fit starts at 1 us (it works on the parameter's logarithm).
       .fit = {Use::kWithRdmaLatencyRows, 0.01, 100, 1.0, 15, 0.1, 3.0, kMessageOverheadBasis}});
  k.push_back(
      {.path = "nic.message_rate_mpps",
       .type = T::kReal,
       .fallback = number(n.message_rate_mpps),
       .min = 0,
       .max = 1e6,
       .doc = "RDMA only: the most messages per second (millions) the NIC's send engine starts, "
              "over all its QPs; 0: no limit. Messages pass the engine one at a time in posting "
              "order, each taking 1 / rate, so a stream of size-S messages runs at S / max(S / "
              "link payload rate, 1 / rate): what `ib_write_bw` shows at small sizes. A lone "
              "message does not wait. Both fidelity levels (at flow level for network messages, "
              "not for collective pipelines, which are fluid); `fabricsim calibrate` fits it "
              "from perftest bandwidth rows",
       .number = {[](const Scenario& s) { return s.network.nic.message_rate_mpps; },
                  [](Scenario& s, double v) { s.network.nic.message_rate_mpps = v; }},
       // From 0 (no limit) by default: the fit starts at 100 Mpps, 10 ns a message.
       .fit = {Use::kWithRdmaStreamRows, 0.01, 1e5, 100, 16, 10, 500, kMessageRateBasis}});
  k.push_back({.path = "nic.gpudirect",
               .type = T::kBoolean,
               .fallback = HostFabricParams{}.gpudirect,
               .doc =
                   "GPUDirect RDMA: the NIC reads and writes GPU memory across the PCIe switch; "
                   "`false`: staged through host memory on the NIC's socket (GPU → CPU → memory → "
                   "NIC, and back), as NCCL does without GDR"});
  k.push_back({.path = "nic.gdr_level",
               .type = T::kChoice,
               .fallback = text("PXB"),
               .choices = {"PIX", "PXB", "PHB", "NODE", "SYS"},
               .doc =
                   "as `NCCL_NET_GDR_LEVEL`: GPUDirect is used for a GPU–NIC pair only when their "
                   "PCIe path is within this distance (PIX: under one single-level PCIe switch; "
                   "PXB: under one switch of two levels, as on a DGX A100; PHB/NODE: through "
                   "their CPU; SYS: across sockets); other pairs are staged. The choice is made "
                   "per GPU–NIC pair, so per transfer"});

  k.push_back({.path = "nic.tcp.congestion",
               .type = T::kChoice,
               .fallback = text("newreno"),
               .choices = {"newreno", "dctcp"},
               .doc = "NewReno (slow start, congestion avoidance, fast retransmit/recovery, "
                      "ECN-echo halves once per window) or DCTCP (cut by α/2 per window with "
                      "marks)"});
  k.push_back({.path = "nic.tcp.initial_window",
               .type = T::kInteger,
               .fallback = integer(n.newreno.initial_window),
               .min = 1,
               .max = 1 << 16,
               .doc = "initial congestion window, segments (RFC 6928, Linux's default)"});
  k.push_back({.path = "nic.tcp.min_rto",
               .type = T::kTime,
               .fallback = n.tcp.min_rto,
               .positive = true,
               .doc = "retransmission timeout (Linux `TCP_RTO_MIN`), doubled per consecutive "
                      "timeout up to 64×"});
  k.push_back({.path = "nic.tcp.dctcp_g",
               .type = T::kReal,
               .fallback = number(n.dctcp.g),
               .min = 0,
               .max = 1,
               .doc = "DCTCP's α gain (RFC 8257 section 4.2)"});
  k.push_back({.path = "nic.tcp.host_latency",
               .type = T::kTime,
               .fallback = n.tcp.host_latency,
               .doc = "kernel stack CPU time per message, at the sender (before the first segment) "
                      "and at the receiver (after the last); an estimate"});

  const DcqcnConfig& c = n.dcqcn;
  k.push_back({.path = "nic.dcqcn.enabled",
               .type = T::kBoolean,
               .fallback = false,
               .doc = "rate control on CNPs (RDMA only)"});
  k.push_back(
      {.path = "nic.dcqcn.variant",
       .type = T::kChoice,
       .fallback = text("firmware"),
       .choices = {"firmware", "paper"},
       .doc = "firmware: α is updated every `dce_tcp_rtt` from whether a CNP came, the rate is "
              "cut at most once per `rate_reduce_monitor_period`, timer-only increase with a "
              "constant hyper step. paper: each CNP cuts the rate at once (RT = RC, α = (1−g)α + "
              "g, RC = RC(1 − α/2)), α decays every `dce_tcp_rtt` without a CNP, increases come "
              "from the timer and the byte counter, and hyper increase grows by `rpg_hai_rate` × "
              "(min(timer stage, byte stage) − F + 1)"});
  k.push_back(
      {.path = "nic.dcqcn.rpg_byte_reset",
       .type = T::kSize,
       .fallback = c.rpg_byte_reset,
       .positive = true,
       .doc = "paper variant only: bytes sent (on the wire) between byte-counter increase "
              "events, half that in hyper increase. Default: the DCQCN authors' ns-3 "
              "`ByteCounter` (bobzhuyb/ns3-rdma); the firmware's own `rpg_byte_reset` has no "
              "documented unit. The paper's own choice is quoted as 10 MB. It matters: in a 2:1 "
              "incast at 100 Gb/s (tests/fabric/fabric_test.cpp) 150 KB reaches hyper increase "
              "within about 0.1 ms and the two flows settle at 41 and 56 Gb/s, where 10 MB "
              "shares the link within 3 %"});
  k.push_back({.path = "nic.dcqcn.rpg_time_reset",
               .type = T::kTime,
               .fallback = c.rpg_time_reset,
               .positive = true,
               .doc = "rate-increase timer period (paper variant: half of it in hyper increase)"});
  k.push_back({.path = "nic.dcqcn.rpg_threshold",
               .type = T::kInteger,
               .fallback = integer(c.rpg_threshold),
               .min = 0,
               .max = 1000,
               .doc = "F: fast-recovery steps before additive increase"});
  k.push_back({.path = "nic.dcqcn.rpg_ai_rate",
               .type = T::kBandwidth,
               .fallback = c.rpg_ai_rate,
               .positive = true,
               .doc = "additive increase of the target rate"});
  k.push_back({.path = "nic.dcqcn.rpg_hai_rate",
               .type = T::kBandwidth,
               .fallback = c.rpg_hai_rate,
               .positive = true,
               .doc = "hyper increase of the target rate"});
  k.push_back({.path = "nic.dcqcn.rpg_min_rate",
               .type = T::kBandwidth,
               .fallback = c.rpg_min_rate,
               .positive = true,
               .doc = "lowest rate a QP is cut to"});
  k.push_back({.path = "nic.dcqcn.dce_tcp_g",
               .type = T::kReal,
               .fallback = number(c.dce_tcp_g),
               .min = 0,
               .max = 1,
               .doc = "g, the gain of the α average (1/256; the firmware's fixed-point encoding of "
                      "`dce_tcp_g` is not documented, so give g itself)"});
  k.push_back({.path = "nic.dcqcn.dce_tcp_rtt",
               .type = T::kTime,
               .fallback = c.dce_tcp_rtt,
               .positive = true,
               .doc = "α update period"});
  k.push_back({.path = "nic.dcqcn.rate_reduce_monitor_period",
               .type = T::kTime,
               .fallback = c.rate_reduce_monitor_period,
               .positive = true,
               .doc = "firmware variant only: at most one rate cut per period"});
  k.push_back({.path = "nic.dcqcn.initial_alpha",
               .type = T::kReal,
               .fallback = number(c.initial_alpha),
               .min = 0,
               .max = 1,
               .doc = "α at the first CNP (paper variant: when the QP opens)"});
  k.push_back({.path = "nic.dcqcn.rate_to_set_on_first_cnp",
               .type = T::kBandwidth,
               .fallback = c.rate_to_set_on_first_cnp,
               .note = "(keep)",
               .doc = "firmware variant only: rate set at the first CNP"});
  k.push_back({.path = "nic.dcqcn.clamp_tgt_rate",
               .type = T::kBoolean,
               .fallback = c.clamp_tgt_rate,
               .doc = "firmware variant only: target rate := current rate at every cut (the paper "
                      "variant always does)"});
  k.push_back({.path = "nic.dcqcn.min_time_between_cnps",
               .type = T::kTime,
               .fallback = c.min_time_between_cnps,
               .doc = "notification point: at most one CNP per QP per interval"});
}

void add_switch(std::vector<KeySpec>& k) {
  const auto priorities = [&](std::string path, std::vector<std::int64_t> fallback,
                              std::string doc) {
    k.push_back({.path = "switch." + path,
                 .type = T::kIntegerList,
                 .fallback = std::move(fallback),
                 .min = 0,
                 .max = 7,
                 .type_note = "array of priorities 0 … 7",
                 .doc = std::move(doc)});
  };
  k.push_back({.path = "switch.buffer",
               .type = T::kSize,
               .fallback = Bytes(32LL << 20),
               .positive = true,
               .doc = "total packet buffer per switch"});
  k.push_back({.path = "switch.reserved",
               .type = T::kSize,
               .fallback = Bytes(4096),
               .doc = "guaranteed space per ingress (port, priority)"});
  k.push_back({.path = "switch.alpha",
               .type = T::kReal,
               .fallback = number(0.125),
               .min = 1.0 / 1024,
               .max = 64,
               .doc = "dynamic threshold: an ingress queue may use α × (free shared buffer)"});
  k.push_back({.path = "switch.resume_offset",
               .type = T::kSize,
               .fallback = Bytes(3072),
               .doc = "XON when shared use + offset ≤ threshold"});
  k.push_back({.path = "switch.sharp",
               .type = T::kBoolean,
               .fallback = false,
               .doc =
                   "InfiniBand only: every switch can aggregate in the network (NVIDIA SHARP: "
                   "Quantum HDR and later). Each switch gets an aggregation node, a fabric "
                   "endpoint named `<switch>.sharp` behind an internal port of `sharp_rate`, for "
                   "CollNet's in-network reductions (`nccl.NCCL_COLLNET_ENABLE`); host traffic "
                   "is routed as without it"});
  k.push_back({.path = "switch.sharp_rate",
               .type = T::kBandwidth,
               .fallback = Bandwidth{},
               .note = "(every port)",
               .doc = "how fast a switch's aggregation node takes in and sends out data, per "
                      "direction; 0: its ports' line rates together (streaming aggregation at "
                      "line rate on every port, SHARP v2/v3)"});
  k.push_back({.path = "switch.sharp_trees",
               .type = T::kInteger,
               .fallback = integer(0),
               .note = "(one per port)",
               .min = 0,
               .doc = "streaming-aggregation trees one switch runs at a time (NVIDIA SHARP 3.13 "
                      "release notes): 0 one per port, as Quantum-2 and later (no two trees share "
                      "a cable between switches); n at most n per switch (Quantum HDR: 1). A "
                      "communicator whose CollNet heads (one tree each) exceed it gets no "
                      "CollNet, as NCCL falls back when SHARP refuses the trees"});
  k.push_back({.path = "switch.pfc",
               .type = T::kBoolean,
               .fallback = false,
               .doc = "802.1Qbb priority flow control on the lossless priorities"});
  priorities("lossless_priorities", {3}, "PFC-enabled priorities");
  k.push_back({.path = "switch.pfc_xoff",
               .type = T::kSize,
               .fallback = Bytes(0),
               .note = "(dynamic)",
               .doc = "static XOFF threshold on an ingress queue's occupancy; 0 uses the dynamic "
                      "threshold above"});
  k.push_back({.path = "switch.pfc_xon",
               .type = T::kSize,
               .fallback = Bytes(0),
               .doc = "static XON threshold (below `pfc_xoff`)"});
  k.push_back({.path = "switch.pause_quanta",
               .type = T::kInteger,
               .fallback = integer(0xffff),
               .min = 1,
               .max = 0xffff,
               .doc = "pause time sent with XOFF, in 512-bit-time quanta; refreshed every half of "
                      "it while congested"});
  k.push_back({.path = "switch.scheduling",
               .type = T::kChoice,
               .fallback = text("strict"),
               .choices = {"strict", "dwrr"},
               .doc = "egress scheduling: strict priority (7 highest), or strict for "
                      "`strict_priorities` and deficit weighted round robin for the rest"});
  priorities("strict_priorities", {6, 7},
             "with `dwrr`: priorities served strictly first (CNPs use 6)");
  k.push_back({.path = "switch.dwrr_weights",
               .type = T::kIntegerList,
               .fallback = std::vector<std::int64_t>(8, 1),
               .min = 1,
               .max = 1000,
               .type_note = "8 integers 1 … 1000",
               .doc = "with `dwrr`: weight of each priority (quantum 9216 B × weight per turn)"});
  k.push_back({.path = "switch.pfc_watchdog",
               .type = T::kTime,
               .fallback = Time::zero(),
               .note = "(off)",
               .doc = "PFC watchdog: a lossless queue paused without a break for this long is a "
                      "pause storm; until the pause ends the port ignores it for that priority "
                      "(counters `pfc_watchdog_prio<p>_storms`, `_dropped`)"});
  k.push_back({.path = "switch.pfc_watchdog_action",
               .type = T::kChoice,
               .fallback = text("drop"),
               .choices = {"drop", "ignore"},
               .doc = "in a storm, also discard the queue's packets (as switch watchdogs do by "
                      "default) or only ignore the pause"});
  k.push_back({.path = "switch.pause_response_time",
               .type = T::kTime,
               .fallback = Time::from_ps(1'000'000),
               .doc = "upstream reaction time, for the automatic headroom"});
  k.push_back({.path = "switch.headroom",
               .type = T::kSize,
               .presence = P::kDerived,
               .note = "automatic",
               .doc = "per lossless ingress queue; automatic = pause frame + 2 maximum frames + "
                      "the bytes the link carries in (2 × longest cable propagation + response "
                      "time), as 802.1Qbb Annex O"});
  k.push_back(
      {.path = "switch.vl_buffer",
       .type = T::kSize,
       .fallback = Bytes(64 * 1024),
       .positive = true,
       .doc = "InfiniBand only: receive buffer per (port, virtual lane) = the credits an upstream "
              "port starts with; packets wait for credits, nothing is dropped and no PFC is sent "
              "(credits come back one link latency after the packet leaves the buffer). A switch "
              "carves `switch.buffer` into these receive buffers, so each gets at most buffer / "
              "(ports × VLs in use: the data and CNP priorities): a switch never holds more than "
              "its buffer"});
  k.push_back({.path = "switch.ecn",
               .type = T::kBoolean,
               .fallback = false,
               .doc = "RED-style CE marking at dequeue (Ethernet)"});
  k.push_back({.path = "switch.ecn_kmin",
               .type = T::kSize,
               .fallback = Bytes(100'000),
               .doc = "no marking at or below this queue length (per port and priority)"});
  k.push_back({.path = "switch.ecn_kmax",
               .type = T::kSize,
               .fallback = Bytes(400'000),
               .positive = true,
               .doc = "marking probability `ecn_pmax` here, 1 above"});
  k.push_back({.path = "switch.ecn_pmax",
               .type = T::kReal,
               .fallback = number(0.2),
               .min = 0,
               .max = 1,
               .doc = "marking probability at Kmax"});
  priorities("ecn_priorities", {}, "priorities that are marked");
  k.back().presence = P::kDerived;
  k.back().fallback = {};
  k.back().note = "`[nic.priority]`";
}

void add_traffic(std::vector<KeySpec>& k) {
  k.push_back(
      {.path = "traffic.pattern",
       .type = T::kChoice,
       .fallback = text("incast"),
       .choices = {"incast", "permutation", "all-to-all"},
       .doc = "incast: hosts 1…N−1 send to host 0; permutation: host *i* sends to *i*+shift mod "
              "N; all-to-all: every host sends to every other"});
  k.push_back({.path = "traffic.message_size",
               .type = T::kSize,
               .presence = P::kRequired,
               .positive = true,
               .doc = "bytes per message"});
  k.push_back({.path = "traffic.messages",
               .type = T::kInteger,
               .fallback = integer(1),
               .min = 1,
               .max = 1'000'000,
               .doc = "messages each sender sends to each of its destinations; more than 5 × 10^7 "
                      "messages in all is refused unless `--force`"});
  k.push_back({.path = "traffic.shift",
               .type = T::kInteger,
               .fallback = integer(1),
               .min = 1,
               .max = 1 << 20,
               .doc = "permutation: host *i* sends to host (*i* + shift) mod N; a multiple of N "
                      "(every host to itself) is refused"});
  k.push_back({.path = "traffic.mean_gap",
               .type = T::kTime,
               .fallback = Time::zero(),
               .doc = "mean of the exponential gap between a sender's message starts (0: back to "
                      "back)"});
  k.push_back({.path = "traffic.start_jitter",
               .type = T::kTime,
               .fallback = Time::zero(),
               .doc = "each sender's first message starts at a uniform random time in [0, "
                      "jitter]"});
}

void add_workload(std::vector<KeySpec>& k) {
  k.push_back({.path = "workload.model_params",
               .type = T::kReal,
               .fallback = number(0),
               .min = 0,
               .max = 1e15,
               .doc = "parameters (for the report, and to derive compute from "
                      "`sustained_tflops`)"});
  k.push_back({.path = "workload.pipeline_stages",
               .type = T::kInteger,
               .fallback = integer(1),
               .min = 1,
               .max = 1 << 16,
               .type_note = "integer ≥ 1, dividing the servers",
               .doc = "pipeline parallelism: servers split into this many consecutive groups "
                      "(stage p = server / replicas); GPU *i* of a server sends activations to "
                      "GPU *i* of the next stage's server of the same replica and gets gradients "
                      "back"});
  k.push_back({.path = "workload.micro_batches",
               .type = T::kInteger,
               .fallback = integer(1),
               .min = 1,
               .max = 1 << 20,
               .doc = "micro-batches per step, run in the 1F1B order (warm-up forwards, then one "
                      "forward and one backward alternately)"});
  k.push_back({.path = "workload.sequence_length",
               .type = T::kInteger,
               .fallback = integer(0),
               .note = "(not given)",
               .min = 0,
               .max = static_cast<double>(1LL << 30),
               .doc = "tokens per sequence"});
  k.push_back({.path = "workload.micro_batch_size",
               .type = T::kInteger,
               .fallback = integer(1),
               .min = 1,
               .max = static_cast<double>(1LL << 30),
               .doc = "sequences per micro-batch (for the derived token count and activation "
                      "size)"});
  k.push_back({.path = "workload.hidden_size",
               .type = T::kInteger,
               .fallback = integer(0),
               .note = "(not given)",
               .min = 0,
               .max = static_cast<double>(1LL << 30),
               .doc = "model width, to derive `pp_bytes`"});
  k.push_back({.path = "workload.activation_bytes_per_element",
               .type = T::kInteger,
               .fallback = integer(2),
               .min = 1,
               .max = 16,
               .doc = "bytes per activation value (bf16)"});
  k.push_back({.path = "workload.tokens_per_step",
               .type = T::kInteger,
               .presence = P::kRequired,
               .note = "unless `sequence_length` is given; then micro_batches × micro_batch_size × "
                       "sequence_length × data-parallel replicas",
               .min = 1,
               .max = kMaxInt,
               .doc = "tokens per step over all servers"});
  k.push_back({.path = "workload.pp_bytes",
               .type = T::kSize,
               .presence = P::kDerived,
               .note = "sequence_length × micro_batch_size × hidden_size × bytes per element / "
                       "GPUs per server",
               .doc = "bytes per GPU per micro-batch sent to the next stage (and the same back), "
                      "Megatron's scatter-gather across tensor-parallel ranks"});
  k.push_back({.path = "workload.sustained_tflops",
               .type = T::kReal,
               .presence = P::kOptional,
               .min = 0.001,
               .max = 1e6,
               .doc = "derive compute instead: forward = 2 × params × tokens per server / (GPUs "
                      "per server × rate), backward = 2 × forward"});
  k.push_back({.path = "workload.forward_time",
               .type = T::kTime,
               .presence = P::kRequired,
               .note = "unless `sustained_tflops`",
               .positive = true,
               .doc = "forward compute per step of a GPU at speed 1"});
  k.push_back({.path = "workload.backward_time",
               .type = T::kTime,
               .presence = P::kRequired,
               .note = "unless `sustained_tflops`",
               .positive = true,
               .doc = "backward compute per step"});
  k.push_back({.path = "workload.optimizer_time",
               .type = T::kTime,
               .fallback = Time::zero(),
               .doc = "optimizer per step, after the last gradient bucket"});
  k.push_back({.path = "workload.gradient_bytes",
               .type = T::kSize,
               .fallback = Bytes(0),
               .doc = "gradient bytes per GPU per step, AllReduced across servers"});
  k.push_back({.path = "workload.buckets",
               .type = T::kInteger,
               .fallback = integer(4),
               .min = 1,
               .max = 4096,
               .doc = "gradient buckets: bucket *j* is reduced once *j*+1 of `buckets` backward "
                      "pieces are done, overlapping the rest (1: after the backward pass)"});
  k.push_back({.path = "workload.tp_bytes",
               .type = T::kSize,
               .fallback = Bytes(0),
               .doc = "activation bytes per GPU per step AllReduced inside the server"});
  k.push_back({.path = "workload.tp_collectives",
               .type = T::kInteger,
               .presence = P::kDerived,
               .note = "`2` when `tp_bytes` is set, else `0`",
               .min = 0,
               .max = 1 << 20,
               .doc = "how many TP AllReduces share `tp_bytes` (half in forward, half in "
                      "backward)"});
  k.push_back({.path = "workload.steps",
               .type = T::kInteger,
               .fallback = integer(1),
               .min = 1,
               .max = 1'000'000,
               .doc = "steps simulated (the metrics are per-step means)"});
  k.push_back({.path = "workload.slow_gpus",
               .type = T::kIntegerList,
               .fallback = std::vector<std::int64_t>{},
               .min = 0,
               .type_note = "array of GPU ordinals",
               .doc = "stragglers (server-major ordinals)"});
  k.push_back({.path = "workload.slow_gpu_speed",
               .type = T::kReal,
               .fallback = number(1.0),
               .min = 0.01,
               .max = 100,
               .doc = "their speed factor (a server runs at its slowest GPU's speed)"});
}

void add_study_expected(std::vector<KeySpec>& k) {
  k.push_back({.path = "study.busbw_sizes",
               .type = T::kSizeList,
               .fallback = std::vector<std::string>{},
               .doc = "message sizes (each one `nccl-tests -b SIZE -e SIZE`)"});
  k.push_back({.path = "study.busbw_ops",
               .type = T::kStringList,
               .fallback = std::vector<std::string>{"all_reduce_perf"},
               .choices = perf_binaries(),
               .type_note = "array of nccl-tests binaries",
               .doc = "which collectives"});
  const auto expected = [&](std::string name, std::string doc) {
    k.push_back({.path = "expected." + name,
                 .type = T::kReal,
                 .presence = P::kOptional,
                 .min = 0,
                 .max = 1e18,
                 .doc = std::move(doc)});
  };
  expected("cross_node_throughput_gbit_per_s", "the case's cross-node throughput per NIC, Gb/s");
  expected("roce_throughput_gbps", "old name of `cross_node_throughput_gbit_per_s`");
  expected("allreduce_ms_per_step", "the case's AllReduce time per step, ms");
  expected("allreduce_cross_node_ms", "the case's cross-node AllReduce time per step, ms");
  expected("pfc_pause_frames", "the case's PFC pause frame count");
  expected("tokens_per_s", "the case's training throughput");
  expected("scaling_efficiency", "the case's scaling efficiency against one server");
  expected("single_server_tokens_per_s", "the case's throughput on one server");
  k.push_back({.path = "expected.notes",
               .type = T::kStringList,
               .fallback = std::vector<std::string>{},
               .doc = "what the report must say about the case (inconsistencies, what a figure "
                      "measured)"});
}

void add_nccl(std::vector<KeySpec>& k) {
  const NcclConfig c{};
  const auto optional_choice = [&](std::string path, std::vector<std::string> choices,
                                   std::string note, std::string doc) {
    k.push_back({.path = "nccl." + path,
                 .type = T::kChoice,
                 .presence = P::kOptional,
                 .note = std::move(note),
                 .choices = std::move(choices),
                 .doc = std::move(doc)});
  };
  k.push_back({.path = "nccl.NCCL_ALGO",
               .type = T::kString,
               .presence = P::kOptional,
               .note = "the tuner's choice",
               .doc =
                   "the algorithms the tuner may choose, in NCCL's list syntax (`\"Ring,Tree\"`, "
                   "`\"^Tree\"` for all but Tree, `\"Ring;allreduce:Tree,Ring\"` per function; "
                   "NCCL's names: Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT). "
                   "The model runs Tree (AllReduce across servers) and Ring; with neither "
                   "allowed it runs Ring"});
  k.push_back({.path = "nccl.NCCL_PROTO",
               .type = T::kString,
               .presence = P::kOptional,
               .note = "the tuner's choice",
               .doc = "the protocols the tuner may choose, in NCCL's list syntax (`\"LL,Simple\"`, "
                      "`\"^LL128\"`); naming LL128 enables it even where `ll128` (NCCL's "
                      "hardware rule) would not"});
  k.push_back({.path = "nccl.NCCL_BUFFSIZE",
               .type = T::kByteCount,
               .fallback = c.buffsize,
               .positive = true,
               .doc = "Simple protocol buffer per connection: 8 steps of buffsize/8; ring "
                      "AllReduce moves chunks of 4 steps in slices of 2"});
  k.push_back({.path = "nccl.NCCL_LL_BUFFSIZE",
               .type = T::kByteCount,
               .fallback = c.ll_buffsize,
               .positive = true,
               .doc = "LL buffer (half of each step is flags)"});
  k.push_back({.path = "nccl.NCCL_LL128_BUFFSIZE",
               .type = T::kByteCount,
               .fallback = c.ll128_buffsize,
               .positive = true,
               .doc = "LL128 buffer (120 of every 128 bytes are data)"});
  k.push_back({.path = "nccl.NCCL_MIN_NCHANNELS",
               .type = T::kInteger,
               .fallback = integer(c.min_channels),
               .min = 0,
               .max = 64,
               .doc = "at least this many channels (more than the layout has duplicates its rings "
                      "and trees); 0: no minimum"});
  k.push_back({.path = "nccl.NCCL_MAX_NCHANNELS",
               .type = T::kInteger,
               .fallback = integer(c.max_channels),
               .min = 0,
               .max = 64,
               .doc = "at most this many channels; 0: no maximum"});
  k.push_back(
      {.path = "nccl.NCCL_CROSS_NIC",
       .type = T::kInteger,
       .fallback = integer(c.cross_nic),
       .min = 0,
       .max = 2,
       .doc = "as NCCL reads it (search.cc): 0 a ring enters and leaves each server through the "
              "same NIC (stays on its rail); 1 it may leave through the NIC of the last GPU it "
              "visits (cross-rail traffic between servers); 2, NCCL's default, tries 0 first, "
              "which gives full-bandwidth rings on every server model here, so it acts as 0. A "
              "server's NICs for a communicator are always its member GPUs' nearest NICs (a "
              "communicator of one GPU per server uses that GPU's own NIC)"});
  k.push_back(
      {.path = "nccl.NCCL_NCHANNELS_PER_NET_PEER",
       .type = T::kInteger,
       .fallback = integer(c.channels_per_net_peer),
       .note = "(NCCL's rule)",
       .min = 0,
       .max = 64,
       .doc = "channels (thread blocks and connections) a send/receive to a peer on another "
              "server is split over. NCCL's rule (`paths.cc`): per peer 2 × the NVLink links on "
              "the path inside a server (2 over PCIe), max(local NICs, ⌈their GB/s / 14⌉) across "
              "servers; the minimum over all pairs, rounded up to a power of two, at most the "
              "channel count rounded up; across servers halved while it × ⌈ranks / 8⌉ exceeds "
              "that. Sets `sendrecv_perf` and `alltoall_perf` bandwidth: one block moves at most "
              "`gpu_channel_rate`"});
  for (const auto& [name, bytes, over] :
       {std::tuple{"NCCL_P2P_NET_CHUNKSIZE", c.p2p_net_chunksize, "the network"},
        std::tuple{"NCCL_P2P_PCI_CHUNKSIZE", c.p2p_pci_chunksize, "PCIe inside a server"},
        std::tuple{"NCCL_P2P_NVL_CHUNKSIZE", c.p2p_nvl_chunksize, "NVLink"}})
    k.push_back({.path = fmt::format("nccl.{}", name),
                 .type = T::kByteCount,
                 .fallback = bytes,
                 .positive = true,
                 .doc = fmt::format("send/receive and AllToAll chunk over {} (NCCL init.cc): "
                                    "each chunk one primitive at both ends",
                                    over)});
  k.push_back({.path = "nccl.NCCL_NVLS_ENABLE",
               .type = T::kInteger,
               .fallback = integer(c.nvls_enable),
               .min = 0,
               .max = 2,
               .doc = "NVLink SHARP (NCCL `transport/nvls.cc`): 0 off; 1 or 2 (default) on where "
                      "the hardware has it (NVSwitches, compute capability 9.0 or later, "
                      "`gpu_nvls_efficiency` > 0). The model runs NVLS AllReduce inside one "
                      "server; the tuner then weighs it against Ring and Tree as NCCL does"});
  k.push_back({.path = "nccl.NCCL_COLLNET_ENABLE",
               .type = T::kInteger,
               .fallback = integer(c.collnet_enable),
               .min = 0,
               .max = 1,
               .doc = "CollNet, NCCL's in-network reductions (init.cc; with InfiniBand SHARP "
                      "through the SHARP plugin): 1 lets the tuner weigh CollNetDirect and "
                      "CollNetChain AllReduce where the switches aggregate (`switch.sharp`); 0 "
                      "(NCCL's default) off"});
  k.push_back({.path = "nccl.NCCL_COLLNET_NODE_THRESHOLD",
               .type = T::kInteger,
               .fallback = integer(c.collnet_node_threshold),
               .min = 1,
               .doc = "the fewest servers a communicator needs for CollNet (init.cc, default 2)"});
  k.push_back({.path = "nccl.NCCL_NVLS_CHUNKSIZE",
               .type = T::kByteCount,
               .fallback = c.nvls_chunksize,
               .positive = true,
               .doc = "NVLS chunk per head and loop (NCCL's default 128 KiB; smaller sizes use "
                      "64, 32 or 16 KiB as enqueue.cc picks them); a head's buffer is 8 chunks"});
  k.push_back({.path = "nccl.NCCL_NVLS_NCHANNELS",
               .type = T::kInteger,
               .fallback = integer(c.nvls_channels),
               .note = "(NCCL's: 16 on Hopper)",
               .min = 0,
               .max = 64,
               .doc = "thread blocks (channels) an NVLS collective runs on; 0: NCCL's per "
                      "architecture count (NVLS_NCHANNELS_SM90 16)"});
  k.push_back({.path = "nccl.NCCL_IB_QPS_PER_CONNECTION",
               .type = T::kInteger,
               .fallback = integer(c.ib_qps_per_connection),
               .min = 1,
               .max = 128,
               .doc = "queue pairs per network connection (NCCL `net_ib`, at most NCCL_IB_MAX_QPS "
                      "= 128). Each QP is its own flow to ECMP (a RoCEv2 QP has its own UDP "
                      "source port), so q QPs spread a connection over up to q paths. Sends go "
                      "round robin over them (send r on QP r mod q) unless "
                      "`NCCL_IB_SPLIT_DATA_ON_QPS`; inside a server a connection has one"});
  k.push_back({.path = "nccl.NCCL_IB_SPLIT_DATA_ON_QPS",
               .type = T::kInteger,
               .fallback = integer(c.ib_split_data_on_qps ? 1 : 0),
               .min = 0,
               .max = 1,
               .doc = "1: each send is cut across all the connection's QPs in parts of "
                      "⌈⌈size / q⌉ / 128⌉ × 128 bytes (NCCL `net_ib` p2p.cc); 0 (default): "
                      "whole sends, round robin"});
  k.push_back({.path = "nccl.NCCL_P2P_PXN_LEVEL",
               .type = T::kInteger,
               .fallback = integer(c.p2p_pxn_level),
               .min = 0,
               .max = 2,
               .doc =
                   "PXN for point-to-point sends across servers (send/receive, AllToAll; NCCL "
                   "`search.cc` ncclTopoGetNetDev): 1 or 2 (default) a send leaves through the "
                   "NIC of the sender's server's GPU on the receiver's rail (same GPU index), "
                   "reached over NVLink, so on a rail-optimized fabric it stays in the rail's "
                   "leaf; 0 through the sender's own NIC. The receiver always uses its own NIC"});
  k.push_back(
      {.path = "nccl.NCCL_PXN_DISABLE",
       .type = T::kInteger,
       .fallback = integer(0),
       .min = 0,
       .max = 1,
       .doc = "0 (NCCL's default): a GPU whose PCIe path to the NIC it sends or receives through "
              "crosses a CPU, while another GPU under that NIC's PCIe switch shares NVLink with "
              "it, moves the data over NVLink to that GPU and the NIC reads it there (PXN, NCCL "
              "`paths.cc`), at both fidelity levels; 1: the data takes the PCIe path (staged "
              "through host memory unless `NCCL_NET_GDR_LEVEL` allows GPUDirect across the "
              "CPU). It also turns off PXN for point-to-point sends (`NCCL_P2P_PXN_LEVEL`)"});
  optional_choice("NCCL_NET_GDR_LEVEL", {"LOC", "PIX", "PXB", "PHB", "SYS"}, "`nic.gdr_level`",
                  "GPUDirect RDMA up to this PCIe distance (`LOC`: never); overrides "
                  "`nic.gpudirect` and `nic.gdr_level`");
  k.push_back({.path = "nccl.NCCL_NET_GDR_READ",
               .type = T::kInteger,
               .presence = P::kOptional,
               .note = "1 (NCCL's default from compute capability 8.0)",
               .min = 0,
               .max = 1,
               .doc = "0: the NIC does not read GPU memory for sends (paths.cc "
                      "ncclTopoCheckGdr): send data is staged through host memory on the NIC's "
                      "socket, receives still land in GPU memory by GPUDirect"});
  optional_choice(
      "NCCL_P2P_LEVEL", {"LOC", "NVL", "PIX", "PXB", "PHB", "SYS"}, "`PXB` (NCCL's default)",
      "how far apart two GPUs of a server may be and still use peer to peer (NCCL "
      "`paths.cc` ncclTopoCheckP2p): NVLink counts as `NVL`, PCIe under one single-level "
      "switch as `PIX`, under a two-level switch as `PXB`, through one CPU as "
      "`PHB`, across sockets as `SYS`. Pairs further apart (and all with `LOC`) use NCCL's SHM "
      "transport, "
      "staged through host memory of the receiver's socket (so a DGX with `LOC` or "
      "`NCCL_P2P_DISABLE=1` leaves NVLink idle), at both fidelity levels");
  k.push_back({.path = "nccl.NCCL_P2P_DISABLE",
               .type = T::kInteger,
               .presence = P::kOptional,
               .note = "0",
               .min = 0,
               .max = 1,
               .doc = "1: no peer to peer between GPUs at all, as `NCCL_P2P_LEVEL = \"LOC\"` "
                      "(which takes precedence when both are set, as in NCCL's ncclGetLevel)"});
  k.push_back({.path = "nccl.gpudirect",
               .type = T::kBoolean,
               .presence = P::kOptional,
               .note = "`nic.gpudirect`",
               .doc = "GPUDirect RDMA on or off (the case study's \"NCCL_GPUDIRECT\")"});
  k.push_back({.path = "nccl.NCCL_IB_TIMEOUT",
               .type = T::kInteger,
               .presence = P::kOptional,
               .note = "`nic.ib_timeout`",
               .min = 1,
               .max = 31,
               .doc = "overrides `nic.ib_timeout`"});
  k.push_back({.path = "nccl.NCCL_IB_RETRY_CNT",
               .type = T::kInteger,
               .presence = P::kOptional,
               .note = "`nic.ib_retry_cnt`",
               .min = 0,
               .max = 7,
               .doc = "overrides `nic.ib_retry_cnt`"});
  k.push_back({.path = "nccl.NCCL_IB_ADAPTIVE_ROUTING",
               .type = T::kInteger,
               .presence = P::kOptional,
               .note = "`nic.out_of_order_placement`",
               .min = 0,
               .max = 1,
               .doc = "1: NCCL posts a message as an RDMA write followed by a write with "
                      "immediate (net_ib p2p.cc), so its packets may land in any order: sets "
                      "`nic.out_of_order_placement`, which `fabric.routing = \"adaptive\"` or "
                      "`\"spray\"` need to avoid go-back-N; 0 clears it. NCCL's own default is 1 "
                      "on InfiniBand and 0 on Ethernet (net_ib init.cc); unset, the NIC key "
                      "decides"});
  k.push_back({.path = "nccl.NCCL_IB_TC",
               .type = T::kInteger,
               .presence = P::kOptional,
               .note = "`nic.priority`",
               .min = 0,
               .max = 255,
               .doc = "RoCE traffic class of NCCL's QPs: DSCP = TC / 4, and the NIC and switches "
                      "in DSCP trust mode map it to priority DSCP / 8 (the default dscp2prio "
                      "table), so 106 (DSCP 26) is priority 3 and NCCL's default 0 is priority 0. "
                      "Sets `nic.priority`: outside `switch.lossless_priorities` the traffic is "
                      "lossy (drops and go-back-N). Ethernet only"});
  k.push_back({.path = "nccl.NCCL_IB_SL",
               .type = T::kInteger,
               .presence = P::kOptional,
               .note = "`nic.priority`",
               .min = 0,
               .max = 15,
               .doc = "InfiniBand service level of NCCL's QPs, mapped to the virtual lane of the "
                      "same number (an identity SL2VL table, 8 lanes): sets `nic.priority`. "
                      "InfiniBand only"});
  k.push_back({.path = "nccl.NCCL_TOPO_FILE",
               .type = T::kFile,
               .presence = P::kOptional,
               .doc = "an NCCL topology XML (checked to load as NCCL would); giving NCCL the "
                      "topology makes the ring order topology-aware: `server_order` defaults to "
                      "`\"leaf\"`"});
  k.push_back({.path = "nccl.server_order",
               .type = T::kChoice,
               .presence = P::kDerived,
               .note = "`\"hostfile\"` (`\"leaf\"` with a topology file)",
               .choices = {"hostfile", "leaf"},
               .doc = "order of the servers along rings and trees: server index order as a "
                      "hostfile places ranks, or servers under one leaf switch adjacent"});
  k.push_back({.path = "nccl.server_list",
               .type = T::kIntegerList,
               .fallback = std::vector<std::int64_t>{},
               .min = 0,
               .max = 1 << 20,
               .type_note = "array of server indices",
               .doc = "an explicit server order (every server of the communicator once) instead "
                      "of `server_order`"});
  k.push_back({.path = "nccl.ll128",
               .type = T::kBoolean,
               .fallback = c.ll128_enabled,
               .doc = "let the tuner choose LL128; even then NCCL's rule (tuning.cc) enables it by "
                      "default only where a server's GPUs share NVLink and each GPU is within PXB "
                      "of its NIC (PXN on compute capability 9.0 and later): not on PCIe-only "
                      "servers unless `NCCL_PROTO` names it"});
  k.push_back({.path = "nccl.gpu",
               .type = T::kChoice,
               .presence = P::kDerived,
               .note = "from `server.gpu_sm` (`\"a100\"` below 90, `\"h100\"` below 100, "
                       "else `\"b200\"`)",
               .choices = gpu_preset_names(),
               .doc = "GPU preset: HBM bandwidth, SMs, one thread block's copy rate"});
  k.push_back(
      {.path = "nccl.gpu_hbm",
       .type = T::kBandwidth,
       .presence = P::kDerived,
       .note = "the preset's",
       .positive = true,
       .doc = "HBM bandwidth (reads and writes together)",
       .number = {[](const Scenario& s) { return static_cast<double>(s.gpu.hbm.bps()) / 8e9; },
                  [](Scenario& s, double gbs) {
                    s.gpu.hbm =
                        Bandwidth::from_bps(static_cast<Bandwidth::rep>(std::llround(gbs * 8e9)));
                  }}});
  k.push_back(
      {.path = "nccl.gpu_channel_rate",
       .type = T::kBandwidth,
       .presence = P::kDerived,
       .note = "the preset's: A100 20 GB/s, H100/H200 36.7 GB/s (NCCL's per-channel ceiling, "
               "tuning.cc `perChMaxRingLL128Bws`)",
       .positive = true,
       .doc = "how fast one channel's thread block copies or reduces; `\"0bps\"` is not allowed, "
              "use a large value for \"unlimited\". The channel count inside a server follows "
              "NCCL's graph-search figure instead (topo.h: 20 GB/s per channel on A100, 20.6 on "
              "H100), which this key does not change"});
  k.push_back({.path = "nccl.gpu_nvls_efficiency",
               .type = T::kReal,
               .presence = P::kDerived,
               .note = "the preset's: A100 0 (no NVLS), H100/H200 0.85 (NCCL tuning.cc "
                       "`nvlsEfficiency`)",
               .min = 0,
               .max = 1,
               .doc = "NVLink SHARP: the fraction of NCCL's per-link NVLink figure (20.6 GB/s on "
                      "Hopper) that multimem traffic achieves on each of a GPU's links; 0: the "
                      "GPU has no NVLS"});
  k.push_back({.path = "nccl.gpu_sms",
               .type = T::kInteger,
               .presence = P::kDerived,
               .note = "the preset's",
               .min = 1,
               .max = 4096,
               .doc = "streaming multiprocessors (one per channel goes to NCCL)"});
  // Step and launch latencies: NcclConfig's defaults (NCCL's tuner tables, cited there), in
  // calibration's unit µs.
  for (int p = 0; p < 3; ++p)
    for (int l = 0; l < 3; ++l)
      k.push_back(
          {.path = fmt::format("nccl.step_latency.{}_{}", kProtos[p], kLinks[l]),
           .type = T::kTime,
           .fallback = from_us(c.step_latency_us[p][l]),
           .note = "NCCL's tuner hwLat (ring)",
           .doc = fmt::format("software time of one {} pipeline step over {} (flag wait, fences, "
                              "proxy hand-off); the fabric adds wire latency on top. "
                              "Calibration data",
                              kProtoNames[p], l == 2 ? "the network" : kLinks[l]),
           .number = {[p, l](const Scenario& s) { return s.nccl.step_latency_us[p][l]; },
                      [p, l](Scenario& s, double v) { s.nccl.step_latency_us[p][l] = v; }},
           .fit = {Use::kDefault, 0.01, 1000, 0, 6 + 3 * p + l, c.step_latency_us[p][l] / 3,
                   c.step_latency_us[p][l] * 3, kStepLatencyBasis}});
  for (int p = 0; p < 3; ++p)
    k.push_back({.path = fmt::format("nccl.launch_latency.{}", kProtos[p]),
                 .type = T::kTime,
                 .fallback = from_us(c.launch_latency_us[p]),
                 .note = "NCCL's base latency",
                 .doc = fmt::format("fixed cost of launching a collective with {}", kProtoNames[p]),
                 .number = {[p](const Scenario& s) { return s.nccl.launch_latency_us[p]; },
                            [p](Scenario& s, double v) { s.nccl.launch_latency_us[p] = v; }},
                 .fit = {Use::kDefault, 0.1, 1000, 0, 2 + p, 3, 30, kLaunchLatencyBasis}});
}

void add_flow_prices(std::vector<KeySpec>& k) {
  const auto efficiency = [&](std::string cls, std::string doc, KeyNumber number, FitSpec fit) {
    k.push_back({.path = "flow.efficiency_" + cls,
                 .type = T::kReal,
                 .presence = P::kOptional,
                 .note = "1 (none)",
                 .min = 0.01,
                 .max = 1,
                 .doc = std::move(doc),
                 .number = std::move(number),
                 .fit = fit});
  };
  efficiency("nvlink", "NVLink links",
             {[](const Scenario& s) { return s.flow_efficiency.nvlink; },
              [](Scenario& s, double v) { s.flow_efficiency.nvlink = v; }},
             {Use::kDefault, 0.05, 1.0, 0, 0, 0.85, 1.0, kNvlinkEfficiencyBasis});
  // The PCIe class only carries collectives on servers without NVLink: usually set directly
  // from fabricsim-bench's host copies, fitted when asked for.
  efficiency("pcie", "PCIe links",
             {[](const Scenario& s) { return s.flow_efficiency.pcie; },
              [](Scenario& s, double v) { s.flow_efficiency.pcie = v; }},
             {Use::kOnRequest, 0.05, 1.0, 0, 5, 0.6, 1.0, kPcieEfficiencyBasis});
  efficiency("network", "network links",
             {[](const Scenario& s) { return s.flow_efficiency.network; },
              [](Scenario& s, double v) { s.flow_efficiency.network = v; }},
             {Use::kDefault, 0.05, 1.0, 0, 1, 0.85, 1.0, kNetworkEfficiencyBasis});
  const ExecutionOptions e{};
  k.push_back({.path = "flow.collectives",
               .type = T::kChoice,
               .fallback = text("auto"),
               .choices = {"auto", "slices", "streams"},
               .doc = "how collectives run at flow level: `\"slices\"` as NCCL's primitives (one "
                      "flow per slice, with credits), `\"streams\"` as one pipeline flow per "
                      "channel (ring, chain, tree; one per sender for point to point) plus the "
                      "analytic pipeline fill (see [collectives.md](collectives.md)), `\"auto\"` "
                      "streams a collective of more than `stream_above_primitives` primitives"});
  k.push_back({.path = "flow.stream_above_primitives",
               .type = T::kInteger,
               .fallback = integer(static_cast<std::int64_t>(e.stream_above)),
               .min = 0,
               .doc = "the threshold of `\"auto\"`"});

  const auto price = [&](std::string name, std::string doc) {
    k.push_back({.path = "prices." + name,
                 .type = T::kReal,
                 .presence = P::kOptional,
                 .min = 0,
                 .max = 1e12,
                 .doc = std::move(doc)});
  };
  price("server", "per server (GPUs, NICs and internals included)");
  price("switch", "per network switch");
  price("nic", "per NIC, when not in the server price");
  price("copper_cable", "per copper (DAC) cable");
  price("optical_cable", "per optical cable");
  price("transceiver", "per optical transceiver (two per optical cable)");
  k.push_back({.path = "prices.copper_max_length",
               .type = T::kLength,
               .fallback = number(AnalysisOptions{}.copper_max_m),
               .doc = "longer cables are optical"});
}

std::vector<KeySpec> make_schema() {
  std::vector<KeySpec> k;
  add_top_and_simulation(k);
  add_server(k);
  add_fabric(k);
  add_nic(k);
  add_switch(k);
  add_traffic(k);
  add_workload(k);
  add_study_expected(k);
  add_nccl(k);
  add_flow_prices(k);
  return k;
}

std::string quoted_list(const std::vector<std::string>& v) {
  std::vector<std::string> q;
  for (const auto& s : v) q.push_back(fmt::format("`\"{}\"`", s));
  return fmt::format("{}", fmt::join(q, ", "));
}

std::string range_text(double min, double max) {
  const auto num = [](double v) { return fmt::format("{}", v); };
  if (min > -kUnbounded && max < kUnbounded) return fmt::format("{} … {}", num(min), num(max));
  if (min > -kUnbounded) return fmt::format("≥ {}", num(min));
  if (max < kUnbounded) return fmt::format("≤ {}", num(max));
  return "";
}

}  // namespace

std::string_view KeySpec::table() const {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? std::string_view{} : std::string_view(path).substr(0, dot);
}

std::string_view KeySpec::name() const {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? std::string_view(path) : std::string_view(path).substr(dot + 1);
}

const std::vector<KeySpec>& scenario_schema() {
  static const std::vector<KeySpec> schema = make_schema();
  return schema;
}

const std::vector<SectionSpec>& scenario_sections() {
  static const std::vector<SectionSpec> sections = make_sections();
  return sections;
}

const KeySpec* find_scenario_key(std::string_view path) {
  static const std::map<std::string, const KeySpec*, std::less<>> index = [] {
    std::map<std::string, const KeySpec*, std::less<>> m;
    for (const auto& k : scenario_schema()) m.emplace(k.path, &k);
    return m;
  }();
  const auto it = index.find(path);
  return it == index.end() ? nullptr : it->second;
}

bool is_scenario_path(std::string_view path) {
  if (find_scenario_key(path)) return true;
  const std::string prefix = std::string(path) + ".";
  return std::any_of(scenario_schema().begin(), scenario_schema().end(),
                     [&](const KeySpec& k) { return k.path.starts_with(prefix); });
}

std::string nearest_scenario_key(std::string_view path) {
  // Keys and the tables above them ("nic.dcqcn"), each once.
  std::vector<std::string> known;
  for (const auto& k : scenario_schema()) {
    known.push_back(k.path);
    for (auto dot = k.path.find('.'); dot != std::string::npos; dot = k.path.find('.', dot + 1))
      if (std::find(known.begin(), known.end(), k.path.substr(0, dot)) == known.end())
        known.push_back(k.path.substr(0, dot));
  }
  return nearest_key(path, known).value_or("");
}

std::string toml_text(const KeyValue& value, KeyType type) {
  return std::visit(
      [&](const auto& v) -> std::string {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>) {
          return "";
        } else if constexpr (std::is_same_v<V, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<V, double>) {
          if (type == KeyType::kLength) return fmt::format("\"{}m\"", v);
          // A TOML float even when whole ("1.0", not the integer "1").
          std::string text = fmt::format("{}", v);
          if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
          return text;
        } else if constexpr (std::is_same_v<V, std::int64_t>) {
          return fmt::format("{}", v);
        } else if constexpr (std::is_same_v<V, std::string>) {
          return fmt::format("\"{}\"", v);
        } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
          std::vector<std::string> q;
          for (const auto& s : v) q.push_back(fmt::format("\"{}\"", s));
          return fmt::format("[{}]", fmt::join(q, ", "));
        } else if constexpr (std::is_same_v<V, std::vector<std::int64_t>>) {
          return fmt::format("[{}]", fmt::join(v, ", "));
        } else {
          return fmt::format("\"{}\"", to_string(v));
        }
      },
      value);
}

std::string describe_type(const KeySpec& k) {
  if (!k.type_note.empty()) return k.type_note;
  const std::string range = range_text(k.min, k.max);
  const auto with = [](std::string base, const std::string& r) {
    return r.empty() ? base : base + " " + r;
  };
  switch (k.type) {
    case KeyType::kString:
      return "string";
    case KeyType::kChoice:
      return quoted_list(k.choices);
    case KeyType::kBoolean:
      return "boolean";
    case KeyType::kInteger:
      return with("integer", range);
    case KeyType::kReal:
      return with("number", range);
    case KeyType::kTime:
      return k.positive ? "time > 0" : "time";
    case KeyType::kSize:
      return k.positive ? "size > 0" : "size";
    case KeyType::kByteCount:
      return "size, or integer bytes";
    case KeyType::kBandwidth:
      return k.positive ? "bandwidth > 0" : "bandwidth";
    case KeyType::kLength:
      return "length (`\"3m\"`)";
    case KeyType::kFile:
      return "file";
    case KeyType::kStringList:
      return k.choices.empty() ? "array of strings" : "array of " + quoted_list(k.choices);
    case KeyType::kIntegerList:
      return with("array of integers", range);
    case KeyType::kSizeList:
      return "array of sizes";
  }
  return "";
}

std::string describe_default(const KeySpec& k) {
  switch (k.presence) {
    case Presence::kDefault: {
      const std::string v = fmt::format("`{}`", toml_text(k.fallback, k.type));
      return k.note.empty() ? v : v + " " + k.note;
    }
    case Presence::kRequired:
      return k.note.empty() ? "required" : "required " + k.note;
    case Presence::kOptional:
      return k.note.empty() ? "—" : k.note;
    case Presence::kDerived:
      return k.note;
  }
  return "";
}

}  // namespace fabricsim
