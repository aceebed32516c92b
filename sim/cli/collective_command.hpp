#pragma once
// `shardsim collective CLUSTER`: what one collective costs on a machine, size by size, as the cluster's collective
// library would run it (algorithm, protocol, latency, bus bandwidth) - the prediction to hold against nccl-tests.
#include <string>
#include <vector>

namespace shardsim::cli {

/** @brief `shardsim collective CLUSTER [options]`; returns the exit code. Throws UsageError / ConfigError. */
int cmd_collective(const std::vector<std::string>& args);

}  // namespace shardsim::cli
