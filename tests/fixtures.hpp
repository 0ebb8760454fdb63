#pragma once
// Clusters several tests and benchmarks share.

#include "topologies/fabric.hpp"

namespace fabricsim::fixtures {

// 4 x DGX A100 (8 GPUs, 8 NICs each) at 100 Gb/s on two leaves of 32 ports (servers 0, 1 under
// leaf 0; 2, 3 under leaf 1) and one spine; `oversubscription` 1 is full bisection.
inline ClusterSpec dgx_a100_x4(double oversubscription = 1) {
  using namespace fabricsim::literals;
  return {.servers = 4,
          .hosts = 0,
          .server = server_preset("dgx-a100"),
          .fabric = {.kind = FabricKind::kLeafSpine,
                     .switch_ports = 32,
                     .link_rate = 100_Gbps,
                     .hosts_per_leaf = 16,
                     .spines = 1,
                     .oversubscription = oversubscription}};
}

}  // namespace fabricsim::fixtures
