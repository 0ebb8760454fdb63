#include "models/transport/dcqcn.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "models/transport/nic.hpp"

namespace fabricsim {

namespace {

class DcqcnFirmwareCc final : public CongestionControl {
 public:
  DcqcnFirmwareCc(const DcqcnConfig& cfg, CcHost& host, double line_bps)
      : d_(cfg), host_(host), line_bps_(line_bps) {}

  Needs needs() const override { return {}; }

  std::uint32_t open(std::uint64_t qp) override {
    State s;
    s.qp = qp;
    s.rate = s.target = line_bps_;
    qps_.push_back(s);
    return static_cast<std::uint32_t>(qps_.size() - 1);
  }

  void on_cnp(std::uint32_t slot) override {
    State& s = qps_[slot];
    s.cnp_in_alpha_window = s.cnp_in_decrease_window = true;
    if (s.active) return;
    s.active = true;
    s.alpha = d_.initial_alpha;
    s.stage = 0;
    const double first = d_.rate_to_set_on_first_cnp.bps() > 0
                             ? static_cast<double>(d_.rate_to_set_on_first_cnp.bps())
                             : s.rate;
    set_rate(s, first);
    s.target = first;
    start_timers(s);
  }

  void on_stop(std::uint32_t slot) override {
    State& s = qps_[slot];
    s.idle_since = host_.cc_now();
    ++s.generation;
    ++s.increase_generation;
  }

  // An idle QP has no timers (they would keep the simulation alive); the time it sat idle
  // gets the alpha decays and rate-increase steps its timers would have applied, with no CNPs.
  void on_resume(std::uint32_t slot) override {
    State& s = qps_[slot];
    if (!s.active) return;
    const Time idle = host_.cc_now() - s.idle_since;
    s.alpha *= std::pow(1 - d_.dce_tcp_g, static_cast<double>(idle / d_.dce_tcp_rtt));
    s.cnp_in_alpha_window = s.cnp_in_decrease_window = false;
    for (Time::rep k = idle / d_.rpg_time_reset; k > 0; --k)
      if (!increase_step(s)) return;
    start_timers(s);
  }

  void on_timer(std::uint32_t slot, std::uint32_t tag) override {
    State& s = qps_[slot];
    const std::uint32_t generation = tag & kCcGenerationMask;
    const Time now = host_.cc_now();
    switch (static_cast<Timer>(tag >> 22)) {
      case kAlpha:
        if (generation != (s.generation & kCcGenerationMask)) return;
        s.alpha = (1 - d_.dce_tcp_g) * s.alpha + (s.cnp_in_alpha_window ? d_.dce_tcp_g : 0.0);
        s.cnp_in_alpha_window = false;
        schedule(s, kAlpha, generation, now + d_.dce_tcp_rtt);
        return;
      case kDecrease:
        if (generation != (s.generation & kCcGenerationMask)) return;
        if (s.cnp_in_decrease_window) {
          if (d_.clamp_tgt_rate || s.stage != 0) s.target = s.rate;
          set_rate(
              s, std::max(static_cast<double>(d_.rpg_min_rate.bps()), s.rate * (1 - s.alpha / 2)));
          s.stage = 0;
          s.cnp_in_decrease_window = false;
          schedule(s, kIncrease, ++s.increase_generation, now + d_.rpg_time_reset);
        }
        schedule(s, kDecrease, generation, now + d_.rate_reduce_monitor_period);
        return;
      case kIncrease:
        if (generation != (s.increase_generation & kCcGenerationMask)) return;
        if (!increase_step(s)) return;
        schedule(s, kIncrease, generation, now + d_.rpg_time_reset);
        host_.cc_kick();
        return;
    }
  }

 private:
  enum Timer : std::uint32_t { kAlpha, kDecrease, kIncrease };
  struct State {
    std::uint64_t qp = 0;
    double rate = 0;    // RC
    double target = 0;  // RT
    double alpha = 1;
    int stage = 0;
    bool active = false;  // reacting to congestion: timers running (or owed, while idle)
    bool cnp_in_alpha_window = false, cnp_in_decrease_window = false;
    std::uint32_t generation = 0, increase_generation = 0;
    Time idle_since{};
  };

  void set_rate(State& s, double bps) {
    s.rate = bps;
    host_.set_cc_rate(s.qp, bps);
  }
  void schedule(const State& s, Timer kind, std::uint32_t generation, Time at) {
    host_.schedule_cc_timer(s.qp, cc_tag(kind, generation), at);
  }
  void start_timers(State& s) {
    const Time now = host_.cc_now();
    const std::uint32_t g = ++s.generation;
    schedule(s, kAlpha, g, now + d_.dce_tcp_rtt);
    schedule(s, kDecrease, g, now + d_.rate_reduce_monitor_period);
    schedule(s, kIncrease, ++s.increase_generation, now + d_.rpg_time_reset);
  }
  // One rate-increase step; false once back at line rate (congestion control idle).
  bool increase_step(State& s) {
    if (s.stage == d_.rpg_threshold) {
      s.target = std::min(line_bps_, s.target + static_cast<double>(d_.rpg_ai_rate.bps()));
    } else if (s.stage > d_.rpg_threshold) {
      s.target = std::min(line_bps_, s.target + static_cast<double>(d_.rpg_hai_rate.bps()));
    }
    set_rate(s, dcqcn_recover(s.rate, s.target, line_bps_));
    ++s.stage;
    if (s.rate < line_bps_) return true;
    s.active = false;
    ++s.generation;
    return false;
  }

  DcqcnConfig d_;
  CcHost& host_;
  double line_bps_;
  std::vector<State> qps_;
};

}  // namespace

const CcAlgorithm kDcqcnFirmware{
    "dcqcn",
    [](const RdmaConfig& cfg, CcHost& host, double line_bps) -> std::unique_ptr<CongestionControl> {
      return std::make_unique<DcqcnFirmwareCc>(cfg.dcqcn, host, line_bps);
    }};

}  // namespace fabricsim
