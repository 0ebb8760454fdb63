#include "models/transport/dctcp.hpp"

#include <algorithm>

#include "models/transport/nic.hpp"

namespace fabricsim {

namespace {

class DctcpCc final : public NewRenoCc {
 public:
  DctcpCc(double initial_window, double g) : NewRenoCc(initial_window), g_(g) {}
  std::uint32_t open(std::uint64_t qp) override {
    marks_.emplace_back();
    return NewRenoCc::open(qp);
  }

 private:
  struct Marks {
    double alpha = 0;
    std::uint32_t acked = 0, marked = 0;  // packets ACKed and marked in the current window
    std::uint32_t window_end = 0;         // the window ends once this PSN is ACKed
  };
  void react_to_ecn(std::uint32_t slot, const CcAck& ack) override {
    Marks& m = marks_[slot];
    m.acked += ack.newly_acked;
    if (ack.ece) m.marked += ack.newly_acked;
    if (ack.una < m.window_end) return;
    const double f = m.acked > 0 ? double(m.marked) / m.acked : 0;
    m.alpha = (1 - g_) * m.alpha + g_ * f;
    if (m.marked > 0) {
      Window& w = windows_[slot];
      w.cwnd = std::max(1.0, w.cwnd * (1 - m.alpha / 2));
      w.ssthresh = w.cwnd;
    }
    m.acked = m.marked = 0;
    m.window_end = ack.next_psn;
  }

  double g_;
  std::vector<Marks> marks_;
};

}  // namespace

const CcAlgorithm kDctcp{
    "dctcp", [](const RdmaConfig& cfg, CcHost&, double) -> std::unique_ptr<CongestionControl> {
      return std::make_unique<DctcpCc>(cfg.newreno.initial_window, cfg.dctcp.g);
    }};

}  // namespace fabricsim
