#include "models/nccl/nccl.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <span>
#include <stdexcept>

namespace fabricsim {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

constexpr std::array<CollOp, 7> kOps{CollOp::kAllReduce, CollOp::kAllGather, CollOp::kReduceScatter,
                                     CollOp::kBroadcast, CollOp::kReduce,    CollOp::kAllToAll,
                                     CollOp::kSendRecv};

constexpr std::array<DataType, 12> kTypes{{{"int8", 1},
                                           {"uint8", 1},
                                           {"int32", 4},
                                           {"uint32", 4},
                                           {"int64", 8},
                                           {"uint64", 8},
                                           {"half", 2},
                                           {"float", 4},
                                           {"double", 8},
                                           {"bfloat16", 2},
                                           {"f8e4m3", 1},
                                           {"f8e5m2", 1}}};

}  // namespace

std::string_view to_string(CollOp op) {
  switch (op) {
    case CollOp::kAllReduce:
      return "AllReduce";
    case CollOp::kAllGather:
      return "AllGather";
    case CollOp::kReduceScatter:
      return "ReduceScatter";
    case CollOp::kBroadcast:
      return "Broadcast";
    case CollOp::kReduce:
      return "Reduce";
    case CollOp::kAllToAll:
      return "AllToAll";
    case CollOp::kSendRecv:
      return "SendRecv";
  }
  return "?";
}

// NCCL's names (init.cc ncclAlgoStr, ncclProtoStr, ncclFuncStr).
constexpr std::array<std::string_view, kAlgoCount> kAlgoNames{
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
constexpr std::array<std::string_view, kProtoCount> kProtoNames{"LL", "LL128", "Simple"};
constexpr std::array<std::string_view, 5> kFunctionNames{"Broadcast", "Reduce", "AllGather",
                                                         "ReduceScatter", "AllReduce"};

std::string_view to_string(Algo a) {
  return kAlgoNames[static_cast<std::size_t>(a)];
}

std::string_view to_string(Proto p) {
  switch (p) {
    case Proto::kLL:
      return "LL";
    case Proto::kLL128:
      return "LL128";
    case Proto::kSimple:
      return "Simple";
  }
  return "?";
}

std::string_view to_string(ServerOrder o) {
  switch (o) {
    case ServerOrder::kHostfile:
      return "hostfile";
    case ServerOrder::kLeaf:
      return "leaf";
    case ServerOrder::kList:
      return "list";
  }
  return "?";
}

std::optional<Algo> parse_algo(std::string_view s) {
  const std::string l = lower(s);
  for (std::size_t a = 0; a < kAlgoNames.size(); ++a)
    if (l == lower(kAlgoNames[a])) return static_cast<Algo>(a);
  return std::nullopt;
}

std::uint8_t EnableTable::at(CollOp op, int element) const {
  switch (op) {
    case CollOp::kBroadcast:
      return rows[0][element];
    case CollOp::kReduce:
      return rows[1][element];
    case CollOp::kAllGather:
      return rows[2][element];
    case CollOp::kReduceScatter:
      return rows[3][element];
    case CollOp::kAllReduce:
      return rows[4][element];
    case CollOp::kAllToAll:
    case CollOp::kSendRecv:
      return 1;
  }
  return 1;
}

EnableTable default_algo_enable() {
  EnableTable t;
  for (auto& row : t.rows) row.fill(1);
  return t;
}

EnableTable default_proto_enable() {
  EnableTable t;
  for (auto& row : t.rows) {
    row.fill(0);
    row[static_cast<int>(Proto::kLL)] = 1;
    row[static_cast<int>(Proto::kLL128)] = 2;
    row[static_cast<int>(Proto::kSimple)] = 1;
  }
  return t;
}

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0;;) {
    const auto at = s.find(sep, start);
    out.push_back(s.substr(start, at == s.npos ? s.npos : at - start));
    if (at == s.npos) return out;
    start = at + 1;
  }
}

// tuning.cc parseList: entries separated by ';', each "[function:]list"; a list is names
// separated by ',' (empty tokens skipped, as strtok does), "^" first meaning "all but".
// An entry sets its functions' rows to exactly what it lists.
template <std::size_t N>
EnableTable parse_list(std::string_view text, EnableTable t,
                       const std::array<std::string_view, N>& elements) {
  bool first = true;
  for (std::string_view entry : split(text, ';')) {
    if (entry.empty()) continue;
    std::string_view prefix, list = entry;
    if (const auto colon = entry.find(':'); colon != entry.npos) {
      prefix = entry.substr(0, colon);
      list = entry.substr(colon + 1);
    } else if (!first) {
      throw std::invalid_argument(
          fmt::format("all entries except the first must have a prefix: \"{}\"", text));
    }
    first = false;
    const bool except = list.starts_with('^');
    if (except) list.remove_prefix(1);
    bool found = false;
    for (std::size_t f = 0; f < kFunctionNames.size(); ++f) {
      if (!prefix.empty() && lower(prefix) != lower(kFunctionNames[f])) continue;
      found = true;
      auto& row = t.rows[f];
      row.fill(0);
      for (std::size_t e = 0; e < N; ++e) row[e] = except ? 1 : 0;
      for (std::string_view name : split(list, ',')) {
        if (name.empty()) continue;
        std::size_t e = 0;
        while (e < N && lower(name) != lower(elements[e])) ++e;
        if (e == N)
          throw std::invalid_argument(fmt::format(
              "unrecognized element token \"{}\" when parsing \"{}\" (NCCL's names: {})", name,
              text, fmt::join(elements, ", ")));
        row[e] = except ? 0 : 1;
      }
    }
    if (!found)
      throw std::invalid_argument(
          fmt::format("unrecognized prefix token \"{}\" when parsing \"{}\" (NCCL's functions: {})",
                      prefix, text, fmt::join(kFunctionNames, ", ")));
  }
  return t;
}

}  // namespace

EnableTable parse_algo_list(std::string_view text) {
  return parse_list(text, default_algo_enable(), kAlgoNames);
}

EnableTable parse_proto_list(std::string_view text) {
  return parse_list(text, default_proto_enable(), kProtoNames);
}

std::optional<Proto> parse_proto(std::string_view s) {
  const std::string l = lower(s);
  if (l == "ll") return Proto::kLL;
  if (l == "ll128") return Proto::kLL128;
  if (l == "simple") return Proto::kSimple;
  return std::nullopt;
}

std::string perf_binary(CollOp op) {
  switch (op) {
    case CollOp::kAllReduce:
      return "all_reduce_perf";
    case CollOp::kAllGather:
      return "all_gather_perf";
    case CollOp::kReduceScatter:
      return "reduce_scatter_perf";
    case CollOp::kBroadcast:
      return "broadcast_perf";
    case CollOp::kReduce:
      return "reduce_perf";
    case CollOp::kAllToAll:
      return "alltoall_perf";
    case CollOp::kSendRecv:
      return "sendrecv_perf";
  }
  return "?";
}

std::optional<CollOp> parse_perf_binary(std::string_view name) {
  for (CollOp op : kOps)
    if (perf_binary(op) == name) return op;
  return std::nullopt;
}

std::vector<std::string> perf_binaries() {
  std::vector<std::string> out;
  for (CollOp op : kOps) out.push_back(perf_binary(op));
  return out;
}

std::optional<DataType> parse_datatype(std::string_view s) {
  // nccl-tests also accepts NCCL's C names' short forms.
  const std::string l = lower(s);
  for (const DataType& t : kTypes)
    if (t.name == l) return t;
  if (l == "char") return kTypes[0];
  if (l == "int") return kTypes[2];
  if (l == "float32") return kTypes[7];
  if (l == "float16") return kTypes[6];
  if (l == "float64") return kTypes[8];
  return std::nullopt;
}

bool valid_redop(std::string_view s) {
  const std::string l = lower(s);
  return l == "sum" || l == "prod" || l == "min" || l == "max" || l == "avg";
}

TestCounts test_counts(CollOp op, std::uint64_t requested, int type_size, int nranks) {
  const auto ts = static_cast<std::uint64_t>(type_size);
  const auto n = static_cast<std::uint64_t>(nranks);
  const std::uint64_t count = requested / ts;
  std::uint64_t send = count, recv = count, param = count;
  switch (op) {
    case CollOp::kAllGather:  // each rank contributes count/n
      send = count / n;
      recv = send * n;
      param = send;
      break;
    case CollOp::kReduceScatter:  // each rank keeps count/n
      recv = count / n;
      send = recv * n;
      param = recv;
      break;
    case CollOp::kAllToAll:  // count/n to every rank
      param = count / n;
      send = recv = param * n;
      break;
    default:
      break;
  }
  TestCounts t;
  t.size_column = std::max(send, recv) * ts;
  t.count_column = param;
  // *GetBw: AllGather, ReduceScatter and AllToAll divide count x n x size; the rest count x size.
  const bool per_rank =
      op == CollOp::kAllGather || op == CollOp::kReduceScatter || op == CollOp::kAllToAll;
  t.bytes = (per_rank ? param * n : param) * ts;
  return t;
}

double bus_factor(CollOp op, int nranks) {
  const double n = nranks;
  switch (op) {
    case CollOp::kAllReduce:
      return 2 * (n - 1) / n;
    case CollOp::kAllGather:
    case CollOp::kReduceScatter:
    case CollOp::kAllToAll:
      return (n - 1) / n;
    default:
      return 1;
  }
}

double algbw_gbps(std::uint64_t bytes, double time_us) {
  return time_us > 0 ? static_cast<double>(bytes) / 1e3 / time_us : 0;
}

GpuSpec gpu_preset(std::string_view name) {
  const std::string l = lower(name);
  // HBM: A100-SXM4-80GB 2,039 GB/s; H100-SXM5 3.35 TB/s; H200 4.8 TB/s (NVIDIA datasheets).
  // SMs: 108 (A100), 132 (H100/H200). Copy rate of one channel's thread block: NCCL's own
  // per-channel ceiling in its tuner (src/graph/tuning.cc, perChMaxRingLL128Bws: Ampere 20.0,
  // Hopper 36.7 GB/s), the most one block was measured to move. Per-channel NVLink bandwidth
  // of the graph search, for the channel count (src/graph/topo.h: SM80_NVLINK_BW 20.0,
  // SM90_NVLINK_BW 20.6 GB/s). Until 2026-12 the Hopper copy rate was the graph-search figure
  // (20.6), which capped a GPU with one 400G NIC and two channels at 330 Gb/s.
  // NVLS efficiency: tuning.cc nvlsEfficiency (Volta/Ampere 0: no NVLS, Hopper 0.85).
  const auto gbs = [](std::int64_t mb_per_s) { return Bandwidth::from_bps(mb_per_s * 8'000'000); };
  if (l == "a100")
    return {"NVIDIA A100-SXM4-80GB", 80, 108, gbs(2'039'000), gbs(20'000), gbs(20'000), 0.0};
  if (l == "h100")
    return {"NVIDIA H100 80GB HBM3", 90, 132, gbs(3'350'000), gbs(36'700), gbs(20'600), 0.85};
  if (l == "h200") return {"NVIDIA H200", 90, 132, gbs(4'800'000), gbs(36'700), gbs(20'600), 0.85};
  // B200: 8 TB/s HBM3e, 148 SMs (NVIDIA datasheet); Blackwell's per-channel ceiling 40.0 GB/s
  // (perChMaxRingLL128Bws), SM100_NVLINK_BW 40.1 GB/s, nvlsEfficiency 0.74.
  if (l == "b200") return {"NVIDIA B200", 100, 148, gbs(8'000'000), gbs(40'000), gbs(40'100), 0.74};
  throw std::invalid_argument(
      fmt::format("unknown GPU '{}' (known: {})", name, fmt::join(gpu_preset_names(), ", ")));
}

std::vector<std::string> gpu_preset_names() {
  return {"a100", "h100", "h200", "b200"};
}

GpuSpec gpu_for_sm(int sm_version) {
  return gpu_preset(sm_version >= 100 ? "b200" : sm_version >= 90 ? "h100" : "a100");
}

double compute_slowdown(const GpuSpec& gpu, int channels, Bandwidth traffic, bool memory_bound) {
  if (memory_bound) {
    const double left = static_cast<double>(gpu.hbm.bps() - traffic.bps());
    return left > 0 ? static_cast<double>(gpu.hbm.bps()) / left : HUGE_VAL;
  }
  const int left = gpu.sms - channels;
  return left > 0 ? static_cast<double>(gpu.sms) / left : HUGE_VAL;
}

StepSizing step_sizing(CollOp op, Algo algo, Proto proto, const NcclConfig& cfg) {
  constexpr int kSteps = 8;  // NCCL_STEPS
  const bool bulk =
      op == CollOp::kAllReduce || op == CollOp::kAllGather || op == CollOp::kReduceScatter;
  const int chunk_steps = bulk ? kSteps / 2 : 1;
  const int slice_steps = bulk ? kSteps / 4 : 1;
  StepSizing s;
  const Bytes buff = proto == Proto::kSimple ? cfg.buffsize
                     : proto == Proto::kLL   ? cfg.ll_buffsize
                                             : cfg.ll128_buffsize;
  s.step = Bytes(std::max<Bytes::rep>(1, buff.count() / kSteps));
  if (algo == Algo::kNvls || algo == Algo::kNvlsTree) {
    // NVLS and NVLSTree (Simple only): a head's buffer is NCCL_STEPS steps of one NVLS chunk
    // (nvls.cc: buffSize = nvlsChunkSize x NCCL_STEPS); a primitive moves one chunk.
    s.step = s.chunk = s.slice = Bytes(std::max<Bytes::rep>(1, cfg.nvls_chunksize.count()));
    s.credits = kSteps;
    return s;
  }
  if (proto == Proto::kSimple && algo == Algo::kRing) {
    s.chunk = s.step * chunk_steps;
    s.slice = Bytes(s.chunk.count() / chunk_steps * slice_steps);
    s.credits = kSteps / slice_steps;
  } else {
    s.chunk = s.step;
    if (proto == Proto::kLL) s.chunk = Bytes(s.step.count() / 2);
    if (proto == Proto::kLL128) s.chunk = Bytes(s.step.count() * 15 / 16);
    s.slice = s.chunk;
    s.credits = kSteps;
  }
  s.wire_factor = proto == Proto::kLL ? 2.0 : proto == Proto::kLL128 ? 128.0 / 120.0 : 1.0;
  return s;
}

std::uint64_t nvls_chunk_bytes(std::uint64_t bytes, std::uint64_t concurrent,
                               std::uint64_t max_chunk) {
  std::uint64_t chunk = max_chunk;
  if (bytes < 64 * concurrent * chunk && chunk > 65536) chunk = 65536;
  if (bytes < 8 * concurrent * chunk && chunk > 32768) chunk = 32768;
  if (bytes < 2 * concurrent * chunk && chunk > 16384) chunk = 16384;
  return chunk;
}

Chunker::Chunker(const StepSizing& sizing)
    : chunk_(static_cast<std::uint64_t>(std::max<Bytes::rep>(1, sizing.chunk.count()))),
      slice_(static_cast<std::uint64_t>(std::max<Bytes::rep>(1, sizing.slice.count()))) {}

std::vector<std::uint64_t> Chunker::chunks(std::uint64_t bytes, std::uint32_t ranks) const {
  std::vector<std::uint64_t> out;
  std::uint64_t offset = 0;
  do {
    out.push_back(first_chunk(bytes - offset, ranks));
    offset += out.back() * ranks;
  } while (offset < bytes);
  return out;
}

std::uint64_t Chunker::first_chunk(std::uint64_t bytes, std::uint32_t ranks) const {
  return std::max<std::uint64_t>(1, std::min(chunk_, (bytes + ranks - 1) / ranks));
}

std::vector<std::uint64_t> Chunker::slices(std::uint64_t chunk_bytes) const {
  std::vector<std::uint64_t> out;
  for (std::uint64_t done = 0; done < chunk_bytes; done += slice_)
    out.push_back(std::min(slice_, chunk_bytes - done));
  if (out.empty()) out.push_back(0);
  return out;
}

std::uint64_t Chunker::first_slice(std::uint64_t chunk_bytes) const {
  return std::min(slice_, chunk_bytes);
}

std::uint64_t Chunker::chunk_count(std::uint64_t bytes, std::uint32_t ranks) const {
  // Every loop but the last moves ranks x chunk; the last moves the rest.
  return (bytes + ranks * chunk_ - 1) / (ranks * chunk_);
}

std::uint64_t Chunker::slice_count(std::uint64_t chunk_bytes) const {
  return (chunk_bytes + slice_ - 1) / slice_;
}

int channels_for_size(int channels, Proto proto, std::uint64_t bytes) {
  const std::uint64_t per_channel = proto == Proto::kSimple ? 64 * 512
                                    : proto == Proto::kLL   ? 8 * 512
                                                            : 8 * 640;
  int nc = std::max(1, channels);
  while (nc > 1 && bytes < static_cast<std::uint64_t>(nc) * per_channel) --nc;
  return nc;
}

namespace {

// search.cc speedArrayIntra, sm90SpeedArrayIntra, sm100SpeedArrayIntra (one server).
std::span<const double> intra_speeds(int sm_version) {
  static constexpr double kSm100[] = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0,
                                      40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
  static constexpr double kSm90[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0,
                                     15.0, 12.0, 11.0, 6.0,  3.0};
  static constexpr double kOlder[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0,
                                      9.0,  7.0,  6.0,  5.0,  4.0,  3.0};
  return sm_version >= 100  ? std::span<const double>(kSm100)
         : sm_version >= 90 ? std::span<const double>(kSm90)
                            : std::span<const double>(kOlder);
}

}  // namespace

double nvls_graph_bw_gbs(double nvlink_gbs, int nranks, int sm_version) {
  const double fit = nvlink_gbs / (nranks + 1);
  for (const double bw : intra_speeds(sm_version))
    if (bw <= fit) return bw;
  return 0;
}

RingGraph nvswitch_ring_graph(double nvlink_gbs, int sm_version) {
  constexpr int kMaxChannels = 32;  // init.cc: ringGraph.maxChannels = MAXCHANNELS / 2
  const std::span<const double> speeds = intra_speeds(sm_version);
  // Rings of speed s that fit (the search subtracts in thousandths: SUB_ROUND).
  const auto fit = [&](double s) {
    return std::min(kMaxChannels, static_cast<int>(std::floor(nvlink_gbs / s + 1e-9)));
  };
  std::size_t i = 0;
  while (i + 1 < speeds.size() && speeds[i] > nvlink_gbs) ++i;
  RingGraph g;
  for (;; ++i) {  // pass 1
    const int n = fit(speeds[i]);
    if (n >= 1 && n * speeds[i] > g.channels * g.bw_gbs) g = {n, speeds[i]};
    if (g.channels == kMaxChannels || g.channels * g.bw_gbs >= nvlink_gbs) break;
    if (i + 1 >= speeds.size() || (g.channels > 0 && speeds[i + 1] / g.bw_gbs <= 0.49)) break;
  }
  if (g.channels == 0) return g;
  // ncclTopoDupChannels.
  if (g.bw_gbs >= 25.0 && !(sm_version > 80 && g.bw_gbs < 50.0 && g.channels > 4)) {
    const int dup = std::min(2 * g.channels, kMaxChannels);
    g.bw_gbs /= (dup + g.channels - 1) / g.channels;
    g.channels = dup;
  }
  // Pass 2: the speed steps above, one at a time, each needing the channels found so far.
  const int min_channels = g.channels;
  for (std::size_t k = speeds.size(); k-- > 0;) {
    const double s = speeds[k];
    if (s <= g.bw_gbs) continue;
    if (const int n = fit(s); n >= min_channels && n * s > g.channels * g.bw_gbs) g = {n, s};
  }
  return g;
}

namespace {

// search.cc sm100SpeedArrayInter, sm90SpeedArrayInter, speedArrayInter (across servers).
std::span<const double> inter_speeds(int sm_version) {
  static constexpr double kSm100[] = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                      20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
  static constexpr double kSm90[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                     15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
  static constexpr double kOlder[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                      7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
  return sm_version >= 100  ? std::span<const double>(kSm100)
         : sm_version >= 90 ? std::span<const double>(kSm90)
                            : std::span<const double>(kOlder);
}

}  // namespace

NvlsTreeGraphBw nvls_tree_graph_bw(double nvlink_gbs, int heads, double nic_gbs, int sm_version) {
  const std::span<const double> steps = inter_speeds(sm_version);
  NvlsTreeGraphBw bw;
  if (heads < 1) return bw;
  // The search starts at the largest step a head's NIC carries and steps down until every
  // head's channel fits the NVLink (the NVLS graph wants as many heads as there are NICs).
  const double fit = std::min(nvlink_gbs / (heads + 1), nic_gbs);
  for (const double s : steps)
    if (s <= fit) {
      bw.intra = s;
      break;
    }
  for (const double s : steps)
    if (s <= nic_gbs && s < 2 * bw.intra) {
      bw.inter = std::max(s, bw.intra);
      break;
    }
  return bw;
}

double ll_gpu_busbw_gbs(int sm_version, int nnodes) {
  if (nnodes <= 1) return sm_version >= 100 ? 282.0 : sm_version >= 90 ? 141.0 : 87.7;
  const bool hopper = sm_version >= 90;
  return nnodes == 2 ? (hopper ? 45.0 : 22.5) : (hopper ? 35.0 : 19.0);
}

double nvls_tree_channel_busbw_gbs(int sm_version, int nnodes) {
  const bool blackwell = sm_version >= 100;
  return nnodes <= 2 ? (blackwell ? 96.0 : 57.7) : (blackwell ? 80.0 : 45.5);
}

std::uint64_t nvls_tree_chunk_bytes(std::uint64_t bytes, std::uint64_t concurrent,
                                    std::uint64_t nvls_chunk, int servers) {
  const std::uint64_t tree_max = servers >= 4 ? 65536 : nvls_chunk;  // nvls.cc
  std::uint64_t chunk = std::min(nvls_chunk, tree_max);
  if (bytes < 32 * concurrent * chunk && chunk > 262144) chunk = 262144;
  if (bytes < 16 * concurrent * chunk && chunk > 131072) chunk = 131072;
  if (bytes < 4 * concurrent * chunk && chunk > 65536) chunk = 65536;
  if (bytes < 1 * concurrent * chunk && chunk > 32768) chunk = 32768;
  return chunk;
}

double collnet_graph_bw(double nvlink_gbs, int ppn, int heads, double nic_gbs, int sm_version,
                        bool direct) {
  if (heads < 1 || ppn < 1) return 0;
  const double need =  // NVLink GB/s each way per GB/s of the step
      ppn == 1 ? 0.0
      : direct ? 1.0 + static_cast<double>(heads - 1) / (ppn - 1)
               : 2.0 * heads;
  const auto fits = [&](double s) { return need * s <= nvlink_gbs + 1e-9; };
  const std::span<const double> steps = inter_speeds(sm_version);
  std::size_t i = 0;
  while (i < steps.size() && (steps[i] > nic_gbs + 1e-9 || !fits(steps[i]))) ++i;
  if (i == steps.size()) return 0;
  const double inter = steps[i];
  while (i > 0 && steps[i] < 2 * inter && fits(steps[i - 1])) --i;  // pass 2 (bwIntra)
  return steps[i];
}

std::uint64_t collnet_chunk_bytes(std::uint64_t bytes, std::uint64_t concurrent, std::uint64_t step,
                                  int depth, bool direct) {
  std::uint64_t chunk = direct ? step : std::min<std::uint64_t>(262144, step);
  const auto d = static_cast<std::uint64_t>(std::max(1, depth));
  const auto loops = [&] { return bytes / (std::max<std::uint64_t>(1, concurrent) * chunk); };
  while (loops() < d * 64 && chunk > 131072) chunk /= 2;
  while (loops() < d * 8 && chunk > 65536) chunk /= 2;
  while (loops() < (direct ? d * 8 : d) && chunk > 32768) chunk /= 2;
  return std::max<std::uint64_t>(1, chunk);
}

double tuner_time_us(const TunerInput& in, Algo algo, Proto proto) {
  if (algo == Algo::kNvlsTree) {
    // tuning.cc, two or more servers: Simple only, on the NVLS graph's channels (one per head):
    //   intraBw = bwIntra x nvlsEfficiency x (heads - 1) / heads x 2 (AllReduce),
    //   interBw = bwInter x (2 on two servers: each head's NIC carries one chunk each way per
    //             loop, half what a tree of more servers gives an inner node),
    //   bw = min(intraBw, interBw, perChMaxNVLSTreeBws: Hopper 57.7 / 45.5, Blackwell
    //        96.0 / 80.0 for two / more servers), busBw = heads x bw,
    //   algBw = busBw x nranks / (2 (nranks - 1));
    // latency: NVLink's hwLat for NVLSTree Simple (25 us) plus 2 log2(servers) network hops of
    // 20.9 us (hwLat NET NVLSTree Simple); baseLat is 0. (The B200-on-x86 correction of small
    // sizes, tuning.cc ncclTopoGetAlgoTime, is left out.)
    if (in.op != CollOp::kAllReduce || proto != Proto::kSimple || in.nnodes < 2 ||
        in.nvls_tree_heads < 2 || in.nvls_tree_bw_intra_gbs <= 0)
      return HUGE_VAL;
    const double heads = in.nvls_tree_heads;
    const double per_ch_max = nvls_tree_channel_busbw_gbs(in.sm_version, in.nnodes);
    const double intra = in.nvls_tree_bw_intra_gbs * in.nvls_efficiency * (heads - 1) / heads * 2;
    const double inter = in.nvls_tree_bw_inter_gbs * (in.nnodes <= 2 ? 2 : 1);
    const double bus = heads * std::min({intra, inter, per_ch_max});
    const double alg = bus * in.nranks / (2.0 * (in.nranks - 1));
    if (alg <= 0) return HUGE_VAL;
    const double lat = 25.0 + 2 * std::floor(std::log2(in.nnodes)) * 20.9;
    return lat + static_cast<double>(in.bytes) / (1000.0 * alg);
  }
  if (algo == Algo::kCollNetDirect || algo == Algo::kCollNetChain) {
    // tuning.cc, AllReduce with Simple only, on the CollNet graph's channels (one per head):
    //   busBw = heads x bwIntra (CollNet always takes bwIntra);
    //   Direct: busBw /= f with f = ppn / heads, f -= (f - 1) / 2 (the GPU/NIC ratio: Direct
    //           wants a NIC per GPU), and x 0.85 on compute capability 9.0 and later;
    //   algBw = busBw / 2 (every algorithm but Ring and NVLS);
    // latency (baseLat 0; hwLat NVLink Direct 3.7 / Chain 2.8 us; network Direct 31 / Chain
    // 30 us, the Tree's 14 us with one GPU per server; graph latencyInter 0 on InfiniBand):
    //   Direct: 2 (min(1, ppn - 1) x intra + (ppn - 1) x 0.4 us of arity serialization) + inter,
    //   Chain:  2 (ppn - 1) x intra + inter.
    const bool direct = algo == Algo::kCollNetDirect;
    const double bw = direct ? in.collnet_direct_bw_gbs : in.collnet_chain_bw_gbs;
    if (in.op != CollOp::kAllReduce || proto != Proto::kSimple || in.nnodes < 2 ||
        in.collnet_heads < 1 || bw <= 0)
      return HUGE_VAL;
    const int ppn = std::max(1, in.nranks / in.nnodes);
    double bus = in.collnet_heads * bw;
    if (direct) {
      double f = static_cast<double>(ppn) / in.collnet_heads;
      f -= (f - 1) / 2;
      bus /= f;
      if (in.sm_version >= 90) bus *= 0.85;
    }
    const double alg = bus * 0.5;
    const double intra = direct ? 3.7 : 2.8;
    const double inter = ppn == 1 ? 14.0 : direct ? 31.0 : 30.0;
    const double lat = direct ? 2 * (std::min(1, ppn - 1) * intra + (ppn - 1) * 0.4) + inter
                              : 2 * (ppn - 1) * intra + inter;
    return lat + static_cast<double>(in.bytes) / (1000.0 * alg);
  }
  if (algo == Algo::kNvls && in.nnodes > 1) {
    // tuning.cc, across servers NVLS needs CollNet (NCCL_COLLNET_ENABLE and a network that
    // aggregates: NVLS inside each server, SHARP between them): Simple only, on the NVLS
    // graph's channels (one per head, nvls_tree_graph_bw):
    //   bw = min(bwIntra x nvlsEfficiency x (heads - 1) / heads x 2, bwInter),
    //   busBw = heads x bw, algBw = busBw x nranks / (2 (nranks - 1));
    // latency: NVLink's hwLat for NVLS Simple (25 us) plus the network's (18 us).
    if (in.op != CollOp::kAllReduce || proto != Proto::kSimple || in.collnet_heads < 1 ||
        in.nvls_tree_heads < 2 || in.nvls_tree_bw_intra_gbs <= 0)
      return HUGE_VAL;
    const double heads = in.nvls_tree_heads;
    const double intra = in.nvls_tree_bw_intra_gbs * in.nvls_efficiency * (heads - 1) / heads * 2;
    const double bus = heads * std::min(intra, in.nvls_tree_bw_inter_gbs);
    const double alg = bus * in.nranks / (2.0 * (in.nranks - 1));
    if (alg <= 0) return HUGE_VAL;
    return 25.0 + 18.0 + static_cast<double>(in.bytes) / (1000.0 * alg);
  }
  if (algo == Algo::kNvls) {
    // tuning.cc, one server: NVLS runs Simple only, on the NVLS graph's channels (one per head):
    // busBw = heads x bw x nvlsEfficiency x (heads - 1) / heads x 2 (AllReduce pipelines its
    // reduce-scatter and all-gather), algBw = busBw x nranks / (2 (nranks - 1)); the latency
    // is NVLink's hwLat for NVLS Simple, 25 us, in place of the base latency.
    if (in.op != CollOp::kAllReduce || proto != Proto::kSimple || in.nnodes > 1 ||
        in.nvls_bw_intra_gbs <= 0 || in.nranks < 2)
      return HUGE_VAL;
    const int heads = in.nranks;
    const double bus = heads * in.nvls_bw_intra_gbs * in.nvls_efficiency * (heads - 1) / heads * 2;
    const double alg = bus * in.nranks / (2.0 * (in.nranks - 1));
    if (alg <= 0) return HUGE_VAL;
    return 25.0 + static_cast<double>(in.bytes) / (1000.0 * alg);
  }
  if (algo != Algo::kRing && algo != Algo::kTree) return HUGE_VAL;
  const int a = algo == Algo::kRing ? 1 : 0;
  const int p = static_cast<int>(proto);
  // tuning.cc tables (protocols.md section 4).
  constexpr double kBaseLat[2][3] = {{6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}};
  constexpr double kHwLatNvl[2][3] = {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}};
  constexpr double kHwLatNet[2][3] = {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}};
  const bool hopper = in.sm_version >= 90;
  const int nodes_idx = in.nnodes <= 1 ? 0 : in.nnodes == 2 ? 1 : 2;
  const double ring_ll128_per_ch = hopper ? 36.7 : 20.0;
  const double tree_per_ch[3] = {hopper ? 38.7 : 24.0, hopper ? 41.4 : 23.6, hopper ? 36.0 : 17.8};
  if (algo == Algo::kTree && in.op != CollOp::kAllReduce) return HUGE_VAL;
  if (algo == Algo::kTree && in.nnodes <= 1) return HUGE_VAL;  // NCCL's tree spans nodes
  const int n = in.nranks;
  const double graph_bw = in.nnodes <= 2 ? in.bw_intra_gbs : in.bw_inter_gbs;
  double bus = in.channels * graph_bw;
  const double llmax = ll_gpu_busbw_gbs(in.sm_version, in.nnodes);
  if (algo == Algo::kRing && proto == Proto::kLL) bus = std::min(llmax, bus * 0.5);
  if (algo == Algo::kRing && proto == Proto::kLL128)
    bus = std::min(bus * 0.92, in.channels * ring_ll128_per_ch);
  if (algo == Algo::kTree) bus = std::min(bus * 0.92, in.channels * tree_per_ch[nodes_idx]);
  if (algo == Algo::kTree && proto == Proto::kLL) bus = std::min(bus / 3.8, llmax);
  if (algo == Algo::kTree && proto == Proto::kLL128)
    bus *= in.nnodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
  int nsteps = n;
  int inter_steps = in.nnodes - 1;
  if (in.op == CollOp::kAllReduce) {
    nsteps = 2 * (n - 1);
    inter_steps = 2 * (in.nnodes - 1);
  } else if (in.op == CollOp::kAllGather || in.op == CollOp::kReduceScatter) {
    nsteps = n - 1;
  }
  const double alg = algo == Algo::kRing ? bus * n / std::max(1, nsteps) : bus * 0.5;
  const double intra = std::max(kHwLatNvl[a][p], in.nnodes > 1 ? (p == 2 ? 3.0 : 1.0) : 0.0);
  const double inter = kHwLatNet[a][p];
  double lat;
  if (algo == Algo::kRing) {
    lat = kBaseLat[a][p] + (nsteps - inter_steps) * intra + inter_steps * inter;
    if (proto == Proto::kSimple && in.nnodes > 1 &&
        in.bytes / static_cast<std::uint64_t>(in.channels * n) >= 64)
      lat *= 1.4;
  } else {
    const int ppn = std::max(1, n / std::max(1, in.nnodes));
    lat = kBaseLat[a][p] + 2 * ((ppn - 1) * intra + std::log2(std::max(1, in.nnodes)) * inter);
  }
  if (alg <= 0) return HUGE_VAL;
  return lat + static_cast<double>(in.bytes) / (1000.0 * alg);
}

namespace {

// `ll128_rule`: NCCL's hardware rule allows LL128 here (TunerInput::ll128_enabled) and
// nccl.ll128 does not turn it off (NcclConfig::ll128_enabled).
bool protocol_enabled(const NcclConfig& cfg, CollOp op, Proto p, bool ll128_rule) {
  const std::uint8_t on = cfg.protos.at(op, static_cast<int>(p));
  // 2: NCCL's rule, which for LL128 is the hardware rule (tuning.cc: protoEnable 2).
  return on == 1 || (on == 2 && (p != Proto::kLL128 || ll128_rule));
}

}  // namespace

TunerChoice tune(const TunerInput& in, const NcclConfig& cfg) {
  const bool rule = in.ll128_enabled && cfg.ll128_enabled;
  TunerChoice best;
  best.predicted_us = HUGE_VAL;
  // NCCL's order (algorithm ids), the first of equal times winning.
  for (Algo a : {Algo::kTree, Algo::kRing, Algo::kCollNetDirect, Algo::kCollNetChain, Algo::kNvls,
                 Algo::kNvlsTree}) {
    if (cfg.algos.at(in.op, static_cast<int>(a)) == 0) continue;
    for (Proto p : {Proto::kLL, Proto::kLL128, Proto::kSimple}) {
      if (!protocol_enabled(cfg, in.op, p, rule)) continue;
      const double t = tuner_time_us(in, a, p);
      if (t < best.predicted_us) best = {a, p, t};
    }
  }
  if (best.predicted_us == HUGE_VAL) {
    // Nothing enabled that the model runs here (Tree on one node, an algorithm the model does
    // not have): the model falls back to Ring with Simple, or the first enabled protocol
    // (NCCL itself would fail the call with "no algorithm/protocol available").
    Proto p = Proto::kSimple;
    if (!protocol_enabled(cfg, in.op, p, rule))
      for (Proto q : {Proto::kLL, Proto::kLL128})
        if (protocol_enabled(cfg, in.op, q, rule)) {
          p = q;
          break;
        }
    best = {Algo::kRing, p, 0, true};
    best.predicted_us = tuner_time_us(in, best.algo, best.proto);
  }
  return best;
}

}  // namespace fabricsim
