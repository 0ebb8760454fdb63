#pragma once
// DCQCN (Zhu et al., SIGCOMM 2015) reaction point, the ConnectX ("firmware") variant: the
// rules the HPCC simulator implements as "Mellanox DCQCN" (../shared/reference/protocols.md
// 1.2), parameters named as mlxconfig names them (1.3):
//   first CNP: active, alpha = initial_alpha, RT = RC = rate_to_set_on_first_cnp or RC;
//   every dce_tcp_rtt: alpha = (1-g) alpha + g if a CNP came in the window, else (1-g) alpha;
//   every rate_reduce_monitor_period with a CNP in it: RT = RC (if clamp_tgt_rate or in an
//     increase stage), RC = max(rpg_min_rate, RC (1 - alpha/2)), stage = 0, timer restarted;
//   every rpg_time_reset: stage < F: RC = (RT+RC)/2; stage == F: RT += rpg_ai_rate, then the
//     same; stage > F: RT += rpg_hai_rate, then the same (F = rpg_threshold). RT <= line rate.
// Back at line rate the QP's congestion control goes idle (no timers) until the next CNP.
// The byte counter is not part of this variant (HPCC's model is timer-only); the paper's
// algorithm, with it, is models/transport/dcqcn_paper.hpp.
// The notification point (CNP generation, min_time_between_cnps) is the receiving NIC's.

#include <algorithm>

#include "models/transport/congestion_control.hpp"

namespace fabricsim {

struct DcqcnConfig {
  // Defaults: ConnectX-5 mlxconfig values (protocols.md 1.3) unless noted.
  Time rpg_time_reset = Time::from_ps(300'000'000);  // 300 us
  int rpg_threshold = 1;
  Bandwidth rpg_ai_rate = Bandwidth::from_bps(5'000'000);
  Bandwidth rpg_hai_rate = Bandwidth::from_bps(50'000'000);
  Bandwidth rpg_min_rate = Bandwidth::from_bps(100'000'000);
  double dce_tcp_g = 1.0 / 256;                 // the paper's g (protocols.md 1.1)
  Time dce_tcp_rtt = Time::from_ps(1'000'000);  // alpha update period, 1 us
  Time rate_reduce_monitor_period = Time::from_ps(4'000'000);
  double initial_alpha = 1.0;
  Bandwidth rate_to_set_on_first_cnp{};  // 0: keep the current rate
  bool clamp_tgt_rate = false;
  Time min_time_between_cnps = Time::from_ps(4'000'000);  // notification point
  // Paper variant only: bytes sent between byte-counter rate increases. The firmware's
  // rpg_byte_reset (32767) has no documented unit; this default is the DCQCN authors' ns-3
  // ByteCounter attribute, 150000 B (bobzhuyb/ns3-rdma qbb-net-device.cc, "ByteCounter").
  Bytes rpg_byte_reset{150'000};
};

// DCQCN's recovery step, both variants: RC moves halfway to the target RT, never above line
// rate, and snaps to line rate within 1e-9 of it (there a QP's congestion control goes idle).
inline double dcqcn_recover(double rate, double target, double line_bps) {
  const double next = std::min(line_bps, (target + rate) / 2);
  return next >= line_bps * (1 - 1e-9) ? line_bps : next;
}

extern const CcAlgorithm kDcqcnFirmware;

}  // namespace fabricsim
