#pragma once
// What a long run tells whoever watches it: the simulated time, the events so far and the
// fraction of its work done, from which a display estimates the time left. The fraction is
// the run's own measure of work (a training run: its steps' actions done; a traffic run: the
// payload delivered), never the simulated time against `stop_time`, which says nothing about
// when the work ends.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "sim/simulation.hpp"

namespace fabricsim {

struct Progress {
  Time now;
  std::uint64_t events = 0;
  double done = -1;  // fraction of the phase's work finished, 0..1; negative: unknown
  // Which part of the run this is, for runs made of several simulations (a training study's
  // step, its one-server run, its nccl-tests sizes); `done` and a rate are per phase.
  std::string_view phase{};
};
using ProgressFn = std::function<void(const Progress&)>;

// Has `sim` report to `report` while it runs, asking `done` (which may walk the run's state)
// at most every `interval` of wall time, and once more at the end (finish()). Wall time only
// paces the reports: nothing the run computes depends on it. With an empty `report` nothing
// is reported. Stays where it was built (the simulation calls back into it).
class ProgressWatch {
 public:
  ProgressWatch(Simulation& sim, ProgressFn report, std::function<double()> done,
                std::string phase = {},
                std::chrono::milliseconds interval = std::chrono::milliseconds(250))
      : sim_(sim),
        report_(std::move(report)),
        done_(std::move(done)),
        phase_(std::move(phase)),
        interval_(interval) {
    if (!report_) return;
    sim.set_progress_callback([this](Time now, std::uint64_t events) {
      const auto t = clock::now();
      if (t - last_ < interval_) return;
      last_ = t;
      send(now, events);
    });
  }
  ProgressWatch(const ProgressWatch&) = delete;
  ProgressWatch& operator=(const ProgressWatch&) = delete;
  // The last report, after the run.
  void finish() {
    if (report_) send(sim_.now(), sim_.events_processed());
  }

 private:
  using clock = std::chrono::steady_clock;
  void send(Time now, std::uint64_t events) {
    report_({.now = now, .events = events, .done = done_ ? done_() : -1, .phase = phase_});
  }
  Simulation& sim_;
  ProgressFn report_;
  std::function<double()> done_;
  std::string phase_;
  std::chrono::milliseconds interval_;
  clock::time_point last_{};
};

}  // namespace fabricsim
