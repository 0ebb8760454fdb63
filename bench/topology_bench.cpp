// Building and routing large clusters: the 16,384-GPU fat-tree of bench/fat-tree-16k.toml
// (2,048 x DGX H100, k = 64), and the largest star the loader accepts (fabric.hosts =
// 1,048,576): routing set-up must stay near-linear in endpoints so `check` finishes in seconds.

#include <benchmark/benchmark.h>

#include "topo/analysis.hpp"

using namespace fabricsim;
using namespace fabricsim::literals;

namespace {

ClusterSpec fat_tree_16k() {
  return ClusterSpec{.servers = 2048,
                     .hosts = 0,
                     .server = server_preset("dgx-h100"),
                     .fabric = {.shape = FatTreeSpec{.k = 64},
                                .technology = Technology::kInfiniband,
                                .link_rate = 400_Gbps,
                                .rail_optimized = true}};
}

void BM_BuildAndRoute_FatTree16kGpus(benchmark::State& state) {
  const ClusterSpec spec = fat_tree_16k();
  for (auto _ : state) {
    const Topology t = build_cluster(spec);
    const Routing r = Routing::compute(t, 1);
    benchmark::DoNotOptimize(r.group_count());
    state.counters["switches"] = static_cast<double>(r.switch_count());
    state.counters["endpoints"] = static_cast<double>(r.endpoint_count());
  }
}

void BM_BuildAndRoute_Star1MHosts(benchmark::State& state) {
  const ClusterSpec spec{.servers = 0,
                         .hosts = 1 << 20,
                         .server = {},
                         .fabric = {.shape = StarSpec{}, .link_rate = 100_Gbps}};
  for (auto _ : state) {
    const Topology t = build_cluster(spec);
    const Routing r = Routing::compute(t, 1);
    benchmark::DoNotOptimize(r.group_count());
    state.counters["endpoints"] = static_cast<double>(r.endpoint_count());
  }
}

void BM_Bisection_FatTree16kGpus(benchmark::State& state) {
  const Topology t = build_cluster(fat_tree_16k());
  const Routing r = Routing::compute(t, 1);
  for (auto _ : state) benchmark::DoNotOptimize(analyse(t, r, {}).bisection_gbps);
}

}  // namespace

BENCHMARK(BM_BuildAndRoute_FatTree16kGpus)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BuildAndRoute_Star1MHosts)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Bisection_FatTree16kGpus)->Unit(benchmark::kMillisecond);
