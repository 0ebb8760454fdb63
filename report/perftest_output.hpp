#pragma once
// perftest output of a simulated run (experiments/perftest.hpp).

#include <string>
#include <vector>

#include "experiments/perftest.hpp"

namespace fabricsim {

// The output as perftest prints it, then a '#' line with what was simulated.
std::string perftest_text(const Scenario& s, const PerftestArgs& args,
                          const std::vector<PerftestRow>& rows);

}  // namespace fabricsim
