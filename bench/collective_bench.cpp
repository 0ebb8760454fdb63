// The collective model at packet level: one AllReduce on 4 x DGX A100 (32 GPUs, 100G RoCE,
// two leaves and a spine), as `fabricsim nccl-tests` runs it. Reports per second of wall time
// the network data packet-hops and all packet-hops (NVLink and PCIe chunks, ACKs included).

#include <benchmark/benchmark.h>

#include "fabric/packet_network.hpp"
#include "models/nccl/collective.hpp"
#include "tests/support/fixtures.hpp"
#include "topo/communicator.hpp"

using namespace fabricsim;
using namespace fabricsim::literals;

static void BM_AllReduce_4xDgxA100(benchmark::State& state) {
  const auto bytes = static_cast<std::uint64_t>(state.range(0));
  const Topology topo = build_cluster(fixtures::dgx_a100_x4(2));
  const Routing routing = Routing::compute(topo, 1);
  const CommLayout layout = build_communicator(topo, routing, {});
  const NetworkParams p = fixtures::dgx_network(16_MiB);
  double hops = 0, all = 0;
  for (auto _ : state) {
    Simulation sim(1);
    PacketNetwork net(sim, topo, routing, p);
    CollectiveEngine engine(sim, net, gpu_preset("a100"), NcclConfig{});
    const auto comm = engine.add_communicator(layout);
    engine.launch(comm, {.op = CollOp::kAllReduce, .bytes = bytes}, Time::zero());
    sim.run();
    for (const auto& c : sim.probes().counters()) {
      if (c.name.ends_with(".tx_data_packets")) hops += static_cast<double>(c.value);
      if (c.name.ends_with(".tx_packets")) all += static_cast<double>(c.value);
    }
  }
  state.counters["data_hops_per_s"] = benchmark::Counter(hops, benchmark::Counter::kIsRate);
  state.counters["all_hops_per_s"] = benchmark::Counter(all, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_AllReduce_4xDgxA100)->Arg(1 << 20)->Arg(64 << 20)->Unit(benchmark::kMillisecond);
