#include "sim/core/model_spec.hpp"

#include <algorithm>

namespace shardsim::core {

double ModelSpec::matmul_params_per_layer() const {
  const double h = hidden;
  const double kv = static_cast<double>(kv_heads) * head_dim();
  const double attention = h * h /*Q*/ + 2.0 * h * kv /*K,V*/ + h * h /*out*/;
  const double mlp_params = (mlp == MlpKind::kSwiglu ? 3.0 : 2.0) * h * ffn_hidden;
  return attention + mlp_params;
}

double ModelSpec::params_per_layer() const {
  const double h = hidden;
  const double kv = static_cast<double>(kv_heads) * head_dim();
  double p = matmul_params_per_layer();
  if (linear_bias) {
    p += h + 2.0 * kv + h;  // QKV and output biases
    p += (mlp == MlpKind::kSwiglu ? 2.0 * ffn_hidden : ffn_hidden) + h;
  } else if (qkv_bias) {
    p += h + 2.0 * kv;  // Qwen2: q, k and v projections with biases, the rest without
  }
  p += 2.0 * (norm == NormKind::kLayerNorm ? 2.0 * h : h);  // two norms per block
  return p;
}

double ModelSpec::embedding_params() const {
  double p = static_cast<double>(vocab) * hidden;
  if (position == PositionKind::kLearned) p += static_cast<double>(seq_len) * hidden;
  return p;
}

double ModelSpec::head_params() const {
  double p = (norm == NormKind::kLayerNorm ? 2.0 : 1.0) * hidden;
  if (!tied_embeddings) p += static_cast<double>(vocab) * hidden;
  return p;
}

double ModelSpec::total_params() const {
  return layers * params_per_layer() + embedding_params() + head_params();
}

Flops ModelSpec::attention_score_flops(double tokens) const {
  // QK^T and softmax(QK^T)V: each 2*s*h FLOPs per token (query heads span the full hidden size).
  return Flops(4.0 * tokens * seq_len * hidden);
}

Flops ModelSpec::layer_forward_flops(double tokens) const {
  return Flops(2.0 * tokens * matmul_params_per_layer()) + attention_score_flops(tokens);
}

Flops ModelSpec::head_forward_flops(double tokens) const {
  return Flops(2.0 * tokens * static_cast<double>(hidden) * vocab);
}

Flops ModelSpec::model_flops_per_step(double tokens) const {
  return 3.0 * (layers * layer_forward_flops(tokens) + head_forward_flops(tokens));
}

double ModelSpec::optimizer_bytes_per_param() const {
  const double moments = 2.0 * dtype_bytes(optimizer_dtype);
  const double master = (param_dtype == optimizer_dtype) ? 0.0 : dtype_bytes(optimizer_dtype);
  return master + moments;
}

namespace {

ModelSpec make_gpt_neox_20b() {
  ModelSpec m;
  m.name = "gpt-neox-20b";
  m.layers = 44;
  m.hidden = 6144;
  m.heads = 64;
  m.kv_heads = 64;
  m.ffn_hidden = 24576;
  m.vocab = 50432;  // padded tokenizer vocabulary (50257 real tokens) as in the released config.json
  m.seq_len = 2048;
  m.mlp = MlpKind::kGelu;
  m.norm = NormKind::kLayerNorm;
  m.position = PositionKind::kRotary;
  m.linear_bias = true;
  m.tied_embeddings = false;
  m.dropout = false;  // "hidden-dropout": 0, "attention-dropout": 0 (EleutherAI/gpt-neox@252ddc52 configs/20B.yml)
  m.param_dtype = Dtype::kFp16;  // trained in fp16 (V100-era mixed precision)
  m.grad_dtype = Dtype::kFp16;
  m.source = "Black et al. 2022, GPT-NeoX-20B (arXiv 2204.06745), Table 1; HF EleutherAI/gpt-neox-20b config.json";
  return m;
}

ModelSpec make_gpt_20b_frontier() {
  // The Frontier paper (Xu et al., arXiv 2501.04266) names only "a 20B GPT model" trained with GPT-NeoX.
  // [guess] We take the GPT-NeoX-20B shape in bf16 (MI250X supports bf16 natively).
  ModelSpec m = make_gpt_neox_20b();
  m.name = "gpt-20b-frontier";
  m.param_dtype = Dtype::kBf16;
  m.grad_dtype = Dtype::kBf16;
  m.source = "[guess] GPT-NeoX-20B shape for the 20B GPT of Xu et al. 2025 (arXiv 2501.04266); bf16";
  return m;
}

ModelSpec make_llama2(const char* name, int layers, int hidden, int heads, int kv_heads, int ffn) {
  ModelSpec m;
  m.name = name;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn_hidden = ffn;
  m.vocab = 32000;
  m.seq_len = 4096;
  m.mlp = MlpKind::kSwiglu;
  m.norm = NormKind::kRmsNorm;
  m.position = PositionKind::kRotary;
  m.linear_bias = false;
  m.tied_embeddings = false;
  m.param_dtype = Dtype::kBf16;
  m.grad_dtype = Dtype::kBf16;
  m.fused_qkv = false;  // q_proj, k_proj, v_proj (HF LlamaAttention)
  m.dropout = false;    // attention_dropout 0.0, the only dropout HF's LLaMA has (LlamaConfig)
  m.source = "Touvron et al. 2023, Llama 2 (arXiv 2307.09288), Table 1; HF meta-llama config.json";
  return m;
}

// LLaMA (v1): the same block as LLaMA-2 (SwiGLU, RMSNorm, rotary, no biases), 2,048-token context.
ModelSpec make_llama1(const char* name, int layers, int hidden, int heads, int ffn) {
  ModelSpec m = make_llama2(name, layers, hidden, heads, heads, ffn);
  m.seq_len = 2048;
  m.source = "Touvron et al. 2023, LLaMA (arXiv 2302.13971), Table 2; HF huggyllama config.json (ffn)";
  return m;
}

// Llama 3 / 3.1: the Llama 2 block with grouped-query attention at every size, a 128,256-token vocabulary and an
// 8,192-token pre-training context.
ModelSpec make_llama3(const char* name, int layers, int hidden, int heads, int ffn) {
  ModelSpec m = make_llama2(name, layers, hidden, heads, 8, ffn);
  m.vocab = 128256;
  m.seq_len = 8192;
  m.source = "Llama Team 2024, The Llama 3 Herd of Models (arXiv 2407.21783), Table 3; HF meta-llama/Llama-3.1 config.json";
  return m;
}

ModelSpec make_gpt3_175b() {
  ModelSpec m;
  m.name = "gpt3-175b";
  m.layers = 96;
  m.hidden = 12288;
  m.heads = 96;
  m.kv_heads = 96;
  m.ffn_hidden = 4 * 12288;
  m.vocab = 50257;
  m.seq_len = 2048;
  m.mlp = MlpKind::kGelu;
  m.norm = NormKind::kLayerNorm;
  m.position = PositionKind::kLearned;
  m.linear_bias = true;
  m.tied_embeddings = true;
  m.param_dtype = Dtype::kBf16;
  m.grad_dtype = Dtype::kBf16;
  m.source = "Brown et al. 2020, Language Models are Few-Shot Learners (arXiv 2005.14165), Table 2.1";
  return m;
}

const std::vector<ModelSpec>& presets() {
  static const std::vector<ModelSpec> kPresets = {
      make_gpt_neox_20b(),
      make_gpt_20b_frontier(),
      make_llama1("llama-7b", 32, 4096, 32, 11008),
      make_llama1("llama-13b", 40, 5120, 40, 13824),
      make_llama1("llama-30b", 60, 6656, 52, 17920),
      make_llama2("llama2-7b", 32, 4096, 32, 32, 11008),
      make_llama2("llama2-13b", 40, 5120, 40, 40, 13824),
      make_llama2("llama2-70b", 80, 8192, 64, 8, 28672),
      make_llama3("llama3-8b", 32, 4096, 32, 14336),
      make_llama3("llama3-70b", 80, 8192, 64, 28672),
      make_llama3("llama3-405b", 126, 16384, 128, 53248),
      make_gpt3_175b(),
  };
  return kPresets;
}

}  // namespace

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& m : presets()) names.push_back(m.name);
  return names;
}

const ModelSpec* find_model_preset(const std::string& name) {
  const auto& p = presets();
  auto it = std::find_if(p.begin(), p.end(), [&](const ModelSpec& m) { return m.name == name; });
  return it == p.end() ? nullptr : &*it;
}

}  // namespace shardsim::core
