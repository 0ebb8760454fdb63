#include "models/transport/newreno.hpp"

#include <algorithm>

#include "models/transport/nic.hpp"

namespace fabricsim {

std::uint32_t NewRenoCc::open(std::uint64_t) {
  windows_.push_back({.cwnd = initial_window_});
  return static_cast<std::uint32_t>(windows_.size() - 1);
}

void NewRenoCc::on_ack(std::uint32_t slot, const CcAck& ack) {
  Window& w = windows_[slot];
  if (ack.in_recovery) {
    if (ack.recovery_done) w.cwnd = w.ssthresh;
  } else {
    for (std::uint32_t i = 0; i < ack.newly_acked; ++i)
      w.cwnd += w.cwnd < w.ssthresh ? 1.0 : 1.0 / w.cwnd;
  }
  react_to_ecn(slot, ack);
}

void NewRenoCc::react_to_ecn(std::uint32_t slot, const CcAck& ack) {
  Window& w = windows_[slot];
  if (!ack.ece || ack.una < w.cwr_end) return;
  w.ssthresh = std::max(2.0, w.cwnd / 2);
  w.cwnd = w.ssthresh;
  w.cwr_end = ack.next_psn;
}

void NewRenoCc::on_fast_retransmit(std::uint32_t slot) {
  Window& w = windows_[slot];
  w.ssthresh = std::max(2.0, w.cwnd / 2);
  w.cwnd = w.ssthresh + 3;
}

void NewRenoCc::on_timeout(std::uint32_t slot) {
  Window& w = windows_[slot];
  w.ssthresh = std::max(2.0, w.cwnd / 2);
  w.cwnd = 1;
}

const CcAlgorithm kNewReno{
    "newreno", [](const RdmaConfig& cfg, CcHost&, double) -> std::unique_ptr<CongestionControl> {
      return std::make_unique<NewRenoCc>(cfg.newreno.initial_window);
    }};

}  // namespace fabricsim
