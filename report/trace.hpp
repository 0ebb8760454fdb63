#pragma once
// The step timeline of a training run (experiments/training.hpp) as a trace file.

#include <string>
#include <vector>

#include "models/workload/workload.hpp"

namespace fabricsim {

// The timeline as a Chrome/Perfetto trace (JSON; load it in ui.perfetto.dev): one process per
// server, threads for compute, TP AllReduces and DP AllReduces.
std::string chrome_trace(const std::vector<TraceSpan>& spans);

}  // namespace fabricsim
