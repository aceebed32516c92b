#pragma once
// Published collective benchmarks held against the collective library model (validate/data/collectives/):
// nccl-tests output whose line `# shardsim: cluster=PRESET|FILE.yaml op=OP ranks=N [algorithm=A] [protocols=P,...]
// [role=fit|check]` names the machine (a preset, or a scenario file beside it whose cluster is the machine), what the run forced (NCCL_ALGO, NCCL_PROTO) and whether a preset's network
// parameters were fitted to it. Each row is predicted with
// engine::estimate_collective on that preset, the group laid on consecutive ranks from rank 0.
#include <array>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/cluster_spec.hpp"
#include "sim/core/plan_spec.hpp"
#include "validate/collective_runs.hpp"

namespace shardsim::validate {

struct CollectiveCheck {
  std::string path;
  std::string cluster;  ///< preset name, or the machine file's name as the tag gives it
  core::ClusterSpec machine;  ///< the preset, or the cluster of the scenario file the tag names (cluster=FILE.yaml)
  graph::CollectiveOp op = graph::CollectiveOp::kAllReduce;
  int ranks = 0;
  int per_node = 0;  ///< ranks on each node (per_node=), when the run did not fill the nodes; 0: filled
  core::CollectiveAlgorithm algorithm = core::CollectiveAlgorithm::kAuto;
  std::array<bool, 3> protocols{true, true, true};  ///< as NCCL_PROTO left them (all: not forced)
  bool protocols_forced = false;
  std::string source;  ///< the "# source:" line
  /// "check" (held out, the default) or "fit": what `shardsim calibrate --collectives` fits the machine's network
  /// parameters to (role=fit on the `# shardsim:` line)
  std::string role = "check";
  /// the NCCL version the run used (nccl=2.x on the `# shardsim:` line), as its minor; 0: the machine's library
  int nccl_minor = 0;
  std::vector<CollectiveSample> samples;
};

struct CollectiveCheckRow {
  double bytes = 0.0;
  double measured_s = 0.0;
  double predicted_s = 0.0;
  std::string algorithm;  ///< what the model ran ("ring", "tree")
  std::string protocol;   ///< "LL", "LL128", "Simple", or "-" (alpha-beta)
  [[nodiscard]] double error() const { return (predicted_s - measured_s) / measured_s; }
};

/** @brief Reads one benchmark file. Throws core::ConfigError (file:line) for a missing or bad `# shardsim:` line,
 *  an unknown preset or a table nccl-tests would not print. */
CollectiveCheck load_collective_check(const std::string& path);
/** @brief Whether `path` holds a `# shardsim:` line (then load_collective_check reads it). */
bool has_collective_tag(const std::string& path);
/** @brief The samples of `c` with what its run forced and its role. */
std::vector<CollectiveSample> tagged_samples(const CollectiveCheck& c);
/** @brief Every *.txt of `dir` in name order; none when `dir` does not exist. */
std::vector<CollectiveCheck> load_collective_checks(const std::string& dir);
/** @brief The model's prediction of every row of `c`. */
std::vector<CollectiveCheckRow> predict_collective_check(const CollectiveCheck& c);
/** @brief As predict_collective_check, on `cluster` (a scenario's machine, a calibration applied). */
std::vector<CollectiveCheckRow> predict_collective_check(const CollectiveCheck& c, core::ClusterSpec cluster);

/** @brief The error statistics of one file's rows (errors as fractions, signed (predicted - measured) / measured). */
struct CollectiveCheckSummary {
  std::size_t rows = 0;
  double mean_abs = 0.0;
  double max_abs = 0.0;
  double bias = 0.0;
};
CollectiveCheckSummary summarize(const std::vector<CollectiveCheckRow>& rows);

/** @brief Every file with its machine, what the run forced, its summary and every row, for `validate --json`. */
nlohmann::json collective_checks_to_json(const std::vector<CollectiveCheck>& checks);

/** @brief Per file: rows, mean and max |error|, bias; with `rows` every row (size, measured, predicted, error, what
 *  the model ran). Fixed precision: the same inputs print the same bytes. */
std::string render_collective_checks(const std::vector<CollectiveCheck>& checks, bool rows);

}  // namespace shardsim::validate
