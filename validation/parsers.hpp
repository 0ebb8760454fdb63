#pragma once
// Parsers for what users measure on their clusters (formats: docs/validation.md and
// ../shared/reference/protocols.md sections 4-6). Each takes the text and a source name and
// either returns plain data or throws ParseError naming the source and line. They depend on
// nothing else of fabricsim, so fuzz targets can drive them on their own.

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "validation/harness/bench_report.hpp"

namespace fabricsim::validation {

class ParseError : public std::runtime_error {
 public:
  ParseError(const std::string& source, std::size_t line, const std::string& what);
  std::size_t line() const { return line_; }

 private:
  std::size_t line_;
};

// ---- nccl-tests (all *_perf binaries, v2.13 to v2.19) ----
struct NcclTestsRow {
  std::uint64_t bytes = 0, count = 0;
  std::string type, redop;
  int root = -1;        // -1: not rooted (and in old versions, which print no root column)
  double time_us[2]{};  // out-of-place, in-place
  double algbw[2]{}, busbw[2]{};
  std::optional<std::uint64_t> wrong[2];  // empty: "N/A" (checking off)
  std::size_t line = 0;
};
struct NcclTestsOutput {
  std::string binary;  // "all_reduce_perf" (from "Collective test starting"), else empty
  int ranks = 0;       // "#  Rank N ..." lines (over all processes when they are gathered)
  std::vector<std::string> devices;  // per rank: the device name
  std::vector<NcclTestsRow> rows;
  std::optional<double> avg_busbw;  // "# Avg bus bandwidth" (absent when truncated)
  int iters = 0, warmup_iters = 0;
};
NcclTestsOutput parse_nccl_tests(std::string_view text, const std::string& source);
// True when the text looks like nccl-tests output (to pick files out of a folder).
bool looks_like_nccl_tests(std::string_view text);

// ---- perftest ib_{write,read,send}_{bw,lat} ----
struct PerftestRow {
  std::uint64_t bytes = 0, iterations = 0;
  // bandwidth tests, in Gb/s whatever the printed unit (MiB/s or --report_gbits)
  double bw_peak_gbps = 0, bw_avg_gbps = 0, msg_rate_mpps = 0;
  // latency tests, us
  double t_min = 0, t_max = 0, t_typical = 0, t_avg = 0, t_stdev = 0, p99 = 0, p999 = 0;
  std::size_t line = 0;
};
struct PerftestOutput {
  std::string test;  // "RDMA_Write BW Test", "RDMA_Read Lat Test", ...
  bool latency = false;
  std::string link_type;  // "IB", "Ethernet"
  std::uint64_t mtu = 0;
  std::vector<PerftestRow> rows;
};
PerftestOutput parse_perftest(std::string_view text, const std::string& source);
bool looks_like_perftest(std::string_view text);

// nvidia-smi topo -m: topo/server.hpp parse_topo_matrix (the server importer's parser).
bool looks_like_nvidia_smi_topo(std::string_view text);

// ---- ethtool -S ----
struct EthtoolStats {
  std::string interface;  // from the file name or "" when unknown
  std::map<std::string, std::uint64_t> counters;
  // PFC pause frames (rx/tx_prioN_pause, rx/tx_pause_ctrl_phy), ECN marks and CNPs
  // (np_ecn_marked_roce_packets, np_cnp_sent, rp_cnp_handled, ...).
  std::uint64_t pause_frames() const;
  std::uint64_t ecn_marked() const;
  std::uint64_t cnp() const;
};
EthtoolStats parse_ethtool_stats(std::string_view text, const std::string& source);
bool looks_like_ethtool_stats(std::string_view text);

// ---- NCCL_DEBUG=INFO logs ----
struct NcclDebugLog {
  std::string version;                      // "2.19.3"
  std::map<int, std::vector<int>> rings;    // channel -> ranks in ring order (rank 0's view)
  std::vector<std::string> trees;           // "Trees [c] ..." lines' tree part, as printed
  int coll_channels = 0, p2p_channels = 0;  // "N coll channels, M p2p channels"
  struct Choice {
    std::string op;
    std::uint64_t bytes = 0;
    int algo = -1,
        proto = -1;  // NCCL's enum numbers (algo 0 Tree, 1 Ring; proto 0 LL, 1 LL128, 2 Simple)
    double time_us = 0;
  };
  std::vector<Choice> choices;                    // NCCL_DEBUG_SUBSYS=TUNING lines
  std::map<std::string, std::string> transports;  // "0[0] -> 1[1]" -> "P2P/CUMEM/read" ...
};
NcclDebugLog parse_nccl_debug_log(std::string_view text, const std::string& source);
bool looks_like_nccl_debug_log(std::string_view text);

// ---- JSON of fabricsim's own harnesses (parsed with Boost.PropertyTree) ----
// fabricsim-bench --json (validation/harness/bench_report.hpp): the inverse of bench::to_json.
bench::Report parse_bench_json(std::string_view text, const std::string& source);
// fabricsim-verbs-bench --json: one row, as perftest's own output would give it.
PerftestOutput parse_verbs_bench_json(std::string_view text, const std::string& source);
// "fabricsim-bench" or "fabricsim-verbs-bench" when the text is a JSON object with that
// "tool" (a cheap look at the text, not a parse), else "".
std::string harness_json_tool(std::string_view text);

// ---- fabricsim's own results.json (`fabricsim run --out DIR`), for diagnosing the model ----
struct SimulationResults {
  std::string version, status;
  std::uint64_t sim_time_ps = 0;
  // The span the link loads are over: bottleneck_span_ps (a traffic run's makespan), or the
  // simulated time in results written before it existed.
  std::uint64_t span_ps = 0;
  struct Load {
    std::string layer, port;
    double utilization = 0, paused_us = 0;
  };
  std::vector<Load> bottlenecks;  // the busiest links per layer
  std::map<std::string, std::uint64_t> counters;
  std::map<std::string, double> metrics;
};
SimulationResults parse_results_json(std::string_view text, const std::string& source);
// A JSON object naming "fabricsim_version" (a cheap look, not a parse).
bool looks_like_results_json(std::string_view text);

}  // namespace fabricsim::validation
