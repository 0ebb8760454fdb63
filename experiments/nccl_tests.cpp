#include "experiments/nccl_tests.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <toml++/toml.h>

#include "topo/communicator.hpp"

namespace fabricsim {

std::uint64_t parse_nccl_size(const std::string& text) {
  // nccl-tests parsesize: a number with an optional K, M or G (powers of 1024).
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    throw std::invalid_argument(fmt::format("'{}' is not a size (e.g. 8, 64K, 1M, 8G)", text));
  }
  std::uint64_t unit = 1;
  const std::string rest = text.substr(used);
  if (rest == "K" || rest == "k")
    unit = 1ULL << 10;
  else if (rest == "M" || rest == "m")
    unit = 1ULL << 20;
  else if (rest == "G" || rest == "g")
    unit = 1ULL << 30;
  else if (!rest.empty())
    throw std::invalid_argument(fmt::format("'{}' is not a size (e.g. 8, 64K, 1M, 8G)", text));
  if (value < 0) throw std::invalid_argument(fmt::format("size '{}' is negative", text));
  return static_cast<std::uint64_t>(value * static_cast<double>(unit));
}

NcclTestsResult run_nccl_tests(const Scenario& scenario, const BuiltCluster& cluster,
                               const NcclTestsArgs& args, ProgressFn progress, std::string phase) {
  const auto type = parse_datatype(args.datatype);
  if (!type) throw std::invalid_argument(fmt::format("unknown data type '{}'", args.datatype));
  const auto& g = cluster.topology.graph();
  std::vector<Vertex> gpus;
  for (auto [v, end] = boost::vertices(g); v != end; ++v)
    if (g[*v].kind == NodeKind::kGpu) gpus.push_back(*v);
  std::sort(gpus.begin(), gpus.end(), [&](Vertex a, Vertex b) {
    return std::make_pair(g[a].server, g[a].index) < std::make_pair(g[b].server, g[b].index);
  });
  const int available = gpus.empty() ? static_cast<int>(cluster.topology.endpoints().size())
                                     : static_cast<int>(gpus.size());
  const int per_proc = args.ngpus * args.nthreads;
  const int procs = args.nprocs > 0 ? args.nprocs : available / per_proc;
  if (procs < 1 || procs * per_proc > available || (args.nprocs == 0 && available % per_proc != 0))
    throw std::invalid_argument(fmt::format(
        "{} processes x {} GPUs do not fit the scenario's {} GPUs", procs, per_proc, available));

  CommunicatorOptions options = communicator_options(scenario);
  options.ranks = procs * per_proc;
  const CommLayout layout = build_communicator(cluster.topology, cluster.routing, options);

  const bool rooted = args.op == CollOp::kBroadcast || args.op == CollOp::kReduce;
  if (rooted && (args.root < 0 || args.root >= options.ranks))
    throw std::invalid_argument(
        fmt::format("root {} is not a rank (0 to {})", args.root, options.ranks - 1));
  NcclTestsResult result;
  result.nranks = options.ranks;
  const std::string device = scenario.cluster.servers > 0
                                 ? "NVIDIA " + scenario.cluster.server.gpu_name
                                 : scenario.gpu.name;
  for (int r = 0; r < result.nranks; ++r) {
    const int server = gpus.empty() ? r : g[gpus[static_cast<std::size_t>(r)]].server;
    const int dev = gpus.empty() ? 0 : g[gpus[static_cast<std::size_t>(r)]].index;
    result.rank_lines.push_back(fmt::format(
        "#  Rank {:2d} Group {:2d} Pid {:6d} on {:>10} device {:2d} [{:04x}:{:02x}:{:02x}] {}", r,
        0, 1000 + r / per_proc, fmt::format("server{}", server), dev, 0, 0x07 + 0x10 * dev, 0,
        device));
  }

  const int n = result.nranks;
  double bw_sum = 0;
  int bw_count = 0;
  for (std::uint64_t size = args.min_bytes; size <= args.max_bytes;
       size = args.step_factor > 1 ? size * args.step_factor : size + args.step_bytes) {
    const TestCounts counts = test_counts(args.op, size, type->size, n);
    if (counts.size_column == 0) {
      if (args.step_factor <= 1 && args.step_bytes == 0) break;
      if (size == 0 && args.step_factor > 1) break;
      continue;
    }
    NcclTestsRow row;
    row.size = counts.size_column;
    row.count = counts.count_column;
    row.bytes = counts.bytes;
    // Each size on a fresh simulation of the cluster: queue pairs, DCQCN rates, queues and
    // pauses left by earlier sizes would otherwise carry over, which a real nccl-tests run
    // does not see at that scale (its warm-up iterations bring the state to the size's own).
    // Then, as nccl-tests does, `-w` warm-up iterations (simulated, not timed), and the timed
    // iterations out of place and in place.
    Simulation sim(scenario.seed);
    const std::unique_ptr<Fabric> fabric = make_fabric(sim, scenario, cluster);
    CollectiveEngine engine(sim, *fabric, scenario.gpu, scenario.nccl, scenario.execution);
    const std::uint32_t comm = engine.add_communicator(layout);
    const CollectiveRequest req{.op = args.op, .bytes = counts.bytes, .root = args.root};
    // Iterations launched, of warm-up and each placement's timed ones (a share of the work:
    // every iteration of a size moves the same bytes).
    int launched = 0;
    const int iterations = std::max(1, args.warmup + args.placements * args.sim_iters);
    ProgressWatch watch(
        sim, progress,
        [&launched, iterations] { return std::max(0, launched - 1) / double(iterations); }, phase);
    for (int it = 0; it < args.warmup && result.errors.empty(); ++it) {
      ++launched;
      const std::uint32_t id = engine.launch(comm, req, sim.now());
      sim.run();
      if (!engine.result(id).done)
        result.errors.push_back(
            fmt::format("{} of {} B did not complete in warm-up (simulated "
                        "time {})",
                        to_string(args.op), counts.bytes, to_string(sim.now())));
    }
    const Time row_start = sim.now();
    const auto baseline = link_bytes_now(*fabric);
    for (int placement = 0; placement < args.placements && result.errors.empty(); ++placement) {
      double total = 0;
      for (int it = 0; it < args.sim_iters; ++it) {
        ++launched;
        const std::uint32_t id = engine.launch(comm, req, sim.now());
        sim.run();
        const CollectiveResult& c = engine.result(id);
        if (!c.done) {
          for (const auto& e : fabric->errors())
            result.errors.push_back(fmt::format("{} at {}", e.text, to_string(e.time)));
          result.errors.push_back(fmt::format("{} of {} B did not complete (simulated time {})",
                                              to_string(args.op), counts.bytes,
                                              to_string(sim.now())));
          break;
        }
        std::vector<double> times;
        for (Time f : c.rank_finish) times.push_back((f - c.start).us());
        double t = c.mean_us();
        if (args.average == 0) t = times.front();
        if (args.average == 2) t = *std::min_element(times.begin(), times.end());
        if (args.average == 3) t = *std::max_element(times.begin(), times.end());
        total += t;
        row.algo = c.algo;
        row.proto = c.proto;
        row.channels = c.channels;
        row.tuner_us = c.tuner_us;
        row.tuner_fallback = c.tuner_fallback;
      }
      row.time_us[placement] = total / args.sim_iters;
      row.algbw[placement] = algbw_gbps(row.bytes, row.time_us[placement]);
      row.busbw[placement] = row.algbw[placement] * bus_factor(args.op, n);
      bw_sum += row.busbw[placement];
      ++bw_count;
    }
    fold_fingerprint(result.fingerprint, sim.fingerprint());
    if (!result.errors.empty()) break;
    if (scenario.fidelity != Fidelity::kFlow) {
      std::vector<std::pair<std::string, std::uint64_t>> counters;
      for (const auto& c : sim.probes().counters()) counters.emplace_back(c.name, c.value);
      row.congestion = congestion_by_tier(*fabric, sim.now(), counters);
    }
    const auto loads = bottleneck_summary(*fabric, sim.now() - row_start, {}, 1, &baseline);
    if (!loads.empty()) {
      row.bounded_by = loads.front().layer;
      row.bounded_by_imbalance = loads.front().utilization / loads.front().layer_mean;
    }
    result.rows.push_back(row);
    if (args.step_factor <= 1 && args.step_bytes == 0) break;
  }
  result.avg_busbw = bw_count > 0 ? bw_sum / bw_count : 0;
  return result;
}

NcclTestsResult run_nccl_tests_seeds(const Scenario& scenario, const BuiltCluster& cluster,
                                     const NcclTestsArgs& args, int count) {
  std::vector<NcclTestsResult> runs;
  NcclTestsResult out;
  for (int i = 0; i < count; ++i) {
    Scenario s = scenario;
    s.seed = scenario.seed + static_cast<std::uint64_t>(i);
    std::optional<BuiltCluster> other;
    if (i > 0) other.emplace(s);
    runs.push_back(run_nccl_tests(s, i > 0 ? *other : cluster, args));
    fold_fingerprint(out.fingerprint, runs.back().fingerprint);
    out.seeds.push_back(s.seed);
    for (const auto& e : runs.back().errors)
      out.errors.push_back(fmt::format("seed {}: {}", s.seed, e));
  }
  out.nranks = runs.front().nranks;
  out.rank_lines = runs.front().rank_lines;
  if (!out.errors.empty()) return out;
  const int n = out.nranks;
  double bw_sum = 0;
  int bw_count = 0;
  for (std::size_t k = 0; k < runs.front().rows.size(); ++k) {
    NcclTestsRow row = runs.front().rows[k];
    for (int p = 0; p < 2; ++p) {
      std::vector<double> times, busbw;
      for (const auto& r : runs) {
        times.push_back(r.rows[k].time_us[p]);
        busbw.push_back(r.rows[k].busbw[p]);
      }
      // nccl-tests averages time, and derives bandwidth from it: so does the mean here.
      row.time_us[p] = spread_of("", "", times).mean;
      row.algbw[p] = algbw_gbps(row.bytes, row.time_us[p]);
      row.busbw[p] = row.algbw[p] * bus_factor(args.op, n);
      const SeedSpread bw = spread_of("", "", busbw);
      row.busbw_min[p] = bw.min;
      row.busbw_max[p] = bw.max;
      bw_sum += row.busbw[p];
      ++bw_count;
      if (p == 0 && bw.spread() > kSeedSpreadWarning)
        out.warnings.push_back(fmt::format(
            "{} B: out-of-place busbw spreads {:.1f} % over the seeds ({:.2f} to {:.2f} GB/s): "
            "the answer depends on ECMP luck",
            row.size, 100 * bw.spread(), bw.min, bw.max));
    }
    out.rows.push_back(row);
  }
  out.avg_busbw = bw_count > 0 ? bw_sum / bw_count : 0;
  return out;
}

}  // namespace fabricsim
