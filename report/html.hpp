#pragma once
// One self-contained HTML report (inline SVG, no scripts, no network): the metrics of one or
// more runs side by side, step-time breakdown bars, busbw against message size (from
// [study] busbw metrics), every sampled time series (queue depth, throughput, pause state,
// DCQCN rates: whatever simulation.timeseries recorded) and the bottleneck tables.

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/calibration.hpp"
#include "experiments/run.hpp"

namespace fabricsim {

std::string html_report(const std::vector<Scenario>& scenarios,
                        const std::vector<RunResult>& results);

// `fabricsim validate --report FILE`: per series (binary and rank count) the measured and the
// simulated bus bandwidth against size, then every row with its error.
std::string validation_html(const std::string& title, const std::vector<ValidationRow>& rows);

}  // namespace fabricsim
