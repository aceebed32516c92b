#pragma once
// KernelModel: how long the kernels of a transformer step take on one device, from their shapes. A GEMM's FLOPs
// run at the device's large-GEMM ceiling (`gemm_efficiency`) scaled by how full the last wave of output tiles
// leaves the compute units (small and skinny GEMMs lose most), unless moving its operands at the achieved HBM
// bandwidth takes longer; memory-bound kernels move their bytes at that bandwidth; no kernel takes less than the
// device's per-kernel overhead (launch and framework dispatch, which the host overlaps with longer kernels). So micro-batch size, tensor parallelism and
// model width change a layer's speed, as they do on the hardware, instead of one efficiency for every FLOP.
//
// time_layers() lists the kernels of each unit as Megatron-style training launches them: the four linear layers
// of a block (QKV, attention output, MLP up and down) with their forward, data-gradient and weight-gradient
// GEMMs; attention as FlashAttention (one fused kernel each way, the causal half of the score matrix, the
// backward recomputing the scores) or as batched GEMMs with scale/mask/softmax/dropout kernels; norms,
// activation, residual and dropout kernels; the embedding lookup; the logits GEMM and the cross-entropy.
// FlashAttention runs at its own efficiency (measured on the device: validate/results/), well below a GEMM's.
#include "sim/core/cluster_spec.hpp"
#include "sim/core/dtype.hpp"
#include "sim/core/model_spec.hpp"
#include "sim/core/plan_spec.hpp"
#include "sim/core/units.hpp"

#include <vector>

namespace shardsim::strategies {

/** @brief C[m x n] = A[m x k] B[k x n], `batch` independent ones (batched GEMM). */
struct GemmShape {
  double m = 0.0, n = 0.0, k = 0.0;
  double batch = 1.0;
};

/** @brief The GEMMs that train a linear layer whose forward is `fwd` (m = tokens, n = outputs, k = inputs): the
 *  data gradient (m x k from m x n and n x k: tokens x inputs over outputs) and the weight gradient (k x n from
 *  k x m and m x n: inputs x outputs over tokens). */
[[nodiscard]] GemmShape data_gradient(const GemmShape& fwd);
[[nodiscard]] GemmShape weight_gradient(const GemmShape& fwd);

/** @brief A linear layer of a transformer as its forward GEMM on one tensor-parallel rank. */
struct LinearLayer {
  const char* name;  ///< qkv (or q, k, v), attn_out, mlp_up (and mlp_gate), mlp_down, logits
  GemmShape fwd;
};
/// How a block's projections are laid out as weight tensors: what a framework fetches, reduces and hooks tensor by
/// tensor, and the GEMMs an op-level recomputation policy or a float8 recipe sees one by one.
struct TensorLayout {
  bool fused_qkv = true;      ///< one QKV weight, or q, k and v
  bool fused_gate_up = true;  ///< SwiGLU's gate and up as one weight, or two
};
/** @brief The layout `model`'s blocks have under `plan`'s model code: Megatron's fuses both whatever the model's
 *  own code does (Megatron-LM and Megatron-DeepSpeed ParallelAttention.query_key_value and ParallelMLP.dense_h_to_4h,
 *  doubled for a gated unit: sajal-vt/Megatron-DeepSpeed-ORNL@7f7cea3 megatron/model/transformer.py:88-92;
 *  Megatron-Core's linear_qkv and linear_fc1); other model code has the model's own (fused_qkv, fused_gate_up). */
TensorLayout tensor_layout(const core::ModelSpec& model, const core::PlanSpec& plan);

/** @brief The linear layers of one block fused as Megatron's code has them (column-parallel QKV and MLP-up,
 *  row-parallel output and MLP-down) and the vocabulary-parallel logits, for `model` under `plan` (micro-batch,
 *  tp): the logits GEMM the kernel timing takes, and the fused shapes the GEMM sweep covers beside block_linears'. */
std::vector<LinearLayer> linear_layers(const core::ModelSpec& model, const core::PlanSpec& plan);

/** @brief A block's linear layers as its model code launches them (tensor_layout), in the order its forward calls
 *  them: q, k, v or a fused qkv; attn_out; SwiGLU's mlp_gate then mlp_up, or one mlp_up (fused gate and up, or a
 *  GeLU MLP's); mlp_down. The kernel timing and the GEMM sweep of `shardsim-validate bench` take them from here. */
std::vector<LinearLayer> block_linears(const core::ModelSpec& model, const core::PlanSpec& plan);
/** @brief A block's matrix multiplications one by one, in the order its forward calls them (q, k, v or a fused QKV;
 *  the output projection; SwiGLU's gate then up, or the MLP's up; the down projection), on one tensor-parallel
 *  rank: what an op-level recomputation policy counts (Recompute::kSelectiveOp). */
std::vector<GemmShape> block_matmul_sequence(const core::ModelSpec& model, const core::PlanSpec& plan);
/** @brief Whether torchtitan's op-level policy saves the output of a block's matmul number `index` (0-based, in
 *  block_matmul_sequence order): all but each second one (pytorch/torchtitan@9dec370
 *  torchtitan/parallelisms/parallelize_llama.py, _apply_ac_to_transformer_block: a matmul whose 1-based count in
 *  the block's forward is even is recomputed). A float8 linear counts too: its torch.mm on float8 tensor subclasses
 *  reaches the policy's dispatch mode as aten.mm before the subclass runs _scaled_mm. */
[[nodiscard]] inline bool op_policy_saves(std::size_t index) { return index % 2 == 0; }

/** @brief The work a block's backward runs again under `plan`'s recomputation, as both the flat-rate costs
 *  (model_costs) and the kernel timing (time_layers) count it: the whole forward (full); else the unfused attention
 *  (selective, and op-level without FlashAttention: torch's math attention is not on its save list), the
 *  memory-bound work and float8 casts (op-level) and the matmuls the op-level policy does not save. */
struct RecomputedWork {
  bool forward = false;
  bool attention = false;
  bool elementwise = false;
  std::vector<GemmShape> matmuls;  ///< in block_matmul_sequence order
};
RecomputedWork recomputed_work(const core::ModelSpec& model, const core::PlanSpec& plan);

/** @brief What the float8 casts move for a block's linears (Float8Spec), per micro-batch on one rank, as streaming
 *  passes. Transformer Engine's delayed scaling: each linear's input and weight forward and output gradient
 *  backward in one cast-transpose each ((e + 2) bytes per element). torchao's tensorwise, eager: each linear reads
 *  its input for the max-abs and again to write it in fp8 (5 bytes per 16-bit element, two kernels), its weight
 *  likewise (unless the FSDP gather brings it cast); backward, its output gradient likewise, and the fp8 weight,
 *  output gradient and input copied once more into the layouts the data- and weight-gradient GEMMs take (2 bytes
 *  per element; five kernels). Compiled (fused model code: Inductor): the max-abs fuses into the kernel that
 *  produces the tensor, linears that share an input (q, k, v; gate and up) cast it once, and each cast writes both
 *  layouts (4 bytes per element); weights, read from memory, keep their own max-abs pass (5 bytes) and their
 *  transposed copy (2 bytes). Zero without float8. */
struct Float8Casts {
  double forward_bytes = 0.0;
  int forward_kernels = 0;
  double backward_bytes = 0.0;
  int backward_kernels = 0;
};
Float8Casts float8_casts(const core::ModelSpec& model, const core::PlanSpec& plan);

/** @brief Makespan, in 128 x 128 tiles of one slot's work, of FlashAttention's blocks over `slots` slots: `heads`
 *  heads of `rows` blocks, block i of a head working on i + 1 tiles (`heavy_first`: rows - i, the backward's column
 *  blocks) plus `block_cost`, each dealt in launch order (a head's blocks in order, head after head) to the slot
 *  that frees first. Memoised per thread; past 65,536 blocks the heads beyond add their work spread over every slot. */
double attention_schedule(long long heads, int rows, double block_cost, int slots, bool heavy_first);

class KernelModel {
 public:
  /** @brief Precondition: `device` has a peak for `dtype`. Attention runs at the rates of the `attention` kernels
   *  on this device (DeviceSpec::attention_rates). */
  KernelModel(const core::DeviceSpec& device, core::Dtype dtype,
              core::AttentionKernel attention = core::AttentionKernel::kFlash2);

  /** @brief One GEMM kernel (or one batched GEMM): compute, operand traffic or the per-kernel overhead, the longest.
   *  Its compute runs at the ceiling of its narrowest dimension's alignment (DeviceSpec::gemm_efficiency_narrow). */
  [[nodiscard]] core::Seconds gemm(const GemmShape& g) const;
  /** @brief The backward of a forward GEMM: its data-gradient (m x k from m x n, n x k) and weight-gradient
   *  (k x n from k x m, m x n) GEMMs. */
  [[nodiscard]] core::Seconds gemm_backward(const GemmShape& g) const;
  /** @brief Causal FlashAttention over `batch_heads` heads of `seq` tokens of `head_dim`, forward (the causal half
   *  of QK^T and PV) or backward (five products, the scores recomputed: 2.5x the forward's FLOPs), at the device's
   *  attention efficiency. The kernel spreads 128-row blocks of each head over the compute units, and causal
   *  blocks are unequal (row block i of R works on i + 1 column blocks), so with few heads the longest block, a
   *  whole row, bounds the time: the kernel takes at least that block's work at one unit's rate. A device with
   *  attention slots (DeviceSpec::attention_slots) is timed by the schedule instead: its blocks, each with its fixed
   *  cost, dealt in launch order to the free slot that frees first (attention_schedule). */
  [[nodiscard]] core::Seconds flash_attention(double batch_heads, double seq, double head_dim, bool backward) const;
  /** @brief `kernels` memory-bound kernels moving `bytes` in total (none: no time). */
  [[nodiscard]] core::Seconds memory(double bytes, int kernels) const;
  /** @brief `kernels` eager elementwise operations (casts, adds, multiplies) moving `bytes` in all, each at the
   *  device's streaming share of HBM (DeviceSpec::stream_efficiency) and no faster than one kernel's overhead. */
  [[nodiscard]] core::Seconds stream(double bytes, int kernels) const;
  /** @brief Fraction of the compute units busy over a GEMM's waves of `tiles` output tiles (1 when unknown). */
  [[nodiscard]] double wave_efficiency(double tiles) const;

 private:
  double flop_rate_;   ///< peak x ceiling
  double narrow_rate_, odd_rate_;  ///< peak x the ceilings of GEMMs with a dimension not a multiple of 16 bytes
  double attention_rate_, attention_backward_rate_;  ///< peak x attention efficiency, forward and backward
  int attention_slots_ = 0;                           ///< resident attention blocks per compute unit; 0: flat model
  double attention_block_cost_ = 0.0, attention_backward_block_cost_ = 0.0;  ///< in 128 x 128 tiles
  /** @brief `kernels` kernels moving `bytes` in all at `rate` bytes/s, each no faster than one kernel's overhead. */
  [[nodiscard]] core::Seconds passes(double bytes, int kernels, double rate) const;

  double byte_rate_;   ///< HBM bandwidth x memory efficiency
  double stream_rate_;  ///< HBM bandwidth x stream efficiency
  double overhead_;    ///< seconds per kernel
  int units_;          ///< SMs / CUs
  double elem_bytes_;  ///< bytes per operand element
};

/** @brief Durations of one unit's forward, backward and recomputation on one rank for one micro-batch. */
struct UnitTimes {
  core::Seconds fwd, bwd, recompute;
};

/** @brief The block, embedding and head times of `model` under `plan` (micro-batch, tp, recompute, flash) on
 *  `device`. Precondition: `device` has a peak for the model's dtype. */
struct LayerTimes {
  UnitTimes embedding, block, head;
};
LayerTimes time_layers(const core::ModelSpec& model, const core::PlanSpec& plan, const core::DeviceSpec& device);

}  // namespace shardsim::strategies
