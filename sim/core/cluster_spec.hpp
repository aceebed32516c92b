#pragma once
// ClusterSpec: the machine a job runs on, as the analytical engine sees it: identical devices, a host per
// node, and the network as nested levels (e.g. Frontier: GCD pair -> node -> dragonfly). Each level has a
// domain size (ranks inside one domain of that level), the bandwidth of one link/port at that level, how
// many ranks share that port, and a latency. Link-by-link topologies are built in topology/ (link_topology.hpp).
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/dtype.hpp"
#include "sim/core/topology_spec.hpp"
#include "sim/core/units.hpp"

namespace shardsim::core {

struct NetworkLevel {
  std::string name;
  int domain_ranks = 0;        ///< ranks in one domain of this level (cumulative: pair 2, node 8, ...)
  BytesPerSec link_bandwidth;  ///< one port/link of this level, per direction
  int shared_by = 1;           ///< ranks that share one such port when all communicate at once
  Seconds latency;             ///< per message (per algorithm step) at this level
  /// nodes in one first-tier domain of the fabric this level crosses (a fat tree's leaf, a dragonfly group); 0:
  /// the whole job is one domain. An all-reduce tree over more nodes than this joins nodes whose edges cross the
  /// upper tier and runs at the library's CollectiveLibrarySpec::tree_cross_group_share of its bandwidth. Only the
  /// outermost level has one.
  int group_nodes = 0;
  std::string source;          ///< citation or "[guess]"

  /** @brief Whether `nodes` nodes span more than one first-tier group of this level's fabric (group_nodes). */
  [[nodiscard]] bool spans_groups(int nodes) const { return group_nodes > 0 && nodes > group_nodes; }
  /** @brief Bandwidth one rank gets on this level when every rank of its domain communicates. */
  [[nodiscard]] BytesPerSec per_rank_bandwidth() const { return link_bandwidth / static_cast<double>(shared_by); }
};

/// The compression kernels' throughput on a device, uncompressed bytes per second (shardsim's GPU ZFP at a fixed
/// rate and MPC, kernels/gpu), and where it comes from. Zero: not measured on this device (codec_rates scales).
struct CodecRates {
  BytesPerSec zfp_compress, zfp_decompress, mpc_compress, mpc_decompress;
  std::string source;
};
/// The codec kernels measured on an H100 SXM at 1 GiB (validate/results/NVIDIA-H100-80GB-HBM3-2026-11-23-kernels.yaml:
/// zfp_rate8 5.184 ms, zfp_decompress_rate8 8.946 ms, mpc 8.592 ms, mpc_decompress 14.160 ms; the test
/// Presets.H100CodecRatesAreItsKernelMeasurements recomputes them): 6% of the HBM's bandwidth or less, so the
/// kernels are bound by the SMs' integer work, not by memory.
inline constexpr double kH100ZfpCompressBps = 207.11e9;
inline constexpr double kH100ZfpDecompressBps = 120.03e9;
inline constexpr double kH100MpcCompressBps = 124.97e9;
inline constexpr double kH100MpcDecompressBps = 75.83e9;
inline constexpr int kH100ComputeUnits = 132;

/// cuDNN's fused attention against FlashAttention-2 on an H100 80GB SXM5, bf16, head dimension 128, at 2k and 4k
/// tokens (Shah et al., FlashAttention-3, arXiv 2407.08608, Fig. 5 forward with the causal mask: 484 / 298 and
/// 518 / 319 TFLOP/s; Fig. 6 backward: 465 / 291 and 499 / 310): cuDNN 9 runs both directions about 1.6x faster.
inline constexpr double kPublishedH100CudnnAttentionSpeedup = 1.624;
inline constexpr double kPublishedH100CudnnAttentionBackwardSpeedup = 1.604;
/// The same speed-up measured: cuDNN 9.19's attention (PyTorch 2.11's SDPA cuDNN backend) against FlashAttention-2
/// (its flash backend) on an H100 SXM, 112 causal bf16 shapes of 4-128 heads, 2,048 and 4,096 tokens, head
/// dimension 96 and 128, both families timed in one run (validate/results/NVIDIA-H100-80GB-HBM3-2026-11-27-attention.yaml),
/// fitted by `shardsim calibrate` over FlashAttention-2's schedule fitted to the same run (the test
/// DeviceFit.H100CudnnSpeedupIsTheFitOfItsMeasurements refits them): within 4% of the published figures above.
inline constexpr double kMeasuredH100CudnnAttentionSpeedup = 1.683545931;          // +- 0.024
inline constexpr double kMeasuredH100CudnnAttentionBackwardSpeedup = 1.647716078;  // +- 0.021

/// Which FlashAttention kernels a run launches (the model's `plan.attention_kernel`): FlashAttention-2's CUDA
/// kernels (Dao-AILab/flash-attn 2.x and PyTorch's scaled_dot_product_attention flash backend, which vendors them),
/// the Triton port (flash-attn's flash_attn_triton.py, as MosaicML's llm-foundry runs it with attn_impl triton), or
/// cuDNN's fused attention (what scaled_dot_product_attention runs when left to choose on Hopper and Blackwell
/// data-centre GPUs with cuDNN 9.9 or newer: pytorch aten/src/ATen/native/transformers/cuda/sdp_utils.cpp,
/// check_prefer_cudnn_attention), which on the same GPU run at other rates; or FlashAttention's first release
/// (flash-attn 1.x), which FlashAttention-2 runs about twice as fast (kFlash2OverFlash1).
enum class AttentionKernel : std::uint8_t { kFlash2, kTriton, kCudnn, kFlash1 };
inline constexpr std::string_view kAttentionKernelNames[] = {"flash2", "triton", "cudnn", "flash1"};
/// How much faster FlashAttention-2's kernels run than FlashAttention's first ones, forward and backward: "around 2x
/// faster than FlashAttention" (Dao, "FlashAttention-2", arXiv 2307.08691, abstract and Sec. 4.1: 1.7-3.0x on A100
/// across head sizes, lengths and masks).
inline constexpr double kFlash2OverFlash1 = 2.0;
inline std::string_view attention_kernel_name(AttentionKernel k) {
  return kAttentionKernelNames[static_cast<std::size_t>(k)];
}
/// How a report names the family after "flash attention": nothing for FlashAttention-2's kernels.
inline std::string_view attention_kernel_label(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::kTriton: return " (Triton)";
    case AttentionKernel::kCudnn: return " (cuDNN)";
    case AttentionKernel::kFlash1: return " (FlashAttention 1: FlashAttention-2's / 2, arXiv 2307.08691)";
    case AttentionKernel::kFlash2: break;
  }
  return "";
}

/// The FlashAttention rates one kernel family reaches on a device (DeviceSpec::attention_rates).
struct AttentionRates {
  double forward = 0.0, backward = 0.0;  ///< fractions of the dense peak (per tile where slots > 0)
  int slots = 0;                         ///< resident blocks per compute unit; 0: the flat model
  double block_cost = 0.0, backward_block_cost = 0.0;
  /// not measured or fitted for this kernel family on this device: borrowed (the GEMM ceiling, or the other
  /// family's rates on this device), and the report says which
  bool guessed = false;
  const char* borrowed = "";
};

struct DeviceSpec {
  std::string name;
  std::array<std::optional<FlopPerSec>, 6> peak{};  ///< dense peak per Dtype (index = enum value)
  Bytes hbm;
  BytesPerSec hbm_bandwidth;
  double gemm_efficiency = 0.5;    ///< fraction of peak a large GEMM reaches (smaller ones lose to wave quantisation)
  /// A tensor-core GEMM loads its operands 16 bytes at a time when every dimension is a multiple of 16 bytes (8
  /// bf16 elements); otherwise the BLAS runs kernels with narrower loads, bound by them: the fraction of peak a
  /// large GEMM reaches with a dimension of a multiple of 4 or 8 bytes only (`gemm_efficiency_narrow`) or of 2
  /// bytes (an odd bf16 dimension, GPT-2's 50,257-token vocabulary: `gemm_efficiency_odd`); 0: not measured, the
  /// ceiling above.
  double gemm_efficiency_narrow = 0.0;
  double gemm_efficiency_odd = 0.0;
  /** @brief The ceilings in use for narrow-loading and odd GEMMs: each falls back to the next wider one's. */
  [[nodiscard]] double gemm_efficiency_narrow_in_use() const {
    return gemm_efficiency_narrow > 0.0 ? gemm_efficiency_narrow : gemm_efficiency;
  }
  [[nodiscard]] double gemm_efficiency_odd_in_use() const {
    return gemm_efficiency_odd > 0.0 ? gemm_efficiency_odd : gemm_efficiency_narrow_in_use();
  }
  double memory_efficiency = 0.8;  ///< fraction of HBM bandwidth memory-bound kernels reach
  /// fraction of HBM bandwidth one eager elementwise operation reaches (a cast, an add, a multiply: one read and one
  /// write stream, as a device-to-device copy); unset: memory_efficiency
  std::optional<double> stream_efficiency;
  [[nodiscard]] double stream_efficiency_in_use() const { return stream_efficiency.value_or(memory_efficiency); }
  /// fraction of the dense peak that causal FlashAttention reaches forward / backward with every SM busy (the
  /// fused kernels run well below a GEMM's ceiling: softmax, masking and the online rescaling between the two
  /// matrix products), FlashAttention-2's CUDA kernels; on a device timed by the schedule below, the rate of a
  /// tile's work alone; 0: the Triton port's rates where the device has them, else the GEMM ceiling, as a [guess]
  double attention_efficiency = 0.0;
  double attention_backward_efficiency = 0.0;
  /// FlashAttention's schedule, where a device's own attention kernels were measured (0 slots: the flat model, the
  /// efficiency above at every shape, bounded by the longest causal row). The kernels split each head into blocks
  /// of 128 query rows (forward: block i works on i + 1 tiles of 128 x 128 columns) or 128 key columns (backward:
  /// block j on the rows from j on) and the GPU deals them, in launch order, to `attention_slots` resident blocks
  /// per compute unit, each at that share of the unit; a block also pays a fixed cost (loading its queries, writing
  /// its output; in the backward the gradients' accumulation), in tiles. The efficiency is then the ceiling a tile
  /// runs at. Few heads leave compute units idle and short sequences pay the fixed cost more often: FlashAttention
  /// on an H100 reaches 6% of peak with 4 heads of 2,048 tokens and 35% with 512 of 4,096.
  int attention_slots = 0;
  double attention_block_cost = 0.0;
  double attention_backward_block_cost = 0.0;
  /// The Triton port's rates (flat model: the fraction of the dense peak at every shape, bounded by the longest
  /// causal row), forward and backward; 0: not known for this device, FlashAttention-2's rates above in their place
  /// (attention_rates)
  double triton_attention_efficiency = 0.0;
  double triton_attention_backward_efficiency = 0.0;
  std::string triton_attention_source = "[guess]";  ///< where the two come from
  /// cuDNN's fused attention as FlashAttention-2's schedule (below) run this many times faster, forward and
  /// backward; 0: not known for this device, FlashAttention-2's rates in its place (attention_rates)
  double cudnn_attention_speedup = 0.0;
  double cudnn_attention_backward_speedup = 0.0;
  std::string cudnn_attention_source = "[guess]";  ///< where the two come from
  /// Whether this device knows cuDNN's speed-up both ways (else FlashAttention-2's rates stand in for cuDNN's).
  [[nodiscard]] bool knows_cudnn_speedup() const {
    return cudnn_attention_speedup > 0.0 && cudnn_attention_backward_speedup > 0.0;
  }
  /** @brief The rates `kernel` runs at on this device, and whether they are borrowed. */
  [[nodiscard]] AttentionRates attention_rates(AttentionKernel kernel) const {
    if (kernel == AttentionKernel::kFlash1) {
      // FlashAttention-2's rates and schedule, at half the speed (kFlash2OverFlash1).
      AttentionRates r = attention_rates(AttentionKernel::kFlash2);
      r.forward /= kFlash2OverFlash1;
      r.backward /= kFlash2OverFlash1;
      return r;
    }
    if (kernel == AttentionKernel::kCudnn) {
      // FlashAttention-2's rates and schedule at cuDNN's speed-up over them, where this device has one.
      AttentionRates r = attention_rates(AttentionKernel::kFlash2);
      if (knows_cudnn_speedup()) {
        r.forward *= cudnn_attention_speedup;
        r.backward *= cudnn_attention_backward_speedup;
      } else {
        r.guessed = true;
        r.borrowed = "FlashAttention-2's rates for cuDNN's kernels";
      }
      return r;
    }
    // Each direction from the kernel family's own rate, else the other family's on this device (borrowed), else the
    // GEMM ceiling; the schedule goes with FlashAttention-2's rates, the Triton port's are flat.
    const bool triton = kernel == AttentionKernel::kTriton;
    const double own_f = triton ? triton_attention_efficiency : attention_efficiency;
    const double own_b = triton ? triton_attention_backward_efficiency : attention_backward_efficiency;
    const double other_f = triton ? attention_efficiency : triton_attention_efficiency;
    const double other_b = triton ? attention_backward_efficiency : triton_attention_backward_efficiency;
    const bool has_own = own_f > 0.0 || own_b > 0.0, has_other = other_f > 0.0 || other_b > 0.0;
    auto pick = [&](double own, double other) { return own > 0.0 ? own : other > 0.0 ? other : gemm_efficiency; };
    AttentionRates r;
    r.forward = pick(own_f, other_f);
    r.backward = pick(own_b, other_b);
    const bool scheduled = triton ? !has_own && has_other : has_own || !has_other;
    if (scheduled) {
      r.slots = attention_slots;
      r.block_cost = attention_block_cost;
      r.backward_block_cost = attention_backward_block_cost;
    }
    r.guessed = own_f <= 0.0 || own_b <= 0.0;
    if (r.guessed) {
      r.borrowed = has_other ? (triton ? "FlashAttention-2's rates for the Triton kernels"
                                       : "the Triton kernels' rates for FlashAttention-2")
                             : "the GEMM ceiling";
    }
    return r;
  }
  /** @brief Where the rates attention_rates(kernel) returns come from: the kernel family's own source where it has
   *  rates, the other family's where it borrows theirs, the device's efficiency source where it falls back to the
   *  GEMM ceiling; for cuDNN's kernels the source of their speed-up, else FlashAttention-2's. */
  [[nodiscard]] const std::string& attention_source(AttentionKernel kernel) const {
    if (kernel == AttentionKernel::kFlash1) return attention_source(AttentionKernel::kFlash2);
    if (kernel == AttentionKernel::kCudnn) {
      return knows_cudnn_speedup() ? cudnn_attention_source : attention_source(AttentionKernel::kFlash2);
    }
    const bool has_flash2 = attention_efficiency > 0.0 || attention_backward_efficiency > 0.0;
    const bool has_triton = triton_attention_efficiency > 0.0 || triton_attention_backward_efficiency > 0.0;
    const bool triton = kernel == AttentionKernel::kTriton;
    const bool uses_triton = triton ? has_triton : !has_flash2 && has_triton;
    return uses_triton ? triton_attention_source : efficiency_source;
  }
  /// compute runs this many times slower while communication runs on the same device: a collective's kernels (NCCL
  /// / RCCL channels occupy SMs / CUs that a GEMM's waves then wait for), and the memory-bound kernels that serve
  /// communication on their own streams (a gather's copy in and out, a bucket's layout, quantisation), which take
  /// SMs and HBM bandwidth alike (graph::runs_slowed); 1: unaffected
  double comm_compute_slowdown = 1.0;
  int compute_units = 0;           ///< SMs / CUs that a GEMM's tiles are spread over; 0: unknown (no quantisation)
  Seconds kernel_overhead;         ///< per kernel: launch, framework and tail time that no work hides
  /// where gemm_efficiency, memory_efficiency, the attention efficiencies and kernel_overhead come from ("[guess]", a measurement, a
  /// calibration file): reports show it next to the numbers
  std::string efficiency_source = "[guess]";
  Bytes runtime_reserved;          ///< HBM taken by the runtime/context before the job allocates
  CodecRates codec;                ///< measured on this device; zero: see codec_rates
  std::string source;

  /** @brief Dense peak for `d`, if the device has one. */
  [[nodiscard]] std::optional<FlopPerSec> peak_for(Dtype d) const { return peak[static_cast<int>(d)]; }
};

/// The A100's compute (its A800 and 40 GB parts too), fitted jointly on its two fit sets: vtrain-single (1,440
/// Megatron-DeepSpeed GPT iterations on 1-8 A100s: GEMMs, unfused attention and memory-bound kernels, with Megatron's
/// host time per backward block, kFittedMegatronBlockBackwardS) and mosaic-mpt-a100-long (MosaicML's MPT on 8
/// A100-80GB at 8,192-65,536 tokens, mosaicml/llm-foundry@5e85bd6, Triton FlashAttention): `shardsim calibrate --set
/// vtrain-single mosaic-mpt-a100-long --fit device.gemm_efficiency,device.memory_efficiency,
/// device.triton_attention_efficiency,device.triton_attention_backward_efficiency,host.megatron_block_backward` (1,468 runs, 7.8%
/// -> 7.0% mean error; the test DeviceFit.A100IsTheFitToVtrainAndMosaicsLongRuns refits them). Held out: the other
/// A100 / A800 sets (megatron-selene, vtrain-multi, mosaic-mpt-a100 and -40gb, torchtitan-fsdp, fsdp-paper,
/// llm-runs-a100, offload-polaris, amsp-v2). The GEMM ceiling (+-0.009), the memory-bound share of HBM bandwidth
/// (+-0.018) and attention's backward (+-0.030) are well determined; attention's forward, a fifth of its work, is
/// not (+-0.24). The GEMM ceiling had been a guess of 0.70. The attention rates are those of llm-foundry's Triton
/// kernels, which MosaicML's runs launch; the A100's FlashAttention-2 CUDA kernels borrow them [guess]. Refitted
/// once compute slows beside communication kernels as beside collectives (graph::runs_slowed), and again once
/// the gathers' copies are counted as FSDP2 and DeepSpeed make them, and once the analytical engine runs slowed
/// compute as events (exactly, not to a fixed point): 0.728 -> 0.764, 0.87 -> 0.811, 0.566 / 0.266 -> 0.519 / 0.268.
inline constexpr double kFittedA100GemmEfficiency = 0.7636;
inline constexpr double kFittedA100MemoryEfficiency = 0.8113;
inline constexpr double kFittedA100AttentionForward = 0.5189;
inline constexpr double kFittedA100AttentionBackward = 0.2682;
/// The MI250X GCD's GEMM ceiling, fitted on lumi-megatron (Megatron-DeepSpeed GPT 7B-175B on 32-128 LUMI-G GCDs,
/// ROCm 5.2 with BigScience's Megatron: GEMMs, unfused attention's batched GEMMs and memory-bound kernels, compute
/// 90% of each iteration): `shardsim calibrate --set lumi-megatron --fit device.gemm_efficiency` (0.459 +- 0.008; the
/// four runs 20.6% -> 2.2% mean error; the test DeviceFit.Mi250xGemmIsTheFitToLumiMegatron refits it). Held out: the
/// 175B on 256-2,048 GCDs and the 33B on 256 (lumi-megatron-scaling, 25.6% -> 4.2%), GPT-NeoX 6.7B with ZeRO-1 in
/// fp16 on one node (lumi-gpt-neox, -29.0% -> -10.9%). The runs' network is the 2023 stack's as their own logs time
/// it (validate/data/collectives/machines/lumi-g-2023.yaml); refitted when it was (0.4577 at the 2024 RCCL's rate).
/// It had been guessed at 0.60 from published best-case torch.mm on one GCD (147 TFLOP/s, ROCm 6.2:
/// stas00/ml-engineering@37d41a74 compute/accelerator/README.md); Megatron's 2023 stack on ROCm 5.x reached 70-72
/// TFLOP/s per GCD with recomputation counted, as Dash et al. report for Frontier (38% of peak for 22B, arXiv
/// 2312.12705). Newer ROCm and hipBLASLt may reach more: `shardsim calibrate` on a
/// user's runs replaces it.
inline constexpr double kFittedMi250xGemmEfficiency = 0.4593;

/// The H100's rates for llm-foundry's Triton FlashAttention (flash-attn's Triton port, attn_impl triton: Triton
/// kernels with no Hopper-specific instructions, unlike the FlashAttention-2 CUDA kernels its preset measures):
/// fitted on mosaic-mpt-h100-long (MosaicML's MPT in bf16 on 8 H100-80GB at 8,192-65,536 tokens,
/// mosaicml/llm-foundry@5e85bd6), the other H100 MPT runs held out (mosaic-mpt-h100: 19.9% -> 5.8% mean error):
/// `shardsim calibrate --set mosaic-mpt-h100-long mosaic-mpt-h100 --fit
/// device.triton_attention_efficiency,device.triton_attention_backward_efficiency` (the test
/// DeviceFit.H100TritonAttentionIsTheFitToMosaicsLongRuns refits them). Forward +-0.078 (a fifth of the work, as on
/// the A100), backward +-0.023: 224 and 155 TFLOP/s, against FlashAttention-2's 380 and 390 measured on the same GPU
/// and the Triton kernels' 177 and 83 fitted on the A100.
inline constexpr double kFittedH100TritonAttentionForward = 0.2269;
inline constexpr double kFittedH100TritonAttentionBackward = 0.1568;

/// The V100's GEMM ceiling (SXM2 and SXM3 parts): fitted on the zeropp-v100-fit set (fit: ZeRO-3 and ZeRO++ for an
/// 18B GPT on 384 V100s of DGX-2 nodes with all eight NICs, the runs least bound by the network; DeepSpeed's ZeRO++
/// blog, Fig. 8), the 100-400 Gb/s runs of zeropp-v100 held out (50.5% -> 16.5% mean error): `shardsim calibrate
/// --set zeropp-v100-fit zeropp-v100 --fit device.gemm_efficiency` (the test DeviceFit.V100GemmIsTheFitToZeroPPsFastestRuns
/// refits it). It stands for all of Megatron-DeepSpeed's fp16 compute on the V100, its unfused kernels' shortfall
/// included (two runs fit one parameter: +-0.016). Refitted (0.4818 before) once DeepSpeed's buckets close at a
/// tensor's edge (strategies/grad_buckets.hpp: the 18B GPT's 1e7-element buckets make ~8 reduce-scatters of each
/// block, not one) and qgZ reduces tensor by tensor (a bias or a norm alone over all 384 ranks), which slowed the
/// fit runs by 7-10%: held out 15.8% -> 8.4%.
inline constexpr double kFittedV100GemmEfficiency = 0.5822;

/** @brief The codec kernels' throughput on `d`: its own measurement where it has one, else the H100's scaled by
 *  compute units (the kernels' integer work runs on 64 INT32 lanes per SM on V100, A100 and H100 and per CU on
 *  CDNA2; clocks are not counted [guess]); a device of unknown compute units takes the H100's as they are. */
CodecRates codec_rates(const DeviceSpec& d);

/// A sharding framework's host time per pass (forward or backward) for each unit it fetches, fitted to PyTorch
/// FSDP2 on an H100 machine's host (validate/results/NVIDIA-H100-80GB-HBM3-2026-11-23-fsdp.csv,
/// validate/torch_fsdp.py): one unit per decoder layer, and one per linear layer too, over the plain step give per
/// configuration a cost per unit and per parameter tensor; these are the medians over the seven configurations,
/// per pass (the test HostHooks.AreTheFitOfTheFsdpMeasurements refits them). Exposed even with LLaMA-7B layers.
inline constexpr double kMeasuredFetchHookS = 0.6257e-3;
inline constexpr double kMeasuredTensorHookS = 0.0917e-3;
/// DeepSpeed ZeRO-3's host time per submodule and pass: the pre- and post-forward (or backward) hooks it puts on
/// every module with parameters, the fetch coordinator's trace and prefetch bookkeeping, the gather's launch and
/// the release (deepspeed@v0.14.0 runtime/zero/parameter_offload.py, partitioned_param_coordinator.py). Fitted on
/// the h100-deepspeed-fit set (DeepSpeed 0.14.4 ZeRO-3 steps on one H100, validate/ds_steps.py) together with the
/// host's page faults (kFittedPageFaultS) and ZeRO's step() (kFittedZeroStepS; the test
/// HostHooks.ModuleHookAndPageFaultAreTheFitOfTheDeepSpeedSteps refits the three), 369 us (refitted once
/// ZeRO-1/2/3 on one rank fill reduce_bucket_size buckets, not DDP's: 311 us before; 310 us until ZeRO-3 on one
/// partition stopped copying parameters it does not gather; 307 us until the fit set's ZeRO-3 row of hidden 4,096
/// became the median of three runs on three machines, whose forward ranged 17-34 ms: DeepSpeed's host time varies
/// from machine to machine by more than this fit's own uncertainty; 367 us until the set's attention ran as cuDNN's,
/// as PyTorch picks it there; 369.2 us until the parameters' upload faulted its temporary on its threads); other
/// hosts [guess].
inline constexpr double kFittedModuleHookS = 0.3718e-3;
/// DeepSpeed ZeRO's host time in step() beside its kernels: the overflow and clipping checks that read the
/// gradient norm back to the host (a synchronisation: unscale_and_clip_grads' `clip > 1`), the loops over the
/// parameter groups and their flat partitions, the timers (deepspeed@v0.14.0 runtime/zero/stage_1_and_2.py and
/// stage3.py step()). On one H100 the ZeRO-1/2/3 steps take this plus their bytes at the device's streaming rate
/// (h100-deepspeed-fit: 3.2 ms + 25 ms per billion parameters, 70 bytes each); fitted there with
/// kFittedModuleHookS and kFittedPageFaultS (the test HostHooks.ModuleHookAndPageFaultAreTheFitOfTheDeepSpeedSteps
/// refits the three); other hosts [guess].
inline constexpr double kFittedZeroStepS = 3.884e-3;  // 3.989 ms before the upload faulted its temporary
/// Eager PyTorch's host time to run one transformer block, forward and backward (the Python modules, autograd,
/// the kernel launches), measured on the same host: plain Hugging Face LLaMA steps with 8, 16 and 32 blocks of
/// hidden 256 (too small for the GPU to set the pace), the least-squares slope of the forward and backward spans
/// per block (validate/results/NVIDIA-H100-80GB-HBM3-2026-11-23-fsdp.csv; the test
/// HostHooks.AreTheFitOfTheFsdpMeasurements refits them).
inline constexpr double kMeasuredBlockForwardS = 1.3407e-3;
inline constexpr double kMeasuredBlockBackwardS = 2.1835e-3;
/// The same for Megatron's model code (framework megatron): the backward fitted on the vtrain-single set (fit:
/// Megatron-DeepSpeed GPT on DGX A100 hosts) jointly with the A100's compute (see kFittedA100GemmEfficiency; alone,
/// at those device values, `shardsim calibrate --set vtrain-single --fit host.megatron_block_backward` returns it:
/// the test HostHooks.MegatronBlocksAreTheFitToVtrainSingle). The forward is Hugging Face's measured time: fitting
/// it too leaves it where it starts.
inline constexpr double kFittedMegatronBlockForwardS = kMeasuredBlockForwardS;  // not fitted: see above
inline constexpr double kFittedMegatronBlockBackwardS = 0.9871e-3;
/// DeepSpeed ZeRO-3's host time per rank of the group and per parameter tensor in its per-rank Python loops: the
/// layout of every gradient bucket before its reduce-scatter (deepspeed@v0.14.0 runtime/comm/coalesced_collectives.py,
/// reduce_scatter_coalesced: a slice per rank of each gradient, interleaved rank by rank, concatenated). Measured by
/// validate/ds_host_loops.py on the host of an H100 (16 cores of a Xeon VM) with PyTorch 2.11 on CUDA tensors, as
/// DeepSpeed runs it, 8-1,024 ranks x 1-16 tensors (validate/results/NVIDIA-H100-80GB-HBM3-2026-11-23-ds-host-loops
/// .csv): the median per rank and tensor, 4.17-16.3 us over the 15 configurations (the test
/// HostHooks.RankSliceIsTheMedianOfTheLoopMeasurements recomputes it). The same loops on CPU tensors of a 2-core
/// EPYC cost 1.2-2.4 us (the AMD-EPYC file beside it): a CUDA tensor's view and record_stream cost the host more.
inline constexpr double kMeasuredRankSliceS = 5.817e-6;
/// The same script's other loop: the split of a completed gather of several parameters into them
/// (deepspeed@v0.14.4 runtime/zero/partition_parameters.py AllGatherCoalescedHandle.wait: per parameter, a narrow
/// of every rank's partition, a torch.cat, a record_stream per rank), timed the same way in the same run: the
/// median per rank and tensor, 5.87-21.9 us over its 15 configurations (the test
/// HostHooks.GatherSplitIsTheMedianOfTheLoopMeasurements recomputes it).
inline constexpr double kMeasuredGatherSplitS = 6.330e-6;
/// The fraction of the host's memory bandwidth that its memory-bound work reaches (CPU Adam, dtype conversions),
/// and the Polaris host's time per page fault (HostSpec::page_fault): fitted together on the offload-single set
/// (fit: ZeRO-3 with CPU Adam on one A100 of Polaris, a 32-core EPYC 7543P host, bare metal; 52.0% -> 3.9% mean
/// error there from the H100 host's page faults, offload-polaris held out: 25.0% -> 12.6%; a backward lasting
/// until its reductions and offload copies end, as DeepSpeed's timer does): `shardsim calibrate --set
/// offload-single offload-polaris --fit host.memory_efficiency,host.page_fault` (the test
/// HostHooks.HostMemoryEfficiencyIsTheFitToOffloadSingle refits them). The efficiency is every host's default
/// [guess elsewhere]. A fault of 0.60 us (the kernel's fault path and the zeroing of 4 KiB) is what bare metal
/// costs; the H100 host, a virtual machine, pays 6x that (kFittedPageFaultS). Refitted (0.4741, 0.598 us before) once
/// ZeRO-3 on one rank fills reduce_bucket_size buckets, as DeepSpeed does, not DDP's 25 MB ones; again (0.4746,
/// 0.6185 us before) once the parameters' upload faults its temporary on the process's threads, at most
/// kMeasuredFaultThreads at once (one Polaris rank's upload of 5.9 B parameters now pays 0.4 s of faults, which the
/// fit takes from CPU Adam's share).
inline constexpr double kFittedHostMemoryEfficiency = 0.5584;
inline constexpr double kFittedPolarisPageFaultS = 0.6364e-6;
/// Pageable copies (from or to memory the driver has not pinned) are staged through a pinned buffer, the host
/// copying each byte once more: the host's staging rate per direction, from an H100 host's pinned and pageable
/// 1 GiB copies (validate/results/NVIDIA-H100-80GB-HBM3-2026-11-23.yaml: device-to-host 87.4 ms pageable, 19.5 ms
/// pinned; host-to-device 128.0 and 19.6 ms): 1 GiB / (pageable - pinned). The test
/// HostHooks.PageableStagingIsTheH100HostsCopies recomputes them; other hosts [guess].
inline constexpr double kMeasuredPageableD2HBps = 15.814e9;
inline constexpr double kMeasuredPageableH2DBps = 9.9008e9;
/// How many processes' worth of pageable staging, each at the rate it reaches alone (pageable_d2h, pageable_h2d), a
/// host sustains at once: with n of a node's device processes staging together each gets min(1, this / n) of its
/// own rate (the driver's copies through its pinned buffers draw on what the processes share: memory, the
/// driver's locks). Fitted by least squares (log error) to the H100 host's ZeRO-3 Offload copies of 32 Mi and
/// 256 Mi elements by 1, 2 and 4 processes at once with the 16 cores split between them, both directions
/// (validate/results/NVIDIA-H100-80GB-HBM3-2026-11-27-host-staging.csv): rms error 17% / 6% (uploads / downloads)
/// with every process at its own rate -> 9% / 4%. The test HostHooks.PageableStagingSharesTheNode refits it; other
/// hosts [guess].
inline constexpr double kMeasuredStagingProcesses = 1.62;
/// The cores of the host the H100 measurements ran on (a virtual machine: 16 cores of an "Intel Xeon Processor",
/// validate/results/): the host's default where a machine does not say (HostSpec::cores).
inline constexpr int kMeasuredH100HostCores = 16;
/// How many threads of one process fault fresh pages in at once, measured on the H100 host (16 cores): a pageable
/// temporary of 32 MiB or more (just over glibc's mmap threshold: 33, 48 and 96 MiB against 8-31 MiB) cost 2.40 us
/// more per 4 KiB page when the driver's one thread wrote it (device to host) and 0.50 us when PyTorch's 16
/// intra-op threads did (host to device): 4.8 threads' worth, not 16 (the faults of one address space contend for
/// its page-table locks). validate/results/NVIDIA-H100-80GB-HBM3-2026-11-27-host-staging-threshold.csv; the test
/// HostHooks.FreshTemporariesFaultAboveTheMmapThreshold recomputes it.
inline constexpr double kMeasuredFaultThreads = 4.790706;
/// glibc's malloc serves a request of at least its mmap threshold from a fresh mmap and unmaps it on free; the
/// threshold rises with the blocks freed, but never above DEFAULT_MMAP_THRESHOLD_MAX, 4 * 1024 * 1024 *
/// sizeof(long) = 32 MiB on 64-bit Linux (mallopt(3), M_MMAP_THRESHOLD). PyTorch's CPU allocator takes its tensors
/// from posix_memalign without caching them (c10 alloc_cpu; transparent huge pages only when THP_MEM_ALLOC_ENABLE
/// is set): a temporary tensor of 32 MiB or more is new memory each time, faulted in page by page (4 KiB) on its
/// first write.
inline constexpr double kMallocMmapThresholdMaxBytes = 32.0 * 1024.0 * 1024.0;
inline constexpr double kHostPageBytes = 4096.0;
/// The H100 host's time per page so faulted in (HostSpec::page_fault), every host's default [guess elsewhere]:
/// fitted on the h100-deepspeed-fit set (DeepSpeed 0.14 ZeRO-3 Offload on one H100 of a 16-core virtual machine:
/// its backward of 1.07 B parameters took 2.0 s where the copies' bytes and staging explain 0.34 s; hidden 1,024,
/// whose matrices stay under 32 MiB, lost only its embedding's and head's share), the steps with the parameters
/// offloaded too held out: `shardsim calibrate --set h100-deepspeed-fit h100-deepspeed-steps --fit
/// host.module_hook,host.page_fault` (21.9% -> 18.0% mean error fitted, 18.1% -> 14.7% held out; the test
/// HostHooks.ModuleHookAndPageFaultAreTheFitOfTheDeepSpeedSteps refits them). 3.1 us +- 0.7 per 4 KiB page (3.6
/// before ZeRO on one rank filled DeepSpeed's reduce buckets; 3.66 before the fit set's repeated runs; 3.618 before
/// the parameters' upload faulted its temporary on the process's threads; measured directly on another machine of
/// the same kind, 2.40 us: kMeasuredFaultThreads): a virtual machine's fault goes through its hypervisor's nested
/// page tables.
inline constexpr double kFittedPageFaultS = 3.140e-6;

struct HostSpec {
  Bytes memory;
  BytesPerSec memory_bandwidth;
  BytesPerSec link_bandwidth;  ///< host <-> one device, per direction
  /// The framework thread's time, per pass, for each unit it fetches (a submodule for DeepSpeed ZeRO-3, a wrapped
  /// block for FSDP: pre/post hooks, the collective calls, the unit's bookkeeping) and for each parameter tensor
  /// in it (copy-in/copy-out, views). Measured for FSDP2 on one host; DeepSpeed and other hosts a guess.
  Seconds fetch_hook{kMeasuredFetchHookS};
  Seconds tensor_hook{kMeasuredTensorHookS};
  /// DeepSpeed ZeRO-3's time per submodule and pass (kFittedModuleHookS), in place of fetch_hook's per FSDP unit.
  Seconds module_hook{kFittedModuleHookS};
  /// DeepSpeed ZeRO's host time per optimizer step beside its kernels (kFittedZeroStepS).
  Seconds zero_step{kFittedZeroStepS};
  std::string hook_source =
      "measured with Hugging Face LLaMA, FSDP2 and DeepSpeed 0.14 on an H100 host (validate/results/; DeepSpeed's "
      "per submodule fitted there); other code and hosts [guess]";
  /// The framework thread's time to run one transformer block eagerly, per pass; compute waits for it where the
  /// GPU work is shorter. Measured for Hugging Face LLaMA on PyTorch 2.11 on one host; other model code and
  /// hosts a guess.
  Seconds block_forward{kMeasuredBlockForwardS};
  Seconds block_backward{kMeasuredBlockBackwardS};
  /// The same for Megatron's model code (framework megatron); fitted, see kFittedMegatronBlockForwardS.
  Seconds megatron_block_forward{kFittedMegatronBlockForwardS};
  Seconds megatron_block_backward{kFittedMegatronBlockBackwardS};
  /// DeepSpeed ZeRO-3's host time per rank and parameter tensor when it lays a gradient bucket out for its
  /// reduce-scatter (kMeasuredRankSliceS): a cost that grows with the data-parallel group, 1.2 s per micro-batch
  /// for a 7B model on 1,024 ranks.
  Seconds rank_slice{kMeasuredRankSliceS};
  /// DeepSpeed ZeRO-3's host time per rank and parameter tensor when it splits a completed gather of several
  /// parameters (kMeasuredGatherSplitS), once per such gather, where the first wait on it runs.
  Seconds gather_split{kMeasuredGatherSplitS};
  /// The host's staging rate of pageable copies, per direction (kMeasuredPageableD2HBps): a pageable copy costs
  /// its bytes over the link and again at this rate on the host. PyTorch converts dtypes on the CPU when it copies
  /// between host and device, through a pageable temporary: DeepSpeed's fp32 host gradients and its updated
  /// 16-bit parameters travel that way.
  /// What the host's memory-bound work (DeepSpeedCPUAdam and the scaling of the gradients before it, dtype
  /// conversions) reaches of `memory_bandwidth`, shared by the node's devices' processes
  /// (kFittedHostMemoryEfficiency).
  double memory_efficiency = kFittedHostMemoryEfficiency;
  /** @brief The host memory bandwidth one device's process gets for memory-bound work when every device of a
   *  node of `devices_per_node` runs some at once. */
  [[nodiscard]] double memory_share(int devices_per_node) const {
    return memory_bandwidth.value() * memory_efficiency / devices_per_node;
  }
  BytesPerSec pageable_d2h{kMeasuredPageableD2HBps};
  BytesPerSec pageable_h2d{kMeasuredPageableH2DBps};
  /// the processes' worth of pageable staging the node sustains at once (kMeasuredStagingProcesses)
  double staging_processes = kMeasuredStagingProcesses;
  /** @brief What one device's process pays per second of its pageable staging alone when every device of a node of
   *  `devices_per_node` stages at once (at least 1). */
  [[nodiscard]] double staging_slowdown(int devices_per_node) const {
    return staging_processes > 0.0 ? std::max(1.0, static_cast<double>(devices_per_node) / staging_processes) : 1.0;
  }
  /// The node's CPU cores. PyTorch's CPU kernels (a dtype conversion into a pageable temporary) run on an intra-op
  /// pool of every core in each process (DeepSpeed's launcher sets no OMP_NUM_THREADS unless asked to bind cores),
  /// so the node's device processes share them: host_threads().
  int cores = kMeasuredH100HostCores;
  /// how many of one process's threads fault pages in at once (kMeasuredFaultThreads)
  double fault_threads = kMeasuredFaultThreads;
  /** @brief The cores one device's process has for PyTorch's parallel CPU work when every device of a node of
   *  `devices_per_node` runs some at once (at least one). */
  [[nodiscard]] double host_threads(int devices_per_node) const {
    return std::max(1.0, static_cast<double>(cores) / std::max(1, devices_per_node));
  }
  /** @brief The threads over which one process's parallel CPU work faults fresh pages in: its share of the cores,
   *  at most fault_threads. */
  [[nodiscard]] double faulting_threads(int devices_per_node) const {
    return std::max(1.0, std::min(host_threads(devices_per_node), fault_threads));
  }
  /// The host's time per 4 KiB page of fresh memory that a device-to-host copy writes first (the page fault, the
  /// kernel zeroing the page, its unmapping when freed; kFittedPageFaultS): a pageable temporary above the
  /// allocator's mmap threshold (kMallocMmapThresholdMaxBytes) is faulted in by the driver's single copying thread.
  Seconds page_fault{kFittedPageFaultS};
  /// The node's NVMe drives as ZeRO-Infinity's swap files reach them (DeepSpeed's asynchronous I/O), read and
  /// write, shared by the node's devices, and their capacity; 0: the node has none described (no built-in
  /// machine does: their drives' rates through a file system are not sourced).
  BytesPerSec nvme_read{0.0};
  BytesPerSec nvme_write{0.0};
  Bytes nvme_capacity{0.0};
  [[nodiscard]] bool has_nvme() const { return nvme_read.value() > 0.0 && nvme_write.value() > 0.0; }

  /** @brief The framework's host time for `fetches` fetch units holding `tensors` parameter tensors, one pass. */
  [[nodiscard]] Seconds hook_time(int fetches, int tensors) const {
    return Seconds(fetches * fetch_hook.value() + tensors * tensor_hook.value());
  }
  /** @brief DeepSpeed ZeRO-3's host time for a unit of `modules` submodules holding `tensors` tensors, one pass. */
  [[nodiscard]] Seconds deepspeed_hook_time(int modules, int tensors) const {
    return Seconds(modules * module_hook.value() + tensors * tensor_hook.value());
  }
};

/// CollectiveLibrarySpec::tree_cross_group_share as fitted (shardsim calibrate --collectives
/// alps_128x4_all_reduce.txt --cluster machines/alps-gh200.yaml --fit collectives.tree_cross_group_share) on Alps's
/// 128-node all-reduces, the one file of its kind marked fit; the 256- and 512-node files, LUMI-G's, Polaris's and
/// Frontier's, and the training runs are held out. Every library takes it: the fabrics where it was measured are
/// Slingshot dragonflies (Alps, LUMI-G, Polaris, Frontier) and a RoCE cluster's training runs (InternLM on A100s);
/// elsewhere one assumption.
inline constexpr double kFittedTreeCrossGroupShare = 0.6338591489;  // +- 0.095

/** @brief The collective library the job calls (NCCL, RCCL) and what the engines need of it to price a collective
 *  the way the library runs it under `collective_algorithm: auto`: its tuning model picks an algorithm and a
 *  protocol per call from per-step latencies by hop class and protocol bandwidths (engine/collective_library.hpp).
 *  `kAlphaBeta` prices rings and trees from the network levels' own latencies instead (an MPI library whose
 *  selection is not modelled, or the ideal what-if). */
struct CollectiveLibrarySpec {
  enum class Family : std::uint8_t { kNccl, kRccl, kAlphaBeta };
  /// NCCL's hop class inside a node (typeIntra of its ring graph): NVLink / NVSwitch / Infinity Fabric, or PCIe
  enum class IntraLink : std::uint8_t { kNvlink, kPci };
  /// NCCL's compute-capability row of its bandwidth caps (Volta, Ampere, Hopper)
  enum class Generation : std::uint8_t { kVolta, kAmpere, kHopper };
  Family family = Family::kNccl;
  IntraLink intra = IntraLink::kNvlink;
  Generation generation = Generation::kAmpere;
  bool amd_host = false;  ///< x86 AMD host CPUs: NCCL's network overhead of 2 us per step instead of 1, and its LL row
  /// protocols the library may use, LL / LL128 / Simple (NCCL_PROTO); LL128 needs NVLink inside and the NIC near
  /// the GPU in NCCL, and a system model that enables it in RCCL
  std::array<bool, 3> protocols{true, true, true};
  /// NCCL's minor version (2.x), whose tuning table the library picks by: 18 (2.18, the default) to 30. What changed
  /// (NVIDIA/nccl src/graph/tuning.cc at each tag): 2.19-2.22 price a tree's Simple hop at 28 us on every link class
  /// (2.18: NVLink 4, PCI 6, network 14); 2.21 gives a ring's LL half the bus bandwidth (2.18: a quarter across
  /// nodes, a third inside one) under a Hopper cap of 141 / 45 / 35 GB/s (2.18: Ampere's 87.7 / 22.5 / 19); 2.23
  /// returns the tree's Simple hops to 4 / 4 / 14 us with an 8.4 us base and counts 2 (nodes - 1) network steps in a
  /// ring all-reduce (2.18: 2 nodes), prices a call with one rank per node at the tree's network hop, and has PAT for
  /// an all-gather or a reduce-scatter over one rank per node (engine::pat_available; 2.24 gives it 0.75 of the bus
  /// bandwidth where 2.23 gave 0.85); 2.30 (NVIDIA/nccl@5067397, 2.30.7) keeps 2.29's tables where shardsim reads them.
  /// NVLS across nodes is not modelled (inside a node it is: `nvls`, by 2.18's table). RCCL ignores it.
  int nccl_minor = 18;
  /// RCCL's tuning model, the one its system model of the node names (ROCm/rccl src/graph/rome_models.cc, option
  /// "tuning="): 0, the default of a node RCCL has no model for, or 3, the MI250X node of Frontier and LUMI-G
  /// (rome_model_74). NCCL ignores it.
  int rccl_tuning_model = 0;
  static constexpr int kMinNcclMinor = 18;
  static constexpr int kMaxNcclMinor = 30;
  /// measured latency over the library's own table, on the base latency and the hops inside a node, and on the
  /// network hops (1: the table as the library's source has it). They price the call; the library still picks
  /// its algorithm and protocol by its own table, as it does.
  double latency_scale = 1.0;
  double net_latency_scale = 1.0;
  /// measured time of one network step per protocol (LL, LL128, Simple), seconds, in place of the table's network
  /// hop x net_latency_scale; negative: not measured. A network step is the library's transport over the NIC (its
  /// proxy thread, the network plugin, the fabric) carrying one step's slice: where the transport is not the one
  /// the table was tuned on (libfabric's OFI plugin on Slingshot), it is what sets the latency of a ring across
  /// many nodes.
  std::array<double, 3> net_step_s{-1.0, -1.0, -1.0};
  /// measured time of one network hop of a tree per protocol, seconds; negative: the ring's step (net_step_s) where
  /// that is measured, else the table's tree hop x net_latency_scale. Rings and trees pay different network steps
  /// through the same transport: on Slingshot-11 through libfabric a small all-reduce's tree hop costs ~5-6 us
  /// (Alps's NCCL, LUMI's RCCL) where a ring all-gather's step costs 26-37 us (Polaris, Kestrel).
  std::array<double, 3> tree_step_s{-1.0, -1.0, -1.0};
  /// Whether a ring across nodes steps at the pace of its network step under Simple: each of its steps (n - 1 in an
  /// all-gather or a reduce-scatter, 2 (n - 1) in an all-reduce) takes at least one network step (net_step_s, else
  /// the table's), while the transfer runs beneath (the call takes the longer of the two, not their sum): a pipeline
  /// as fast as its slowest stage, the network hop serving the ring's steps one by one, every step of the ring, the
  /// in-node ones included, waiting for it. Without it (NCCL's tuning model) the network steps count once each, as
  /// latency before the transfer. Measured for RCCL on Frontier under Simple, 64 MiB to 512 MiB (the Frontier
  /// preset); NCCL over the same fabric, plugin and libfabric settings (Perlmutter, 2,048 ranks) and NCCL's LL rings
  /// on Polaris (540 nodes) follow NCCL's count, so it is a property of the library on its machine, not of the fabric.
  bool paced_rings = false;
  /// Whether the node's NVSwitch reduces and multicasts (NVLink SHARP): NCCL 2.17 and later then have NVLS, which
  /// their tuning model picks for an all-reduce inside one node of that switch from a few MB up (2.18's table: 23 us
  /// base, 5/6 of the bus bandwidth as algorithm bandwidth). Each GPU then sends its buffer to the switch, which
  /// reduces it, and receives its share reduced and the others' multicast: (n + 1) / n of the buffer each way per
  /// GPU where a ring moves 2 (n - 1) / n, at NCCL's NVLS efficiency (0.85 on Hopper: src/graph/tuning.cc, 2.28)
  /// of what a ring gets of the links. Across nodes (NVLS with CollNet, NVLS-tree) it is not modelled.
  bool nvls = false;
  /// What an all-reduce tree gets of its bandwidth (of what its tuning model and the machine's hops give it) once it
  /// spans more nodes than one first-tier group of the fabric (NetworkLevel::group_nodes). A tree joins node r to
  /// r +- 2^k, so past one leaf or dragonfly group its edges cross the upper tier, each node holding up to four
  /// connections to distant peers (NVIDIA/nccl#970), and a pipelined tree runs at its slowest edge; a ring joins
  /// neighbours in rank order and leaves a group only at its boundary (on a fat tree a shift permutation, which
  /// fat-tree routing carries without contention). The library's tuning model does not know it: it picks as
  /// before and the call costs what the fabric gives. Measured: the 1 GiB all-reduce's bus bandwidth on Alps, 91
  /// GB/s on 4-64 nodes, 54-58 on 128-512; LUMI-G 86-90 on 8-32 nodes, 52 on 64; Polaris 36 on 2-8, 19-31 on
  /// 256-540 (validate/data/collectives). Fitted on Alps's 128 nodes (kFittedTreeCrossGroupShare); 1: none.
  double tree_cross_group_share = kFittedTreeCrossGroupShare;
  /// the range a latency scale may take (a scenario's, a calibration's)
  static constexpr double kMinLatencyScale = 0.25;
  static constexpr double kMaxLatencyScale = 10.0;
  std::string source;  ///< the library version followed, and where the scales come from
};

std::string_view library_name(CollectiveLibrarySpec::Family f);
/** @brief The library as reports name it: "nccl 2.18" (NCCL with the version whose table it picks by), "rccl",
 *  "alpha-beta". */
std::string library_label(const CollectiveLibrarySpec& l);
/** @brief The minor version of an NCCL version "2.x" within the tables shardsim has (kMinNcclMinor to kMaxNcclMinor),
 *  or nullopt. */
std::optional<int> parse_nccl_version(std::string_view text);
/** @brief What parse_nccl_version() takes, for an error message: "an NCCL version 2.18 to 2.30". */
std::string nccl_version_range();
/** @brief The family library_name() spells `name` ("nccl", "rccl", "alpha-beta"), or nullopt. */
std::optional<CollectiveLibrarySpec::Family> parse_library(std::string_view name);
/** @brief "LL", "LL128", "Simple": the protocol at index `i` of CollectiveLibrarySpec::protocols. */
std::string_view protocol_name(std::size_t i);
/** @brief The index protocol_name() spells `name`, or nullopt. */
std::optional<std::size_t> parse_protocol(std::string_view name);
/** @brief The names of the protocols `l` runs (`running`), or of those it does not, in index order. */
std::vector<std::string> protocol_names(const CollectiveLibrarySpec& l, bool running = true);

struct ClusterSpec {
  std::string name;
  /// the built-in machine this spec is ("frontier"), whatever its display name; empty for a user's machine and
  /// for a preset whose node or network the scenario redefines (then no built-in link graph matches it)
  std::string preset;
  int nodes = 1;
  int devices_per_node = 1;
  int max_nodes = 0;  ///< size of the real system (0 = unbounded)
  DeviceSpec device;
  HostSpec host;
  std::vector<NetworkLevel> levels;  ///< innermost first; domain sizes strictly increase, each divides the next
  CollectiveLibrarySpec library;     ///< how collectives run over those levels
  std::string source;
  /// the machine link by link, when the scenario describes it (else the SimGrid engine uses a built-in
  /// machine's links or derives them from the levels); shared, so copies of a spec stay cheap
  std::shared_ptr<const NodeGraphSpec> topology;
  /// changes to that machine's fabric (`cluster.fabric`), when the scenario gives some
  std::shared_ptr<const FabricOverride> fabric_override;

  [[nodiscard]] int total_devices() const { return nodes * devices_per_node; }
  /** @brief Whole nodes that hold `devices` devices. */
  [[nodiscard]] long long nodes_for(long long devices) const {
    return (devices + devices_per_node - 1) / devices_per_node;
  }
  /** @brief Index of the level whose domain is one node. Precondition: validated spec. */
  [[nodiscard]] int node_level() const;
  /** @brief Domain size of level `l` in this job (the top level is capped at the job's devices). */
  [[nodiscard]] int domain_ranks(int l) const;
};

}  // namespace shardsim::core
