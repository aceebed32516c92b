#pragma once
// PlanSpec: how a job is laid out and scheduled: parallel degrees, batch, activation recomputation, the ZeRO
// stage and its bucket sizes, overlap, and the collective algorithm. Defaults follow DeepSpeed and PyTorch
// (bucket sizes converted from elements to bytes at 2 bytes per element).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/cluster_spec.hpp"
#include "sim/core/dtype.hpp"
#include "sim/core/units.hpp"

namespace shardsim::core {

/// Budgets checked when a scenario is read, before anything is built (exit 2 with the key, its value and the limit):
/// model layers, and the tasks one iteration lowers to, estimated as micro-batches x units x kTasksPerUnit (a
/// DeepSpeed ZeRO-3 block with its per-submodule gathers, reduction and host work is ~25), so that a graph stays
/// within a few GB of memory and seconds of work.
inline constexpr int kMaxLayers = 100000;
inline constexpr int kTasksPerUnit = 32;
inline constexpr double kMaxTasks = 2e7;

/// Activation recomputation. kSelective: Megatron-LM's (the attention core's scores, softmax and dropout
/// recomputed; nothing with flash attention). kSelectiveOp: torchtitan's op-level policy (saves the output of every
/// matmul but each second one of a block, and of the attention; recomputes the rest of the block in its backward).
/// kFull: every block's forward again from its input.
enum class Recompute { kNone, kSelective, kSelectiveOp, kFull };
/// Whose code runs a transformer block: its kernels (eager single operations or fused ones) and the framework
/// thread's time per block. kHuggingFace: eager PyTorch (RMSNorm, rotary and SwiGLU as chains of single
/// operations); kMegatron: Megatron-LM's fused kernels; kFused: other code whose elementwise work runs fused, as
/// Megatron's does (torch.compile's Inductor kernels, llm-foundry's, InternEvo's), without Megatron's process
/// groups.
enum class ModelCode { kHuggingFace, kMegatron, kFused };
/// kAuto: what the cluster's collective library would run (engine/collective_library.hpp: NCCL's or RCCL's tuning
/// model picks ring or tree and the protocol; alpha-beta: the cheaper of ring and tree). kRing / kTree force the
/// algorithm (NCCL_ALGO), the library still picks the protocol. kBest: the fastest algorithm shardsim knows at the
/// links' own latencies, hierarchical included, and NVLS inside a node whose switch reduces (a what-if). kNvls:
/// NCCL's NVLS, the NVSwitch reducing and multicasting (CollectiveLibrarySpec::nvls): what the library may pick for
/// an all-reduce inside a node, never a plan's request. kPat: NCCL's PAT (2.23 and later), its all-gather and
/// reduce-scatter over one rank per node in log-depth aggregated trees: what the library may pick for those, and what
/// NCCL_ALGO=PAT forces where the library has it (a collective benchmark's or `shardsim collective`'s request, never a
/// plan's: a plan's all-reduces have no PAT).
enum class CollectiveAlgorithm { kAuto, kRing, kTree, kHierarchical, kBest, kNvls, kPat };

/// The framework whose schedule a data-parallel plan follows. kDeepSpeed: DeepSpeed 0.14's ZeRO (ZeRO-3 fetches
/// each submodule, gradients reduced by reduce_bucket_size bucket). kFsdp: PyTorch FSDP (FULL_SHARD, or
/// HYBRID_SHARD with a shard group, one unit per decoder layer as the LLaMA recipes wrap it, limit_all_gathers and
/// BACKWARD_PRE prefetch, each unit's gradients reduce-scattered after its backward), as in PyTorch 2.1-2.11.
/// kMegatron: Megatron-LM core 0.6-0.9's DDP (zero_stage 0) and distributed optimizer (zero_stage 1): gradients
/// accumulated and reduced in fp32 when training in bf16, one reduction of the whole buffer after the backward
/// unless overlap_comm (overlap_grad_reduce), then buckets of max(40M, 1M x dp) elements in the last micro-batch.
enum class Framework { kDeepSpeed, kFsdp, kMegatron };

/** @brief How the updated parameters reach the ranks after the step where the optimizer states are sharded wider than
 *  the parameters: kAllGather, DeepSpeed's (its ZeRO optimizers' all-gather of the updated partitions, in
 *  allgather_bucket pieces); kBroadcast, InternEvo's HybridZeroOptimizer: each owner of a shard broadcasts it to the
 *  zero1 group, one broadcast per owner on the group's communicator (InternLM/InternEvo@c18bec9
 *  internlm/solver/optimizer/hybrid_zero_optim.py broadcast_params; with overlap_sync_param, per block and owner,
 *  @34c11d88 internlm/core/parallel/comm/zero.py ParamAsyncBcastHandler). */
enum class ParamSync : std::uint8_t { kAllGather, kBroadcast };
inline constexpr std::string_view kParamSyncNames[] = {"all_gather", "broadcast"};
std::string_view framework_name(Framework f);
std::optional<Framework> parse_framework(std::string_view name);

/** @brief The value of enum `E` whose spelling in `names` (listed in enum order) is `name`, or nullopt. */
template <class E, std::size_t N>
std::optional<E> parse_named(const std::string_view (&names)[N], std::string_view name) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

/// the spellings of Recompute, in enum order
inline constexpr std::string_view kRecomputeNames[] = {"none", "selective", "selective-op", "full"};
inline std::string_view recompute_name(Recompute r) { return kRecomputeNames[static_cast<std::size_t>(r)]; }
/// the spellings of ModelCode, in enum order
inline constexpr std::string_view kModelCodeNames[] = {"huggingface", "megatron", "fused"};
/// How the loss's cross-entropy runs over the logits. kTorch: F.cross_entropy on an fp32 copy of the logits
/// (Hugging Face's LlamaForCausalLM, torchtitan): the copy lives beside the fp32 log-softmax it saves. kFused: a
/// kernel that keeps only the 16-bit logits and a log-sum-exp per row and writes the gradient in place
/// (flash-attn's CrossEntropyLoss, llm-foundry's default loss_fn fused_crossentropy). kMegatron: Megatron's
/// vocab-parallel cross-entropy, in place on its fp32 copy, which it saves as the softmax.
enum class CrossEntropy { kTorch, kFused, kMegatron };
inline constexpr std::string_view kCrossEntropyNames[] = {"torch", "fused", "megatron"};
std::string_view model_code_name(ModelCode c);
inline std::string_view cross_entropy_name(CrossEntropy c) { return kCrossEntropyNames[static_cast<std::size_t>(c)]; }
/** @brief True where recomputation runs a block's forward code again on the framework thread (full, and the
 *  op-level policy, whose checkpoint reruns the block's forward and recomputes what it did not save). */
[[nodiscard]] inline bool reruns_block_forward(Recompute r) {
  return r == Recompute::kFull || r == Recompute::kSelectiveOp;
}
std::string_view algorithm_name(CollectiveAlgorithm a);
/** @brief The algorithm algorithm_name() spells `name` (every one a request may name: not NVLS), or nullopt. */
std::optional<CollectiveAlgorithm> parse_algorithm(std::string_view name);

/** @brief Where each model state lives across the data-parallel ranks (AMSP's unified space, arXiv 2311.00257):
 *  shard factors are sizes of groups of consecutive data-parallel ranks (1 = replicated, dp = fully sharded).
 *  ZeRO-1 = (1, 1, dp), ZeRO-2 = (1, dp, dp), ZeRO-3 = (dp, dp, dp), MiCS = (g, g, g). */
struct PartitionSpec {
  int params = 0;      ///< s_P; 0 until resolved from zero_stage
  int grads = 0;       ///< s_G
  int optimizer = 0;   ///< s_OS; must be a multiple of s_G
  int secondary = 0;   ///< ZeRO++ hpZ: secondary parameter partition group size (0 = none)
  bool operator==(const PartitionSpec&) const = default;
};

/** @brief ZeRO++ communication compression (Wang et al., arXiv 2306.10209). */
struct QuantizationSpec {
  bool weights = false;    ///< qwZ: block-quantised INT8 parameter all-gather
  bool gradients = false;  ///< qgZ: INT4 gradients through a hierarchical all-to-all
  int block = 8192;        ///< elements per fp32 scale (DeepSpeed's quantizer uses groups below 16k)
  std::vector<int> gradient_hops;  ///< network levels of qgZ's all-to-all hops, innermost first (resolved)
};

/** @brief Compression of one class of messages in MVAPICH's compression-assisted collectives (Xu et al.,
 *  arXiv 2409.02423): a codec, the ratio it reaches, and how fast it runs on the GPU. */
enum class Codec { kNone, kZfp, kMpc };
struct CompressionSpec {
  Codec codec = Codec::kNone;
  int zfp_rate = 0;        ///< ZFP fixed rate, bits per value
  double ratio = 1.0;      ///< uncompressed / compressed bytes
  BytesPerSec compress;    ///< uncompressed bytes per second through the compressor
  BytesPerSec decompress;  ///< uncompressed bytes per second out of the decompressor
  [[nodiscard]] bool on() const { return codec != Codec::kNone; }
};
/** @brief Which messages are compressed: "naive" compresses all, "hybrid" picks per parallel dimension. */
struct CompressionPlan {
  CompressionSpec gradients;   ///< data-parallel gradient reduction
  CompressionSpec parameters;  ///< parameter gathers (ZeRO) and updated-parameter gathers
  CompressionSpec tensor;      ///< tensor-parallel activation exchanges
  CompressionSpec pipeline;    ///< activations and gradients between pipeline stages
};
std::string_view codec_name(Codec c);

/// Float8 training of the transformer blocks' linear layers as torchao runs it (torchao.float8 Float8Linear with
/// tensorwise dynamic scaling, pytorch/ao@eab345c torchao/float8/float8_linear.py; torchtitan converts every linear
/// but the output layer): each linear casts its input and weight to e4m3 (a max-abs pass and a cast pass over each)
/// and its output gradient to e5m2, and runs its forward, data-gradient and weight-gradient GEMMs in fp8 (torch
/// _scaled_mm), the transposed operands of the backward copied into the layouts _scaled_mm takes.
/// kTensorwise: torchao's dynamic scaling (a max-abs pass, then the cast). kDelayed: Transformer Engine's te.Linear
/// with DelayedScaling (NVIDIA/TransformerEngine: the scale from the amax history of earlier steps, so each cast is
/// one fused cast-transpose kernel that writes both layouts and records the amax as it goes).
enum class Float8Recipe { kTensorwise, kDelayed };
inline constexpr std::string_view kFloat8RecipeNames[] = {"tensorwise", "delayed"};
inline std::string_view float8_recipe_name(Float8Recipe r) { return kFloat8RecipeNames[static_cast<std::size_t>(r)]; }
struct Float8Spec {
  bool linear = false;
  Float8Recipe recipe = Float8Recipe::kTensorwise;
  /// FSDP2 gathers those weights in fp8, cast on each rank's shard before the gather (torchao's
  /// enable_fsdp_float8_all_gather with precompute_float8_dynamic_scale_for_fsdp)
  bool all_gather = false;
};

/** @brief ZeRO-Offload of the optimizer (DeepSpeed offload_optimizer, device cpu): reduced gradients go to
 *  the host, Adam runs on the CPU, updated fp16 parameters come back. `ratio` is the fraction of the optimizer
 *  shard updated on the CPU (the rest stays on the GPU, as DeepSpeed's Twin-Flow does). */
struct OffloadSpec {
  bool optimizer = false;
  double ratio = 1.0;
  /// ZeRO-3's parameter partitions in host memory (DeepSpeed's offload_param: cpu; ZeRO-Infinity without NVMe):
  /// each fetch copies the rank's partition to the device before gathering it, and CPU Adam writes the 16-bit
  /// partition in place on the host. Modelled with the optimizer offloaded as well.
  bool params = false;
  /// ZeRO-Infinity (offload device nvme): the optimizer's fp32 states and gradients live in swap files on the
  /// node's NVMe, read and written a sub-group at a time around CPU Adam in every step (deepspeed@v0.14.4
  /// runtime/zero/stage3.py step: _prepare_sub_group, _optimizer_step, _release_sub_group); the parameters' 16-bit
  /// partitions likewise, read before each fetch.
  bool optimizer_nvme = false;
  bool params_nvme = false;
  /// offload_optimizer.pipeline_read / pipeline_write: the next sub-group read and the previous one written
  /// while CPU Adam runs on the current one (PipelinedOptimizerSwapper); else one after another
  bool pipeline = false;
  /// offload_optimizer.buffer_count: pinned host buffers of one sub-group's fp32 values each (DeepSpeed: 4)
  int buffer_count = 4;
  /// zero_optimization.sub_group_size: elements updated per sub-group (DeepSpeed: 1e9)
  double sub_group = 1e9;
  /// offload_param.buffer_count x buffer_size: pinned host buffers the parameters swapped to NVMe pass through
  /// (DeepSpeed: 5 of 1e8 elements, offload_config.py DeepSpeedZeroOffloadParamConfig)
  int param_buffer_count = 5;
  double param_buffer_size = 1e8;
  /// ZeRO-Offload's one-step delayed parameter update (Ren et al., USENIX ATC 2021, Sec. 4.3): after warm-up, CPU
  /// Adam on iteration i's gradients runs while the GPU computes iteration i + 1 with the parameters of i - 1, so
  /// the step overlaps the next forward and backward instead of following them. A what-if: DeepSpeed 0.14 ships
  /// no such option.
  bool delayed_update = false;
  [[nodiscard]] bool any() const { return optimizer || params; }
};

struct PlanSpec {
  int dp = 0;  ///< data-parallel degree; 0 until resolved (derived from the device count when omitted)
  int tp = 1;
  int pp = 1;
  int virtual_stages = 1;  ///< model chunks per pipeline stage (> 1: Megatron's interleaved 1F1B schedule)
  bool sequence_parallel = false;  ///< Megatron sequence parallelism inside the tensor-parallel group
  int micro_batch = 1;   ///< sequences per micro-batch per data-parallel rank
  int global_batch = 0;  ///< sequences per iteration; 0 until resolved (micro_batch * dp when omitted)
  Recompute recompute = Recompute::kNone;
  /// the blocks `recompute` applies to: every one (1), or each recompute_every-th, the others keeping all their
  /// activations (torchtitan's selective layer option: checkpoint_wrapper on every second TransformerBlock)
  int recompute_every = 1;
  /** @brief The recomputation as reports name it: "full", or "full every 2 blocks". */
  [[nodiscard]] std::string recompute_label() const;
  /** @brief Whether block `layer` (0-based) runs the plan's recomputation. */
  [[nodiscard]] bool recomputes_block(int layer) const { return (layer + 1) % recompute_every == 0; }
  int zero_stage = 0;  ///< 0 = plain data parallelism (DDP)
  // DeepSpeed defaults: reduce_bucket_size = allgather_bucket_size = 5e8 elements,
  // stage3_prefetch_bucket_size = 5e7, stage3_max_live_parameters = 1e9 (fp16/bf16: 2 bytes each).
  Bytes reduce_bucket{1e9};
  Bytes allgather_bucket{1e9};
  Bytes prefetch_bucket{1e8};
  Bytes max_live_parameters{2e9};
  /// stage3_max_reuse_distance, 1e9 elements by default (deepspeed@v0.14.4 runtime/zero/config.py): a parameter used
  /// again within this many elements of the trace stays gathered after its submodule ran
  Bytes max_reuse_distance{2e9};
  /// DeepSpeed ZeRO-3's stage3_param_persistence_threshold, 1e5 elements by default (deepspeed@v0.14.0
  /// runtime/zero/config.py:200): parameter tensors no larger stay gathered on every rank (norms, biases), so
  /// their modules are never fetched (parameter_offload.py:242-257, mark_persistent_parameters)
  Bytes persistence_threshold{2e5};
  /// DeepSpeed ZeRO-3's stage3_model_persistence_threshold (sys.maxsize by default: unset): the most elements the
  /// persistent parameters may hold in all; in the model's order, a parameter that would take the total past it
  /// is fetched like any other (parameter_offload.py mark_persistent_parameters)
  std::optional<Bytes> model_persistence_threshold;
  Bytes ddp_bucket{25.0 * 1024 * 1024};  ///< PyTorch DDP bucket_cap_mb = 25
  /** DeepSpeed's overlap_comm; unset means DeepSpeed's default, see overlaps_comm(). */
  std::optional<bool> overlap_comm;
  /** DeepSpeed ZeRO-1/2 (DeepSpeedZeroOptimizer) reduces each gradient bucket with one all-reduce and keeps
   *  its slice: use_multi_rank_bucket_allreduce, the default since DeepSpeed 0.12.4 (deepspeed@v0.14.0
   *  runtime/zero/config.py:111, stage_1_and_2.py:1120-1126; reduce_scatter: false does the same). False: one
   *  reduce-scatter per bucket. */
  bool bucket_all_reduce = true;
  /** DeepSpeed's zero_optimization.reduce_scatter (default true). Off, ZeRO-1/2 all-reduce each bucket
   *  (stage_1_and_2.py: gradient_reduction_w_predivide) and ZeRO-3 all-reduces its contiguous gradient bucket and
   *  keeps its slice of each gradient, with no per-rank layout (deepspeed@v0.14.0 stage3.py
   *  __reduce_and_partition_ipg_grads -> __avg_scatter_contiguous_grads). */
  bool reduce_scatter = true;
  bool flash_attention = false;
  /// whose FlashAttention kernels run (with flash_attention): FlashAttention-2's CUDA kernels or the Triton port
  AttentionKernel attention_kernel = AttentionKernel::kFlash2;
  /// CUDA_LAUNCH_BLOCKING=1 in the run's environment: each kernel, copy and collective launch returns when its
  /// work is done, so the framework thread and the device take turns instead of overlapping (some production
  /// runs set it to work around hangs, e.g. bigscience tr11-176B-ml.slurm)
  bool launch_blocking = false;
  /// InternEvo's hybrid_zero_optimizer.overlap_sync_param: the updated parameters' sync after the step (ZeRO-1's
  /// broadcast, the gather from optimizer shards into the parameter layout) is waited for block by block by the
  /// next forward instead of at the end of the step (InternLM/InternEvo@34c11d88
  /// internlm/core/parallel/comm/zero.py ParamAsyncBcastHandler: each block's forward pre-hook waits for the
  /// broadcasts of the ranks that own it). Off: DeepSpeed's and InternEvo's default, the step ends with the sync.
  bool overlap_sync_param = false;
  /// how that sync runs: DeepSpeed's all-gather or InternEvo's broadcast per owner (ParamSync)
  ParamSync param_sync = ParamSync::kAllGather;
  /// InternEvo's hybrid_zero_optimizer.overlap_sync_grad: the backward's hooks reduce each gradient bucket as it
  /// fills, beside the rest of the backward (on: InternEvo's configs and what DeepSpeed's ZeRO optimizers do). Off:
  /// no hook is attached and step() reduces the buckets one after another once the pass is over
  /// (InternLM/InternEvo@c628a8c internlm/solver/optimizer/hybrid_zero_optim.py step(): "if not overlapping
  /// communication (no reduction hook is attached) we need to manually reduce these gradients"), none of them
  /// beside the backward.
  bool overlap_sync_grad = true;
  /// Megatron's pipeline exchanges end in torch.cuda.synchronize(), so a stage's framework thread waits for its GPU
  /// at each exchange (batch_p2p_comm with batch_p2p_sync: Megatron-LM before Megatron-Core and Megatron-DeepSpeed
  /// always; Megatron-Core where batch_p2p_comm is on, NVIDIA/Megatron-LM@core_v0.9.0
  /// megatron/core/pipeline_parallel/p2p_communication.py:381-389). false: the exchanges are issued asynchronously and
  /// the GPU waits for them, the thread running on (Megatron-Core with overlap_p2p_comm and batch_p2p_comm off,
  /// Megatron-LM's command-line default, `batch_p2p_comm = not overlap_p2p_comm`, and NeMo's interleaved configs).
  /// Framework megatron only.
  bool p2p_sync = true;
  /// Transformer Engine's userbuffers overlap of the sequence-parallel exchanges with the GEMMs (Megatron-Core's
  /// tp_comm_overlap, NeMo's ub_tp_comm_overlap): each all-gather runs as a ring exchange of tp chunks, each chunk's
  /// GEMM beside the next chunk's transfer, each reduce-scatter in chunks pipelined behind the GEMM's, on copy engines
  /// or a few SMs of their own (NVIDIA/NeMo-Framework-Launcher@24.07
  /// launcher_scripts/conf/training/tp_overlap/ub_cfg_h100_h8192_tp4_mbs1_seqlen4096.yaml: ring_exchange for the
  /// forward all-gathers and the backward's, pipelined reduce-scatters on 16-24 SMs, bulk overlaps on 2-16). Modelled
  /// as each exchange's (tp - 1) / tp beside its block's compute, not slowing it, and the last chunk's 1 / tp
  /// after it; the SMs the pipelined ones take from the GEMMs are not counted. Needs sequence_parallel and tp > 1.
  bool tp_comm_overlap = false;
  /// DeepSpeed's data_types.grad_accum_dtype as the run sets it; fp32 with bf16 and no ZeRO stage is DeepSpeed's
  /// BF16_Optimizer (its default there: deepspeed@v0.14.4 runtime/engine.py get_data_types). Unset: gradients
  /// accumulate in their own dtype (plain data parallelism for zero_stage 0)
  std::optional<Dtype> grad_accum_dtype;
  /// DeepSpeed's communication_data_type: the dtype its gradient reductions travel in, each bucket cast to it before
  /// and back after (deepspeed@v0.14.0 runtime/engine.py allreduce_bucket, stage_1_and_2.py average_tensor, stage3.py
  /// __avg_scatter_grads). Unset: the training dtype, DeepSpeed's default (communication_data_type property).
  std::optional<Dtype> grad_comm_dtype;
  /// whose model code runs the layers, for the framework thread's time per block (HostSpec::block_* or
  /// megatron_block_*): Megatron-DeepSpeed runs Megatron's under DeepSpeed's engine; unset: the framework's own
  /// (Megatron's for framework megatron, Hugging Face's otherwise)
  std::optional<ModelCode> model_code;
  /// the loss's cross-entropy (CrossEntropy); unset: Megatron's where Megatron's model code runs, else torch's
  std::optional<CrossEntropy> cross_entropy;
  /// whether the parameter gathers and the gradient reductions of a sharded plan run on one process group, whose one
  /// NCCL stream runs them one at a time (shares_dp_group); unset: as the framework sets its groups up
  std::optional<bool> shared_dp_group;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  Framework framework = Framework::kDeepSpeed;
  Bytes workspace{1.0 * kGiB};  ///< [guess] GEMM workspaces, allocator fragmentation, temporaries
  PartitionSpec partition;      ///< resolved shard factors (from zero_stage, mics_shard_size or explicit)
  int hierarchy_levels = 0;     ///< > 0: the multi-level hierarchical partitioning over this many levels
  QuantizationSpec quantization;
  CompressionPlan compression;
  OffloadSpec offload;
  Float8Spec float8;

  /** @brief `partition`, or what `zero_stage` prescribes when it has not been resolved (params == 0). */
  [[nodiscard]] PartitionSpec shards() const;
  /** @brief True when the partition is exactly what `zero_stage` prescribes and nothing of ZeRO++ is on. */
  [[nodiscard]] bool is_plain_zero() const;

  /** @brief Whether communication runs on its own streams beside compute: overlap_comm when given, else
   *  DeepSpeed's default, which is on for ZeRO-3 only (deepspeed@v0.14.0 runtime/zero/config.py:130,305-310):
   *  off for data-parallel ZeRO-1/2. Plans outside DeepSpeed's ZeRO optimizer (DDP, which always overlaps; the
   *  partition space beyond the plain stages; pipelines, whose DeepSpeed engine reduces after the flush either
   *  way) default to on; Megatron-LM's overlap_grad_reduce defaults to off. */
  [[nodiscard]] bool overlaps_comm() const;
  /** @brief True where gradient buckets are all-reduced rather than reduce-scattered: DeepSpeed's ZeRO-1/2
   *  optimizer with bucket_all_reduce or without reduce_scatter, DeepSpeed's ZeRO-3 without reduce_scatter (not
   *  qgZ, not pipelines). */
  [[nodiscard]] bool reduces_buckets_by_all_reduce() const;
  /** @brief True where Megatron-LM's model code runs the layers: model_code megatron, or framework megatron when
   *  model_code is unset. */
  [[nodiscard]] bool megatron_model_code() const { return code_in_use() == ModelCode::kMegatron; }
  /** @brief The model code that runs the blocks: model_code when given, else Megatron's for framework megatron and
   *  Hugging Face's otherwise. */
  [[nodiscard]] ModelCode code_in_use() const {
    if (model_code) return *model_code;
    return framework == Framework::kMegatron ? ModelCode::kMegatron : ModelCode::kHuggingFace;
  }
  /** @brief The cross-entropy the loss runs: cross_entropy when given, else Megatron's under its model code and
   *  PyTorch's otherwise. */
  [[nodiscard]] CrossEntropy loss_kernel() const {
    if (cross_entropy) return *cross_entropy;
    return megatron_model_code() ? CrossEntropy::kMegatron : CrossEntropy::kTorch;
  }
  /** @brief True where the block's elementwise work runs as fused kernels: Megatron's model code or model_code
   *  fused. */
  [[nodiscard]] bool fused_model_code() const { return code_in_use() != ModelCode::kHuggingFace; }

  /** @brief Whether the parameter gathers and the gradient reductions run on one process group: shared_dp_group
   *  when given; else FSDP's (one process group for its all-gathers and reduce-scatters: pytorch/pytorch@00ae0bc9
   *  torch/distributed/fsdp/_runtime_utils.py, _post_backward_hook reduce-scatters through the default communication
   *  hook over state.process_group, the handles' unshard all-gathers over the same) and DeepSpeed's where the
   *  training script hands it Megatron's model-parallel unit, taken to be where Megatron's model code runs
   *  (Megatron-DeepSpeed, GPT-NeoX: zero.Init and the engine both take mpu.get_data_parallel_group(),
   *  deepspeed@v0.14.4 runtime/zero/partition_parameters.py Init, utils/groups.py _get_data_parallel_group); without
   *  one DeepSpeed gathers on the world group and reduces on a clone of it (_clone_world_group). */
  [[nodiscard]] bool shares_dp_group() const {
    if (shared_dp_group) return *shared_dp_group;
    return framework == Framework::kFsdp || (framework == Framework::kDeepSpeed && megatron_model_code());
  }

  /** @brief Why `framework` cannot run this plan (nullopt: it can). FSDP: FULL_SHARD, HYBRID_SHARD and NO_SHARD
   *  (P, G and OS sharded alike), without pipelines, ZeRO++, offload or the multi-level hierarchy. Megatron-LM:
   *  DDP and the distributed optimizer (plain stages 0 and 1). DeepSpeed: everything shardsim lowers. */
  [[nodiscard]] std::optional<std::string> framework_refusal() const;

  /** @brief Micro-batches per iteration per data-parallel rank. Precondition: resolved plan. */
  [[nodiscard]] int grad_accumulation() const { return global_batch / (micro_batch * dp); }
};

}  // namespace shardsim::core
