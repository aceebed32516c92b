#pragma once
// Collective benchmarks users already have, as calibration input: nccl-tests / rccl-tests output (their standard
// table: size, count, type, redop, root, then time, algbw, busbw, #wrong out of place and in place; ranks from
// the "# Rank" lines), the same measurements as CSV (size(B), count, type, time(ns), busbw(GB/s), ...: the
// layout of vTrain's all-reduce tables) and the collectives a DeepSpeed run timed (its comms logger's lines). fit_collectives() fits the named network parameters so that the
// model's own collective cost (engine/collective_cost.hpp, with the algorithm `auto` picks) matches the
// measured times.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/plan_spec.hpp"

#include "sim/graph/task_graph.hpp"
#include "validate/run_fit.hpp"

namespace shardsim::validate {

struct CollectiveSample {
  graph::CollectiveOp op = graph::CollectiveOp::kAllReduce;
  int ranks = 0;
  double bytes = 0.0;    ///< the size column: shardsim's payload convention (all-gather: the full output)
  double seconds = 0.0;  ///< out-of-place time
  std::string where;     ///< file:line
  /// what the run forced (NCCL_ALGO, NCCL_PROTO), from the file's `# shardsim:` line; auto / the machine's
  core::CollectiveAlgorithm algorithm = core::CollectiveAlgorithm::kAuto;
  std::optional<std::array<bool, 3>> protocols;
  bool check = false;  ///< held out: reported, not fitted (a file marked role=check)
  /// ranks the run placed on each node (the `# shardsim:` line's per_node=); 0: nodes filled, as nccl-tests'
  /// one-process-per-GPU launch fills them
  int per_node = 0;
  /// the NCCL version the run used (the `# shardsim:` line's nccl=2.x), as its minor; 0: the machine's
  int nccl_minor = 0;
  std::string device;  ///< the GPU nccl-tests' "# Rank" lines name, where they do
};

/** @brief The group a sample's run formed on `cluster`: `s.ranks` ranks, `s.per_node` on each node (every
 *  devices_per_node / per_node-th device), or nodes filled. Precondition: per_node divides devices_per_node. */
graph::GroupShape sample_group_shape(const core::ClusterSpec& cluster, int ranks, int per_node);
/** @brief The devices the nodes of such a run hold (ranks / per_node whole nodes, or the ranks themselves). */
long long sample_devices(const core::ClusterSpec& cluster, int ranks, int per_node);

/** @brief Reads one benchmark output: nccl-tests / rccl-tests output, a CSV of vTrain's layout, or DeepSpeed's
 *  communication log (its comms_logger's verbose "comm op: NAME | time (ms): T | msg size: S UNIT" lines, each
 *  size's calls taken at their median time, or its summary table's averages, the straggler table's where there is
 *  one; an all-gather's logged size is one rank's share). Its collective:
 *  `op` (required for CSV and DeepSpeed logs), or, in nccl-tests output, the test each "# Collective test starting:
 *  NAME_perf" line names (a log of several tests gives each its own; one that contradicts `op` is an error; tests
 *  shardsim does not model, such as broadcast_perf, are skipped and listed in `skipped`). Its ranks: `ranks` > 0
 *  (required for CSV and DeepSpeed logs), else each test's "# Rank" lines, and where those name more than one
 *  host, the ranks on each (per_node; uneven hosts are an error); `per_node` > 0 places them so whatever the file
 *  says. Throws core::ConfigError naming the file and line of anything it cannot read. */
std::vector<CollectiveSample> load_collective_samples(const std::string& path, std::optional<graph::CollectiveOp> op,
                                                     int ranks, std::vector<std::string>* skipped = nullptr,
                                                     int per_node = 0);
/** @brief The same on the file's `text` (named `path` in messages). */
std::vector<CollectiveSample> parse_collective_samples(const std::string& text, const std::string& path,
                                                       std::optional<graph::CollectiveOp> op, int ranks,
                                                       std::vector<std::string>* skipped = nullptr,
                                                       int per_node = 0);

/** @brief The collective named as nccl-tests names its binaries: all_reduce, all_gather, reduce_scatter,
 *  alltoall, sendrecv. Throws core::ConfigError listing them. */
graph::CollectiveOp parse_collective_op(const std::string& name);

/** @brief Fits `names` (network parameters of `machine`'s cluster) to the samples not marked `check`, each group
 *  laid on consecutive ranks from rank 0, with what each run forced. Reported like fit_runs: the errors before and
 *  after on the fitted samples and on the held-out ones. */
RunFit fit_collectives(const std::vector<CollectiveSample>& samples, const scenario::Scenario& machine,
                       const std::vector<std::string>& names);

}  // namespace shardsim::validate
