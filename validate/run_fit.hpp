#pragma once
// Fitting model parameters to measured runs (`shardsim calibrate --runs / --set`): each observation is a scenario
// with one measured metric; the chosen parameters of model_parameters.hpp are fitted by bounded least squares
// on the observations marked fit, and the error before and after is reported on those and on the held-out
// (check) observations, which the fit never sees.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "validate/calibration.hpp"
#include "validate/least_squares.hpp"
#include "validate/validation_set.hpp"

namespace shardsim::validate {

struct Observation {
  std::string id;  ///< "set/row" or "runs.csv:line"
  scenario::Scenario scenario;
  Metric metric = Metric::kIterationTime;
  double measured = 0.0;
  bool held_out = false;  ///< a check observation: its error is reported, it is never fitted
};

/** @brief Observations from a runs CSV with columns `scenario` (a scenario file without sweep, relative to the CSV)
 *  or `row` (SET/ROW of the validation sets in `data_dir`), `metric`, `measured` (durations and memory with
 *  their unit: "3.5s", "16GB"), and optionally `id` and `role` (fit or check; default fit). Throws
 *  core::ConfigError naming the file, line and column. */
std::vector<Observation> load_runs(const std::string& path, const std::string& data_dir);
/** @brief Every numeric row x metric of `set` that the model does not refuse: fitted when the set's role is fit,
 *  held out when it is check. */
std::vector<Observation> observations_of(const ValidationSet& set);

struct ErrorStats {
  int count = 0;
  int refused = 0;
  double mean_abs = 0.0;
  double bias = 0.0;
};

/** @brief Signed relative errors of `predicted` against `measured` (same length); nullopt: refused. */
ErrorStats error_stats(const std::vector<std::optional<double>>& predicted, const std::vector<double>& measured);

/** @brief The errors of one group of runs (a validation set, or a runs file) before and after a fit. */
struct GroupFit {
  std::string group;  ///< the set id ("set" of "set/row" ids) or the runs file
  bool held_out = false;
  ErrorStats before, after;
};

struct RunFit {
  std::vector<std::string> names, units, sources;
  std::vector<double> initial, lower, upper;
  FitResult fit;
  ErrorStats fit_before, fit_after, check_before, check_after;
  std::vector<FittedMachine> machines;  ///< the fitted runs' machines, sorted, each once
  /// per set (or runs file), fitted ones first, in the order the runs came: where the fit helps and where it hurts
  std::vector<GroupFit> groups;
};

/** @brief Appends to f.groups the errors before and after of `obs` (predictions `before`, `after`), one entry per
 *  set or runs file, in the order they first appear. */
void add_groups(RunFit& f, const std::vector<const Observation*>& obs, const std::vector<std::optional<double>>& before,
                const std::vector<std::optional<double>>& after, bool held_out);

/** @brief Bounded least squares of log(predicted / measured) over f.names from f.initial within [f.lower, f.upper]
 *  (set by the caller); `predict` gives one value per measurement for parameter values x (nullopt: the model
 *  refuses it, counted as a factor-e miss). Fills f.fit only: the caller, which knows which rows it reports (a fit
 *  to runs reports the refused ones too) and may hold their predictions already, fills the errors before and after.
 *  `difference_step`: FitProblem::difference_step (0 for smooth predictions). */
void fit_log_ratio(RunFit& f, const std::function<std::vector<std::optional<double>>(const std::vector<double>&)>& predict,
                   const std::vector<double>& measured, double difference_step = 0.0);

/// The Jacobian's difference step of a fit to training runs, a fraction of each parameter's range. A run's predicted
/// time jumps where a GEMM gains or loses a wave, a library switches protocol or a task moves past another (until the
/// analytical engine ran slowed compute as events it also jumped by up to ~0.3% where the passes that found the
/// slowdown stopped). A step of 1% of the range reads the slope across those jumps.
inline constexpr double kScheduleDifferenceStep = 1e-2;

/** @brief Fits `names` on the fit observations (residual: log(predicted / measured), so that 2x too slow and 2x
 *  too fast weigh the same) with `threads` workers (0: one per core). Throws core::ConfigError when a name is
 *  no parameter of the observations' machines, or when there are fewer fit observations than parameters. */
RunFit fit_runs(const std::vector<Observation>& observations, const std::vector<std::string>& names,
                engine::EngineKind engine, int threads = 0);
/** @brief The fitted values, their uncertainty and the errors before and after, as a table. */
std::string render_run_fit(const RunFit& f);
/** @brief A calibration file's content with the fitted parameters. */
Calibration run_fit_calibration(const RunFit& f);

}  // namespace shardsim::validate
