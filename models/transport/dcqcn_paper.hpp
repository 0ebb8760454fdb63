#pragma once
// DCQCN reaction point as the paper specifies it (Zhu et al., SIGCOMM 2015, section 3.1 and
// figure 5), with the stage rules of the authors' own ns-3 model (bobzhuyb/ns3-rdma,
// src/point-to-point/model/qbb-net-device.cc, rpr_* functions; ../shared/reference/
// protocols.md 1.1). Selected by nic.dcqcn.variant = "paper". Parameters keep the mlxconfig
// names of the firmware variant (models/transport/dcqcn.hpp):
//   K = dce_tcp_rtt, T = rpg_time_reset, B = rpg_byte_reset, F = rpg_threshold,
//   R_AI = rpg_ai_rate, R_HAI = rpg_hai_rate, g = dce_tcp_g.
//
// On every CNP (the notification point sends at most one per min_time_between_cnps):
//   RT = RC;  alpha = (1-g) alpha + g;  RC = max(rpg_min_rate, RC (1 - alpha/2));
//   both increase counters back to 0, the byte budget to B, the alpha and rate timers
//   restarted. A QP opens with alpha = initial_alpha.
// Every K without a CNP: alpha = (1-g) alpha.
// Rate-increase events: the timer (every T; T/2 in hyper increase) and the byte counter
// (every B bytes sent on the wire; B/2 in hyper increase), each counting its own stage
// (TC, BC). After the count:
//   max(TC, BC) < F (fast recovery):    RC = (RT + RC)/2;
//   min(TC, BC) < F (additive increase): RT += R_AI, then RC = (RT + RC)/2;
//   otherwise (hyper increase):          RT += R_HAI (min(TC, BC) - F + 1), then the same;
//   RC <= line rate.
// Differences from the firmware variant: the decrease acts on each CNP, not on a monitor
// period; alpha is raised by the CNP itself; the byte counter; hyper increase grows with the
// stage. Left out, as not in the paper: RDMA3's "RT /= 8 if RT > 10 RC" guard on the first
// increase. Once RC is back at line rate the QP stops its timers until the next CNP, as the
// firmware variant does (a QP at line rate has nothing to recover); while a reacting QP is
// idle, on_resume applies the alpha decays and timer increases it missed.

#include "models/transport/dcqcn.hpp"

namespace fabricsim {

extern const CcAlgorithm kDcqcnPaper;

}  // namespace fabricsim
