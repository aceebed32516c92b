#include "sim/scenario/hf_config.hpp"

#include <fmt/format.h>

#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/core/errors.hpp"
#include "sim/scenario/json_text.hpp"
#include "sim/scenario/text_file.hpp"

namespace shardsim::scenario {
namespace {

using nlohmann::json;

// The families whose shape maps onto shardsim's transformer block.
constexpr const char* kFamilies = "gpt2, bloom, gpt_neox, llama, mistral or qwen2";

struct Reader {
  const json& j;
  const std::string& file;

  [[nodiscard]] core::SourceLocation where() const { return core::SourceLocation{file, 0, 0}; }

  int positive(const char* key) const {
    if (!j.contains(key)) throw core::ConfigError(where(), key, "missing required field");
    const json& v = j.at(key);
    if (!v.is_number_integer() || v.get<long long>() <= 0 || v.get<long long>() > 1'000'000'000) {
      throw core::ConfigError(where(), key, fmt::format("expected a positive integer, got {}", v.dump()));
    }
    return static_cast<int>(v.get<long long>());
  }
  /// The first of `keys` the config has (a family may spell one field two ways), as positive().
  int first_positive(std::initializer_list<const char*> keys) const {
    for (const char* key : keys) {
      if (j.contains(key) && !j.at(key).is_null()) return positive(key);
    }
    std::string names;
    for (const char* key : keys) names += fmt::format("{}{}", names.empty() ? "" : " or ", key);
    throw core::ConfigError(where(), *keys.begin(), fmt::format("missing required field ({})", names));
  }
  int positive_or(const char* key, int fallback) const {
    if (!j.contains(key) || j.at(key).is_null()) return fallback;
    return positive(key);
  }
  bool flag_or(const char* key, bool fallback) const {
    if (!j.contains(key)) return fallback;
    const json& v = j.at(key);
    if (!v.is_boolean()) throw core::ConfigError(where(), key, fmt::format("expected true or false, got {}", v.dump()));
    return v.get<bool>();
  }
};

}  // namespace

core::ModelSpec parse_hf_config(const std::string& text, const std::string& file) {
  const json j = parse_json_text(text, file);
  if (!j.is_object()) throw core::ConfigError(core::SourceLocation{file, 1, 1}, "", "expected a JSON object");
  const Reader r{j, file};
  if (!j.contains("model_type") || !j.at("model_type").is_string()) {
    throw core::ConfigError(r.where(), "model_type", fmt::format("missing; expected {}", kFamilies));
  }
  const std::string type = j.at("model_type").get<std::string>();

  // Mixtures of experts: the expert layers (routing, all-to-all dispatch, per-expert load) are not modelled, and
  // a dense model of the same shape would be another model.
  for (const char* key : {"num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"}) {
    if (j.contains(key) && j.at(key).is_number_integer() && j.at(key).get<long long>() > 1) {
      throw core::ConfigError(r.where(), key,
                              fmt::format("model_type \"{}\" is a mixture of experts ({} = {}): shardsim does not model "
                                          "MoE layers (expert parallelism, token dispatch); describe a dense model",
                                          type, key, j.at(key).get<long long>()));
    }
  }

  core::ModelSpec m;
  if (type == "gpt2") {
    // GPT-2's own key names: n_embd, n_layer, n_head, n_inner (null: 4 x n_embd), n_positions.
    m.hidden = r.positive("n_embd");
    m.layers = r.positive("n_layer");
    m.heads = r.positive("n_head");
    m.ffn_hidden = r.positive_or("n_inner", 4 * m.hidden);
    m.vocab = r.positive("vocab_size");
    m.seq_len = r.positive("n_positions");
    m.kv_heads = m.heads;
    m.position = core::PositionKind::kLearned;
    m.mlp = core::MlpKind::kGelu;
    m.norm = core::NormKind::kLayerNorm;
    m.linear_bias = true;
    m.tied_embeddings = r.flag_or("tie_word_embeddings", true);  // GPT2LMHeadModel ties its head to wte
    m.fused_qkv = true;                                           // c_attn: one projection
  } else if (type == "bloom") {
    // BloomConfig's own key names (transformers models/bloom/configuration_bloom.py): n_layer and n_head (or their
    // attribute-map aliases), hidden_size (n_embed in older configs), n_inner (null: 4 x hidden). ALiBi positions:
    // no max_position_embeddings, so the length comes from seq_length where a config has it, else from the
    // scenario's model.seq_len. The LayerNorm after the word embeddings is not modelled.
    m.hidden = r.first_positive({"hidden_size", "n_embed"});
    m.layers = r.first_positive({"n_layer", "num_hidden_layers"});
    m.heads = r.first_positive({"n_head", "num_attention_heads"});
    m.ffn_hidden = r.positive_or("n_inner", 4 * m.hidden);
    m.vocab = r.positive("vocab_size");
    m.seq_len = r.positive_or("seq_length", 0);
    m.kv_heads = m.heads;
    m.position = core::PositionKind::kAlibi;
    m.mlp = core::MlpKind::kGelu;
    m.norm = core::NormKind::kLayerNorm;
    m.linear_bias = true;
    m.tied_embeddings = r.flag_or("tie_word_embeddings", true);  // BloomForCausalLM ties lm_head to word_embeddings
    m.fused_qkv = true;                                           // self_attention.query_key_value
  } else {
    m.hidden = r.positive("hidden_size");
    m.layers = r.positive("num_hidden_layers");
    m.heads = r.positive("num_attention_heads");
    m.ffn_hidden = r.positive("intermediate_size");
    m.vocab = r.positive("vocab_size");
    m.seq_len = r.positive("max_position_embeddings");
    m.position = core::PositionKind::kRotary;
    if (type == "gpt_neox") {
      m.kv_heads = m.heads;
      m.mlp = core::MlpKind::kGelu;
      m.norm = core::NormKind::kLayerNorm;
      m.linear_bias = true;
      m.tied_embeddings = r.flag_or("tie_word_embeddings", false);
    } else if (type == "llama" || type == "mistral" || type == "qwen2") {
      m.kv_heads = r.positive_or("num_key_value_heads", m.heads);
      m.mlp = core::MlpKind::kSwiglu;
      m.norm = core::NormKind::kRmsNorm;
      m.linear_bias = r.flag_or("attention_bias", false);
      m.qkv_bias = type == "qwen2";  // Qwen2Attention: q, k, v projections with biases, o_proj without
      m.tied_embeddings = r.flag_or("tie_word_embeddings", false);
      m.fused_qkv = false;  // q_proj, k_proj, v_proj
    } else {
      throw core::ConfigError(r.where(), "model_type",
                              fmt::format("unsupported model_type \"{}\"; expected {}", type, kFamilies));
    }
  }
  // Dropout where the config gives a probability above 0 (GPT-2's default, 0.1, where it gives none).
  m.dropout = false;
  bool any = false;
  for (const char* key : {"resid_pdrop", "attn_pdrop", "embd_pdrop", "hidden_dropout", "attention_dropout",
                          "hidden_dropout_prob", "attention_probs_dropout_prob"}) {
    if (!j.contains(key) || !j.at(key).is_number()) continue;
    any = true;
    m.dropout = m.dropout || j.at(key).get<double>() > 0.0;
  }
  if (!any && type == "gpt2") m.dropout = true;
  if (m.hidden % m.heads != 0) {
    throw core::ConfigError(r.where(), "hidden_size",
                            fmt::format("{} is not divisible by num_attention_heads = {}", m.hidden, m.heads));
  }
  if (m.heads % m.kv_heads != 0) {
    throw core::ConfigError(r.where(), "num_key_value_heads",
                            fmt::format("{} does not divide num_attention_heads = {}", m.kv_heads, m.heads));
  }
  if (j.contains("torch_dtype") && j.at("torch_dtype").is_string()) {
    const std::string d = j.at("torch_dtype").get<std::string>();
    if (d == "float16") m.param_dtype = m.grad_dtype = core::Dtype::kFp16;
    if (d == "bfloat16") m.param_dtype = m.grad_dtype = core::Dtype::kBf16;
    // float32 checkpoints are still trained in mixed precision: keep bf16 working weights.
  }
  if (j.contains("_name_or_path") && j.at("_name_or_path").is_string()) {
    m.name = j.at("_name_or_path").get<std::string>();
  } else {
    m.name = type;
  }
  m.source = fmt::format("Hugging Face config {}", file);
  return m;
}

core::ModelSpec load_hf_config(const std::string& path) {
  return parse_hf_config(read_text_file(path, "Hugging Face config"), path);
}

}  // namespace shardsim::scenario
