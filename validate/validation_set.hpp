#pragma once
// Validation sets: published measurements of real training runs, each row a scenario (model, machine, plan)
// with what was measured and where it was published. A set is one YAML file under validate/data/:
//
//   set: amsp-v2                      # id
//   role: check                       # fit: may be used to choose model parameters; check: never
//   title: ...   source: ...          # the publication (paper + table/section, or repository@commit:path)
//   assumptions: [...]                # inputs the source does not state, decided once for the whole set
//   base: {model: ..., cluster: ..., plan: ...}   # a scenario that every row changes
//   rows:                             # inline rows: the keys they change, what was measured, where
//     - {id: zero1-7b-8, keys: {model: llama-7b, plan.zero_stage: 1}, measured: {mfu: 0.63}, cite: "Sec. VI-B"}
//   table:                            # or rows from a CSV file: column -> key path, or -> a measured metric
//     {file: x.csv, id: "{row}", columns: {"# GPUs": devices, "iteration time (ms)": iteration_time_ms}}
//   claims:                           # statements about several rows: ratios, orderings, out of memory
//     - {id: ..., ratio: [row-a, row-b], metric: mfu, measured: 11.8, cite: ...}
//     - {id: ..., order: [row-a, row-b, ...], metric: mfu, cite: ...}      # best first
//
// A metric measured more than once (runs of the same case on fresh machines) is a list of its runs,
// `forward_time: [31.27ms, 38.75ms]`: the row compares against their median and reports where the prediction
// falls against the runs' range (a check row's error means little inside its own run-to-run spread).
//
// Metrics: iteration_time, mfu, hfu, tflops_per_gpu, hw_tflops_per_gpu, tokens_per_gpu_s, samples_per_s, forward_time,
// backward_time, step_time (phase spans of one iteration), backward_reduce_time (of the backward, the epilogue
// after the pass that DeepSpeed's ZeRO optimizers run, the last bucket's reduction and copies and the wait for
// them: DeepSpeed's bwd_allreduce timer; DeepSpeed ZeRO plans without pipelines only), host_iteration_time (a loop
// timed by time.time() around forward, backward and step with no device synchronisation before the clock stops: until
// the host returns from its last call, the device's queued tail not counted), memory (peak bytes per device) and fits (a run that
// did or did not fit in memory). A row without measurements serves claims only.
#include <optional>
#include <string>
#include <vector>

#include "sim/core/errors.hpp"
#include "sim/scenario/scenario.hpp"

namespace shardsim::validate {

enum class Metric {
  kIterationTime,
  kMfu,
  kHfu,
  kTflopsPerGpu,
  kHwTflopsPerGpu,
  kTokensPerGpuPerS,
  kSamplesPerS,  ///< the whole job's samples (sequences) per second
  kForwardTime,
  kBackwardTime,
  kStepTime,
  kBackwardReduceTime,  ///< of the backward, its epilogue: DeepSpeed's bwd_allreduce timer
  /// the iteration as a host clock times it without synchronising the device at its end: from its start (the device
  /// idle) to the return of the framework's last host call, the work still queued on the device after it not counted
  /// (for frameworks that wait for the device inside the iteration, as DeepSpeed's step() does: engine::host_returns_s)
  kHostIterationTime,
  kMemory,
  kFits,
  kCount
};

/** @brief The metric's key in set files ("iteration_time"). */
std::string_view metric_key(Metric m);
/** @brief True for metrics that are durations (given with a unit in set files). */
bool is_duration(Metric m);
/** @brief True for metrics predicted from the iteration's task timings (phase spans, the host's last work). */
bool needs_timings(Metric m);
/** @brief The metric a set file's key names, if any. */
std::optional<Metric> metric_from_key(std::string_view key);

struct Measured {
  Metric metric = Metric::kIterationTime;
  double value = 0.0;  ///< seconds for durations; fractions for mfu/hfu; TFLOP/s; tokens/s; bytes; 1/0 for fits
  /// each run, where the source measured the case more than once (value is their median); empty otherwise
  std::vector<double> runs;
};

struct Row {
  std::string id;
  std::string cite;
  std::vector<Measured> measured;
  core::SourceLocation where;
  /// the row's scenario; empty when the model refused its inputs (then `refused` says why)
  std::optional<scenario::Scenario> scenario;
  std::string refused;
  /// the set's base and the row's changes to it, from which scenario_yaml writes the row as a scenario file
  std::optional<scenario::ConfigNode> base;
  std::vector<std::pair<std::string, scenario::ConfigNode>> changes;
};

/** @brief The row's scenario as the YAML of a scenario file (named `set/row`) that `shardsim run` runs as the
 *  validation runs it. Throws core::ConfigError for a row whose keys the model refused. */
std::string scenario_yaml(const Row& row, const std::string& set_id);

struct Claim {
  enum class Kind { kRatio, kOrder };
  std::string id;
  std::string cite;
  Kind kind = Kind::kRatio;
  Metric metric = Metric::kMfu;
  std::vector<std::string> rows;  ///< ratio: numerator, denominator; order: best first
  double measured = 0.0;          ///< ratio only
  core::SourceLocation where;
};

struct ValidationSet {
  std::string id;
  std::string role;  ///< "fit" or "check"
  std::string title;
  std::string source;
  std::string file;
  std::vector<std::string> assumptions;
  std::vector<Row> rows;
  std::vector<Claim> claims;
};

/** @brief The q-quantile of `v` (0 <= q <= 1), interpolating linearly between neighbours; 0 for none. q = 0.5 is the
 *  median a row takes of its runs (the mean of the middle two of an even count). */
double percentile(std::vector<double> v, double q);

/** @brief Parses one set file's text (`file` names it; relative paths resolve against its folder). Rows whose
 *  scenario the model refuses are kept with the reason; everything else that is wrong (unknown keys, a
 *  measured value without its unit, a claim naming an unknown row) throws core::ConfigError. */
ValidationSet parse_validation_set(const std::string& text, const std::string& file);
/** @brief Reads a set file. */
ValidationSet load_validation_set(const std::string& path);
/** @brief The set files in `dir` (*.yaml), sorted by name. */
std::vector<std::string> validation_set_files(const std::string& dir);
/** @brief Every set in `dir`, in file-name order. */
std::vector<ValidationSet> load_validation_sets(const std::string& dir);

}  // namespace shardsim::validate
