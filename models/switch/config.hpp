#pragma once
// What a switch is built with (plain structs the loader fills): its shared buffer, PFC and ECN
// settings (the model that acts on them is switch.hpp).

#include <array>
#include <cstdint>
#include <string>

#include "sim/units.hpp"

namespace fabricsim {

struct EcnConfig {
  bool enabled = false;
  Bytes kmin{};
  Bytes kmax{};
  double pmax = 0.2;
};

struct BufferConfig {
  Bytes buffer{};          // total shared-buffer size of the switch
  Bytes reserved{};        // guaranteed per ingress (port, priority)
  double alpha = 1.0 / 8;  // dynamic threshold factor
  Bytes headroom{};        // per lossless ingress (port, priority)
  Bytes resume_offset{};   // hysteresis between XOFF and XON
  // Static PFC thresholds on an ingress queue's total occupancy, as many switches also offer:
  // XOFF at or above pfc_xoff, XON at or below pfc_xon. pfc_xoff = 0: dynamic (above).
  Bytes pfc_xoff{};
  Bytes pfc_xon{};
  bool pfc = false;
  std::uint8_t lossless = 0;  // bitmask of PFC priorities (when pfc)
  std::uint16_t pause_quanta = 0xffff;
  std::uint8_t strict = 0xff;                              // strictly scheduled priorities
  std::array<int, 8> dwrr_weight{1, 1, 1, 1, 1, 1, 1, 1};  // DWRR weights of the others
  Time pfc_watchdog{};            // pause-storm detection time on switch ports (0 = off)
  bool pfc_watchdog_drop = true;  // storm action: drop the queue (true) or only ignore pause
  EcnConfig ecn{};
  // InfiniBand: credit-based flow control with this receive buffer per (port, VL); the switch
  // then never drops, sends no PFC and marks no ECN (IB congestion control is not modelled).
  Bytes vl_credits{};
  std::uint8_t ecn_priorities = 0;  // bitmask
};

// What is left of the buffer of a switch with `ports` ports for its shared pool, once every
// ingress (port, priority) has its reserved space (each lossless priority and one lossy class)
// and each lossless one its headroom. Negative: the buffer cannot hold its own reservations.
Bytes shared_pool_of(const BufferConfig& cfg, std::size_t ports);
// Why such a switch cannot be built ("" when it can): the message names the keys to change.
std::string buffer_shortfall(const BufferConfig& cfg, std::size_t ports);

// Picks the egress port of switch `switch_index` for a packet.

}  // namespace fabricsim
