#pragma once
// Reads the ZeRO part of a real DeepSpeed configuration (ds_config.json) as overrides of a scenario's plan:
// zero_optimization.{stage, overlap_comm, reduce_scatter, use_multi_rank_bucket_allreduce, reduce_bucket_size,
// allgather_bucket_size, stage3_prefetch_bucket_size, stage3_max_live_parameters, stage3_param_persistence_threshold,
// zero_quantized_weights, zero_hpz_partition_size, zero_quantized_gradients, mics_shard_size} and train_batch_size /
// train_micro_batch_size_per_gpu. DeepSpeed bucket sizes and thresholds count elements; they become bytes at 2 bytes
// per element (fp16/bf16 buckets). Values "auto" are resolved as the Hugging Face Trainer resolves them
// (huggingface/transformers src/transformers/integrations/deepspeed.py, HfTrainerDeepSpeedConfig): batch sizes and
// gradient accumulation from the scenario, reduce_bucket_size = h^2, stage3_prefetch_bucket_size = 0.9 h^2 and
// stage3_param_persistence_threshold = 10 h from the model's hidden size h (scenario.hpp:
// load_scenarios_with_deepspeed).
#include <optional>
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

/** @brief A value the Hugging Face Trainer fills in for "auto" from the model's hidden size h:
 *  floor(factor x h^power) elements (transformers' HfTrainerDeepSpeedConfig.trainer_config_finalize). */
struct HiddenSizeAuto {
  std::string plan_key;
  double factor = 1.0;
  int power = 1;
  std::string source_key;
};

struct DeepSpeedPlan {
  std::string file;
  std::vector<PlanOverride> overrides;
  std::vector<std::string> ignored;  ///< keys DeepSpeed has that shardsim does not model (reported to the user)
  std::vector<HiddenSizeAuto> hidden_size_auto;
  /// values the scenario must agree with (a conflict is an error, not a silent override)
  std::optional<long long> gradient_accumulation_steps;
  std::optional<bool> bf16, fp16;  ///< bf16.enabled / fp16.enabled when given as true or false
};

/** @brief Parses DeepSpeed JSON `text` (named `file` in messages). Throws core::ConfigError: for a key DeepSpeed's
 *  zero_optimization does not have (with a did-you-mean; DeepSpeed refuses them too), a value it would refuse, or
 *  "auto" where the Hugging Face Trainer does not fill it in. */
DeepSpeedPlan parse_deepspeed_config(const std::string& text, const std::string& file);
/** @brief Reads and parses the file at `path`. */
DeepSpeedPlan load_deepspeed_config(const std::string& path);

struct Scenario;

/** @brief A scenario's plan as a DeepSpeed config (search --emit-deepspeed), the reverse of parse_deepspeed_config:
 *  read back by DeepSpeed or by `--deepspeed`, it gives the same plan. */
struct DeepSpeedExport {
  std::string json;                ///< ds_config.json text; empty where `refusal` says why
  std::vector<std::string> notes;  ///< what the plan sets that a DeepSpeed config cannot (tp, pp, recomputation)
  std::string refusal;             ///< non-empty where DeepSpeed has no such plan (an AMSP layout, FSDP, ...)
};
DeepSpeedExport deepspeed_config_of(const Scenario& s);

}  // namespace shardsim::scenario
