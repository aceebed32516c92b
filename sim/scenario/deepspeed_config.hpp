#pragma once
// Reads the ZeRO part of a real DeepSpeed configuration (ds_config.json) as overrides of a scenario's plan:
// zero_optimization.{stage, overlap_comm, reduce_scatter, use_multi_rank_bucket_allreduce, reduce_bucket_size,
// allgather_bucket_size, stage3_prefetch_bucket_size, stage3_max_live_parameters, stage3_param_persistence_threshold,
// zero_quantized_weights, zero_hpz_partition_size, zero_quantized_gradients, mics_shard_size} and train_batch_size /
// train_micro_batch_size_per_gpu. DeepSpeed bucket sizes and thresholds count elements; they become bytes at 2 bytes
// per element (fp16/bf16 buckets).
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "sim/core/errors.hpp"

namespace shardsim::scenario {

struct PlanOverride {
  std::string plan_key;        ///< key under plan: ("zero_stage")
  YAML::Node value;            ///< the value, as the scenario file would write it ("1GB")
  core::SourceLocation where;  ///< the DeepSpeed file
  std::string source_key;      ///< the DeepSpeed key path ("zero_optimization.stage")
};

struct DeepSpeedPlan {
  std::vector<PlanOverride> overrides;
  std::vector<std::string> ignored;  ///< ZeRO keys shardsim does not model (reported to the user)
};

/** @brief Parses DeepSpeed JSON `text` (named `file` in messages). Throws core::ConfigError. */
DeepSpeedPlan parse_deepspeed_config(const std::string& text, const std::string& file);
/** @brief Reads and parses the file at `path`. */
DeepSpeedPlan load_deepspeed_config(const std::string& path);

}  // namespace shardsim::scenario
