#pragma once
// A run's progress for a person: on a terminal one line rewritten in place twice a second
// (from the first second on); into a file or pipe (a batch job's log) one line every 10 s.
// The time left is measured from the work done, elapsed x (1 - done) / done, and is left out
// while the run cannot say how much it has done. A run of several phases (Progress::phase)
// shows the phase, and its rate and time left are the phase's own.

#include <chrono>
#include <ostream>
#include <string>

#include "experiments/progress.hpp"

namespace fabricsim {

class ProgressDisplay {
 public:
  using ms = std::chrono::milliseconds;
  ProgressDisplay(std::ostream& err, bool terminal)
      : ProgressDisplay(err, terminal, terminal ? ms(1'000) : ms(10'000),
                        terminal ? ms(500) : ms(10'000)) {}
  // The first line after `first` of wall time, then one every `every`.
  ProgressDisplay(std::ostream& err, bool terminal, ms first, ms every)
      : err_(err), terminal_(terminal), first_(first), every_(every) {}
  void update(const Progress& p);
  // Clears the terminal line (a log keeps its lines).
  void finish();

 private:
  using clock = std::chrono::steady_clock;
  std::ostream& err_;
  bool terminal_;
  ms first_, every_;
  clock::time_point start_ = clock::now();
  clock::time_point last_ = start_;
  clock::time_point phase_start_ = start_;  // rate and time left are per phase
  std::string phase_;
  bool phased_ = false;  // an update has been seen
  bool shown_ = false;
};

}  // namespace fabricsim
