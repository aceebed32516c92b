#pragma once
// Pieces of lowering that every strategy shares.
#include <array>
#include <optional>
#include <span>
#include <vector>

#include "sim/core/cluster_spec.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/model_spec.hpp"
#include "sim/core/plan_spec.hpp"
#include "sim/graph/task_graph.hpp"
#include "strategies/grad_buckets.hpp"
#include "strategies/model_costs.hpp"

namespace shardsim::strategies {

/** @brief One sequence-parallel exchange under Transformer Engine's userbuffers (PlanSpec::tp_comm_overlap): its
 *  (tp - 1) / tp beside its unit's compute (on kTpOverlap, from when that compute may start: after `starts_after`, the
 *  compute stream's task before it), its last chunk's 1 / tp on the compute stream after both. */
inline void add_overlapped_exchange(graph::TaskGraph& g, std::uint16_t role, std::uint16_t tp_group, const ModelCosts& costs,
                                    const core::PlanSpec& plan, graph::CollectiveOp op,
                                    std::optional<graph::TaskId> starts_after, std::int32_t unit, std::int32_t micro) {
  const double t = plan.tp;
  const graph::TaskId hidden = g.add_collective(role, graph::Stream::kTpOverlap, op, graph::Purpose::kTensorParallel, tp_group,
                                                costs.tp_allreduce_bytes * ((t - 1.0) / t), unit, micro);
  if (starts_after) g.add_dep(hidden, *starts_after);
  const graph::TaskId last = g.add_collective(role, graph::Stream::kCompute, op, graph::Purpose::kTensorParallel, tp_group,
                                              costs.tp_allreduce_bytes / t, unit, micro);
  g.add_dep(last, hidden);
}

/** @brief Emits `count` Megatron tensor-parallel exchanges of one micro-batch's activations on the compute
 *  stream: all-reduces, or with sequence parallelism a reduce-scatter and an all-gather each (the same bytes
 *  on the wire, split in two; Korthikanti et al. 2022, Sec. 4.2.2); under tp_comm_overlap, beside the unit's compute
 *  task, the graph's last (add_overlapped_exchange). */
inline void add_tensor_parallel(graph::TaskGraph& g, std::uint16_t role, std::uint16_t tp_group, const ModelCosts& costs,
                                const core::PlanSpec& plan, std::int32_t unit, std::int32_t micro, int count) {
  if (plan.tp_comm_overlap && plan.sequence_parallel && count > 0) {
    const graph::TaskId unit_task = static_cast<graph::TaskId>(g.size() - 1);
    SHARDSIM_ASSERT(g.tasks()[unit_task].kind == graph::TaskKind::kCompute &&
                        g.tasks()[unit_task].stream == graph::Stream::kCompute && g.tasks()[unit_task].role == role,
                    "tensor-parallel exchanges follow their unit's compute");
    const std::optional<graph::TaskId> before = g.previous_on_stream(unit_task);
    for (int c = 0; c < count; ++c) {
      add_overlapped_exchange(g, role, tp_group, costs, plan, graph::CollectiveOp::kReduceScatter, before, unit, micro);
      add_overlapped_exchange(g, role, tp_group, costs, plan, graph::CollectiveOp::kAllGather, before, unit, micro);
    }
    return;
  }
  for (int c = 0; c < count; ++c) {
    if (plan.sequence_parallel) {
      g.add_collective(role, graph::Stream::kCompute, graph::CollectiveOp::kReduceScatter,
                       graph::Purpose::kTensorParallel, tp_group, costs.tp_allreduce_bytes, unit, micro);
      g.add_collective(role, graph::Stream::kCompute, graph::CollectiveOp::kAllGather, graph::Purpose::kTensorParallel,
                       tp_group, costs.tp_allreduce_bytes, unit, micro);
    } else {
      g.add_collective(role, graph::Stream::kCompute, graph::CollectiveOp::kAllReduce, graph::Purpose::kTensorParallel,
                       tp_group, costs.tp_allreduce_bytes, unit, micro);
    }
  }
}

/** @brief The tensor-parallel exchanges a unit's recomputation issues again: full recomputation all of its
 *  forward's; the op-level policy those whose outputs it does not save: with sequence parallelism the all-gathers
 *  (reduce_scatter_tensor is on torchtitan's save list, all_gather_into_tensor is not), else the all-reduces;
 *  none otherwise. */
inline void add_recomputed_tensor_parallel(graph::TaskGraph& g, std::uint16_t role, std::uint16_t tp_group,
                                           const ModelCosts& costs, const core::PlanSpec& plan, std::int32_t unit,
                                           std::int32_t micro, int count) {
  if (plan.recompute == core::Recompute::kFull || (plan.recompute == core::Recompute::kSelectiveOp && !plan.sequence_parallel)) {
    add_tensor_parallel(g, role, tp_group, costs, plan, unit, micro, count);
  } else if (plan.recompute == core::Recompute::kSelectiveOp) {
    for (int c = 0; c < count; ++c) {
      g.add_collective(role, graph::Stream::kCompute, graph::CollectiveOp::kAllGather, graph::Purpose::kTensorParallel,
                       tp_group, costs.tp_allreduce_bytes, unit, micro);
    }
  }
}

/** @brief The tasks a unit's backward waits for, at most three (the host's work for the unit, the parameters or the
 *  gradient it receives, a bucket's reduction), in order. */
struct BackwardWaits {
  std::array<graph::TaskId, 3> tasks{};
  std::size_t count = 0;
  void add(std::optional<graph::TaskId> t) {
    if (t) tasks[count++] = *t;
  }
  [[nodiscard]] std::span<const graph::TaskId> span() const { return {tasks.data(), count}; }
};

/** @brief One unit's backward for one micro-batch, as both strategies lower it: its recomputation first when its
 *  policy reruns work (with the tensor-parallel exchanges that rerun), then its backward; the first of them waits for
 *  every task of `before`. Returns the backward, the graph's last task (release_unit_activations frees what the
 *  forward kept). */
inline graph::TaskId add_unit_backward(graph::TaskGraph& g, std::uint16_t role, std::uint16_t tp_group,
                                       const ModelCosts& costs, const core::PlanSpec& plan, int unit, std::int32_t micro,
                                       std::span<const graph::TaskId> before) {
  const UnitCost& c = costs.units[static_cast<std::size_t>(unit)];
  const bool recompute = c.recomputes();
  if (recompute) {
    const graph::TaskId r = g.add_compute(role, graph::Phase::kRecompute, unit, micro, c.recompute_flops,
                                          c.recompute_mem, c.recompute_time);
    for (const graph::TaskId t : before) g.add_dep(r, t);
    g.add_mem(r, false, graph::MemKind::kActivations, c.act_transient);
    add_recomputed_tensor_parallel(g, role, tp_group, costs, plan, unit, micro, c.tp_allreduces);
  }
  const graph::TaskId b = g.add_compute(role, graph::Phase::kBackward, unit, micro, c.bwd_flops, c.bwd_mem, c.bwd_time);
  if (!recompute) {
    for (const graph::TaskId t : before) g.add_dep(b, t);
  }
  return b;
}

/** @brief The backward's release of what unit `unit`'s forward kept (its saved activations, the last unit's
 *  logits) and of its recomputation's transient activations, on `b`. */
inline void release_unit_activations(graph::TaskGraph& g, const ModelCosts& costs, int unit, graph::TaskId b) {
  const UnitCost& c = costs.units[static_cast<std::size_t>(unit)];
  g.add_mem(b, true, unit == static_cast<int>(costs.units.size()) - 1 ? graph::MemKind::kLogits : graph::MemKind::kActivations,
            core::Bytes(-c.act_saved.value()));
  if (c.recomputes()) g.add_mem(b, true, graph::MemKind::kActivations, core::Bytes(-c.act_transient.value()));
}

/** @brief The parameter all-gathers of one unit as the framework issues them: one collective per fetch (`fetches`
 *  of them: each submodule for DeepSpeed's ZeRO-3, the whole unit for FSDP; each an even share of `payload`: what
 *  a ring costs depends on the total only, but every collective pays the ring's per-step latency), in order on
 *  `stream`; the first waits for every task of `after`. Returns the first and the last. */
struct GatherChain {
  graph::TaskId first = 0;
  graph::TaskId last = 0;
};
GatherChain add_module_gathers(graph::TaskGraph& g, std::uint16_t role, graph::Stream stream, graph::Purpose purpose,
                               std::uint16_t group, double payload, int fetches, std::int32_t unit, std::int32_t micro,
                               std::span<const graph::TaskId> after);

/** @brief Whether DeepSpeed runs the plan with its BF16_Optimizer (plan.grad_accum_dtype fp32, bf16, no ZeRO stage):
 *  bf16 without ZeRO accumulates gradients in fp32 by default (deepspeed@v0.14.4 runtime/engine.py:882-897
 *  get_data_types, and _do_optimizer_sanity_check's BFLOAT16 wrapper), in runtime/bf16_optimizer.py: after every
 *  backward each bf16 gradient is cast and added into its fp32 accumulator (update_hp_grads; the pipeline engine
 *  calls it after each backward pass, pipe/engine.py:853-856); at
 *  the accumulation boundary the fp32 gradients are all-reduced after the backward, in buckets of
 *  MEMORY_OPT_ALLREDUCE_SIZE elements (engine.py buffered_allreduce_fallback with get_grads_for_reduction;
 *  pipe/engine.py _bf16_reduce_grads); the fp32 master weights and Adam's moments are partitioned over the
 *  data-parallel ranks ("its own zero stage 1 equivalent": step on the partition, update_lp_params, then
 *  all_gather_dp_groups of the bf16 parameters) and the fp32 gradients zeroed (clear_hp_grads). */
bool deepspeed_bf16_optimizer(const core::ModelSpec& model, const core::PlanSpec& plan);
/// update_hp_grads per element and micro-batch: the bf16 gradient read and cast into an fp32 temporary (2 + 4
/// bytes), then the accumulator read, the temporary read and the sum written (4 + 4 + 4)
inline constexpr double kBf16AccumulateBytes = 18.0;
/** @brief The BF16_Optimizer's memory traffic in the step beyond Adam's, for `params` elements whose `shard` the
 *  rank updates: the fp32 gradients read for the norm (4 bytes), clipped in place (4 + 4) and zeroed (4), and the
 *  updated fp32 shard cast into the `param_bytes`-byte parameters (update_lp_params) before they are gathered. */
core::Bytes bf16_optimizer_step_bytes(double params, double shard, double param_bytes);
/// deepspeed@v0.14.4 runtime/constants.py MEMORY_OPT_ALLREDUCE_SIZE: the elements of one fallback all-reduce
inline constexpr double kDeepSpeedAllReduceBucketElements = 5e8;

/** @brief The BF16_Optimizer's reduction of `elements` gradients kept in `accum_bytes` (fp32) over `group`, one
 *  bucket of MEMORY_OPT_ALLREDUCE_SIZE elements after another on the compute stream, the first after `after`
 *  (buffered_allreduce_fallback). Each bucket travels in DeepSpeed's communication dtype, `wire_bytes` per element
 *  (engine.py allreduce_bucket casts to communication_data_type, the training dtype unless the config names one:
 *  bf16), and around it the memory-bound work of allreduce_bucket and allreduce_and_copy: the bucket flattened and
 *  cast down before, averaged, cast back and copied into the gradients after. Returns each bucket's last task. */
std::vector<graph::TaskId> add_fallback_all_reduce(graph::TaskGraph& g, std::uint16_t role, std::uint16_t group,
                                                   double elements, double accum_bytes, double wire_bytes,
                                                   graph::TaskId after, std::int32_t micro);

/** @brief plan.shards(), with the optimizer partitioned over the data-parallel ranks where DeepSpeed's
 *  BF16_Optimizer runs (deepspeed_bf16_optimizer). */
core::PartitionSpec lowered_shards(const core::ModelSpec& model, const core::PlanSpec& plan);

/** @brief Bytes per gradient element as the framework keeps and reduces them: Megatron-LM accumulates and reduces
 *  in fp32 when training in bf16 (NVIDIA/Megatron-LM@core_v0.9.0 megatron/training/arguments.py:330-336 forces
 *  accumulate_allreduce_grads_in_fp32), as does DeepSpeed's BF16_Optimizer (deepspeed_bf16_optimizer); the others
 *  in the model's gradient dtype. */
double gradient_bytes(const core::ModelSpec& model, const core::PlanSpec& plan);

/** @brief Bytes per gradient element on the wire of the gradient reductions: DeepSpeed casts each bucket to its
 *  communication dtype (plan.grad_comm_dtype; unset, the training dtype, even where its BF16_Optimizer accumulates
 *  in fp32); the others reduce what they keep (gradient_bytes). */
double gradient_wire_bytes(const core::ModelSpec& model, const core::PlanSpec& plan);
/** @brief Bytes per element of gradient memory: gradient_bytes, and under DeepSpeed's BF16_Optimizer the bf16
 *  gradients autograd writes beside the fp32 accumulators. */
double gradient_memory_bytes(const core::ModelSpec& model, const core::PlanSpec& plan);

/** @brief The gradient bytes one reduction collects before it is issued, `grad_bytes` per element: PyTorch DDP's
 *  bucket_cap for DDP, DeepSpeed's reduce_bucket_size, a unit at a time for FSDP (0), and for Megatron-LM the
 *  whole buffer unless overlap_grad_reduce, then max(40M, 1M x dp) elements (core_v0.9.0
 *  megatron/core/distributed/distributed_data_parallel.py:54-60), one bucket again on later pipeline stages
 *  (ibid. l.74-77). */
double gradient_bucket_bytes(const core::PlanSpec& plan, double grad_bytes, bool first_stage);
/** @brief True where gradients are reduced in PyTorch DDP's buckets (`sh`, the plan's partition as lowered,
 *  unpartitioned outside DeepSpeed's ZeRO optimizers), false where DeepSpeed's ZeRO fills reduce_bucket_size ones
 *  (on one rank too). */
bool reduces_in_ddp_buckets(const core::PlanSpec& plan, const core::PartitionSpec& sh);
/** @brief Where the plan's framework closes a gradient bucket: DeepSpeed's ZeRO optimizers before a tensor that
 *  would overflow it, PyTorch DDP and Megatron-LM once it is full (BucketRule). */
BucketRule gradient_bucket_rule(const core::PlanSpec& plan);

/// How backward_tensor_fills marks the tensors: fresh host memory and what qgZ cannot quantise.
struct TensorFillRules {
  /// > 0: a tensor whose partition over `shards` ranks holds at least this many elements counts its bytes as fresh
  /// host memory (BucketFill::fresh_bytes)
  double fresh_min_elements = 0.0;
  int shards = 1;
  /// > 0: qgZ's divisor (twice the world size); vectors, and matrices whose size it does not divide, count as
  /// BucketFill::unquantised
  double all_to_all_divisor = 0.0;
};

/** @brief The gradients of unit `u`'s parameter tensors on one tensor-parallel rank, in the order the backward hands
 *  them to the framework's hooks: the submodules from the last to the first, each one's bias before its weight (an
 *  nn.Linear's bias gradient comes straight off its matmul's backward node, the weight's through the transpose's),
 *  `grad_bytes` per element, marked by `rules`. */
std::vector<BucketFill> backward_tensor_fills(const ModelCosts& costs, std::size_t u, double grad_bytes,
                                              const TensorFillRules& rules = {});
/// backward_tensor_fills of every unit of a model, made once per kind of unit (the embedding, a block, the head).
class UnitTensorFills {
 public:
  UnitTensorFills(const ModelCosts& costs, double grad_bytes, const TensorFillRules& rules = {});
  [[nodiscard]] std::span<const BucketFill> operator()(std::size_t u) const;

 private:
  const ModelCosts& costs_;
  std::array<std::vector<BucketFill>, 3> kinds_;  // by ModelCosts::module_kind
};

/** @brief The host's per-block times (forward, backward) for the plan's model code: Megatron's where fused code
 *  runs (model_code megatron or fused, or framework megatron; [guess] for other fused code: a block of a few fused
 *  kernels costs its thread what Megatron's does), else Hugging Face's. */
struct BlockHostTimes {
  core::Seconds forward;
  core::Seconds backward;
};
BlockHostTimes block_host_times(const core::HostSpec& host, const core::PlanSpec& plan);

/** @brief The framework thread's time to run unit `c` eagerly in `phase` (forward, or backward with the forward
 *  again where the unit's recomputation reruns it: full, and the op-level policy): the host's per-block times for
 *  a transformer block of the plan's model code (block_host_times), nothing for the embedding and the head. */
double host_block_time(const core::HostSpec& host, const UnitCost& c, graph::Phase phase, const core::PlanSpec& plan);

/** @brief Copies the plan's compression (per parallel dimension) into the graph's per-purpose codec costs. */
void apply_compression(graph::TaskGraph& g, const core::PlanSpec& plan);

/** @brief The memory that unit `c`'s forward task `f` holds only while it runs (UnitCost::fwd_transient: the loss's
 *  fp32 logits), counted from its start to its end. */
inline void add_forward_transient(graph::TaskGraph& g, graph::TaskId f, const UnitCost& c) {
  if (c.fwd_transient.value() <= 0.0) return;
  g.add_mem(f, false, graph::MemKind::kLogits, c.fwd_transient);
  g.add_mem(f, true, graph::MemKind::kLogits, core::Bytes(-c.fwd_transient.value()));
}

/** @brief The end of an iteration on one rank role: the scalar gradient-norm all-reduce when gradients are
 *  sharded, the optimizer step (memory-bound), and the all-gather of updated parameter shards into the
 *  parameter layout, `gather_piece` bytes at a time (DeepSpeed's allgather_bucket_size), or their broadcasts, one
 *  per owner (`gather_broadcasts`: InternEvo's). */
struct StepLowering {
  std::uint16_t role = 0;
  std::vector<graph::TaskId> reductions;     ///< the step waits for all of them
  std::optional<graph::TaskId> backward_end; ///< the last backward compute (the step runs after backward)
  std::optional<std::uint16_t> norm_group;   ///< set when the gradient norm needs a reduction
  /// set with pipelines: the norm is then reduced across the model's stages too (DeepSpeed's pipeline engine and
  /// Megatron-LM clip by the global norm over the model-parallel group), after every stage's `stage_ends`
  std::optional<std::uint16_t> model_parallel_group;
  std::vector<graph::TaskId> stage_ends;
  core::Bytes optimizer_bytes;               ///< memory traffic of the Adam step on this rank's shard
  /// the step's kernels' time when the strategy times them (< 0: optimizer_bytes at the memory-bound rate)
  core::Seconds optimizer_time{-1.0};
  /// the framework's host time in the step before its kernels, after the gradients are reduced (it reads the
  /// norm back: a synchronisation)
  core::Seconds host_time{0.0};
  std::optional<std::uint16_t> gather_group; ///< set when updated parameters must be gathered
  double gather_bytes = 0.0;                 ///< the full output of that gather
  core::Bytes gather_piece;
  /// > 0: the shards are broadcast instead, this many calls back to back (one per owner), `gather_bytes` in all
  std::uint32_t gather_broadcasts = 0;
  graph::Stream gather_stream = graph::Stream::kParamGather;
  /// DeepSpeed ZeRO-3: the persistent parameters (at or under stage3_param_persistence_threshold) gathered again
  /// after the step, one all-gather each on their partition group, `persistent_bytes` in all (stage3.py _post_step)
  std::optional<std::uint16_t> persistent_group;
  int persistent_gathers = 0;
  double persistent_bytes = 0.0;
  graph::Stream persistent_stream = graph::Stream::kParamGather;
  double host_optimizer_bytes = 0.0;  ///< ZeRO-Offload: host memory traffic of CPU Adam (0 = no offload)
  double upload_bytes = 0.0;          ///< ZeRO-Offload: updated fp16 parameters copied back to the device
  /// ZeRO-Offload: the host's work before that copy (the fp32 -> 16-bit conversion into a pageable temporary and
  /// its staging, see pageable_upload_s)
  double upload_host_s = 0.0;
  /// ZeRO-Offload: device memory traffic after the copy (the fp32 values cast into the 16-bit parameters there)
  double upload_device_bytes = 0.0;
  /// ZeRO-Infinity: the host's time reading the optimizer's sub-groups from NVMe before CPU Adam, and writing
  /// them back after (nvme_optimizer_swap)
  double swap_in_s = 0.0;
  double swap_out_s = 0.0;
  /// the one-step delayed update: the host's step (on the previous iteration's gradients) starts with the
  /// iteration, beside its forward and backward, and waits for none of its reductions
  bool delayed = false;
};

/** @brief The optimizer step's device work on `params` elements of this rank's shard: Adam's traffic at the
 *  memory-bound rate; for DeepSpeed ZeRO (stages 1-3) Adam and the passes around it (deepspeed_step_bytes) over flat
 *  fp32 partitions, at the device's streaming rate, after the host's time in step() (HostSpec::zero_step). */
void price_optimizer_step(const core::ClusterSpec& cluster, const core::ModelSpec& model, const core::PlanSpec& plan,
                          double params, StepLowering& step);

/** @brief One device's share of its node's NVMe rates (every device of the node swaps at once), bytes/s. */
struct NvmeRates {
  double read = 0.0;
  double write = 0.0;
};
NvmeRates nvme_share(const core::ClusterSpec& cluster);

/** @brief ZeRO-Infinity's optimizer step on one device as the host spends it: `elements` of the shard in
 *  sub-groups of plan.offload.sub_group, each read from NVMe (the fp32 parameters, the optimizer's states and
 *  the fp32 gradients: optimizer_k + 4 bytes), updated by CPU Adam (`adam_bytes` of host memory traffic for the
 *  whole shard) and written back (optimizer_k bytes). One after another (PartitionedOptimizerSwapper), or with the
 *  next read and the previous write beside each update (PipelinedOptimizerSwapper): r + a + w + (K - 1) x
 *  max(r, a, w) for K sub-groups. `in_s` is what precedes CPU Adam, `out_s` what follows it. */
struct NvmeSwap {
  double in_s = 0.0;
  double out_s = 0.0;
};
NvmeSwap nvme_optimizer_swap(const core::ClusterSpec& cluster, const core::PlanSpec& plan, double elements,
                             double optimizer_k, double adam_bytes);

/** @brief The host's time to copy `elements` fp32 host values into 16-bit device memory as PyTorch's copy_ does
 *  across devices and dtypes: converted on the CPU into a pageable temporary (read 4 bytes, write `to_bytes`, at the
 *  device's share of host memory bandwidth), then staged for the link at the host's pageable rate, which the node's
 *  processes share when they stage at once (HostSpec::staging_slowdown). Of the `elements`, `fresh_elements` are in
 *  temporaries of new memory (kMallocMmapThresholdMaxBytes or more), whose pages fault as the conversion writes
 *  them: on PyTorch's intra-op threads, the process's share of the node's cores as far as its faults run in parallel
 *  (HostSpec::faulting_threads), where a download's faults fall on the driver's one copying thread. The link's part
 *  is the caller's copy task. */
double pageable_upload_s(const core::HostSpec& host, int devices_per_node, double elements, double to_bytes,
                         double fresh_elements);
/** @brief The same the other way: 16-bit device values into fp32 host memory (staged, then converted). Of the
 *  `elements`, `fresh_elements` are in tensors whose temporary is new memory (kMallocMmapThresholdMaxBytes or
 *  more): the driver's copy faults them in page by page (HostSpec::page_fault). */
double pageable_download_s(const core::HostSpec& host, int devices_per_node, double elements, double from_bytes,
                           double fresh_elements);
void lower_optimizer_step(graph::TaskGraph& g, const StepLowering& step);
/** @brief Whether qgZ quantises the gradients: DeepSpeed does only where its world spans nodes (stage3.py
 *  __avg_scatter_grads: num_nodes > 1, the world over the GPUs of a node); on one node qgZ's buckets go through
 *  reduce_scatter_coalesced unquantised. */
bool quantizes_gradients(const core::ClusterSpec& cluster, const core::PlanSpec& plan);
/** @brief The group size of each of qgZ's all-to-all hops over a gradient group of `ranks` data-parallel ranks
 *  (stride `tp`): the members inside each level `quant.gradient_hops` lists, one hop per level boundary, the
 *  rest in a last hop; their product is `ranks`. */
std::vector<int> qgz_hop_sizes(const core::ClusterSpec& cluster, const core::QuantizationSpec& quant, int ranks, int tp);

}  // namespace shardsim::strategies
