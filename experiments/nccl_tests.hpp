#pragma once
// `fabricsim nccl-tests`: nccl-tests' *_perf binaries run against a simulated cluster, with
// their flags and their output format (nccl-tests src/common.cu and src/util.cu, version 2.19;
// ../shared/reference/protocols.md section 4).
//
// Each size runs on a fresh simulation of the cluster (nothing carries over from the sizes
// before it): `-w` warm-up iterations, simulated and not timed, then the timed iterations
// out-of-place and in-place (the model moves the same bytes both ways). -n is printed as
// given; `--sim-iters` says how many timed iterations are simulated and averaged (1 by
// default: the model is deterministic, so more only matters when congestion state carries from
// one iteration to the next). `--seeds N` runs the whole sweep with N seeds (ECMP hashing
// differs per seed) and prints the mean time per size, with min and max busbw in `# fabricsim:`
// lines and a warning where they spread more than kSeedSpreadWarning.

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/progress.hpp"
#include "experiments/run.hpp"
#include "models/nccl/collective.hpp"

namespace fabricsim {

struct NcclTestsArgs {
  CollOp op = CollOp::kAllReduce;
  std::string binary = "all_reduce_perf";
  std::uint64_t min_bytes = 32 << 20;  // nccl-tests' defaults: -b 32M -e 32M
  std::uint64_t max_bytes = 32 << 20;
  std::uint64_t step_factor = 1;       // -f (nccl-tests default 1: step in bytes instead)
  std::uint64_t step_bytes = 1 << 20;  // -i (default 1M)
  int nthreads = 1;                    // -t
  int ngpus = 1;                       // -g
  int nprocs = 0;  // --np: processes (0: every GPU of the scenario, ngpus x nthreads each)
  std::string redop = "sum";       // -o
  std::string datatype = "float";  // -d
  int root = 0;                    // -r
  int iters = 20;                  // -n
  int warmup = 1;                  // -w
  int agg_iters = 1;               // -m
  int check = 1;                   // -c (the model checks no data: #wrong prints N/A)
  int average = 1;                 // -a: 0 rank 0, 1 mean, 2 min, 3 max over ranks
  int blocking = 0;                // -z
  int graph = 0;                   // -G
  int sim_iters = 1;               // iterations simulated per size and placement
  // Placements simulated: 2, out of place then in place, as nccl-tests prints them; 1, out of
  // place only (the training study reads only that column; the in-place one stays 0).
  int placements = 2;
};

struct NcclTestsRow {
  std::uint64_t size = 0;      // printed size (B)
  std::uint64_t count = 0;     // printed count (elements)
  std::uint64_t bytes = 0;     // S for algbw
  double time_us[2] = {0, 0};  // out-of-place, in-place
  double algbw[2] = {0, 0};
  double busbw[2] = {0, 0};
  Algo algo = Algo::kRing;
  Proto proto = Proto::kSimple;
  int channels = 0;
  double tuner_us = 0;
  bool tuner_fallback = false;      // nothing enabled applies: NCCL would fail, the model ran Ring
  std::string bounded_by;           // the layer of the busiest link during the row
  double bounded_by_imbalance = 0;  // that link's utilization / its layer's mean (1: even)
  // Packet and hybrid levels: what PFC and ECN did over the size's iterations (warm-up
  // included), fabric/fabric.hpp congestion_by_tier; empty at flow level.
  std::vector<TierCongestion> congestion;
  // Over seeds (only with several): busbw's extremes per placement; the fields above hold the
  // mean time and the bandwidths from it.
  double busbw_min[2] = {0, 0};
  double busbw_max[2] = {0, 0};
};

struct NcclTestsResult {
  int nranks = 0;
  std::vector<std::string> rank_lines;  // "#  Rank ..." lines
  std::vector<NcclTestsRow> rows;
  double avg_busbw = 0;               // over all rows, out-of-place and in-place
  std::vector<std::string> errors;    // transport errors (a row then did not complete)
  std::uint64_t fingerprint = 0;      // of every size's simulation, in order (tests)
  std::vector<std::uint64_t> seeds;   // with several seeds: the seeds run (else empty)
  std::vector<std::string> warnings;  // sizes whose busbw spreads over kSeedSpreadWarning
};

// Parses "8", "64K", "1M", "8G" as nccl-tests does (powers of 1024).
std::uint64_t parse_nccl_size(const std::string& text);

// `progress` (empty: none) hears from each size's simulation, as phase `phase`, with the
// share of its iterations (warm-up and timed) done.
NcclTestsResult run_nccl_tests(const Scenario& scenario, const BuiltCluster& cluster,
                               const NcclTestsArgs& args, ProgressFn progress = {},
                               std::string phase = {});
// The same sweep with seeds seed, seed + 1, ... (`count` > 1): `cluster` is the scenario's
// own; the other seeds build theirs (routing hashes with the seed).
NcclTestsResult run_nccl_tests_seeds(const Scenario& scenario, const BuiltCluster& cluster,
                                     const NcclTestsArgs& args, int count);

}  // namespace fabricsim
