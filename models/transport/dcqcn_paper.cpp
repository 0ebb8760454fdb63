#include "models/transport/dcqcn_paper.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "models/transport/nic.hpp"

namespace fabricsim {

namespace {

class DcqcnPaperCc final : public CongestionControl {
 public:
  DcqcnPaperCc(const DcqcnConfig& cfg, CcHost& host, double line_bps)
      : d_(cfg), host_(host), line_bps_(line_bps) {}

  Needs needs() const override { return {.bytes_sent = true}; }

  std::uint32_t open(std::uint64_t qp) override {
    State s;
    s.qp = qp;
    s.rate = s.target = line_bps_;
    s.alpha = d_.initial_alpha;
    qps_.push_back(s);
    return static_cast<std::uint32_t>(qps_.size() - 1);
  }

  void on_cnp(std::uint32_t slot) override {
    State& s = qps_[slot];
    const Time now = host_.cc_now();
    if (!s.active) {
      // Back from line rate: the alpha timer would have kept decaying alpha meanwhile.
      decay_alpha(s, now - s.quiet_since);
      s.active = true;
    }
    s.target = s.rate;
    s.alpha = (1 - d_.dce_tcp_g) * s.alpha + d_.dce_tcp_g;
    set_rate(s, std::max(static_cast<double>(d_.rpg_min_rate.bps()), s.rate * (1 - s.alpha / 2)));
    s.time_stage = s.byte_stage = 0;
    s.bytes_left = d_.rpg_byte_reset.count();
    start_timers(s, now);
  }

  void on_sent(std::uint32_t slot, std::uint32_t wire_bytes) override {
    State& s = qps_[slot];
    if (!s.active) return;
    s.bytes_left -= wire_bytes;
    if (s.bytes_left > 0) return;
    ++s.byte_stage;
    s.bytes_left = hyper(s) ? d_.rpg_byte_reset.count() / 2 : d_.rpg_byte_reset.count();
    increase(s);  // the engine is sending: it sees the new rate with its next packet
  }

  void on_stop(std::uint32_t slot) override {
    State& s = qps_[slot];
    if (!s.active) return;  // at line rate its timers are already stopped
    s.quiet_since = host_.cc_now();
    ++s.alpha_generation;
    ++s.timer_generation;
  }

  void on_resume(std::uint32_t slot) override {
    State& s = qps_[slot];
    if (!s.active) return;
    const Time now = host_.cc_now();
    Time idle = now - s.quiet_since;
    decay_alpha(s, idle);
    for (Time p = timer_period(s); idle >= p; p = timer_period(s)) {
      idle -= p;
      ++s.time_stage;
      if (!increase(s)) return;
    }
    start_timers(s, now);
  }

  void on_timer(std::uint32_t slot, std::uint32_t tag) override {
    State& s = qps_[slot];
    const std::uint32_t generation = tag & kCcGenerationMask;
    const Time now = host_.cc_now();
    if (static_cast<Timer>(tag >> 22) == kAlpha) {
      if (generation != (s.alpha_generation & kCcGenerationMask)) return;
      s.alpha *= 1 - d_.dce_tcp_g;
      schedule(s, kAlpha, generation, now + d_.dce_tcp_rtt);
      return;
    }
    if (generation != (s.timer_generation & kCcGenerationMask)) return;
    ++s.time_stage;
    if (!increase(s)) return;
    schedule(s, kRate, generation, now + timer_period(s));
    host_.cc_kick();
  }

 private:
  enum Timer : std::uint32_t { kAlpha, kRate };
  struct State {
    std::uint64_t qp = 0;
    double rate = 0;    // RC
    double target = 0;  // RT
    double alpha = 1;
    int time_stage = 0, byte_stage = 0;  // TC, BC
    std::int64_t bytes_left = 0;         // until the next byte-counter event
    bool active = false;                 // below line rate, reacting
    std::uint32_t alpha_generation = 0, timer_generation = 0;
    Time quiet_since{};  // when its timers last stopped (idle QP, or back at line rate)
  };

  bool hyper(const State& s) const {
    return std::min(s.time_stage, s.byte_stage) >= d_.rpg_threshold;
  }
  Time timer_period(const State& s) const {
    return hyper(s) ? d_.rpg_time_reset / 2 : d_.rpg_time_reset;
  }
  void decay_alpha(State& s, Time elapsed) {
    s.alpha *= std::pow(1 - d_.dce_tcp_g, static_cast<double>(elapsed / d_.dce_tcp_rtt));
  }
  void set_rate(State& s, double bps) {
    s.rate = bps;
    host_.set_cc_rate(s.qp, bps);
  }
  void schedule(const State& s, Timer kind, std::uint32_t generation, Time at) {
    host_.schedule_cc_timer(s.qp, cc_tag(kind, generation), at);
  }
  void start_timers(State& s, Time now) {
    schedule(s, kAlpha, ++s.alpha_generation, now + d_.dce_tcp_rtt);
    schedule(s, kRate, ++s.timer_generation, now + d_.rpg_time_reset);
  }
  // One rate-increase event, after its counter was advanced; false once back at line rate.
  bool increase(State& s) {
    const int f = d_.rpg_threshold;
    if (hyper(s)) {
      const int i = std::min(s.time_stage, s.byte_stage) - f + 1;
      s.target += static_cast<double>(d_.rpg_hai_rate.bps()) * i;
    } else if (std::max(s.time_stage, s.byte_stage) >= f) {
      s.target += static_cast<double>(d_.rpg_ai_rate.bps());
    }
    set_rate(s, dcqcn_recover(s.rate, s.target, line_bps_));
    if (s.rate < line_bps_) return true;
    s.active = false;
    s.quiet_since = host_.cc_now();
    ++s.alpha_generation;
    ++s.timer_generation;
    return false;
  }

  DcqcnConfig d_;
  CcHost& host_;
  double line_bps_;
  std::vector<State> qps_;
};

}  // namespace

const CcAlgorithm kDcqcnPaper{
    "dcqcn-paper",
    [](const RdmaConfig& cfg, CcHost& host, double line_bps) -> std::unique_ptr<CongestionControl> {
      return std::make_unique<DcqcnPaperCc>(cfg.dcqcn, host, line_bps);
    }};

}  // namespace fabricsim
