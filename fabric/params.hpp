#pragma once
// What a fabric is built with, as plain structs: the scenario layer fills them (the loader),
// the packet and flow networks read them. Kept apart from the runtime classes so that the
// scenario needs no simulation header.

#include "models/switch/config.hpp"
#include "models/transport/config.hpp"
#include "topo/host_paths.hpp"
#include "topo/routing.hpp"

namespace fabricsim {

struct NetworkParams {
  Time switch_latency{};
  BufferConfig buffer{};
  RdmaConfig nic{};
  PathSelection path_selection = PathSelection::kHash;
  bool host_side = false;  // model PCIe/host memory inside servers (needs a server model)
  HostFabricParams host{};
};

// Flow level only: per link class, a factor on the payload capacity (calibration data,
// `[flow]`; 1 = the links' payload rate).
struct FlowEfficiency {
  double nvlink = 1, pcie = 1, network = 1;  // multiply the link classes' payload capacity
};

}  // namespace fabricsim
