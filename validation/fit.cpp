#include "validation/fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fabricsim::validation {

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

}  // namespace

FitResult fit(const std::vector<FitParameter>& params, const std::vector<double>& measured,
              const Model& model, const FitOptions& options) {
  const auto p = static_cast<Eigen::Index>(params.size());
  const auto m = static_cast<Eigen::Index>(measured.size());
  if (m == 0) throw std::invalid_argument("no measurements to fit");
  for (double v : measured)
    if (!(v > 0)) throw std::invalid_argument("measured values must be positive");
  FitResult out;
  Eigen::VectorXd u(p), lo(p), hi(p);  // ln of the parameters and their bounds
  Eigen::VectorXd mu = Eigen::VectorXd::Zero(p), precision = Eigen::VectorXd::Zero(p);
  for (Eigen::Index j = 0; j < p; ++j) {
    const auto& fp = params[static_cast<std::size_t>(j)];
    if (!(fp.min > 0) || fp.max < fp.min)
      throw std::invalid_argument("parameter " + fp.name + ": bounds must be positive, min <= max");
    lo[j] = std::log(fp.min);
    hi[j] = std::log(fp.max);
    u[j] = std::clamp(std::log(fp.initial), lo[j], hi[j]);
    if (fp.prior_sigma > 0) {
      if (!(fp.prior > 0))
        throw std::invalid_argument("parameter " + fp.name + ": a prior's median must be positive");
      mu[j] = std::log(fp.prior);
      precision[j] = 1 / (fp.prior_sigma * fp.prior_sigma);
    }
  }
  // The prior's term of the cost, in the data's units (noise^2 x precision).
  const double noise2 = options.noise * options.noise;
  const auto values = [&](const Eigen::VectorXd& x) {
    std::vector<double> v(static_cast<std::size_t>(p));
    for (Eigen::Index j = 0; j < p; ++j) v[static_cast<std::size_t>(j)] = std::exp(x[j]);
    return v;
  };
  const auto residuals = [&](const Eigen::VectorXd& x) {
    const std::vector<double> pred = model(values(x));
    ++out.evaluations;
    if (pred.size() != measured.size())
      throw std::logic_error("the model returned a different number of predictions");
    Eigen::VectorXd r(m);
    for (Eigen::Index i = 0; i < m; ++i) {
      const double y = pred[static_cast<std::size_t>(i)];
      if (!(y > 0)) throw std::runtime_error("the model predicted a non-positive value");
      r[i] = std::log(measured[static_cast<std::size_t>(i)]) - std::log(y);
    }
    return r;
  };
  const auto huber = [&](const Eigen::VectorXd& r) {
    std::vector<double> a(static_cast<std::size_t>(m));
    for (Eigen::Index i = 0; i < m; ++i) a[static_cast<std::size_t>(i)] = std::abs(r[i]);
    // Never below the measurements' own scatter: where most rows fit exactly (one-GPU rows, a
    // copy), the rest are not outliers for missing by a percent.
    const double scale = std::max(1.4826 * median(a), std::max(options.noise, 1e-6));
    Eigen::VectorXd w(m);
    for (Eigen::Index i = 0; i < m; ++i)
      w[i] = std::abs(r[i]) <= options.huber_k * scale ? 1.0
                                                       : options.huber_k * scale / std::abs(r[i]);
    return w;
  };
  const auto cost = [&](const Eigen::VectorXd& r, const Eigen::VectorXd& w,
                        const Eigen::VectorXd& x) {
    return (w.array() * r.array().square()).sum() +
           noise2 * (precision.array() * (x - mu).array().square()).sum();
  };

  Eigen::VectorXd r = residuals(u);
  std::vector<bool> free(static_cast<std::size_t>(p), true);
  Eigen::MatrixXd J(m, p);
  double lambda = 1e-3;
  Eigen::VectorXd w = huber(r);
  for (out.iterations = 0; out.iterations < options.max_iterations; ++out.iterations) {
    // Jacobian of the model's ln in ln(parameter) = -d r / d u (forward differences, stepping
    // back from an upper bound).
    for (Eigen::Index j = 0; j < p; ++j) {
      if (!free[static_cast<std::size_t>(j)]) {  // fixed at the first iteration: not simulated
        J.col(j).setZero();
        continue;
      }
      Eigen::VectorXd x = u;
      const double step = x[j] + options.h <= hi[j] ? options.h : -options.h;
      x[j] += step;
      J.col(j) = (r - residuals(x)) / step;
      if (out.iterations == 0)
        free[static_cast<std::size_t>(j)] = J.col(j).cwiseAbs().sum() >= options.min_sensitivity;
      if (!free[static_cast<std::size_t>(j)]) J.col(j).setZero();
    }
    w = huber(r);
    const Eigen::MatrixXd JtW = J.transpose() * w.asDiagonal();
    Eigen::MatrixXd A = JtW * J;
    Eigen::VectorXd g = JtW * r;
    for (Eigen::Index j = 0; j < p; ++j) {
      if (!free[static_cast<std::size_t>(j)]) {  // fixed: a zero step
        A(j, j) = 1;
        g[j] = 0;
        continue;
      }
      A(j, j) += noise2 * precision[j];
      g[j] += noise2 * precision[j] * (mu[j] - u[j]);
    }
    bool improved = false;
    Eigen::VectorXd du;
    for (int tries = 0; tries < 12 && !improved; ++tries) {
      Eigen::MatrixXd damped = A;
      damped.diagonal() += lambda * A.diagonal().cwiseMax(1e-12);
      du = damped.ldlt().solve(g);
      Eigen::VectorXd next = (u + du).cwiseMax(lo).cwiseMin(hi);
      const Eigen::VectorXd rn = residuals(next);
      if (cost(rn, w, next) < cost(r, w, u)) {
        du = next - u;
        u = next;
        r = rn;
        lambda = std::max(lambda / 3, 1e-9);
        improved = true;
      } else {
        lambda *= 4;
      }
    }
    if (!improved || du.cwiseAbs().maxCoeff() < options.tolerance) {
      out.converged = true;
      break;
    }
  }
  // Uncertainty at the solution: s^2 (J' W J)^-1 over the free parameters.
  // With priors: the posterior's, (J' W J / s^2 + diag(precision))^-1.
  w = huber(r);
  const auto nfree = std::count(free.begin(), free.end(), true);
  const double dof = std::max<double>(1, static_cast<double>(m - nfree));
  const double s2 = std::max((w.array() * r.array().square()).sum() / dof, 1e-300);
  Eigen::MatrixXd Af = J.transpose() * w.asDiagonal() * J / s2;
  for (Eigen::Index j = 0; j < p; ++j) {
    if (!free[static_cast<std::size_t>(j)]) {
      Af.row(j).setZero();
      Af.col(j).setZero();
      Af(j, j) = 1;
      continue;
    }
    Af(j, j) += precision[j];
  }
  const Eigen::MatrixXd cov = Af.completeOrthogonalDecomposition().pseudoInverse();
  out.values = values(u);
  for (Eigen::Index j = 0; j < p; ++j) {
    const bool f = free[static_cast<std::size_t>(j)];
    out.identifiable.push_back(f);
    out.rel_std_error.push_back(f ? std::sqrt(std::max(0.0, cov(j, j))) : 0.0);
  }
  out.residuals.assign(r.data(), r.data() + r.size());
  out.weights.assign(w.data(), w.data() + w.size());
  out.rms = std::sqrt(r.squaredNorm() / static_cast<double>(m));
  return out;
}

}  // namespace fabricsim::validation
