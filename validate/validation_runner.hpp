#pragma once
// Runs validation sets: every row's scenario through the engine, predicted next to measured with the signed
// relative error, claims (ratios between rows, orderings) checked, and per set the statistics that say where
// the model stands: count, mean and max |error|, bias (mean signed error), the 10th-90th percentile band.
#include <nlohmann/json.hpp>

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
  bool holds = false;                         ///< order: the predicted order is the published one
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
};

struct ValidationReport {
  std::string engine;
  std::vector<RowResult> rows;
  std::vector<ClaimResult> claims;
  std::vector<SetSummary> sets;
};

/** @brief "<cluster> / <family>" for a scenario: the machine and the kind of plan (data-parallel ZeRO family, 3D with
 *  tensor/pipeline parallelism, CPU offload) whose error a validation set measures. */
std::string coverage_key(const scenario::Scenario& s);

/** @brief Evaluates every row of `sets` on `engine` ("analytical" or "simgrid") with `threads` workers (0: one per
 *  core); results are in set and row order whatever the thread count. */
ValidationReport run_validation(const std::vector<ValidationSet>& sets, const std::string& engine, int threads = 0);

/** @brief The per-set summary table; with `rows`, every row and claim before it. */
std::string render_validation(const ValidationReport& r, bool rows);
/** @brief Rows, claims and summaries as JSON. */
nlohmann::ordered_json validation_to_json(const ValidationReport& r);
/** @brief One line per row x metric (set, id, metric, measured, predicted, error, refused). */
std::string validation_to_csv(const ValidationReport& r);

}  // namespace shardsim::validate
