#include "sim/core/plan_spec.hpp"

namespace shardsim::core {

std::string_view model_code_name(ModelCode c) { return kModelCodeNames[static_cast<std::size_t>(c)]; }

std::string PlanSpec::recompute_label() const {
  std::string label(recompute_name(recompute));
  if (recompute_every > 1) label += " every " + std::to_string(recompute_every) + " blocks";
  return label;
}

std::string_view codec_name(Codec c) {
  switch (c) {
    case Codec::kNone: return "none";
    case Codec::kZfp: return "zfp";
    case Codec::kMpc: return "mpc";
  }
  return "?";
}

std::string_view algorithm_name(CollectiveAlgorithm a) {
  switch (a) {
    case CollectiveAlgorithm::kAuto: return "auto";
    case CollectiveAlgorithm::kRing: return "ring";
    case CollectiveAlgorithm::kTree: return "tree";
    case CollectiveAlgorithm::kHierarchical: return "hierarchical";
    case CollectiveAlgorithm::kBest: return "best";
    case CollectiveAlgorithm::kNvls: return "nvls";
    case CollectiveAlgorithm::kPat: return "pat";
  }
  return "?";
}

std::optional<CollectiveAlgorithm> parse_algorithm(std::string_view name) {
  for (auto a : {CollectiveAlgorithm::kAuto, CollectiveAlgorithm::kRing, CollectiveAlgorithm::kTree,
                 CollectiveAlgorithm::kHierarchical, CollectiveAlgorithm::kBest, CollectiveAlgorithm::kPat}) {
    if (algorithm_name(a) == name) return a;
  }
  return std::nullopt;
}

std::string_view framework_name(Framework f) {
  switch (f) {
    case Framework::kDeepSpeed: return "deepspeed";
    case Framework::kFsdp: return "fsdp";
    case Framework::kMegatron: return "megatron";
  }
  return "?";
}

std::optional<Framework> parse_framework(std::string_view name) {
  for (auto f : {Framework::kDeepSpeed, Framework::kFsdp, Framework::kMegatron}) {
    if (framework_name(f) == name) return f;
  }
  return std::nullopt;
}

namespace {
PartitionSpec zero_partition(int stage, int n) {
  PartitionSpec z;
  z.params = stage >= 3 ? n : 1;
  z.grads = stage >= 2 ? n : 1;
  z.optimizer = stage >= 1 ? n : 1;
  return z;
}
}  // namespace

PartitionSpec PlanSpec::shards() const { return partition.params == 0 ? zero_partition(zero_stage, dp) : partition; }

bool PlanSpec::is_plain_zero() const {
  return shards() == zero_partition(zero_stage, dp) && !quantization.weights && !quantization.gradients &&
         !offload.any();
}

std::optional<std::string> PlanSpec::framework_refusal() const {
  const PartitionSpec sh = shards();
  switch (framework) {
    case Framework::kDeepSpeed: return std::nullopt;
    case Framework::kFsdp: {
      const bool layout = sh.params == sh.grads && sh.grads == sh.optimizer && sh.secondary == 0;
      if (layout && !quantization.weights && !quantization.gradients && !offload.any() && hierarchy_levels == 0 &&
          pp == 1) {
        return std::nullopt;
      }
      return "framework fsdp models FULL_SHARD (zero_stage 3), HYBRID_SHARD (mics_shard_size) and NO_SHARD "
             "(zero_stage 0) without pipelines, ZeRO++ or offload; this plan shards P/G/OS over " +
             std::to_string(sh.params) + "/" + std::to_string(sh.grads) + "/" + std::to_string(sh.optimizer) +
             " ranks" + (pp > 1 ? " with pp > 1" : "") + (offload.any() ? " with offload" : "");
    }
    case Framework::kMegatron:
      if (zero_stage <= 1 && is_plain_zero() && hierarchy_levels == 0) return std::nullopt;
      return "framework megatron models Megatron-LM's DDP (zero_stage 0) and distributed optimizer (zero_stage 1), "
             "without ZeRO++, AMSP partitions or offload";
  }
  return std::nullopt;
}

namespace {
// DeepSpeed's data-parallel ZeRO-1/2 optimizer (DeepSpeedZeroOptimizer) runs the plan.
bool deepspeed_zero_optimizer(const PlanSpec& p) {
  return p.framework == Framework::kDeepSpeed && p.pp == 1 && (p.zero_stage == 1 || p.zero_stage == 2);
}
// DeepSpeed's ZeRO-3 optimizer (DeepSpeedZeroOptimizer_Stage3) runs the plan: its parameters partitioned.
bool deepspeed_zero3(const PlanSpec& p) {
  return p.framework == Framework::kDeepSpeed && p.pp == 1 && (p.zero_stage == 3 || p.shards().params > 1);
}
}  // namespace

bool PlanSpec::overlaps_comm() const {
  // Megatron-LM: overlap_grad_reduce is off by default (megatron/core/distributed/distributed_data_parallel_config.py).
  if (framework == Framework::kMegatron) return overlap_comm.value_or(false);
  return overlap_comm.value_or(!deepspeed_zero_optimizer(*this));
}

bool PlanSpec::reduces_buckets_by_all_reduce() const {
  if (quantization.gradients) return false;
  if (deepspeed_zero_optimizer(*this) && shards().params == 1) return bucket_all_reduce || !reduce_scatter;
  // A partition whose gradients stay whole on every rank and whose optimizer states are sharded (AMSP's P1/G1/OSn, as
  // InternEvo's HybridZeroOptimizer runs it: each bucket all-reduced over the data-parallel group, each rank keeping
  // the slice it updates, InternLM/InternEvo@c18bec9 internlm/solver/optimizer/utils.py reduce_tensor, dst_rank None).
  if (!reduce_scatter && shards().params == 1 && shards().grads == 1 && shards().optimizer > 1) return true;
  return !reduce_scatter && deepspeed_zero3(*this);
}

}  // namespace shardsim::core
