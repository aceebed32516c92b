#pragma once
// Bounded nonlinear least squares: fits a few named parameters, each inside a plausible range, to observations
// given as residuals (e.g. (predicted - measured) / measured per measured run). `shardsim calibrate --runs`
// uses it to fit the model parameters of model_parameters.hpp to measured iteration times. MINPACK's
// Levenberg-Marquardt (Eigen) does the work; the bounds hold through a smooth change of variables, and the
// uncertainty of each fitted value comes from the Jacobian at the solution.
#include <functional>
#include <string>
#include <vector>

namespace shardsim::validate {

struct FitProblem {
  std::vector<std::string> names;
  std::vector<double> initial, lower, upper;  ///< lower < upper; lower <= initial <= upper
  /// residuals for parameter values x (same order as names): one per observation, always as many, e.g.
  /// (predicted - measured) / measured
  std::function<std::vector<double>(const std::vector<double>& x)> residuals;
  /// The Jacobian's finite-difference step as a fraction of each parameter's range; 0: residuals that are smooth
  /// (MINPACK's own step, about 1e-8). Residuals that jump under small changes (an iteration that stops at a
  /// tolerance, whole waves, a protocol switch) need a step wider than their jumps, or the fit reads one jump as the
  /// slope and stops.
  double difference_step = 0.0;
};

struct FitResult {
  std::vector<double> values;      ///< fitted, inside [lower, upper]
  std::vector<double> std_errors;  ///< 1 sigma: s^2 (J^T J)^-1, s^2 = SSR/(n-p); +inf where not identifiable
  std::vector<bool> at_bound;      ///< the fit pushed the value against its range (its std_error is then local)
  double rms_before = 0.0, rms_after = 0.0;  ///< root mean square of the residuals
  int evaluations = 0;                       ///< calls of `residuals`
  bool converged = false;
  std::string message;  ///< why the fit stopped
};

/** @brief Bounded Levenberg-Marquardt from `p.initial`. Deterministic: same problem, bit-identical result.
 *  Throws std::invalid_argument for a malformed problem (sizes, bounds, fewer observations than parameters,
 *  residuals that are not finite at the start or change in number). */
FitResult fit_least_squares(const FitProblem& p);

}  // namespace shardsim::validate
