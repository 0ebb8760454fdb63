#pragma once
// One self-contained HTML report (inline SVG, no scripts, no network): the metrics of one or
// more runs side by side, step-time breakdown bars, busbw against message size (from
// [study] busbw metrics), every sampled time series (queue depth, throughput, pause state,
// DCQCN rates: whatever simulation.timeseries recorded) and the bottleneck tables.

#include <cstdint>
#include <string>
#include <vector>

#include "cli/experiment.hpp"

namespace fabricsim {

std::string html_report(const std::vector<Scenario>& scenarios,
                        const std::vector<RunResult>& results);

// `fabricsim validate --report FILE`: per series (binary and rank count) the measured and the
// simulated bus bandwidth against size, then every row with its error.
struct ValidationRow {
  std::string series;  // "all_reduce_perf, 16 ranks"
  std::uint64_t bytes = 0;
  double measured_us = 0, simulated_us = 0;
  double bus_factor = 1;  // busbw = bytes / time x this
  std::string role;       // "fit" or "held-out"
};
std::string validation_html(const std::string& title, const std::vector<ValidationRow>& rows);

}  // namespace fabricsim
