#include "validate/least_squares.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <unsupported/Eigen/NonLinearOptimization>

namespace shardsim::validate {
namespace {

using Eigen::Index;
namespace lm_status = Eigen::LevenbergMarquardtSpace;

constexpr double kInf = std::numeric_limits<double>::infinity();

// The Jacobian's finite-difference step where the problem sets none, as a fraction of each parameter's range.
constexpr double kSmoothDifference = 1e-6;

// Residuals with the checks and the count the fit reports: the same number of them on every call.
class CountedResiduals {
 public:
  explicit CountedResiduals(const FitProblem& p) : p_(p) {}

  /** @brief The residuals at `x`; throws std::invalid_argument when their number differs from the first call. */
  std::vector<double> operator()(const std::vector<double>& x) {
    std::vector<double> r = p_.residuals(x);
    ++evaluations_;
    if (evaluations_ == 1) observations_ = r.size();
    if (r.size() != observations_) {
      throw std::invalid_argument(fmt::format("least squares: the residuals changed in number from {} to {}",
                                              observations_, r.size()));
    }
    return r;
  }
  [[nodiscard]] int evaluations() const { return evaluations_; }

 private:
  const FitProblem& p_;
  int evaluations_ = 0;
  std::size_t observations_ = 0;
};

// x = lo + (hi - lo) (1 + sin u) / 2 maps every u into [lo, hi] smoothly, so an unbounded solver respects the
// bounds. u sits near 2 pi rather than 0 because MINPACK's step test is relative to |u|: for a parameter in the
// middle of its range (u = 0) it could not be met.
class BoundsTransform {
 public:
  explicit BoundsTransform(const FitProblem& p) : lo_(p.lower), hi_(p.upper) {}

  /** @brief The parameter values at `u`, clamped against rounding past a bound. */
  [[nodiscard]] std::vector<double> to_x(const Eigen::VectorXd& u) const {
    std::vector<double> x(lo_.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double v = lo_[i] + (hi_[i] - lo_[i]) * (1.0 + std::sin(u(static_cast<Index>(i)))) / 2.0;
      x[i] = std::clamp(v, lo_[i], hi_[i]);
    }
    return x;
  }
  /** @brief A u for `x`; values within 1% of the range from a bound start 1% inside, since on the bound the
   *  map's slope is zero and the solver could never leave it. */
  [[nodiscard]] Eigen::VectorXd to_u(const std::vector<double>& x) const {
    Eigen::VectorXd u(static_cast<Index>(x.size()));
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double t = std::clamp(2.0 * (x[i] - lo_[i]) / (hi_[i] - lo_[i]) - 1.0, -0.98, 0.98);
      u(static_cast<Index>(i)) = 2.0 * std::numbers::pi + std::asin(t);
    }
    return u;
  }

 private:
  std::vector<double> lo_, hi_;
};

// The functor Eigen's LevenbergMarquardt expects (copied by it, hence the pointers), with its own Jacobian.
struct TransformedResiduals {
  using Scalar = double;
  using InputType = Eigen::VectorXd;
  using ValueType = Eigen::VectorXd;
  using JacobianType = Eigen::MatrixXd;
  enum { InputsAtCompileTime = Eigen::Dynamic, ValuesAtCompileTime = Eigen::Dynamic };

  CountedResiduals* residuals;
  const BoundsTransform* transform;
  Index parameters;
  Index observations;
  double step;  ///< df's difference step in u (used where the problem sets one)

  [[nodiscard]] Index inputs() const { return parameters; }
  [[nodiscard]] Index values() const { return observations; }
  /** @brief Residuals at `u`; -1 (MINPACK's "stop") when one is not finite. */
  int operator()(const Eigen::VectorXd& u, Eigen::VectorXd& out) const {
    const std::vector<double> r = (*residuals)(transform->to_x(u));
    out = Eigen::Map<const Eigen::VectorXd>(r.data(), static_cast<Index>(r.size()));
    return out.allFinite() ? 0 : -1;
  }
  /** @brief d r / d u by central differences of `step` in u (the problem's difference step). */
  int df(const Eigen::VectorXd& u, Eigen::MatrixXd& jac) const {
    Eigen::VectorXd a = u, b = u, ra(observations), rb(observations);
    for (Index j = 0; j < parameters; ++j) {
      a(j) = u(j) + step;
      b(j) = u(j) - step;
      if ((*this)(a, ra) != 0 || (*this)(b, rb) != 0) return -1;
      jac.col(j) = (ra - rb) / (2.0 * step);
      a(j) = b(j) = u(j);
    }
    return 0;
  }
};

double rms(const std::vector<double>& r) {
  double sum = 0.0;
  for (double v : r) sum += v * v;
  return std::sqrt(sum / static_cast<double>(r.size()));
}

void check(const FitProblem& p) {
  const std::size_t n = p.names.size();
  if (n == 0) throw std::invalid_argument("least squares: no parameters to fit");
  if (p.initial.size() != n || p.lower.size() != n || p.upper.size() != n) {
    throw std::invalid_argument(fmt::format("least squares: {} names but {} initial values, {} lower and {} upper bounds",
                                            n, p.initial.size(), p.lower.size(), p.upper.size()));
  }
  if (!p.residuals) throw std::invalid_argument("least squares: no residual function");
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(p.lower[i]) || !std::isfinite(p.upper[i]) || !(p.lower[i] < p.upper[i])) {
      throw std::invalid_argument(fmt::format("least squares: {}: expected finite bounds lower < upper, got [{}, {}]",
                                              p.names[i], p.lower[i], p.upper[i]));
    }
    if (!(p.initial[i] >= p.lower[i] && p.initial[i] <= p.upper[i])) {
      throw std::invalid_argument(fmt::format("least squares: {}: initial value {} outside [{}, {}]", p.names[i],
                                              p.initial[i], p.lower[i], p.upper[i]));
    }
  }
}

std::string status_message(lm_status::Status s) {
  using enum lm_status::Status;
  switch (s) {
    case RelativeReductionTooSmall: return "converged: the sum of squares stopped decreasing";
    case RelativeErrorTooSmall: return "converged: the parameters stopped changing";
    case RelativeErrorAndReductionTooSmall: return "converged: the sum of squares and the parameters stopped changing";
    case CosinusTooSmall: return "converged: the residuals are orthogonal to the Jacobian";
    case FtolTooSmall:
    case XtolTooSmall:
    case GtolTooSmall: return "converged to machine precision";
    case TooManyFunctionEvaluation: return "not converged: too many evaluations";
    case UserAsked: return "not converged: the residuals are not finite near the last values";
    default: return "not converged: improper input to the solver";
  }
}

bool converged(lm_status::Status s) {
  using enum lm_status::Status;
  return s == RelativeReductionTooSmall || s == RelativeErrorTooSmall || s == RelativeErrorAndReductionTooSmall ||
         s == CosinusTooSmall || s == FtolTooSmall || s == XtolTooSmall || s == GtolTooSmall;
}

// The Jacobian d r / d x at `x` by central differences of the problem's step (a fraction of each range), one-sided
// inward where a step would leave the range (the model may not be defined outside it).
Eigen::MatrixXd jacobian(const FitProblem& p, CountedResiduals& residuals, const std::vector<double>& x,
                         const std::vector<double>& r) {
  const auto n = static_cast<Index>(r.size());
  Eigen::MatrixXd j(n, static_cast<Index>(x.size()));
  const Eigen::Map<const Eigen::VectorXd> r0(r.data(), n);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double h = (p.difference_step > 0.0 ? p.difference_step : kSmoothDifference) * (p.upper[i] - p.lower[i]);
    std::vector<double> a = x, b = x;
    const bool up = x[i] + h <= p.upper[i], down = x[i] - h >= p.lower[i];
    if (up) a[i] += h;
    if (down) b[i] -= h;
    const std::vector<double> ra = up ? residuals(a) : r, rb = down ? residuals(b) : r;
    j.col(static_cast<Index>(i)) = (Eigen::Map<const Eigen::VectorXd>(ra.data(), n) -
                                    Eigen::Map<const Eigen::VectorXd>(rb.data(), n)) / (a[i] - b[i]);
  }
  return j;
}

// 1-sigma errors from s^2 (J^T J)^-1. Columns are normalised first so the rank test does not depend on the
// parameters' units; a parameter with a part in the null space of J (no effect, or one shared with another
// parameter) cannot be determined from these observations and gets +inf, as do all when n = p leaves no
// degree of freedom to estimate s^2.
std::vector<double> standard_errors(const Eigen::MatrixXd& j, const std::vector<double>& r) {
  const auto p = static_cast<std::size_t>(j.cols());
  std::vector<double> out(p, kInf);
  const Index dof = j.rows() - j.cols();
  if (dof <= 0) return out;
  double ssr = 0.0;
  for (double v : r) ssr += v * v;
  const double s2 = ssr / static_cast<double>(dof);
  const Eigen::VectorXd norms = j.colwise().norm();
  if (!norms.allFinite()) return out;
  Eigen::MatrixXd js = j;
  for (Index c = 0; c < j.cols(); ++c) {
    if (norms(c) > 0.0) js.col(c) /= norms(c);
  }
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(js.transpose() * js);
  const Eigen::VectorXd& lambda = eig.eigenvalues();  // ascending
  const Eigen::MatrixXd& v = eig.eigenvectors();
  const double floor = 1e-10 * lambda(lambda.size() - 1);
  for (std::size_t i = 0; i < p; ++i) {
    const auto row = static_cast<Index>(i);
    if (!(norms(row) > 0.0)) continue;
    double var = 0.0;
    bool identifiable = true;
    for (Index k = 0; k < lambda.size(); ++k) {
      if (lambda(k) > floor) {
        var += v(row, k) * v(row, k) / lambda(k);
      } else if (std::fabs(v(row, k)) > 1e-6) {
        identifiable = false;
      }
    }
    if (identifiable) out[i] = std::sqrt(s2 * var) / norms(row);
  }
  return out;
}

}  // namespace

FitResult fit_least_squares(const FitProblem& p) {
  check(p);
  CountedResiduals residuals(p);
  const std::vector<double> r0 = residuals(p.initial);
  if (r0.size() < p.names.size()) {
    throw std::invalid_argument(fmt::format("least squares: {} observations cannot determine {} parameters",
                                            r0.size(), p.names.size()));
  }
  if (!std::all_of(r0.begin(), r0.end(), [](double v) { return std::isfinite(v); })) {
    throw std::invalid_argument("least squares: the residuals at the initial values are not finite");
  }

  FitResult out;
  out.rms_before = rms(r0);
  out.values = p.initial;
  if (out.rms_before == 0.0) {
    out.converged = true;
    out.message = "converged: the initial values fit exactly";
  } else {
    const BoundsTransform transform(p);
    // x = lo + (hi - lo) (1 + sin u) / 2 moves by about a fraction s of its range for a step of 2 s in u.
    TransformedResiduals f{&residuals, &transform, static_cast<Index>(p.names.size()), static_cast<Index>(r0.size()),
                           2.0 * p.difference_step};
    Eigen::VectorXd u = transform.to_u(p.initial);
    const auto minimise = [&](auto& lm) {
      lm.parameters.xtol = 1e-10;
      lm.parameters.ftol = 1e-10;
      lm.parameters.maxfev = 400 * (f.parameters + 1);
      return lm.minimize(u);
    };
    lm_status::Status status;
    if (p.difference_step > 0.0) {
      Eigen::LevenbergMarquardt<TransformedResiduals> lm(f);
      status = minimise(lm);
    } else {
      // Smooth residuals: MINPACK's own step (the square root of the machine epsilon, relative to u).
      Eigen::NumericalDiff<TransformedResiduals, Eigen::Central> diff(f);
      Eigen::LevenbergMarquardt<Eigen::NumericalDiff<TransformedResiduals, Eigen::Central>> lm(diff);
      status = minimise(lm);
    }
    out.values = transform.to_x(u);
    out.converged = converged(status);
    out.message = status_message(status);
  }

  const std::vector<double> r = residuals(out.values);
  out.rms_after = rms(r);
  out.std_errors = standard_errors(jacobian(p, residuals, out.values, r), r);
  for (std::size_t i = 0; i < out.values.size(); ++i) {
    const double tol = 1e-6 * (p.upper[i] - p.lower[i]);
    out.at_bound.push_back(out.values[i] - p.lower[i] <= tol || p.upper[i] - out.values[i] <= tol);
  }
  if (r.size() == p.names.size()) out.message += "; as many observations as parameters leave their errors unknown";
  out.evaluations = residuals.evaluations();
  return out;
}

}  // namespace shardsim::validate
