#include "report/progress_display.hpp"

#include <fmt/format.h>

#include <string>

namespace fabricsim {

void ProgressDisplay::update(const Progress& p) {
  const auto now = clock::now();
  if (now - start_ < first_ || (shown_ && now - last_ < every_)) return;
  last_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  std::string work;
  if (p.done > 0)
    work =
        fmt::format(" | {:.1f} % done, ETA {:.0f} s", 100 * p.done, secs * (1 - p.done) / p.done);
  const std::string line =
      fmt::format("  simulated {} | wall {:.1f} s | {:.2f} M events/s{}", to_string(p.now), secs,
                  static_cast<double>(p.events) / secs * 1e-6, work);
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
