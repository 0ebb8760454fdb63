#pragma once
// Clusters several tests and benchmarks share.

#include "fabric/packet_network.hpp"

namespace fabricsim::fixtures {

// 4 x DGX A100 (8 GPUs, 8 NICs each) at 100 Gb/s on two leaves of 32 ports (servers 0, 1 under
// leaf 0; 2, 3 under leaf 1) and one spine; `oversubscription` 1 is full bisection.
inline ClusterSpec dgx_a100_x4(double oversubscription = 1) {
  using namespace fabricsim::literals;
  return {.servers = 4,
          .hosts = 0,
          .server = server_preset("dgx-a100"),
          .fabric = {.shape = LeafSpineSpec{.hosts_per_leaf = 16,
                                            .spines = 1,
                                            .oversubscription = oversubscription},
                     .switch_ports = 32,
                     .link_rate = 100_Gbps}};
}

// The packet network those servers run: 4 KiB RoCE packets, 300 ns switches, PFC on a shared
// buffer of `buffer`, the inside of the servers modelled.
inline NetworkParams dgx_network(Bytes buffer) {
  using namespace fabricsim::literals;
  NetworkParams p;
  p.switch_latency = 300_ns;
  p.buffer.buffer = buffer;
  p.buffer.pfc = true;
  p.nic.format = {.mtu = 4_KiB, .header = 82_B};
  p.host_side = true;
  return p;
}

}  // namespace fabricsim::fixtures
