#pragma once
// One self-contained HTML report (inline SVG, no scripts, no network): the metrics of one or
// more runs side by side, step-time breakdown bars, busbw against message size (from
// [study] busbw metrics), every sampled time series (queue depth, throughput, pause state,
// DCQCN rates: whatever simulation.timeseries recorded) and the bottleneck tables.

#include <string>
#include <vector>

#include "cli/experiment.hpp"

namespace fabricsim {

std::string html_report(const std::vector<Scenario>& scenarios,
                        const std::vector<RunResult>& results);

}  // namespace fabricsim
