#pragma once
// Robust nonlinear least squares for calibration: fits parameters of a black-box model (here
// the simulator) to measured values.
//
// Residuals are relative: r_i = ln(measured_i) - ln(model_i), so a 1 us latency and a 10 ms
// transfer weigh by their relative error. Parameters are fitted in log space (they are
// positive: efficiencies, latencies) and kept within their bounds. Each iteration is a
// Levenberg-Marquardt step on the iteratively reweighted problem
//   (J' W J + lambda diag(J' W J)) du = J' W r,
// with J by forward differences of the model (step `h` in log space: the simulator is
// piecewise, a small step would see only its rounding) and W Huber weights
// w_i = min(1, k s / |r_i|), s = 1.4826 x median |r| (robust scale, at least the
// measurements' scatter FitOptions::noise), k = 1.345: outliers
// (a measurement disturbed by other jobs) count linearly, not quadratically.
// A parameter whose column of J is (near) zero is not identifiable from these measurements:
// it keeps its initial value and is reported so. Standard errors come from the weighted
// residual variance times (J' W J)^-1 at the solution (1 sigma, relative).
//
// A parameter may carry a prior: ln p ~ N(ln prior, prior_sigma^2), what is known of it before
// the measurements (its physical range). The fit then minimises the posterior's negative log,
//   sum_i w_i r_i^2 + noise^2 sum_j ((u_j - ln prior_j) / prior_sigma_j)^2,   u = ln p,
// where `noise` is the relative scatter of one measurement (FitOptions::noise): the
// data decide wherever they can, the prior where they cannot (two parameters whose effects
// the measurements do not tell apart share the change as their priors weigh). The
// uncertainties are then the posterior's, (J' W J / s^2 + diag(1 / prior_sigma^2))^-1.

#include <functional>
#include <string>
#include <vector>

namespace fabricsim::validation {

struct FitParameter {
  std::string name;
  double initial = 1, min = 1e-9, max = 1e9;
  double prior = 0, prior_sigma = 0;  // prior median and sigma of ln p; sigma 0: none
};

struct FitOptions {
  int max_iterations = 30;
  double h = 0.02;          // finite-difference step in ln(parameter)
  double tolerance = 1e-5;  // stop when the largest relative step is below this
  double huber_k = 1.345;
  double min_sensitivity =
      1e-3;  // |d ln model / d ln p| summed over points, below: not identifiable
  // Relative scatter of one measurement, for weighing priors and as the least robust scale:
  // an nccl-tests row (the mean of its iterations) repeats within about 1 % between runs on a
  // quiet cluster.
  double noise = 0.01;
};

struct FitResult {
  std::vector<double> values;
  std::vector<double> rel_std_error;  // per parameter, relative (0.01 = 1 %); 0 when fixed
  std::vector<bool> identifiable;
  std::vector<double> residuals;  // ln(measured / model) at the solution
  std::vector<double> weights;    // Huber weights at the solution
  double rms = 0;                 // of the residuals (relative)
  int iterations = 0;
  int evaluations = 0;
  bool converged = false;
};

// `model(values)` returns one prediction per measured value, all positive.
using Model = std::function<std::vector<double>(const std::vector<double>&)>;
FitResult fit(const std::vector<FitParameter>& params, const std::vector<double>& measured,
              const Model& model, const FitOptions& options = {});

}  // namespace fabricsim::validation
