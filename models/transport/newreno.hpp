#pragma once
// TCP NewReno's congestion window (RFC 5681 / RFC 6582), per QP, in packets:
//   slow start from nic.tcp.initial_window: +1 per packet ACKed while cwnd < ssthresh;
//   congestion avoidance: +1/cwnd per packet ACKed;
//   fast retransmit (3 duplicate ACKs): ssthresh = max(2, cwnd/2), cwnd = ssthresh + 3, +1 per
//     further duplicate ACK, cwnd = ssthresh when the recovery point is ACKed;
//   retransmission timeout: ssthresh = max(2, cwnd/2), cwnd = 1;
//   ECN echo (RFC 3168): treated as one loss, at most once per window of data.
// Which packet is retransmitted (NewReno's partial ACKs) is the engine's reliability, not the
// window's: models/transport/nic.cpp.

#include <vector>

#include "models/transport/congestion_control.hpp"

namespace fabricsim {

struct NewRenoConfig {
  int initial_window = 10;  // packets: RFC 6928's initial window, Linux's default
};

class NewRenoCc : public CongestionControl {
 public:
  explicit NewRenoCc(double initial_window) : initial_window_(initial_window) {}
  Needs needs() const override { return {.window = true}; }
  std::uint32_t open(std::uint64_t qp) override;
  double window(std::uint32_t slot) const override { return windows_[slot].cwnd; }
  void on_ack(std::uint32_t slot, const CcAck& ack) override;
  void on_fast_retransmit(std::uint32_t slot) override;
  void on_recovery_dupack(std::uint32_t slot) override { windows_[slot].cwnd += 1; }
  void on_timeout(std::uint32_t slot) override;

 protected:
  struct Window {
    double cwnd = 0;
    double ssthresh = 1e9;
    std::uint32_t cwr_end = 0;  // classic ECN: no further cut before this PSN is ACKed
  };
  // The reaction to an ACK after the window grew for it.
  virtual void react_to_ecn(std::uint32_t slot, const CcAck& ack);
  std::vector<Window> windows_;

 private:
  double initial_window_;
};

extern const CcAlgorithm kNewReno;

}  // namespace fabricsim
