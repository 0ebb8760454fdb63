#pragma once
// DCTCP (Alizadeh et al., SIGCOMM 2010; RFC 8257): NewReno's window, but the reaction to ECN
// echo is proportional: once per window of data,
//   alpha <- (1-g) alpha + g F,  F = the fraction of the window's packets that were marked,
//   and if any was marked: cwnd = max(1, cwnd (1 - alpha/2)), ssthresh = cwnd.
// g is nic.tcp.dctcp_g (RFC 8257 section 4.2 recommends 1/16).

#include "models/transport/newreno.hpp"

namespace fabricsim {

struct DctcpConfig {
  double g = 1.0 / 16;  // RFC 8257 section 4.2
};

extern const CcAlgorithm kDctcp;

}  // namespace fabricsim
