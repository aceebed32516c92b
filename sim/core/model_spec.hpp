#pragma once
// ModelSpec: a decoder-only transformer, described by its shape and storage formats, plus the derived
// parameter counts and FLOPs that every strategy and engine uses. Parameter counts follow the actual layer
// structure (QKV/out projections with grouped-query attention, GeLU or SwiGLU MLP, biases, norms,
// embeddings), so GPT-NeoX-20B comes out at 20.55B and LLaMA-2-7B at 6.74B as published.
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/dtype.hpp"
#include "sim/core/units.hpp"

namespace shardsim::core {

enum class MlpKind { kGelu, kSwiglu };
enum class NormKind { kLayerNorm, kRmsNorm };
/// Rotary embeddings (kernels on q and k in every block), learned absolute positions (a table beside the token
/// embedding) or ALiBi (a per-head bias added to the attention scores where they are formed: no parameters and no
/// kernels of its own; Press et al., arXiv 2108.12409; BLOOM, Megatron-DeepSpeed's --position-embedding-type alibi).
enum class PositionKind { kRotary, kLearned, kAlibi };
/// the spellings of PositionKind, in enum order
inline constexpr std::string_view kPositionNames[] = {"rotary", "learned", "alibi"};
inline std::string_view position_name(PositionKind p) { return kPositionNames[static_cast<std::size_t>(p)]; }

struct ModelSpec {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;  ///< grouped-query attention; equals `heads` for multi-head attention
  int ffn_hidden = 0;
  int vocab = 0;
  int seq_len = 0;
  MlpKind mlp = MlpKind::kGelu;
  NormKind norm = NormKind::kLayerNorm;
  PositionKind position = PositionKind::kRotary;
  bool linear_bias = true;
  bool tied_embeddings = false;
  bool fused_qkv = true;  ///< one QKV projection (GPT-NeoX, Megatron) or separate q, k, v (Hugging Face LLaMA)
  /// SwiGLU's gate and up projections as one weight (Phi-3's gate_up_proj) or two (Hugging Face LLaMA's gate_proj
  /// and up_proj). Megatron's model code fuses both this and the QKV whatever the model says (tensor_layout).
  bool fused_gate_up = false;
  bool qkv_bias = false;  ///< biases on the query, key and value projections only (Qwen2), where linear_bias is off
  /// whether training applies dropout (Megatron's GPTs: 0.1 after attention and MLP, and on the attention
  /// probabilities). Without it nothing keeps a mask: PyTorch's dropout returns its input when p = 0
  /// (at::dropout), as in LLaMA's, GPT-NeoX-20B's and MPT's training configurations.
  bool dropout = true;
  Dtype param_dtype = Dtype::kBf16;      ///< working weights and compute
  Dtype grad_dtype = Dtype::kBf16;       ///< gradients as reduced
  Dtype optimizer_dtype = Dtype::kFp32;  ///< master weights and Adam moments
  std::string source;                    ///< where the shape comes from (paper, config file)
  std::string note;                      ///< what the user should know about how it was read (the report prints it)

  /** @brief hidden / heads. Precondition: heads > 0. */
  [[nodiscard]] int head_dim() const { return hidden / heads; }
  /** @brief Weights of one transformer block that take part in GEMMs (no biases, no norms). */
  [[nodiscard]] double matmul_params_per_layer() const;
  /** @brief All parameters of one transformer block (GEMM weights, biases, norms). */
  [[nodiscard]] double params_per_layer() const;
  /** @brief Input embedding (+ learned positions) parameters. */
  [[nodiscard]] double embedding_params() const;
  /** @brief Final norm + output projection (0 projection weights when tied). */
  [[nodiscard]] double head_params() const;
  /** @brief Total parameter count Psi. */
  [[nodiscard]] double total_params() const;

  /** @brief Forward FLOPs of one block for `tokens` tokens in sequences of `seq` (Narayanan et al. 2021
   *  convention: 2 FLOPs per multiply-add; attention scores and values counted in full, 4*s*h per token). */
  [[nodiscard]] Flops layer_forward_flops(double tokens) const;
  /** @brief The attention-score part of layer_forward_flops (what selective recomputation redoes). */
  [[nodiscard]] Flops attention_score_flops(double tokens) const;
  /** @brief Forward FLOPs of the output projection (logits) for `tokens` tokens. */
  [[nodiscard]] Flops head_forward_flops(double tokens) const;
  /** @brief Model FLOPs of one forward+backward over `tokens` tokens (3x forward; no recomputation). */
  [[nodiscard]] Flops model_flops_per_step(double tokens) const;

  /** @brief Optimizer bytes per parameter K: master copy (unless params are already in the optimizer
   *  dtype) + two Adam moments. Mixed-precision Adam: 4 + 4 + 4 = 12, as in the ZeRO paper. */
  [[nodiscard]] double optimizer_bytes_per_param() const;
};

/** @brief Names of the built-in model presets, in display order. */
std::vector<std::string> model_preset_names();
/** @brief A built-in preset by name (case-sensitive); nullptr if unknown. */
const ModelSpec* find_model_preset(const std::string& name);

}  // namespace shardsim::core
