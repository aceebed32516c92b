#include "sim/scenario/deepspeed_config.hpp"

#include <gtest/gtest.h>

#include "sim/scenario/scenario.hpp"

namespace shardsim::scenario {
namespace {

const std::string kData = std::string(SHARDSIM_SOURCE_DIR) + "/tests/data/";
const char* kScenario = "model: gpt-20b-frontier\ncluster: {preset: frontier, nodes: 48}\nplan: {zero_stage: 1}\n";

TEST(DeepSpeedConfig, ZeroPlusPlusConfigBecomesThePlan) {
  const auto ds = load_deepspeed_config(kData + "ds_config_zeropp.json");
  // Keys not modelled are named, top-level ones too (precision is the scenario's model dtype).
  EXPECT_EQ(ds.ignored, (std::vector<std::string>{"bf16", "zero_optimization.contiguous_gradients"}));
  const auto s = parse_scenarios(kScenario, "s.yaml", ds.overrides).at(0);
  EXPECT_EQ(s.plan.zero_stage, 3);
  EXPECT_EQ(s.plan.global_batch, 1536);
  EXPECT_EQ(s.plan.micro_batch, 1);
  EXPECT_DOUBLE_EQ(s.plan.reduce_bucket.value(), 2e7);    // 1e7 elements x 2 bytes
  EXPECT_DOUBLE_EQ(s.plan.prefetch_bucket.value(), 1e8);  // 5e7 elements x 2 bytes
  EXPECT_TRUE(s.plan.quantization.weights);
  EXPECT_TRUE(s.plan.quantization.gradients);
  EXPECT_EQ(s.plan.partition, (core::PartitionSpec{384, 384, 384, 8}));
}

// ZeRO-1/2 as DeepSpeed 0.14 runs them unless the config says otherwise: buckets all-reduced
// (use_multi_rank_bucket_allreduce; reduce_scatter: false as well), no overlap with backward.
TEST(DeepSpeedConfig, ZeroOneAndTwoReductionFollowTheConfig) {
  auto plan = [](const std::string& json) {
    return parse_scenarios(kScenario, "s.yaml", parse_deepspeed_config(json, "ds.json").overrides).at(0).plan;
  };
  const auto defaults = plan(R"({"zero_optimization": {"stage": 2}})");
  EXPECT_FALSE(defaults.overlaps_comm());
  EXPECT_TRUE(defaults.reduces_buckets_by_all_reduce());
  const auto scatter = plan(R"({"zero_optimization": {"stage": 2, "use_multi_rank_bucket_allreduce": false,
                                                       "overlap_comm": true}})");
  EXPECT_TRUE(scatter.overlaps_comm());
  EXPECT_FALSE(scatter.reduces_buckets_by_all_reduce());
  EXPECT_TRUE(plan(R"({"zero_optimization": {"stage": 1, "reduce_scatter": false}})").reduces_buckets_by_all_reduce());
  // Stage 3 reduce-scatters (stage3.py: reduce_scatter_coalesced) and overlaps by default.
  const auto z3 = plan(R"({"zero_optimization": {"stage": 3}})");
  EXPECT_TRUE(z3.overlaps_comm());
  EXPECT_FALSE(z3.reduces_buckets_by_all_reduce());
  // Tensors of at most stage3_param_persistence_threshold elements stay gathered (default 1e5; 0: none).
  EXPECT_DOUBLE_EQ(z3.persistence_threshold.value(), 2e5);
  EXPECT_DOUBLE_EQ(plan(R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 1e6}})")
                       .persistence_threshold.value(),
                   2e6);
  EXPECT_DOUBLE_EQ(plan(R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0}})")
                       .persistence_threshold.value(),
                   0.0);
}

// ZeRO-Infinity on the CPU: ZeRO-3's parameter partitions in host memory, copied in before each gather; the
// 16-bit partition written on the host after CPU Adam, nothing uploaded.
TEST(DeepSpeedConfig, ParameterOffloadBecomesThePlan) {
  const auto s = parse_scenarios(kScenario, "s.yaml",
                                 parse_deepspeed_config(R"({"zero_optimization": {"stage": 3,
                                     "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "cpu"}}})",
                                                        "ds.json")
                                     .overrides)
                     .at(0);
  EXPECT_TRUE(s.plan.offload.params);
  EXPECT_TRUE(s.plan.offload.optimizer);
  EXPECT_FALSE(parse_scenarios(kScenario, "s.yaml").at(0).plan.offload.params);
}

void expect_error(const std::string& json, const std::string& key, const std::string& fragment) {
  try {
    const auto ds = parse_deepspeed_config(json, "ds.json");
    (void)parse_scenarios(kScenario, "s.yaml", ds.overrides);
    FAIL() << "expected a ConfigError for " << json;
  } catch (const core::ConfigError& e) {
    EXPECT_EQ(e.where().file, "ds.json") << e.what();
    EXPECT_EQ(e.key_path(), key) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(DeepSpeedConfig, ErrorsNameTheDeepSpeedKey) {
  expect_error(R"({"zero_optimization": {"stage": 5}})", "zero_optimization.stage", "0, 1, 2 or 3");
  expect_error(R"({"zero_optimization": {"reduce_bucket_size": -3}})", "zero_optimization.reduce_bucket_size",
               "positive whole number");
  expect_error(R"({"zero_optimization": {"overlap_comm": "yes"}})", "zero_optimization.overlap_comm", "true or false");
  // Valid JSON, but the plan it makes is not: the error still points at the DeepSpeed key.
  expect_error(R"({"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 5}})",
               "zero_optimization.zero_hpz_partition_size", "does not divide");
  expect_error(R"({"train_batch_size": 100})", "train_batch_size", "not a multiple");
  expect_error(R"({"zero_optimization": {"offload_param": {"device": "cpu"}}})", "zero_optimization.offload_param",
               "needs zero_stage 3");
  expect_error(R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}})",
               "zero_optimization.offload_param", "optimizer offloaded too");
  expect_error(R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}})",
               "zero_optimization.offload_param.device", "not modelled");
  expect_error(R"({"zero_optimization": {"offload_optimizer": {"device": "nvme"}}})",
               "zero_optimization.offload_optimizer.device", "not modelled");
  expect_error(R"({"zero_optimization": {"stage": 1, "offload_optimizer": {"device": "cpu", "ratio": 1.5}}})",
               "zero_optimization.offload_optimizer.ratio", "fraction");
  expect_error("{\n  \"zero_optimization\": {\n    \"stage\": 3,\n  }\n}", "", "invalid JSON");
}

}  // namespace
}  // namespace shardsim::scenario
