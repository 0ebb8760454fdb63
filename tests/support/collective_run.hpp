#pragma once
// One collective on a scenario's own cluster and fabric, run to completion: what tests that
// look at the links after a collective share.

#include <memory>
#include <string>
#include <string_view>

#include "experiments/nccl_tests.hpp"
#include "experiments/run.hpp"
#include "fabric/fabric.hpp"
#include "scenario/scenario.hpp"
#include "topo/communicator.hpp"
#include "topo/host_paths.hpp"

namespace fabricsim::fixtures {

// The share of NVLink's signalling rate that carries data: payload / (payload + header and
// byte-enable flits) per write packet, from the model's own defaults (HostFabricParams).
inline double nvlink_payload_share() {
  const HostFabricParams h;
  const auto payload = static_cast<double>(h.nvlink_max_payload.count());
  return payload / (payload + static_cast<double>(h.nvlink_overhead.count()));
}

// One DGX H100 on a 400G InfiniBand star (its NICs idle for a one-server collective), plus
// `extra` TOML.
inline std::string one_dgx_h100(const std::string& extra = "") {
  return R"(
[server]
preset = "dgx-h100"
count = 1
[fabric]
kind = "star"
technology = "infiniband"
link_rate = "400Gbps"
)" + extra;
}

// Bytes every link of `layer` has carried, summed.
inline double layer_bytes(const Fabric& f, std::string_view layer) {
  double sum = 0;
  f.for_each_link([&](const Fabric::Link& l) {
    if (l.layer == layer) sum += static_cast<double>(l.bytes);
  });
  return sum;
}

// nccl-tests' row for one size on the scenario's cluster.
inline NcclTestsRow nccl_tests_row(const Scenario& s, std::uint64_t bytes) {
  const BuiltCluster c(s);
  NcclTestsArgs a;
  a.min_bytes = a.max_bytes = bytes;
  const NcclTestsResult r = run_nccl_tests(s, c, a);
  return r.rows.size() == 1 ? r.rows.front() : NcclTestsRow{};
}

struct CollectiveRun {
  std::unique_ptr<Simulation> sim;
  std::unique_ptr<Fabric> fabric;
  std::unique_ptr<CollectiveEngine> engine;  // the fabric's listener: kept beside it
  CollectiveResult result;
};

// The whole cluster's communicator (NCCL's rings and trees for it), running `request`.
inline CollectiveRun run_collective(const Scenario& s, const BuiltCluster& c,
                                    const CollectiveRequest& request) {
  CollectiveRun r;
  r.sim = std::make_unique<Simulation>(s.seed);
  r.fabric = make_fabric(*r.sim, s, c);
  r.engine = std::make_unique<CollectiveEngine>(*r.sim, *r.fabric, s.gpu, s.nccl, s.execution);
  const auto comm = r.engine->add_communicator(
      build_communicator(c.topology, c.routing, communicator_options(s)));
  const auto id = r.engine->launch(comm, request, r.sim->now());
  r.sim->run();
  r.result = r.engine->result(id);
  return r;
}

}  // namespace fabricsim::fixtures
