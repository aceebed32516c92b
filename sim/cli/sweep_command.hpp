#pragma once
// `shardsim sweep SCENARIO.yaml -o DIR`: every point of a scenario's sweep: axes evaluated, in parallel, each
// point's row journaled as it finishes (DIR/journal.jsonl: a crash or a kill loses at most the points in flight,
// and the same command resumes), then DIR/results.csv and DIR/results.jsonl in point order, byte-identical
// whatever the thread count or interruptions. A point that is invalid or does not fit is a row with its reason.
// `--shard i/N` takes every N-th point (Slurm job arrays); `shardsim merge DIR... -o DIR` joins the shards.
#include <string>
#include <vector>

namespace shardsim::cli {

/** @brief `shardsim sweep SCENARIO.yaml -o DIR [options]`; returns the exit code. Throws UsageError / ConfigError /
 *  report::OutputError. */
int cmd_sweep(const std::vector<std::string>& args);
/** @brief `shardsim merge DIR... -o DIR`: the shards' journals as one sweep's results. */
int cmd_merge(const std::vector<std::string>& args);

/// The columns of results.csv, in order (results.jsonl has the same keys).
const std::vector<std::string>& sweep_columns();

}  // namespace shardsim::cli
