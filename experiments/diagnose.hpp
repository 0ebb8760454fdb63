#pragma once
// `fabricsim diagnose`: the seed's layered method (case study, section 3.2) on a folder of
// measurements: inside a server, then between servers, then the collective across servers
// against the one inside, then the PCIe topology, and the model's own attribution from a
// fabricsim results.json. Each check gives its evidence; the first layer that fails is the
// bottleneck, with the next measurement to take.

#include <string>
#include <vector>

#include "experiments/calibration.hpp"

namespace fabricsim {

struct Finding {
  std::string layer, evidence, next;
  bool bad = false;
  std::string tag = {};  // printed instead of ok/suspect ("model": the model's other layers)
};

struct Diagnosis {
  std::vector<Finding> findings;  // in the method's order
  // The first bad finding: the bottleneck (null when none is bad).
  const Finding* verdict() const;
};

// `scenario` (may be null) gives the peaks the measurements are judged against.
Diagnosis diagnose(const MeasurementSet& set, const Scenario* scenario);

}  // namespace fabricsim
