#include <gtest/gtest.h>

#include "sim/core/model_spec.hpp"

namespace shardsim::core {
namespace {

const ModelSpec& preset(const char* name) {
  const ModelSpec* m = find_model_preset(name);
  EXPECT_NE(m, nullptr) << name;
  return *m;
}

// Exact counts by hand: per block 4h^2 + 8h*f-ish terms written out, plus embeddings (see each comment).
TEST(ModelSpec, GptNeox20bHasItsPublishedParameterCount) {
  // 44 x (12h^2 + 13h) + 2 x 50432 x 6144 + 2h (final LayerNorm), h = 6144: 20,554,567,680
  // (Black et al. 2022 report 20.55B with the untied 50432-row embedding and unembedding).
  EXPECT_DOUBLE_EQ(preset("gpt-neox-20b").total_params(), 20554567680.0);
}

TEST(ModelSpec, Llama2PresetsMatchTheReleasedCheckpoints) {
  // Hugging Face parameter counts of meta-llama/Llama-2-{7,13,70}b-hf.
  EXPECT_DOUBLE_EQ(preset("llama2-7b").total_params(), 6738415616.0);
  EXPECT_DOUBLE_EQ(preset("llama2-13b").total_params(), 13015864320.0);
  EXPECT_DOUBLE_EQ(preset("llama2-70b").total_params(), 68976648192.0);
  // LLaMA (v1) 7B and 13B have LLaMA-2's shapes; 30B is HF huggyllama/llama-30b's 32,528,943,616.
  EXPECT_DOUBLE_EQ(preset("llama-7b").total_params(), 6738415616.0);
  EXPECT_DOUBLE_EQ(preset("llama-13b").total_params(), 13015864320.0);
  EXPECT_DOUBLE_EQ(preset("llama-30b").total_params(), 32528943616.0);
}

TEST(ModelSpec, Llama3PresetsMatchTheReleasedCheckpoints) {
  // Hugging Face parameter counts of meta-llama/Meta-Llama-3-8B, -70B and Llama-3.1-405B (untied 128,256-row
  // embedding and head).
  EXPECT_DOUBLE_EQ(preset("llama3-8b").total_params(), 8030261248.0);
  EXPECT_DOUBLE_EQ(preset("llama3-70b").total_params(), 70553706496.0);
  EXPECT_DOUBLE_EQ(preset("llama3-405b").total_params(), 405853388800.0);  // meta-llama/Llama-3.1-405B
  EXPECT_EQ(preset("llama3-8b").kv_heads, 8);
  EXPECT_EQ(preset("llama3-8b").seq_len, 8192);
}

TEST(ModelSpec, Gpt3Is175B) {
  // Brown et al. 2020, Table 2.1: 175.0B (tied embeddings, learned positions).
  EXPECT_NEAR(preset("gpt3-175b").total_params() / 1e9, 175.0, 175.0 * 0.005);
}

TEST(ModelSpec, ForwardFlopsFollowNarayanan) {
  // Narayanan et al. 2021, eq. (3) per layer for f = 4h: 24 B s h^2 (1 + s / (6h)).
  const ModelSpec& m = preset("gpt3-175b");
  const double b = 1, s = m.seq_len, h = m.hidden;
  const double expected = 24.0 * b * s * h * h * (1.0 + s / (6.0 * h));
  EXPECT_NEAR(m.layer_forward_flops(b * s).value() / expected, 1.0, 1e-12);
  // The logit layer: 2 B s h V.
  EXPECT_DOUBLE_EQ(m.head_forward_flops(s).value(), 2.0 * s * h * m.vocab);
}

TEST(ModelSpec, OptimizerBytesPerParameterIsTwelveForMixedPrecisionAdam) {
  ModelSpec m = preset("llama2-7b");
  EXPECT_DOUBLE_EQ(m.optimizer_bytes_per_param(), 12.0);
  m.param_dtype = Dtype::kFp32;  // fp32 training keeps no separate master copy
  EXPECT_DOUBLE_EQ(m.optimizer_bytes_per_param(), 8.0);
}

TEST(ModelSpec, EveryPresetIsConsistent) {
  for (const auto& name : model_preset_names()) {
    const ModelSpec& m = preset(name.c_str());
    EXPECT_EQ(m.hidden % m.heads, 0) << name;
    EXPECT_EQ(m.heads % m.kv_heads, 0) << name;
    EXPECT_FALSE(m.source.empty()) << name;
  }
}

}  // namespace
}  // namespace shardsim::core
