#pragma once
// What `calibrate`, `validate` and `diagnose` print and write (experiments/calibration.hpp,
// experiments/diagnose.hpp).

#include <cstddef>
#include <filesystem>
#include <string>

#include "experiments/calibration.hpp"
#include "experiments/diagnose.hpp"

namespace fabricsim {

// The direct estimates, one line each ("key value (direct: evidence)").
std::string direct_estimates_text(const std::vector<DirectEstimate>& direct);
// The fitted parameters against their values in `before` (the scenario the fit started from),
// with their uncertainty or what a bound means, then the fit's summary line.
std::string calibration_table(const Scenario& before, const Calibration& c, std::size_t rows);
// The overlay file: `extends` the scenario, the fitted values with their uncertainty.
std::string calibration_overlay(const Calibration& c, const std::filesystem::path& scenario,
                                const std::filesystem::path& out, std::size_t rows,
                                const std::string& from);
// Every row (measured, simulated, error, role), then the judged rows' mean and worst error.
std::string validation_table(const Validation& v);
// One line per finding, then the bottleneck and the next measurement.
std::string diagnosis_text(const Diagnosis& d);

}  // namespace fabricsim
