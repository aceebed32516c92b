#include "sim/scenario/deepspeed_config.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include "sim/scenario/scenario.hpp"

namespace shardsim::scenario {
namespace {

const std::string kData = std::string(SHARDSIM_SOURCE_DIR) + "/tests/data/";
const char* kScenario = "model: gpt-20b-frontier\ncluster: {preset: frontier, nodes: 48}\nplan: {zero_stage: 1}\n";

TEST(DeepSpeedConfig, ZeroPlusPlusConfigBecomesThePlan) {
  const auto ds = load_deepspeed_config(kData + "ds_config_zeropp.json");
  // Keys not modelled are named (precision is the scenario's model dtype: checked, not ignored).
  EXPECT_EQ(ds.ignored, (std::vector<std::string>{"zero_optimization.contiguous_gradients"}));
  EXPECT_EQ(ds.bf16, std::optional<bool>(true));
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

// A plan as a DeepSpeed config: read back, the same plan; layouts DeepSpeed does not have are refused with the reason.
TEST(DeepSpeedConfig, APlanWrittenAsAConfigReadsBackToTheSamePlan) {
  for (const std::string plan :
       {"plan: {zero_stage: 1, micro_batch: 2, global_batch: 768, overlap_comm: true}",
        "plan: {zero_stage: 2, micro_batch: 1, global_batch: 384, use_multi_rank_bucket_allreduce: false}",
        "plan: {zero_stage: 3, micro_batch: 1, global_batch: 1536, zero_quantized_weights: true, "
        "zero_hpz_partition_size: 8, zero_quantized_gradients: true, prefetch_bucket: 64MB}",
        "plan: {mics_shard_size: 16, micro_batch: 1, global_batch: 384}",
        "plan: {zero_stage: 3, micro_batch: 1, global_batch: 384, offload_optimizer: {device: cpu, ratio: 0.4}}",
        "plan: {zero_stage: 0, micro_batch: 1, global_batch: 384, grad_accum_dtype: fp32}",
        "plan: {zero_stage: 0, micro_batch: 1, global_batch: 384}"}) {
    const std::string yaml = "model: gpt-20b-frontier\ncluster: {preset: frontier, nodes: 48}\n" + plan + "\n";
    const Scenario s = parse_scenarios(yaml, "s.yaml").at(0);
    const DeepSpeedExport e = deepspeed_config_of(s);
    ASSERT_TRUE(e.refusal.empty()) << plan << ": " << e.refusal;
    const DeepSpeedPlan ds = parse_deepspeed_config(e.json, "ds.json");
    EXPECT_TRUE(ds.ignored.empty()) << plan;
    const Scenario back = parse_scenarios(kScenario, "s.yaml", ds.overrides).at(0);
    EXPECT_EQ(plan_to_yaml(back.plan, back.cluster), plan_to_yaml(s.plan, s.cluster)) << plan << "\n" << e.json;
  }
  auto refusal = [](const std::string& plan) {
    const std::string yaml = "model: gpt-20b-frontier\ncluster: {preset: frontier, nodes: 48}\n" + plan + "\n";
    return deepspeed_config_of(parse_scenarios(yaml, "s.yaml").at(0)).refusal;
  };
  EXPECT_NE(refusal("plan: {partition: {params: 1, grads: 1, optimizer: 8}}").find("AMSP layout"), std::string::npos);
  EXPECT_NE(refusal("plan: {zero_stage: 3, framework: fsdp}").find("framework fsdp"), std::string::npos);
  EXPECT_NE(refusal("plan: {hierarchy: {levels: [gcd-pair, node, slingshot], secondary_params: gcd-pair}}")
                .find("hierarchical"),
            std::string::npos);
}

// bf16 without ZeRO: DeepSpeed's BF16_Optimizer (fp32 accumulation) unless data_types says otherwise, as
// DeepSpeed's get_data_types defaults it; the written config pins what the plan models.
TEST(DeepSpeedConfig, Bf16WithoutZeroIsTheBf16OptimizerUnlessDataTypesSaysOtherwise) {
  const char* stage0 = "model: gpt-20b-frontier\ncluster: {preset: frontier, nodes: 48}\nplan: {zero_stage: 0}\n";
  auto plan_of = [&](const std::string& json) {
    return parse_scenarios(stage0, "s.yaml", parse_deepspeed_config(json, "ds.json").overrides).at(0).plan;
  };
  EXPECT_EQ(plan_of(R"({"bf16": {"enabled": true}, "zero_optimization": {"stage": 0}})").grad_accum_dtype,
            std::optional<core::Dtype>(core::Dtype::kFp32));
  EXPECT_EQ(plan_of(R"({"bf16": {"enabled": true}, "zero_optimization": {"stage": 0},
                        "data_types": {"grad_accum_dtype": "bf16"}})").grad_accum_dtype,
            std::optional<core::Dtype>(core::Dtype::kBf16));
  EXPECT_FALSE(plan_of(R"({"zero_optimization": {"stage": 0}})").grad_accum_dtype.has_value());
  try {
    (void)parse_deepspeed_config(R"({"data_types": {"grad_accum_dtype": "fp8"}})", "ds.json");
    FAIL() << "accepted fp8";
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("data_types.grad_accum_dtype"), std::string::npos) << e.what();
  }
}

// communication_data_type becomes grad_comm_dtype (DeepSpeed reads it in any case); another value is refused at
// its key.
TEST(DeepSpeedConfig, CommunicationDataTypeIsTheReductionsDtype) {
  const auto plan = parse_scenarios(kScenario, "s.yaml",
                                    parse_deepspeed_config(R"({"communication_data_type": "FP32"})", "ds.json").overrides)
                        .at(0)
                        .plan;
  EXPECT_EQ(plan.grad_comm_dtype, std::optional<core::Dtype>(core::Dtype::kFp32));
  EXPECT_TRUE(parse_deepspeed_config(R"({"communication_data_type": "bf16"})", "ds.json").ignored.empty());
  try {
    (void)parse_deepspeed_config(R"({"communication_data_type": "int8"})", "ds.json");
    FAIL() << "accepted int8";
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("communication_data_type"), std::string::npos) << e.what();
  }
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
  EXPECT_TRUE(plan(R"({"zero_optimization": {"stage": 2, "use_multi_rank_bucket_allreduce": false,
                                             "reduce_scatter": false}})")
                  .reduces_buckets_by_all_reduce());
  // Stage 3 reduce-scatters (stage3.py: reduce_scatter_coalesced) and overlaps by default; without reduce_scatter it
  // all-reduces its contiguous bucket (__avg_scatter_contiguous_grads).
  EXPECT_TRUE(plan(R"({"zero_optimization": {"stage": 3, "reduce_scatter": false}})").reduces_buckets_by_all_reduce());
  // ... which needs its contiguous gradient buffer (contiguous_gradients, on by default).
  EXPECT_FALSE(plan(R"({"zero_optimization": {"stage": 3, "reduce_scatter": false, "contiguous_gradients": false}})")
                   .reduces_buckets_by_all_reduce());
  // Stage 0 has no ZeRO optimizer to read it: listed as ignored.
  const auto ignored = parse_deepspeed_config(R"({"zero_optimization": {"stage": 0, "reduce_scatter": false}})", "ds.json");
  EXPECT_NE(std::find(ignored.ignored.begin(), ignored.ignored.end(), "zero_optimization.reduce_scatter"),
            ignored.ignored.end());
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
  // ... while their total stays within stage3_model_persistence_threshold (default sys.maxsize: unset).
  EXPECT_FALSE(z3.model_persistence_threshold.has_value());
  const auto capped = plan(R"({"zero_optimization": {"stage": 3, "stage3_model_persistence_threshold": 1e4}})");
  ASSERT_TRUE(capped.model_persistence_threshold.has_value());
  EXPECT_DOUBLE_EQ(capped.model_persistence_threshold->value(), 2e4);
  EXPECT_DOUBLE_EQ(plan(R"({"zero_optimization": {"model_persistence_threshold": 0, "stage": 3}})")
                       .model_persistence_threshold->value(),
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

// ZeRO-Infinity on NVMe: the device, the swapper's pipelining and the sub-groups become the plan (the machine must
// have drives: the scenario's host describes them).
TEST(DeepSpeedConfig, NvmeOffloadBecomesThePlan) {
  const std::string scenario = "name: s\nmodel: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1, host: {nvme_read: 24GB/s, "
                               "nvme_write: 12GB/s}}\nplan: {micro_batch: 1}\n";
  const auto ds = parse_deepspeed_config(R"({"zero_optimization": {"stage": 3, "sub_group_size": 5e8,
      "offload_optimizer": {"device": "nvme", "nvme_path": "/local_nvme", "pipeline_read": true, "buffer_count": 6},
      "offload_param": {"device": "nvme", "nvme_path": "/local_nvme", "buffer_count": 4, "buffer_size": 2e8,
                        "max_in_cpu": 1e9}}})",
                                         "ds.json");
  const auto s = parse_scenarios(scenario, "s.yaml", ds.overrides).at(0);
  EXPECT_TRUE(s.plan.offload.optimizer_nvme);
  EXPECT_TRUE(s.plan.offload.params_nvme);
  EXPECT_TRUE(s.plan.offload.pipeline);
  EXPECT_EQ(s.plan.offload.buffer_count, 6);
  EXPECT_DOUBLE_EQ(s.plan.offload.sub_group, 5e8);
  EXPECT_EQ(s.plan.offload.param_buffer_count, 4);
  EXPECT_DOUBLE_EQ(s.plan.offload.param_buffer_size, 2e8);
  EXPECT_NE(std::find(ds.ignored.begin(), ds.ignored.end(), "zero_optimization.offload_param.max_in_cpu"),
            ds.ignored.end());
  // ... and back: the config written for the plan says the same.
  const DeepSpeedExport out = deepspeed_config_of(s);
  ASSERT_TRUE(out.refusal.empty()) << out.refusal;
  const auto back = parse_scenarios(scenario, "s.yaml", parse_deepspeed_config(out.json, "out.json").overrides).at(0);
  EXPECT_EQ(back.plan.offload.optimizer_nvme, true);
  EXPECT_EQ(back.plan.offload.params_nvme, true);
  EXPECT_EQ(back.plan.offload.pipeline, true);
  EXPECT_DOUBLE_EQ(back.plan.offload.sub_group, 5e8);
  EXPECT_DOUBLE_EQ(back.plan.offload.param_buffer_size, 2e8);
  // With the optimizer on the CPU DeepSpeed does not use the swapper's settings: listed as not modelled.
  const auto cpu = parse_deepspeed_config(
      R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pipeline_read": true}}})", "ds.json");
  EXPECT_NE(std::find(cpu.ignored.begin(), cpu.ignored.end(), "zero_optimization.offload_optimizer.pipeline_read"),
            cpu.ignored.end());
  // Without NVMe offload sub_group_size changes nothing.
  EXPECT_DOUBLE_EQ(parse_scenarios(scenario, "s.yaml",
                                   parse_deepspeed_config(R"({"zero_optimization": {"stage": 3, "sub_group_size": 5e8}})",
                                                          "ds.json")
                                       .overrides)
                       .at(0)
                       .plan.offload.sub_group,
                   1e9);
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

// A config written for the Hugging Face Trainer: "auto" is what the Trainer would fill in — the batch and the
// accumulation from the scenario, reduce_bucket_size = h^2, stage3_prefetch_bucket_size = 0.9 h^2 and
// stage3_param_persistence_threshold = 10 h from the model's hidden size (transformers
// integrations/deepspeed.py, trainer_config_finalize); gradient accumulation and precision given as values are
// checked against the scenario, and DeepSpeed's deprecated switches still work.
TEST(DeepSpeedConfig, HuggingFaceAutoValuesComeFromTheScenario) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "shardsim-ds-auto";
  fs::create_directories(dir);
  const std::string scenario = (dir / "s.yaml").string();
  std::ofstream(scenario) << "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 2}\n"
                             "plan: {zero_stage: 1, micro_batch: 2, global_batch: 128}\n";
  const auto ds = parse_deepspeed_config(R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
      "gradient_accumulation_steps": "auto", "bf16": {"enabled": "auto"}, "gradient_clipping": "auto",
      "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto", "stage3_prefetch_bucket_size": "auto",
                            "stage3_param_persistence_threshold": "auto", "stage3_max_live_parameters": 1e9,
                            "stage3_max_reuse_distance": 3e8}})",
                                         "ds.json");
  EXPECT_EQ(ds.hidden_size_auto.size(), 3u);
  const auto s = load_scenarios_with_deepspeed(scenario, ds).at(0);
  const double h = 4096.0;
  EXPECT_EQ(s.plan.zero_stage, 3);
  EXPECT_EQ(s.plan.micro_batch, 2);
  EXPECT_EQ(s.plan.global_batch, 128);
  EXPECT_DOUBLE_EQ(s.plan.reduce_bucket.value(), h * h * 2.0);
  EXPECT_DOUBLE_EQ(s.plan.prefetch_bucket.value(), std::floor(0.9 * h * h) * 2.0);
  EXPECT_DOUBLE_EQ(s.plan.persistence_threshold.value(), 10.0 * h * 2.0);
  EXPECT_DOUBLE_EQ(s.plan.max_live_parameters.value(), 2e9);
  EXPECT_DOUBLE_EQ(s.plan.max_reuse_distance.value(), 6e8);
  // Values that agree with the scenario pass; ones that do not are errors naming the DeepSpeed key.
  auto load = [&](const std::string& json) { return load_scenarios_with_deepspeed(scenario, parse_deepspeed_config(json, "ds.json")); };
  // DeepSpeed's 0 for either: nothing prefetched, nothing kept for its reuse.
  const auto zero = [&](const char* key) {
    return load(fmt::format(R"({{"zero_optimization": {{"stage": 3, "{}": 0}}}})", key)).at(0).plan;
  };
  EXPECT_DOUBLE_EQ(zero("max_reuse_distance").max_reuse_distance.value(), 0.0);
  EXPECT_DOUBLE_EQ(zero("prefetch_bucket_size").prefetch_bucket.value(), 0.0);
  EXPECT_NO_THROW(load(R"({"gradient_accumulation_steps": 4, "bf16": {"enabled": true}, "fp16": {"enabled": false}})"));
  auto expect = [&](const std::string& json, const std::string& key, const std::string& fragment) {
    try {
      (void)load(json);
      FAIL() << "expected a ConfigError for " << json;
    } catch (const core::ConfigError& e) {
      EXPECT_EQ(e.key_path(), key) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect(R"({"gradient_accumulation_steps": 8})", "gradient_accumulation_steps", "expected 4, as the scenario has it");
  expect(R"({"fp16": {"enabled": true}})", "fp16.enabled", "trains in bf16");
  expect(R"({"bf16": {"enabled": false}})", "bf16.enabled", "trains in bf16");
  expect(R"({"zero_optimization": {"allgather_bucket_size": "auto"}})", "zero_optimization.allgather_bucket_size",
         "fills in \"auto\" only for");
  // DeepSpeed refuses keys its zero_optimization does not have; so does shardsim, with a did-you-mean.
  expect(R"({"zero_optimization": {"stage": 3, "overlap_com": true}})", "zero_optimization.overlap_com",
         "did you mean 'overlap_comm'");
  // The deprecated forms: zero_optimization: true (stage 1), cpu_offload / cpu_offload_param.
  EXPECT_EQ(load(R"({"zero_optimization": true})").at(0).plan.zero_stage, 1);
  const auto legacy = load(R"({"zero_optimization": {"stage": 3, "cpu_offload": true, "cpu_offload_param": true}})").at(0);
  EXPECT_TRUE(legacy.plan.offload.optimizer);
  EXPECT_TRUE(legacy.plan.offload.params);
  // DeepSpeed takes a field's name for its alias.
  EXPECT_DOUBLE_EQ(load(R"({"zero_optimization": {"stage": 3, "prefetch_bucket_size": 1000}})").at(0).plan.prefetch_bucket.value(),
                   2000.0);
  fs::remove_all(dir);
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
  // NVMe offload needs the machine's drives described, and ZeRO-3; a device DeepSpeed does not know is refused.
  expect_error(R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "nvme"}}})",
               "zero_optimization.offload_param.device", "cluster.host.nvme_read");
  expect_error(R"({"zero_optimization": {"offload_optimizer": {"device": "nvme"}}})",
               "zero_optimization.offload_optimizer.device", "needs zero_stage 3");
  expect_error(R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "disk"}}})",
               "zero_optimization.offload_optimizer.device", "expected cpu, nvme or none");
  expect_error(R"({"zero_optimization": {"stage": 1, "offload_optimizer": {"device": "cpu", "ratio": 1.5}}})",
               "zero_optimization.offload_optimizer.ratio", "fraction");
  expect_error("{\n  \"zero_optimization\": {\n    \"stage\": 3,\n  }\n}", "", "invalid JSON");
}

}  // namespace
}  // namespace shardsim::scenario
