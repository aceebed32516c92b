#pragma once
// PartitionedStrategy: data parallelism over AMSP's unified partition space (Chen et al., arXiv 2311.00257)
// with ZeRO++'s switches (Wang et al., arXiv 2306.10209), optionally inside Megatron tensor parallelism.
// Parameters, gradients and optimizer states each have a shard factor (a group of consecutive data-parallel
// ranks); ZeRO-1/2/3, MiCS and ZeRO++ are points of this space. What each layout implies:
//  - s_P > 1: a unit's parameters are all-gathered over the s_P group before its forward (INT8 with qwZ) and
//    again before its backward; with an hpZ secondary group inside the node, the backward's and the later
//    micro-batches' forwards gather from it (INT8 too with qwZ), only each step's first forward over s_P;
//  - s_G > 1: every micro-batch's gradients are reduce-scattered over the s_G group (with qgZ: INT4 through a
//    hierarchical all-to-all, one hop per network level, with dequantise/reduce/requantise kernels);
//  - at the accumulation boundary: a reduce-scatter over the s_OS/s_G owners of each gradient shard, then an
//    all-reduce across the dp/s_OS replicas of the optimizer-state shard;
//  - after the step, updated parameters are gathered from the optimizer layout into the parameter layout over
//    s_OS/s_P ranks when s_P < s_OS (shards placed so this is one clean all-gather, as AMSP's communication
//    optimizer arranges them).
// DDP and ZeRO-1/2/3 are its points, scheduled as PyTorch DDP and DeepSpeed schedule them:
//  - DDP (s_P = s_G = s_OS = 1): gradient buckets (PyTorch bucket_cap) all-reduced as backward produces them,
//    only in the last micro-batch (no_sync during accumulation);
//  - ZeRO-1 (s_OS = dp): gradients reduce-scattered into optimizer-state owners at the accumulation boundary,
//    then the updated parameter shards all-gathered in allgather_bucket pieces;
//  - ZeRO-2 (s_G = s_OS = dp): as stage 1 but the reduce-scatter runs every micro-batch;
//  - ZeRO-3 (all dp): parameters gathered per submodule before forward and again before backward with
//    prefetch, gradients reduce-scattered every micro-batch; no parameter all-gather after the step.
// Reductions use reduce_bucket-sized buckets (ddp_bucket for DDP), double-buffered when overlap_comm is on (a
// third bucket waits for the first to drain). With overlap off, all communication runs on the compute stream.
#include "strategies/strategy.hpp"

namespace shardsim::strategies {

class PartitionedStrategy final : public Strategy {
 public:
  void lower(const LoweringInput& in, graph::TaskGraph& g) const override;
};

/** @brief A short description of the plan's layout: "zero-3", "zero++ (qwZ+hpZ8+qgZ)", "mics-16",
 *  "amsp P8/G8/OS384". */
std::string describe_partition(const core::PlanSpec& plan);
/** @brief The same, naming DeepSpeed's BF16_Optimizer where it stands in for DDP (deepspeed_bf16_optimizer:
 *  "bf16-optimizer", "bf16-optimizer + pp4"). */
std::string describe_partition(const core::ModelSpec& model, const core::PlanSpec& plan);

}  // namespace shardsim::strategies
