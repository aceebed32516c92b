#include "sim/scenario/hf_config.hpp"

#include <gtest/gtest.h>

#include "sim/core/errors.hpp"
#include "sim/report/report.hpp"
#include "sim/scenario/evaluate.hpp"
#include "sim/scenario/scenario.hpp"

namespace shardsim::scenario {
namespace {

const std::string kData = std::string(SHARDSIM_SOURCE_DIR) + "/tests/data/";

TEST(HfConfig, ReadsGptNeox20bLikeThePreset) {
  const core::ModelSpec m = load_hf_config(kData + "gpt_neox_20b_config.json");
  const core::ModelSpec& p = *core::find_model_preset("gpt-neox-20b");
  EXPECT_EQ(m.layers, p.layers);
  EXPECT_EQ(m.hidden, p.hidden);
  EXPECT_EQ(m.heads, p.heads);
  EXPECT_EQ(m.ffn_hidden, p.ffn_hidden);
  EXPECT_EQ(m.vocab, p.vocab);
  EXPECT_EQ(m.param_dtype, core::Dtype::kFp16);
  EXPECT_DOUBLE_EQ(m.total_params(), p.total_params());
}

TEST(HfConfig, ReadsLlama2_70bWithGroupedQueryAttention) {
  const core::ModelSpec m = load_hf_config(kData + "llama2_70b_config.json");
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.mlp, core::MlpKind::kSwiglu);
  EXPECT_DOUBLE_EQ(m.total_params(), core::find_model_preset("llama2-70b")->total_params());
}

// Qwen2.5-7B-Instruct's config.json (Hugging Face Qwen/Qwen2.5-7B-Instruct, transformers 4.43.3): grouped-query
// attention with biases on q, k and v only. Its model card: 7.61 B parameters, 6.53 B without the embeddings.
TEST(HfConfig, ReadsQwen2WithBiasesOnQueryKeyAndValueOnly) {
  const core::ModelSpec m = load_hf_config(kData + "qwen2_5_7b_config.json");
  EXPECT_EQ(m.kv_heads, 4);
  EXPECT_EQ(m.mlp, core::MlpKind::kSwiglu);
  EXPECT_FALSE(m.linear_bias);
  EXPECT_TRUE(m.qkv_bias);
  EXPECT_FALSE(m.tied_embeddings);
  EXPECT_EQ(m.name, "Qwen/Qwen2.5-7B-Instruct");
  EXPECT_DOUBLE_EQ(m.total_params(), 7'615'616'512.0);
  EXPECT_NEAR(m.layers * m.params_per_layer() / 1e9, 6.53, 0.005);
}

// GPT-2 small (Hugging Face gpt2 config.json, its own key names): 124,439,808 parameters with the head tied.
TEST(HfConfig, ReadsGpt2ByItsOwnKeyNames) {
  const core::ModelSpec m = load_hf_config(kData + "gpt2_config.json");
  EXPECT_EQ(m.hidden, 768);
  EXPECT_EQ(m.layers, 12);
  EXPECT_EQ(m.ffn_hidden, 4 * 768);
  EXPECT_EQ(m.position, core::PositionKind::kLearned);
  EXPECT_TRUE(m.tied_embeddings);
  EXPECT_DOUBLE_EQ(m.total_params(), 124'439'808.0);
  EXPECT_TRUE(m.dropout);  // resid_pdrop, attn_pdrop, embd_pdrop 0.1
}

// BLOOM-176B's config.json (Hugging Face bigscience/bloom, transformers 4.21.0): BloomConfig's key names, ALiBi
// positions (no position table), tied embeddings, no dropout. Its model card: 176,247,271,424 parameters, of which
// shardsim leaves out the LayerNorm after the word embeddings (2 x 14,336).
TEST(HfConfig, ReadsBloomWithAlibiPositions) {
  const core::ModelSpec m = load_hf_config(kData + "bloom_config.json");
  EXPECT_EQ(m.layers, 70);
  EXPECT_EQ(m.hidden, 14336);
  EXPECT_EQ(m.heads, 112);
  EXPECT_EQ(m.ffn_hidden, 4 * 14336);
  EXPECT_EQ(m.vocab, 250880);
  EXPECT_EQ(m.position, core::PositionKind::kAlibi);
  EXPECT_TRUE(m.tied_embeddings);
  EXPECT_FALSE(m.dropout);
  EXPECT_EQ(m.seq_len, 0);  // ALiBi: the config has no length
  EXPECT_DOUBLE_EQ(m.total_params(), 176'247'271'424.0 - 2.0 * 14336);
  // Older configs spell the width n_embed; a config without either names both.
  EXPECT_EQ(parse_hf_config(R"({"model_type": "bloom", "n_embed": 1024, "n_layer": 24, "num_attention_heads": 16,
                                "vocab_size": 250880, "seq_length": 2048})",
                            "config.json")
                .hidden,
            1024);
  try {
    (void)parse_hf_config(R"({"model_type": "bloom", "n_layer": 2, "n_head": 2, "vocab_size": 8})", "config.json");
    FAIL() << "expected a ConfigError";
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("missing required field (hidden_size or n_embed)"), std::string::npos)
        << e.what();
  }
  // A scenario must then say how long its sequences are.
  const std::string head = "model:\n  hf_config: '" + kData + "bloom_config.json'\n";
  const std::string rest = "cluster: {preset: dgx-a100, nodes: 48}\nplan: {tp: 4, pp: 12, micro_batch: 2, global_batch: 2048}\n";
  try {
    (void)parse_scenarios(head + rest, "s.yaml");
    FAIL() << "expected a ConfigError";
  } catch (const core::ConfigError& e) {
    EXPECT_EQ(e.where().line, 2) << e.what();
    EXPECT_NE(std::string(e.what()).find("gives no sequence length (its positions are ALiBi's): set model.seq_len"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(parse_scenarios(head + "  seq_len: 2048\n" + rest, "s.yaml").at(0).model.seq_len, 2048);
}

// Dropout as the config gives it: Qwen2's attention_dropout 0.0 (and no other) means none, as in the presets of the
// families that train without it.
TEST(HfConfig, DropoutIsTheConfigs) {
  EXPECT_FALSE(load_hf_config(kData + "qwen2_5_7b_config.json").dropout);
  EXPECT_FALSE(core::find_model_preset("llama2-7b")->dropout);
  EXPECT_FALSE(core::find_model_preset("gpt-neox-20b")->dropout);
  EXPECT_TRUE(core::find_model_preset("gpt3-175b")->dropout);
}

// The sequence length is the scenario's; where the scenario gives none, the config's max_position_embeddings is
// taken and the report says so.
TEST(HfConfig, TheSequenceLengthIsTheScenariosOrANoteSaysWhere) {
  const std::string head = "model:\n  hf_config: '" + kData + "qwen2_5_7b_config.json'\n";
  const std::string rest = "cluster: {preset: dgx-h100, nodes: 1}\nplan: {zero_stage: 3, micro_batch: 1, global_batch: 8}\n";
  const Scenario taken = parse_scenarios(head + rest, "s.yaml").at(0);
  EXPECT_EQ(taken.model.seq_len, 32768);
  EXPECT_NE(taken.model.note.find("max_position_embeddings"), std::string::npos) << taken.model.note;
  EXPECT_NE(report::render_table(taken, evaluate(taken)).find("note: seq_len 32768 is the config's"), std::string::npos);
  const Scenario given = parse_scenarios(head + "  seq_len: 4096\n" + rest, "s.yaml").at(0);
  EXPECT_EQ(given.model.seq_len, 4096);
  EXPECT_TRUE(given.model.note.empty());
}

void expect_error(const std::string& json, const std::string& fragment, int line = 0) {
  try {
    (void)parse_hf_config(json, "config.json");
    FAIL() << "expected ConfigError for: " << json;
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    if (line > 0) {
      EXPECT_EQ(e.where().line, line) << e.what();
    }
  }
}

TEST(HfConfig, ClearErrors) {
  expect_error("{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 4096,\n}", "invalid JSON", 4);
  expect_error(R"({"model_type": "llama"})", "hidden_size");
  expect_error(R"({"model_type": "bert", "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 1,
                  "intermediate_size": 8, "vocab_size": 8, "max_position_embeddings": 8})",
               "unsupported model_type");
  expect_error(R"({"model_type": "llama", "hidden_size": -5})", "positive integer");
  expect_error(R"({"model_type": "llama", "hidden_size": 100, "num_hidden_layers": 1, "num_attention_heads": 3,
                  "intermediate_size": 8, "vocab_size": 8, "max_position_embeddings": 8})",
               "not divisible");
  expect_error("[1, 2]", "JSON object");
  // Mixtral's config (Hugging Face mistralai/Mixtral-8x7B-v0.1): the dense shape is there, the experts are not modelled.
  expect_error(R"({"model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                  "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
                  "max_position_embeddings": 32768, "num_local_experts": 8, "num_experts_per_tok": 2})",
               "mixture of experts (num_local_experts = 8)");
}

}  // namespace
}  // namespace shardsim::scenario
