#pragma once
// Per-unit costs of one training step on one rank, for a model under a plan: parameters held (after tensor
// parallelism), FLOPs and memory-bound bytes of forward, backward and recomputation, and the activations
// kept between forward and backward. A "unit" is what ZeRO gathers and schedules as one piece: the
// embedding (unit 0), each transformer block (1..L), and the head (final norm + output projection, L+1).
//
// Activation memory follows Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models" (arXiv 2205.05198), Sec. 4: per block sbh(34 + 5as/h) bytes in 16-bit without
// parallelism, sbh(10 + 24/t + 5as/(ht)) with t-way tensor parallelism; selective recomputation drops the
// 5as/h term; full recomputation keeps only the block input (2sbh). We generalise the 34 to the actual
// projections (grouped-query K/V, SwiGLU's three MLP tensors) so it stays exact for GPT-style blocks.
#include <array>
#include <vector>

#include "sim/core/cluster_spec.hpp"
#include "sim/core/model_spec.hpp"
#include "sim/core/plan_spec.hpp"
#include "sim/core/units.hpp"
#include "strategies/deepspeed_prefetch.hpp"

namespace shardsim::strategies {

struct UnitCost {
  double params = 0.0;  ///< parameters this tensor-parallel rank holds for the unit (before ZeRO sharding)
  core::Flops fwd_flops;
  core::Flops bwd_flops;
  core::Flops recompute_flops;
  core::Bytes fwd_mem;        ///< memory-bound traffic (norms, activations functions, softmax, dropout)
  core::Bytes bwd_mem;
  core::Bytes recompute_mem;
  core::Bytes act_saved;      ///< kept from this unit's forward until its backward, per micro-batch
  core::Bytes act_transient;  ///< rebuilt during this unit's backward by recomputation
  /// present while this unit's forward runs, beyond what it keeps: the fp32 copy of the logits that PyTorch's
  /// cross-entropy reads beside the log-softmax it writes
  core::Bytes fwd_transient;
  /// of `params`, those FSDP gathers in fp8, a byte each (Float8Spec::all_gather: the blocks' linear weights)
  double float8_elements = 0.0;
  int tp_allreduces = 0;      ///< Megatron all-reduces in forward (same count in backward)
  int modules = 1;            ///< submodules holding parameters (linears, norms, embeddings): their hooks run each pass
  /// of them, those DeepSpeed's ZeRO-3 gathers: a tensor above the plan's persistence threshold (the others stay
  /// gathered on every rank)
  int gathered_modules = 1;
  int tensors = 1;            ///< parameter tensors in them (weights, biases, norm scales and shifts)
  bool block = false;         ///< a transformer block (not the embedding or the head)
  /** @brief Whether this unit's backward first recomputes part of its forward. */
  [[nodiscard]] bool recomputes() const { return recompute_flops.value() > 0.0 || recompute_mem.value() > 0.0; }
  /// durations on the device from its kernels (kernel_model.hpp); negative: not timed (no device given), the
  /// engine then runs the FLOPs and bytes above at the device's flat rates
  core::Seconds fwd_time{-1.0}, bwd_time{-1.0}, recompute_time{-1.0};
};

struct ModelCosts {
  std::vector<UnitCost> units;
  /// The submodules holding parameters of the embedding (unit 0), of each block and of the head (the last unit),
  /// in the order the forward runs them.
  std::vector<ModuleParams> embedding_modules, block_modules, head_modules;
  /** @brief Which submodules unit `u` has: 0 the embedding's, 1 a block's, 2 the head's. */
  [[nodiscard]] std::size_t module_kind(std::size_t u) const { return u == 0 ? 0 : units[u].block ? 1 : 2; }
  /** @brief The submodules of unit `u`, in forward order. */
  [[nodiscard]] const std::vector<ModuleParams>& modules_of(std::size_t u) const {
    const std::size_t kind = module_kind(u);
    return kind == 0 ? embedding_modules : kind == 1 ? block_modules : head_modules;
  }
  /// DeepSpeed ZeRO-3's fetches of these units under the plan (framework deepspeed, parameters assembled unit by
  /// unit); empty otherwise
  FetchPlan fetch;
  double params_per_rank = 0.0;  ///< sum of units[].params
  core::Bytes tp_allreduce_bytes;  ///< payload of one tensor-parallel all-reduce (one micro-batch's b*s*h)
  core::Flops model_flops_per_micro;     ///< per rank, 3x forward, no recomputation
  core::Flops hardware_flops_per_micro;  ///< per rank, including recomputation
};

/** @brief Costs of `model` under `plan` (uses tp, micro_batch, recompute, flash_attention); with `device`, each
 *  unit's durations from its kernels too. */
/** @brief Block traffic of one micro-batch on one tensor-parallel rank that no GEMM does, forward (backward moves
 *  twice as much over twice the kernels [guess]): fused kernels (norms, bias-dropout-residual, activation, QKV
 *  bias / rotary) at the device's memory efficiency, eager single operations (casts, adds, multiplies,
 *  concatenations) at its streaming efficiency, and, without FlashAttention, the scale/mask/softmax/dropout
 *  passes over the attention scores (model_costs.cpp). */
struct BlockTraffic {
  double elementwise = 0.0;  ///< bytes of the fused memory-bound kernels
  int elementwise_kernels = 0;
  double streams = 0.0;  ///< bytes of the eager elementwise operations
  int stream_kernels = 0;
  double scores = 0.0;
};
BlockTraffic block_traffic(const core::ModelSpec& model, const core::PlanSpec& plan);

/** @brief Bytes per logit element that the cross-entropy moves, forward and backward (see model_costs.cpp). */
double cross_entropy_bytes_fwd(double elem_bytes);
double cross_entropy_bytes_bwd(double elem_bytes);

ModelCosts compute_model_costs(const core::ModelSpec& model, const core::PlanSpec& plan,
                               const core::DeviceSpec* device = nullptr);

/** @brief Whether parameters are assembled unit by unit before compute (gathered, copied out, hooked): sharded
 *  parameters, or FSDP's FULL_SHARD, which wraps and hooks its units on one rank too. */
bool assembles_units(const core::PlanSpec& plan);

/** @brief Whether an assembled unit's parameters land in fresh memory (copied into a gather's buffer and out of it):
 *  where they are sharded, and FSDP's FULL_SHARD on one rank too; DeepSpeed's ZeRO-3 with one partition hands its
 *  parameters out as they are (deepspeed@v0.14.4 runtime/zero/partition_parameters.py _no_gather_coalesced:
 *  NoGatherHandle points param.data at its partition, no copy, no memory). */
bool assembles_into_new_memory(const core::PlanSpec& plan);

/** @brief Whether a fetched unit's parameters occupy device memory of their own until they are released: where
 *  they are assembled into new memory, and where they come from the host (offload_param), DeepSpeed's ZeRO-3
 *  with one partition included: NoGatherHandle copies the offloaded partition into a fresh device tensor
 *  (deepspeed@v0.14.4 runtime/zero/partition_parameters.py:44-56, ds_tensor.data.to(device)). */
bool holds_fetched_params(const core::PlanSpec& plan);

/** @brief Bytes of memory traffic for one Adam step on `params` parameters (read master, moments, gradient;
 *  write master, moments, working parameter). */
core::Bytes optimizer_step_bytes(const core::ModelSpec& model, double params);
/** @brief What DeepSpeed's ZeRO optimizers (stages 1-3) move on the device around the optimizer's own step, for
 *  `params` elements of this rank's partition (deepspeed@v0.14.0 stage_1_and_2.py step(): get_grad_norm_direct's
 *  torch.norm of each gradient cast to fp64 (:1690), the gradients flattened and cast to the fp32 master's dtype
 *  (:1850-1866), unscale_and_clip_grads' in-place multiply whatever the scale (:1960-1975), the bit16 parameters
 *  copied from the fp32 partition; stage3.py the same, :1749, :1847, :2108, :2001): the fp64 copy (read g, write
 *  and read 8 bytes), the flatten (read and write g), the cast (read g, write 4), the unscale (read and write 4),
 *  and the optimizer and the copy reading 4-byte gradients and master weights where optimizer_step_bytes counts
 *  the gradient and parameter dtypes. */
core::Bytes deepspeed_step_bytes(const core::ModelSpec& model, double params);

}  // namespace shardsim::strategies
