#include "report/progress_display.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace fabricsim {

void ProgressDisplay::update(const Progress& p) {
  const auto now = clock::now();
  if (p.phase != phase_) {
    if (phased_) phase_start_ = now;  // the first phase started with the display
    phase_ = std::string(p.phase);
  }
  phased_ = true;
  if (now - start_ < first_ || (shown_ && now - last_ < every_)) return;
  last_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double in_phase = std::max(1e-9, std::chrono::duration<double>(now - phase_start_).count());
  std::string work;
  if (p.done > 0)
    work = fmt::format(" | {:.1f} % done, ETA {:.0f} s", 100 * p.done,
                       in_phase * (1 - p.done) / p.done);
  const std::string line = fmt::format("  {}simulated {} | wall {:.1f} s | {:.2f} M events/s{}",
                                       phase_.empty() ? "" : "[" + phase_ + "] ", to_string(p.now),
                                       secs, static_cast<double>(p.events) / in_phase * 1e-6, work);
  if (terminal_)
    err_ << '\r' << line << "   " << std::flush;
  else
    err_ << "progress:" << line.substr(1) << '\n' << std::flush;
  shown_ = true;
}

void ProgressDisplay::finish() {
  if (shown_ && terminal_) err_ << "\r" << std::string(100, ' ') << "\r" << std::flush;
}

}  // namespace fabricsim
