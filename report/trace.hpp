#pragma once
// The step timeline of a training run (experiments/training.hpp) as a trace file.

#include <string>

#include "experiments/training.hpp"

namespace fabricsim {

// The trace as Chrome/Perfetto JSON (load it in ui.perfetto.dev), written with TOML++'s JSON
// formatter:
//  - one process per server: threads for compute, TP AllReduces, DP AllReduces, stage sends and
//    each GPU's collective primitives;
//  - one process per network layer (NIC, leaf uplink, spine, ...): a thread per link carrying
//    its PFC pause spans, and counters "<link> utilization" (0..1 over each sample interval)
//    and, at packet level, "<link> queue" (bytes), written where they change;
//  - `otherData` and, when primitives were capped, a global instant event at the last one
//    shown that says how many were left out.
std::string chrome_trace(const TrainingTrace& trace);

// What stderr says when the trace left primitives out (empty when it did not).
std::string trace_cap_notice(const TrainingTrace& trace);

}  // namespace fabricsim
