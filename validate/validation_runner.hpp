#pragma once
// Runs validation sets: every row's scenario through the engine, predicted next to measured with the signed
// relative error, claims (ratios between rows, orderings) checked, and per set the statistics that say where
// the model stands: count, mean and max |error|, bias (mean signed error), the 10th-90th percentile band.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "sim/engine/analytical_engine.hpp"
#include "validate/validation_set.hpp"

namespace shardsim::validate {

struct RowResult {
  std::string set;
  std::string id;
  Metric metric = Metric::kIterationTime;
  double measured = 0.0;
  double predicted = 0.0;
  double error = 0.0;    ///< (predicted - measured) / measured; fits: 0 when the verdicts agree, 1 when not
  std::vector<double> runs;  ///< each run where the case was measured more than once (measured is their median)
  std::string refused;   ///< why the model gives no prediction (unsupported input, does not fit although it ran)
  std::string family;    ///< what the row exercises: "<cluster> / <strategy family>" (see coverage_key)
  std::string cite;
};

struct ClaimResult {
  std::string set;
  std::string id;
  Claim::Kind kind = Claim::Kind::kRatio;
  Metric metric = Metric::kMfu;
  double measured = 0.0;   ///< ratio
  double predicted = 0.0;  ///< ratio
  double error = 0.0;      ///< ratio: signed relative error
  std::vector<std::string> measured_order;   ///< order: as published
  std::vector<std::string> predicted_order;  ///< order: as predicted
  bool holds = false;  ///< order: as published; ratio: within 25%, and half to twice a published effect of 10% or more
  std::string refused;
  std::string cite;
};

struct SetSummary {
  std::string set;
  std::string role;
  std::string title;
  int compared = 0;   ///< numeric comparisons (row x metric)
  int refused = 0;    ///< row x metric the model gave no prediction for
  int fits_checks = 0;
  int fits_wrong = 0;
  double mean_abs = 0.0;
  double max_abs = 0.0;
  double bias = 0.0;
  double p10 = 0.0;  ///< 10th percentile of the signed error
  double p90 = 0.0;  ///< 90th percentile of the signed error
  int claims = 0;
  int claims_refused = 0;
  int repeated = 0;       ///< compared rows measured in two or more runs
  int inside_runs = 0;    ///< of those, predictions within the runs' range
  double run_spread = 0.0;  ///< mean over those of the runs' range over their median
};

/** @brief The runs' range over their median ((max - min) / median; 0 without runs). */
double run_spread(const RowResult& r);
/** @brief Whether the prediction lies within the range of the row's runs (false without runs). */
bool inside_runs(const RowResult& r);

struct ValidationReport {
  engine::EngineKind engine = engine::EngineKind::kAnalytical;
  std::vector<RowResult> rows;
  std::vector<ClaimResult> claims;
  std::vector<SetSummary> sets;
};

/** @brief "<cluster> / <family>" for a scenario: the machine and the kind of plan (data-parallel ZeRO family, 3D with
 *  tensor/pipeline parallelism, CPU offload) whose error a validation set measures. */
std::string coverage_key(const scenario::Scenario& s);

/** @brief The model's value of `metric` for `s` on `engine`, or nullopt (with the reason in `why`) when it gives
 *  none: the plan does not fit although it ran, or cannot be carried out. */
std::optional<double> predict_metric(const scenario::Scenario& s, Metric metric, engine::EngineKind engine,
                                     std::string* why = nullptr);

/** @brief Evaluates every row of `sets` on `engine` with `threads` workers (0: one per
 *  core); results are in set and row order whatever the thread count. */
/** @brief Whether a ratio claim measured at `measured` holds for a predicted `predicted`: within 25%, and where the
 *  published ratio is an effect of 10% or more either way, showing half to twice that effect by log ratio. */
bool ratio_claim_holds(double measured, double predicted);

ValidationReport run_validation(const std::vector<ValidationSet>& sets, engine::EngineKind engine, int threads = 0);

/** @brief How far a set's predictions of one kind of run were off, as iteration-time errors: a throughput
 *  (MFU, TFLOPS, tokens/s) predicted x too high is a time predicted 1/x too short. */
struct ErrorBand {
  std::string set;
  std::string role;
  std::string covers;  ///< coverage_key of the rows
  int runs = 0;
  double p10 = 0.0;
  double p90 = 0.0;
  double bias = 0.0;  ///< mean
};

/** @brief One band per set and coverage key, from the report's numeric rows (memory rows excluded). */
std::vector<ErrorBand> error_bands(const ValidationReport& r);
/** @brief The bands as YAML (what `shardsim validate --write-bands` writes beside the sets). */
std::string write_error_bands(const std::vector<ErrorBand>& bands);
/** @brief Strict reader of write_error_bands' output. Throws core::ConfigError. */
std::vector<ErrorBand> parse_error_bands(const std::string& text, const std::string& file);
/** @brief What a prediction for `s` can claim: the bands of the sets that cover its machine and kind of plan
 *  ("validated on vtrain-multi (check, 109 runs): iteration time -25%..+9% (p10..p90)"), or that none does. */
std::string describe_validation(const scenario::Scenario& s, const std::vector<ErrorBand>& bands);

/** @brief The optimizer step's share of an iteration, step / (forward + backward + step), where a row measures
 *  all three phases (the offload studies' characterisation): per set, how far the predicted share is from the
 *  measured one, in percentage points. */
struct StepShare {
  std::string set;
  int rows = 0;
  double mean_abs_points = 0.0;
  double max_abs_points = 0.0;
  double bias_points = 0.0;
};
std::vector<StepShare> step_shares(const ValidationReport& r);

/** @brief The value of axis `axis` for a row that measures `metric` on scenario `s`, as it is printed. The axes: the
 *  plan's and the machine's (cluster, nodes, devices, device, framework, family, dp, tp, pp, zero_stage,
 *  micro_batch, global_batch, recompute), the model's shape (model, layers, hidden, heads, seq_len) and the metric
 *  (`shardsim validate --by`). Throws std::invalid_argument naming the axes for an unknown one. */
std::string axis_value(const scenario::Scenario& s, Metric metric, std::string_view axis);
/** @brief Throws std::invalid_argument, naming the axes, unless `axis` is one of axis_value's. */
void check_group_axis(std::string_view axis);

/** @brief The signed errors of one set's numeric rows (memory and fits rows left out) that share their values of
 *  the grouping axes. */
struct ErrorGroup {
  std::string set;
  std::vector<std::string> values;  ///< one per axis, in the order asked
  int rows = 0;
  double mean_abs = 0.0;
  double bias = 0.0;
  double min = 0.0;
  double max = 0.0;
};
/** @brief The report's numeric rows grouped per set by the values of `axes` (each one of axis_value's), the groups in
 *  order of their values (numbers as numbers). A set's structured residual shows here: the error of a kind of run
 *  that the rest of its set does not share. Throws std::invalid_argument for an unknown axis. */
std::vector<ErrorGroup> group_errors(const ValidationReport& r, const std::vector<ValidationSet>& sets,
                                     const std::vector<std::string>& axes);
std::string render_error_groups(const std::vector<ErrorGroup>& groups, const std::vector<std::string>& axes);
nlohmann::ordered_json error_groups_to_json(const std::vector<ErrorGroup>& groups, const std::vector<std::string>& axes);

/** @brief The per-set summary table (and the step shares where sets measure phases); with `rows`, every row and
 *  claim before it. */
std::string render_validation(const ValidationReport& r, bool rows);
/** @brief Rows, claims and summaries as JSON. */
nlohmann::ordered_json validation_to_json(const ValidationReport& r);
/** @brief One line per row x metric (set, id, metric, measured, predicted, error, refused). */
std::string validation_to_csv(const ValidationReport& r);

}  // namespace shardsim::validate
