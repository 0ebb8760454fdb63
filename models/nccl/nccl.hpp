#pragma once
// NCCL as the collective model sees it: operations, algorithms, protocols, their buffer and
// step structure, the environment users set, NCCL's own cost model (its tuner) and the GPU
// figures the kernels run against. Facts and their sources: ../shared/reference/protocols.md
// section 4 (NCCL v2.30.7, nccl-tests 2.19).
//
// Step structure (enqueue.cc, collectives.h): a connection's receive buffer of
// buffsize bytes is NCCL_STEPS = 8 steps; stepSize = buffsize / 8. Ring + Simple moves data in
// chunks of chunkSteps steps (4 for AllReduce/AllGather/ReduceScatter, 1 for Broadcast/Reduce)
// cut into slices of sliceSteps steps (2, resp. 1): AllReduce moves 512 KiB slices of 2 MiB
// chunks with the default 4 MiB buffer. Other algorithm/protocol pairs use one-step chunks; an
// LL step carries half its bytes as data (8-byte lines of 4 B data + 4 B flag), an LL128 step
// 120 of every 128 bytes. A sender may run ahead of its receiver by at most NCCL_STEPS /
// sliceSteps slices (the buffer's free slots): the credit window of the connection.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/units.hpp"

namespace fabricsim {

enum class CollOp {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kSendRecv
};
// NCCL's algorithm ids (device.h NCCL_ALGO_*). The collective model runs Ring, and for
// AllReduce Tree, NVLS (one server), NVLSTree and CollNetDirect/CollNetChain (across servers);
// PAT can be named in NCCL_ALGO (as NCCL parses it) but the tuner never picks it.
enum class Algo { kTree, kRing, kCollNetDirect, kCollNetChain, kNvls, kNvlsTree, kPat };
enum class Proto { kLL, kLL128, kSimple };  // NCCL's ids 0, 1, 2
inline constexpr int kAlgoCount = 7;
inline constexpr int kProtoCount = 3;
enum class LinkClass { kNvLink, kPcie, kNet };

std::string_view to_string(CollOp op);
std::string_view to_string(Algo a);
std::string_view to_string(Proto p);

// Inter-server order of a communicator's ranks: by server index (as the launcher's hostfile
// places them), servers under one leaf switch adjacent, or an explicit list.
enum class ServerOrder { kHostfile, kLeaf, kList };
std::string_view to_string(ServerOrder o);  // "hostfile", "leaf", "list"

std::optional<Algo> parse_algo(std::string_view s);    // NCCL's names, any case ("ring", "NVLS")
std::optional<Proto> parse_proto(std::string_view s);  // "LL", "LL128", "Simple" (any case)

// NCCL_ALGO / NCCL_PROTO as NCCL reads them (tuning.cc parseList): per NCCL function
// (Broadcast, Reduce, AllGather, ReduceScatter, AllReduce) and element (algorithm or protocol
// id), 0 disabled, 1 enabled, 2 NCCL's own rule (LL128: enabled only where the hardware rule
// allows, NcclConfig::ll128_enabled). The text is "list" or "^list" (everything but the list)
// optionally followed by ";function:list" entries that replace one function's row, e.g.
// "Ring,Tree", "^LL128", "ring;allreduce:tree,ring"; names compare case-insensitively.
// NCCL's point-to-point operations (AllToAll, SendRecv) are not governed by either variable.
struct EnableTable {
  std::array<std::array<std::uint8_t, kAlgoCount>, 5> rows{};
  std::uint8_t at(CollOp op, int element) const;
};
EnableTable default_algo_enable();   // every algorithm 1
EnableTable default_proto_enable();  // LL and Simple 1, LL128 2
// Applies `text` to `table` as NCCL does; throws std::invalid_argument with NCCL's complaint
// (unknown element or function, an entry after the first without a function prefix).
EnableTable parse_algo_list(std::string_view text);
EnableTable parse_proto_list(std::string_view text);
// The nccl-tests binary for an operation ("all_reduce_perf"), and back.
std::string perf_binary(CollOp op);
std::optional<CollOp> parse_perf_binary(std::string_view name);
std::vector<std::string> perf_binaries();

// nccl-tests' data types (-d) and reduction operations (-o), by their printed names.
struct DataType {
  std::string_view name;
  int size;
};
std::optional<DataType> parse_datatype(std::string_view s);  // "float", "half", "int8", ...
bool valid_redop(std::string_view s);                        // "sum", "prod", "min", "max", "avg"

// nccl-tests' bookkeeping for a requested size (setupArgs/getCollByteCount): the element
// count per rank it passes to NCCL, and what it prints in the size and count columns.
struct TestCounts {
  std::uint64_t size_column = 0;   // max(send bytes, receive bytes) of a rank
  std::uint64_t count_column = 0;  // elements NCCL is called with
  std::uint64_t bytes = 0;         // the collective's data size S that algbw divides by
};
TestCounts test_counts(CollOp op, std::uint64_t requested_bytes, int type_size, int nranks);
// algbw = S / t (GB/s, 1e9 B), busbw = algbw x factor (nccl-tests' *GetBw).
double bus_factor(CollOp op, int nranks);
double algbw_gbps(std::uint64_t bytes, double time_us);

// A GPU's figures for the kernels: HBM bandwidth, SMs, and how fast one NCCL thread block
// (one channel) copies or reduces. Presets carry their sources.
struct GpuSpec {
  std::string name;  // as nccl-tests prints the device ("NVIDIA A100-SXM4-80GB")
  int sm_version = 80;
  int sms = 108;
  Bandwidth hbm{};      // memory bandwidth (read + write together)
  Bandwidth channel{};  // one thread block's copy rate; 0: unlimited
  // NCCL's per-channel NVLink bandwidth in its graph search (topo.h SMxx_NVLINK_BW): what
  // sets the channel count inside one server; not a copy-rate limit.
  Bandwidth nvlink_channel{};
  // NVLink SHARP: the fraction of NCCL's per-link NVLink bandwidth (nvlink_channel) that
  // multimem traffic (ld_reduce, st through the NVSwitches) achieves; 0: the GPU has no NVLS.
  // NCCL's own figure (tuning.cc nvlsEfficiency: Hopper 0.85, Blackwell 0.74).
  double nvls_efficiency = 0;
};
// "a100", "h100", "h200"; throws std::invalid_argument listing them for any other name.
GpuSpec gpu_preset(std::string_view name);
std::vector<std::string> gpu_preset_names();
// The GPU a server model's `gpu_name` / NCCL sm corresponds to (A100 for sm 80, ...).
GpuSpec gpu_for_sm(int sm_version);

// What overlapping a collective costs the compute running beside it: NCCL takes one SM per
// channel and the HBM traffic of its copies; compute keeps the remaining SMs and bandwidth.
//   compute slowdown = max(sms / (sms - channels), hbm / (hbm - collective HBM traffic))
// (whichever of compute and memory bounds the kernel; a compute-bound kernel loses SMs, a
// memory-bound one bandwidth), reported as a factor >= 1.
double compute_slowdown(const GpuSpec& gpu, int channels, Bandwidth collective_hbm_traffic,
                        bool memory_bound);

// The NCCL environment as users set it, plus the model's protocol timings.
struct NcclConfig {
  EnableTable algos = default_algo_enable();    // NCCL_ALGO: what the tuner may choose
  EnableTable protos = default_proto_enable();  // NCCL_PROTO
  Bytes buffsize{4 << 20};                      // NCCL_BUFFSIZE (Simple)
  Bytes ll_buffsize{512 << 10};   // NCCL_LL_BUFFSIZE default: 8 lines x 512 thr x 8 steps x 16 B
  Bytes ll128_buffsize{4915200};  // NCCL_LL128_BUFFSIZE default: 120 x 640 x 8 x 8 B
  int min_channels = 0;           // NCCL_MIN_NCHANNELS (0: NCCL's choice)
  int max_channels = 0;           // NCCL_MAX_NCHANNELS (0: NCCL's choice)
  std::string topo_file;          // NCCL_TOPO_FILE ("" when unset)
  int cross_nic = 2;              // NCCL_CROSS_NIC (search.cc NCCL_PARAM default 2)
  int channels_per_net_peer = 0;  // NCCL_NCHANNELS_PER_NET_PEER (0: unset, NCCL's rule)
  // PXN for point-to-point sends (search.cc ncclTopoGetNetDev): NCCL_PXN_DISABLE (default 0)
  // and NCCL_P2P_PXN_LEVEL (search.cc:1398, default 2; 0: never).
  bool pxn_disable = false;
  int p2p_pxn_level = 2;
  // Queue pairs per network connection and whether each send is split across them
  // (NCCL_IB_QPS_PER_CONNECTION, net_ib connect.cc:60, default 1; NCCL_IB_SPLIT_DATA_ON_QPS,
  // net_ib common.cc:22, default 0). Each QP is its own flow for ECMP.
  int ib_qps_per_connection = 1;
  bool ib_split_data_on_qps = false;
  // NVLink SHARP (transport/nvls.cc): NCCL_NVLS_ENABLE (0 off, 1 on, 2 NCCL's default: on where
  // supported), NCCL_NVLS_CHUNKSIZE (128 KiB) and NCCL_NVLS_NCHANNELS (0: NCCL's per
  // architecture count, NVLS_NCHANNELS_SM90 16, SM100 24 in one NVLink domain).
  // Point-to-point chunk sizes (init.cc:818-820 NCCL_P2P_NET_CHUNKSIZE, NCCL_P2P_PCI_CHUNKSIZE
  // 128 KiB, NCCL_P2P_NVL_CHUNKSIZE 512 KiB): a send/receive moves in chunks of these.
  Bytes p2p_net_chunksize{128 << 10};
  Bytes p2p_pci_chunksize{128 << 10};
  Bytes p2p_nvl_chunksize{512 << 10};
  int nvls_enable = 2;
  Bytes nvls_chunksize{128 << 10};
  int nvls_channels = 0;
  // CollNet (in-network reduction, SHARP; init.cc): NCCL_COLLNET_ENABLE (default unset: off;
  // 1 on where the network can aggregate) and NCCL_COLLNET_NODE_THRESHOLD (init.cc:857,
  // default 2: CollNet only on communicators of at least that many servers).
  int collnet_enable = 0;
  int collnet_node_threshold = 2;
  // Inter-server order of the ranks (kList: server_list).
  ServerOrder server_order = ServerOrder::kHostfile;
  std::vector<int> server_list;
  // Software time per pipeline step (a primitive's flag wait, fence and proxy hand-off), by
  // protocol and link class, and the fixed time of a collective launch. Defaults: NCCL's own
  // tuner tables (tuning.cc hwLat ring column and baseLat), in microseconds, used as
  // calibration data; the fabric adds wire latency on top.
  std::array<std::array<double, 3>, 3> step_latency_us{{{0.6, 1.0, 2.7},     // LL
                                                        {1.9, 2.5, 4.0},     // LL128
                                                        {3.4, 5.7, 14.0}}};  // Simple
  std::array<double, 3> launch_latency_us{6.6, 14.0, 8.4};
  // false disables LL128 in the tuner (nccl.ll128); where it is true, NCCL's hardware rule
  // still applies (tuning.cc 518-536, CommLayout::ll128_paths).
  bool ll128_enabled = true;
};

// Bytes per step, chunk and slice for one operation (the sizing rules above).
struct StepSizing {
  Bytes step{};
  Bytes chunk{};           // data bytes per chunk
  Bytes slice{};           // data bytes per slice
  int credits = 0;         // slices a sender may have outstanding on a connection
  double wire_factor = 1;  // bytes on the wire per data byte (LL 2, LL128 128/120)
};
StepSizing step_sizing(CollOp op, Algo algo, Proto proto, const NcclConfig& cfg);
// NVLS's chunk for `bytes` over `concurrent` = channels x heads operations (enqueue.cc):
// from `max_chunk` (NCCL_NVLS_CHUNKSIZE) down to 64 KiB below 64 x concurrent x chunk bytes,
// 32 KiB below 8 x, 16 KiB below 2 x.
std::uint64_t nvls_chunk_bytes(std::uint64_t bytes, std::uint64_t concurrent,
                               std::uint64_t max_chunk);

// The one place a collective's bytes are cut into chunks and slices, from its StepSizing (so
// NCCL_BUFFSIZE reaches every algorithm through here). NCCL's device loops (prims in
// src/device/*.h) move a channel's bytes in loops of `ranks` chunks (a ring: one per rank;
// chains and trees: 1), each chunk at most `chunk` bytes, the last loop what is left split
// evenly; a chunk moves as slices of at most `slice` bytes. Every cut is at least one byte.
class Chunker {
 public:
  explicit Chunker(const StepSizing& sizing);
  // Per loop over `bytes`, the bytes of each rank's chunk.
  std::vector<std::uint64_t> chunks(std::uint64_t bytes, std::uint32_t ranks = 1) const;
  // The first (largest) of those chunks.
  std::uint64_t first_chunk(std::uint64_t bytes, std::uint32_t ranks = 1) const;
  // The slices of one chunk of `chunk_bytes` (one empty slice for an empty chunk).
  std::vector<std::uint64_t> slices(std::uint64_t chunk_bytes) const;
  // The first (largest) slice of a chunk.
  std::uint64_t first_slice(std::uint64_t chunk_bytes) const;
  // How many loops chunks() makes and slices() cuts, without cutting them (bytes >= 1).
  std::uint64_t chunk_count(std::uint64_t bytes, std::uint32_t ranks = 1) const;
  std::uint64_t slice_count(std::uint64_t chunk_bytes) const;

 private:
  std::uint64_t chunk_, slice_;  // each at least 1
};

// NCCL's per-thread thresholds shrink the channel count for small operations (enqueue.cc:
// while nBytes < nc x nthreads x threshold and nc > 1: nc--): Simple 64 B/thread x 512
// threads, LL 8 x 512, LL128 8 x 640.
int channels_for_size(int channels, Proto proto, std::uint64_t bytes);

// NCCL's cost model (tuning.cc), to choose algorithm and protocol as NCCL does.
struct TunerInput {
  CollOp op = CollOp::kAllReduce;
  std::uint64_t bytes = 0;
  int nranks = 1;
  int nnodes = 1;
  int channels = 1;
  int sm_version = 80;
  double bw_intra_gbs = 20;  // per channel, GB/s (NCCL graph bwIntra)
  double bw_inter_gbs = 12;  // per channel, GB/s (NCCL graph bwInter)
  // NCCL's LL128 hardware rule holds here (CommLayout::ll128_paths); tune() also asks
  // nccl.ll128 (NcclConfig::ll128_enabled).
  bool ll128_enabled = true;
  // NVLS (0: not available here). The NVLS graph's per-channel bandwidth (search.cc: one
  // channel per head GPU, each GPU's NVLink bandwidth over nranks + 1, rounded down to NCCL's
  // speed steps) and the GPU's nvlsEfficiency.
  double nvls_bw_intra_gbs = 0;
  double nvls_efficiency = 0;
  // NVLSTree (0: not available here, one server or no NVLS): its graph's heads per server
  // (one per NIC, search.cc) and per-head bandwidths (nvls_tree_graph_bw).
  int nvls_tree_heads = 0;
  double nvls_tree_bw_intra_gbs = 0;
  double nvls_tree_bw_inter_gbs = 0;
  // CollNet (0: not available here): heads per server (the ranks with a NIC of their own,
  // one aggregation tree each) and the graphs' per-channel bwIntra (collnet_graph_bw; 0:
  // that algorithm is not available, e.g. CollNetDirect without NVSwitches).
  int collnet_heads = 0;
  double collnet_direct_bw_gbs = 0;
  double collnet_chain_bw_gbs = 0;
};
struct TunerChoice {
  Algo algo = Algo::kRing;
  Proto proto = Proto::kSimple;
  double predicted_us = 0;  // NCCL's own estimate, for the report
  // Nothing enabled runs here (NCCL_ALGO/NCCL_PROTO name only what does not apply): NCCL
  // would fail the call; the model runs Ring with Simple (or the enabled protocol) instead.
  bool fallback = false;
};
double tuner_time_us(const TunerInput& in, Algo algo, Proto proto);
// The NVLS graph's per-channel bandwidth NCCL's search finds inside one server (search.cc
// ncclTopoSearchTryNvls): channel h pulls from every GPU once and twice from head h, so each
// GPU's NVLink carries (nranks + 1) x bw; bw is the largest of NCCL's speed steps
// (sm90SpeedArrayIntra, speedArrayIntra before Hopper) with (nranks + 1) x bw <= nvlink_gbs
// (the GPU's NVLink links x NCCL's per-link figure).
double nvls_graph_bw_gbs(double nvlink_gbs, int nranks, int sm_version);
// NCCL's ring graph on one server whose GPUs all reach each other through NVSwitches
// (search.cc ncclTopoCompute, system->inter 0). A ring at speed s takes s of every GPU's link to
// the switches each way, so floor(nvlink_gbs / s) rings fit (nvlink_gbs: the GPU's NVLink links
// x NCCL's per-link figure, topo.h SMxx_NVLINK_BW). Pass 1 starts at the largest intra speed
// step <= nvlink_gbs and steps down while the next step is above 0.49 x the best found, keeping
// the most channels x speed (the first of equals: fewer hops), and stops when a solution uses
// the whole link or reaches the graph's 32 channels (init.cc MAXCHANNELS / 2).
// ncclTopoDupChannels then doubles the channels and halves the speed where speed >= 25 GB/s
// (not on sm > 80 below 50 GB/s with more than 4 channels); pass 2 raises the speed while the
// doubled count still fits. The communicator runs twice the graph's channels (connect.cc
// ncclTopoPostset); the tuner multiplies the graph's count by its speed.
struct RingGraph {
  int channels = 0;   // the graph's, half the communicator's
  double bw_gbs = 0;  // per graph channel (bwIntra = bwInter)
};
RingGraph nvswitch_ring_graph(double nvlink_gbs, int sm_version);
// The NVLS graph NCCL's search finds across servers (search.cc, system->inter set): one channel
// per head, a GPU with a NIC of its own, so `heads` channels; the inter-node speed steps
// (sm90SpeedArrayInter, sm100SpeedArrayInter) for both sides. bwIntra: the largest step with
// (heads + 1) x bw <= nvlink_gbs (each head pulls from every GPU once and twice from itself);
// bwInter: pass 2 raises it while a step fits the head's NIC (nic_gbs) and stays below
// 2 x bwIntra.
struct NvlsTreeGraphBw {
  double intra = 0, inter = 0;
};
NvlsTreeGraphBw nvls_tree_graph_bw(double nvlink_gbs, int heads, double nic_gbs, int sm_version);
// NVLSTree's throughput ceiling per NVLS graph channel (one per head), as busbw in GB/s:
// NCCL's measured perChMaxNVLSTreeBws (tuning.cc; Hopper 57.7 on two servers, 45.5 on more;
// Blackwell 96.0 / 80.0). The kernel (all_reduce.h, NCCL_ALGO_NVLS_TREE) splits a channel's
// 20 warps among its roles: a non-root head keeps 6 for scatter and 5 for gather against
// NVLS's 8 and 7 on one server, so a channel copies less than NVLS's does. The tuner caps
// its estimate with it, and the engine caps NVLSTree's thread blocks with it.
double nvls_tree_channel_busbw_gbs(int sm_version, int nnodes);
// LL's ceiling for one GPU, as busbw in GB/s (the rate of data all of a GPU's LL thread blocks
// send together): NCCL's measured llMaxBws (src/graph/tuning.cc, tunerConstants, lines 177-183
// of v2.30.7; index 262-272). One server: by GPU (Ampere 87.7, Hopper 141.0, Blackwell 282.0);
// across servers NCCL indexes the row by CPU vendor, which the model does not know: it keeps
// the AMD row on Ampere (22.5 on two servers, 19.0 on more) and Hopper's (45.0, 35.0) on later
// GPUs. LL moves 8-byte lines of 4 B data and a 4 B flag that the receiving block polls, so
// what bounds it is the blocks' flag loop, not the links. The tuner caps Ring/LL with it, and
// the engine caps every LL thread block at this rate over the run's channels.
double ll_gpu_busbw_gbs(int sm_version, int nnodes);
// The CollNet graphs' per-channel bandwidth (search.cc, patterns COLLNET_DIRECT and TREE with
// collNet set; one channel per head, `heads` of them): bwInter is the largest inter-node speed
// step a head's NIC carries (nic_gbs) whose intra-server part fits the GPU's NVLink
// (nvlink_gbs); pass 2 raises bwIntra one step at a time while it stays below 2 x bwInter and
// fits. What one step s needs of a GPU's NVLink, each way:
//   Direct: s as its channel's head (s / (ppn - 1) from each peer) plus s / (ppn - 1) to each
//           of the other heads' channels: s (1 + (heads - 1) / (ppn - 1));
//   Chain:  s up and s down the chain on every channel: 2 x heads x s.
// (The search itself walks NCCL's topology graph path by path; this closed form is what it
// finds on servers whose GPUs reach each other through NVSwitches.)
double collnet_graph_bw(double nvlink_gbs, int ppn, int heads, double nic_gbs, int sm_version,
                        bool direct);
// CollNet's chunk (enqueue.cc, Simple; concurrent = channels x heads for Direct, channels for
// Chain; depth 2 for Direct, ranks per server for Chain): Direct starts at a step
// (NCCL_BUFFSIZE / 8), Chain at min(256 KiB, a step); halved while
// bytes / (concurrent x chunk) < depth x 64 down to 128 KiB, < depth x 8 down to 64 KiB, and
// (Direct: < depth x 8, Chain: < depth) down to 32 KiB.
std::uint64_t collnet_chunk_bytes(std::uint64_t bytes, std::uint64_t concurrent, std::uint64_t step,
                                  int depth, bool direct);
// NVLSTree's chunk (enqueue.cc): min(NCCL_NVLS_CHUNKSIZE, the tree's maximum chunk: 64 KiB on
// four or more servers, else the NVLS chunk; nvls.cc), then 256 KiB below 32 x concurrent x
// chunk bytes, 128 KiB below 16 x, 64 KiB below 4 x, 32 KiB below 1 x (concurrent = channels x
// heads).
std::uint64_t nvls_tree_chunk_bytes(std::uint64_t bytes, std::uint64_t concurrent,
                                    std::uint64_t nvls_chunk, int servers);
// Minimum over the allowed pairs (NCCL_ALGO / NCCL_PROTO restrict them).
TunerChoice tune(const TunerInput& in, const NcclConfig& cfg);

}  // namespace fabricsim
