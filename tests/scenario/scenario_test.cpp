#include "sim/scenario/scenario.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include <algorithm>
#include <filesystem>

#include "sim/core/errors.hpp"
#include "sim/report/report.hpp"
#include "sim/scenario/evaluate.hpp"
#include "topology/cluster_presets.hpp"
#include "topology/link_topology.hpp"

namespace shardsim::scenario {
namespace {

const char* kGood = R"(name: ok
model: llama2-7b
cluster:
  preset: dgx-h100
  nodes: 2
plan:
  zero_stage: 3
  micro_batch: 2
  global_batch: 64
)";

struct Expected {
  int line;
  int column;
  std::string key;
  std::string fragment;
};

void expect_error(const std::string& yaml, const Expected& e) {
  try {
    (void)parse_scenarios(yaml, "s.yaml");
    FAIL() << "expected a ConfigError for:\n" << yaml;
  } catch (const core::ConfigError& err) {
    const std::string what = err.what();
    EXPECT_EQ(err.where().file, "s.yaml") << what;
    EXPECT_EQ(err.where().line, e.line) << what;
    if (e.column > 0) {
      EXPECT_EQ(err.where().column, e.column) << what;
    }
    EXPECT_EQ(err.key_path(), e.key) << what;
    EXPECT_NE(what.find(e.fragment), std::string::npos) << what;
    EXPECT_EQ(what.rfind("s.yaml:", 0), 0u) << what;  // starts with file:line:col
  }
}

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto pos = text.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return text.replace(pos, from.size(), to);
}

// `s` written back by scenario_with_plan into a copy of the scenario file `yaml` (in the temporary folder, named after
// `stem`) and read again.
Scenario written_back(const std::string& yaml, const Scenario& s, const std::string& stem) {
  const std::string file = (std::filesystem::temp_directory_path() / ("shardsim_" + stem + ".yaml")).string();
  std::ofstream(file) << yaml;
  return parse_scenarios(scenario_with_plan(file, s.plan, s.cluster, "copy"), file).at(0);
}

TEST(Scenario, GoodScenarioResolvesDerivedValues) {
  const auto all = parse_scenarios(kGood, "s.yaml");
  ASSERT_EQ(all.size(), 1u);
  const Scenario& s = all[0];
  EXPECT_EQ(s.name, "ok");
  EXPECT_EQ(s.cluster.total_devices(), 16);
  EXPECT_EQ(s.plan.dp, 16);  // derived from the device count
  EXPECT_EQ(s.plan.grad_accumulation(), 2);
  EXPECT_EQ(s.model.name, "llama2-7b");
}

TEST(Scenario, UnknownKeySuggestsTheRightOne) {
  expect_error(replace(kGood, "micro_batch: 2", "micro_bach: 2"),
               {8, 3, "plan.micro_bach", "did you mean 'micro_batch'"});
}

TEST(Scenario, UnknownTopLevelKey) {
  expect_error(std::string(kGood) + "engin: analytical\n", {10, 1, "engin", "did you mean 'engine'"});
}

TEST(Scenario, MissingKey) {
  expect_error("model: llama2-7b\ncluster: dgx-h100\n", {1, 1, "plan", "missing required key"});
}

TEST(Scenario, MissingKeyInsideACustomModel) {
  expect_error(replace(kGood, "model: llama2-7b", "model:\n  layers: 2\n  hidden: 64\n  heads: 4\n  vocab: 100\n  seq_len: 32"),
               {3, 3, "model.ffn_hidden", "missing required key"});
}

TEST(Scenario, BadUnit) {
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  device: {hbm: 80 GiBs}"),
               {6, 17, "cluster.device.hbm", "unknown size unit \"GiBs\""});
}

TEST(Scenario, BareNumberWhereAUnitIsNeeded) {
  expect_error(replace(kGood, "  global_batch: 64", "  global_batch: 64\n  reduce_bucket: 500000000"),
               {10, 18, "plan.reduce_bucket", "bare number"});
}

TEST(Scenario, ZeroOrNegativeSizes) {
  expect_error(replace(kGood, "  global_batch: 64", "  global_batch: 64\n  reduce_bucket: 0MB"),
               {10, 18, "plan.reduce_bucket", "positive size"});
  expect_error(replace(kGood, "nodes: 2", "nodes: 0"), {5, 10, "cluster.nodes", "expected an integer >= 1, got 0"});
  expect_error(replace(kGood, "micro_batch: 2", "micro_batch: -1"), {8, 16, "plan.micro_batch", "expected an integer >= 1, got -1"});
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  device: {hbm_bandwidth: 0GB/s}"),
               {6, 27, "cluster.device.hbm_bandwidth", "positive bandwidth"});
}

// FlashAttention's schedule keys: slots need compute units to deal blocks to, and block costs need the schedule.
TEST(Scenario, AttentionScheduleKeysThatWouldDoNothingAreRefused) {
  expect_error(replace(kGood, "  preset: dgx-h100", "  preset: dgx-a100\n  device: {attention_block_cost: 2}"),
               {5, 34, "cluster.device.attention_block_cost", "attention_slots > 0"});
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  device: {attention_slots: 2, compute_units: 0}"),
               {6, 29, "cluster.device.attention_slots", "with compute_units"});
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  device: {attention_backward_block_cost: 65}"),
               {6, 43, "cluster.device.attention_backward_block_cost", "from 0 to 64 tiles"});
  // On a device with the schedule (the H100 preset) they apply.
  const auto all = parse_scenarios(replace(kGood, "  nodes: 2", "  nodes: 2\n  device: {attention_slots: 1, attention_block_cost: 3}"), "s.yaml");
  EXPECT_EQ(all[0].cluster.device.attention_slots, 1);
  EXPECT_DOUBLE_EQ(all[0].cluster.device.attention_block_cost, 3.0);
}

// fused_gate_up: SwiGLU's gate and up as one weight; a GeLU MLP has no gate, so the key is refused there.
TEST(Scenario, FusedGateUpIsASwigluLayout) {
  const auto all = parse_scenarios(replace(kGood, "model: llama2-7b", "model: {preset: llama2-7b, fused_gate_up: true}"),
                                   "s.yaml");
  EXPECT_TRUE(all[0].model.fused_gate_up);
  EXPECT_FALSE(all[0].model.fused_qkv);
  expect_error(replace(kGood, "model: llama2-7b", "model: {preset: gpt-neox-20b, fused_gate_up: true}"),
               {2, 46, "model.fused_gate_up", "only with mlp: swiglu"});
}

// ALiBi (BLOOM, Megatron-DeepSpeed's --position-embedding-type alibi) biases the attention scores where they are
// formed: no position table beside the token embedding, unlike learned positions, and it is written back as it was
// read; a kind shardsim does not know is refused with the three it does.
TEST(Scenario, AlibiPositionsHaveNoParameters) {
  const std::string custom = "model: {preset: gpt-neox-20b, position: POS}";
  const auto alibi = parse_scenarios(replace(kGood, "model: llama2-7b", replace(custom, "POS", "alibi")), "s.yaml");
  const auto learned = parse_scenarios(replace(kGood, "model: llama2-7b", replace(custom, "POS", "learned")), "s.yaml");
  EXPECT_EQ(alibi[0].model.position, core::PositionKind::kAlibi);
  const core::ModelSpec& m = alibi[0].model;
  EXPECT_DOUBLE_EQ(m.embedding_params(), static_cast<double>(m.vocab) * m.hidden);
  EXPECT_DOUBLE_EQ(learned[0].model.embedding_params() - m.embedding_params(), static_cast<double>(m.seq_len) * m.hidden);
  EXPECT_NE(model_to_yaml(m).find("position: alibi\n"), std::string::npos);
  expect_error(replace(kGood, "model: llama2-7b", replace(custom, "POS", "sinusoidal")),
               {2, 41, "model.position", "alibi"});
}

TEST(Scenario, DegreesThatDoNotMultiplyToTheDeviceCount) {
  expect_error(replace(kGood, "  zero_stage: 3", "  zero_stage: 3\n  dp: 8"),
               {8, 7, "plan.dp", "8 x 1 x 1 = 8, but the cluster has 16 devices"});
}

TEST(Scenario, HeadsNotDivisibleByTensorParallelism) {
  expect_error(replace(kGood, "  zero_stage: 3", "  zero_stage: 3\n  tp: 3"),
               {8, 7, "plan.tp", "does not divide the cluster's 16 devices"});
  expect_error(replace(replace(kGood, "nodes: 2", "nodes: 3"), "  zero_stage: 3", "  zero_stage: 3\n  tp: 3"),
               {8, 7, "plan.tp", "heads = 32 is not divisible by tp = 3"});
  // Each rank holds whole key/value groups: LLaMA-2-70B's 8 do not split 16 ways.
  expect_error(replace(replace(replace(kGood, "llama2-7b", "llama2-70b"), "nodes: 2", "nodes: 4"), "  zero_stage: 3",
                       "  zero_stage: 3\n  tp: 16"),
               {8, 7, "plan.tp", "kv_heads = 8 is not divisible by tp = 16"});
}

TEST(Scenario, GlobalBatchMustBeAMultipleOfMicroBatchTimesDp) {
  expect_error(replace(kGood, "global_batch: 64", "global_batch: 60"),
               {9, 17, "plan.global_batch", "not a multiple of micro_batch x dp = 2 x 16 = 32"});
}

TEST(Scenario, UnknownPresetsAreNamedWithAlternatives) {
  expect_error(replace(kGood, "model: llama2-7b", "model: llama2-8b"), {2, 8, "model", "did you mean 'llama2-7b'"});
  expect_error(replace(kGood, "preset: dgx-h100", "preset: frontir"), {4, 11, "cluster.preset", "did you mean 'frontier'"});
}

TEST(Scenario, InvalidYamlSyntax) {
  expect_error("model: [llama2-7b\ncluster: x\n", {2, 8, "", "invalid YAML: end of sequence flow not found"});
}

TEST(Scenario, DuplicateKey) {
  expect_error(replace(kGood, "  zero_stage: 3", "  zero_stage: 3\n  zero_stage: 2"), {8, 3, "plan.zero_stage", "duplicate key"});
}

TEST(Scenario, OutOfRangeChoicesAndTypes) {
  expect_error(replace(kGood, "zero_stage: 3", "zero_stage: 4"), {7, 15, "plan.zero_stage", "[0, 3]"});
  expect_error(replace(kGood, "zero_stage: 3", "zero_stage: 3\n  recompute: partial"),
               {8, 14, "plan.recompute", "none, selective, selective-op, full"});
  expect_error(replace(kGood, "zero_stage: 3", "zero_stage: 3\n  overlap_comm: yes"), {8, 17, "plan.overlap_comm", "true or false"});
  expect_error(replace(kGood, "zero_stage: 3", "zero_stage: three"), {7, 15, "plan.zero_stage", "expected an integer"});
}

// plan.framework picks whose schedule the plan follows; FSDP takes the layouts it has and refuses the rest.
TEST(Scenario, FrameworkKeyAndWhatFsdpModels) {
  const auto fsdp = parse_scenarios(replace(kGood, "zero_stage: 3", "zero_stage: 3\n  framework: fsdp"), "s.yaml").at(0);
  EXPECT_EQ(fsdp.plan.framework, core::Framework::kFsdp);
  EXPECT_EQ(parse_scenarios(kGood, "s.yaml").at(0).plan.framework, core::Framework::kDeepSpeed);
  expect_error(replace(kGood, "zero_stage: 3", "zero_stage: 3\n  framework: fsdp2"),
               {8, 14, "plan.framework", "deepspeed, fsdp"});
  expect_error(replace(kGood, "zero_stage: 3", "zero_stage: 2\n  framework: fsdp"),
               {8, 14, "plan.framework", "FULL_SHARD"});
  expect_error(replace(kGood, "zero_stage: 3", "zero_stage: 3\n  framework: fsdp\n  zero_hpz_partition_size: 8"),
               {8, 14, "plan.framework", "ZeRO++"});
  // Megatron-LM: DDP and the distributed optimizer.
  EXPECT_EQ(parse_scenarios(replace(kGood, "zero_stage: 3", "zero_stage: 1\n  framework: megatron"), "s.yaml")
                .at(0)
                .plan.framework,
            core::Framework::kMegatron);
  expect_error(replace(kGood, "zero_stage: 3", "zero_stage: 3\n  framework: megatron"),
               {8, 14, "plan.framework", "distributed optimizer (zero_stage 1)"});
}

TEST(Scenario, HostTimesAreDurationsUnderASecond) {
  const std::string with_host = replace(kGood, "nodes: 2", "nodes: 2\n  host: {fetch_hook: 700us}");
  EXPECT_DOUBLE_EQ(parse_scenarios(with_host, "s.yaml").at(0).cluster.host.fetch_hook.value(), 700e-6);
  expect_error(replace(kGood, "nodes: 2", "nodes: 2\n  host: {block_forward: 2s}"),
               {6, 25, "cluster.host.block_forward", "under 1 s"});
  expect_error(replace(kGood, "nodes: 2", "nodes: 2\n  host: {tensor_hook: -1us}"),
               {6, 23, "cluster.host.tensor_hook", "non-negative duration"});
}

// The host's cores share PyTorch's CPU work among the node's device processes: a count of one or more.
TEST(Scenario, HostCoresAreACount) {
  const auto s = parse_scenarios(replace(kGood, "nodes: 2", "nodes: 2\n  host: {cores: 32}"), "s.yaml").at(0);
  EXPECT_EQ(s.cluster.host.cores, 32);
  EXPECT_DOUBLE_EQ(s.cluster.host.host_threads(8), 4.0);
  EXPECT_DOUBLE_EQ(s.cluster.host.host_threads(64), 1.0);
  expect_error(replace(kGood, "nodes: 2", "nodes: 2\n  host: {cores: 0}"), {6, 17, "cluster.host.cores", ""});
  const auto f = parse_scenarios(replace(kGood, "nodes: 2", "nodes: 2\n  host: {cores: 32, fault_threads: 2}"), "s.yaml");
  EXPECT_DOUBLE_EQ(f.at(0).cluster.host.faulting_threads(8), 2.0);
  expect_error(replace(kGood, "nodes: 2", "nodes: 2\n  host: {fault_threads: 0.5}"),
               {6, 25, "cluster.host.fault_threads", "[1, 1024]"});
}

TEST(Scenario, DeviceWithoutTheModelsDtype) {
  expect_error(replace(kGood, "preset: dgx-h100\n  nodes: 2", "preset: lassen\n  nodes: 4"),
               {2, 8, "model", "no bf16 peak"});
}

TEST(Scenario, NodesBeyondTheRealMachine) {
  expect_error(replace(kGood, "preset: dgx-h100\n  nodes: 2", "preset: lassen\n  nodes: 900"),
               {5, 10, "cluster.nodes", "lassen has 795 nodes"});
}

TEST(Scenario, CustomClusterWithLevels) {
  const std::string yaml = R"(model: {preset: llama2-7b, dtypes: {params: fp16, grads: fp16}}
cluster:
  name: mine
  nodes: 4
  devices_per_node: 4
  device: {name: acc, peak: {fp16: 100TFLOP/s}, hbm: 40GiB, hbm_bandwidth: 1.5TB/s}
  network:
    - {name: node, ranks: 4, bandwidth: 100GB/s, latency: 2us}
    - {name: net, ranks: all, bandwidth: 25GB/s, shared_by: 2, latency: 5us}
plan: {zero_stage: 2}
)";
  const auto s = parse_scenarios(yaml, "s.yaml").at(0);
  EXPECT_EQ(s.cluster.total_devices(), 16);
  EXPECT_DOUBLE_EQ(s.cluster.levels[1].per_rank_bandwidth().value(), 12.5e9);
  EXPECT_EQ(s.plan.dp, 16);
  EXPECT_EQ(s.model.param_dtype, core::Dtype::kFp16);

  expect_error(replace(yaml, "ranks: all", "ranks: 6"), {9, 26, "cluster.network[1].ranks", "multiple of the previous"});
  expect_error(replace(yaml, "ranks: all", "ranks: 8"), {8, 5, "cluster.network", "outermost level spans 8 ranks"});
  // A preset's network that a job outgrows: the nodes are what to change, not a `ranks` the user never wrote.
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 1000000"),
               {5, 10, "cluster.nodes", "8000000 devices, more than dgx-h100's network reaches (1048576 ranks)"});
  expect_error(replace(yaml, "{name: node, ranks: 4,", "{name: node, ranks: 2,"), {8, 5, "cluster.network", "node level"});
  expect_error(replace(yaml, "bandwidth: 25GB/s", "bandwidth: 0GB/s"),
               {9, 42, "cluster.network[1].bandwidth", "positive bandwidth"});
  // The fabric's first-tier groups: on the outermost level, between nodes.
  EXPECT_EQ(s.cluster.levels[1].group_nodes, 0);
  const auto grouped = parse_scenarios(replace(yaml, "latency: 5us}", "latency: 5us, group_nodes: 2}"), "s.yaml").at(0);
  EXPECT_EQ(grouped.cluster.levels[1].group_nodes, 2);
  expect_error(replace(yaml, "latency: 2us}", "latency: 2us, group_nodes: 2}"),
               {8, 77, "cluster.network[0].group_nodes", "outermost level only"});
  expect_error(replace(yaml, "latency: 5us}", "latency: 5us, group_nodes: 0}"),
               {9, 91, "cluster.network[1].group_nodes", "an integer >= 1"});
  const std::string one_node = R"(model: llama2-7b
cluster:
  nodes: 1
  devices_per_node: 4
  device: {peak: {bf16: 100TFLOP/s}, hbm: 40GiB, hbm_bandwidth: 1.5TB/s}
  network:
    - {name: node, ranks: 4, bandwidth: 100GB/s, latency: 2us, group_nodes: 4}
)";
  expect_error(one_node, {7, 5, "cluster.network", "between nodes"});
}

TEST(Scenario, SweepExpandsTheCartesianProduct) {
  const std::string yaml = std::string(kGood) + "sweep:\n  plan.zero_stage: [1, 2, 3]\n  cluster.nodes: [2, 4]\n";
  const auto all = parse_scenarios(yaml, "s.yaml");
  ASSERT_EQ(all.size(), 6u);
  EXPECT_EQ(all[0].plan.zero_stage, 1);
  EXPECT_EQ(all[0].cluster.nodes, 2);
  EXPECT_EQ(all[1].cluster.nodes, 4);
  EXPECT_EQ(all[5].plan.zero_stage, 3);
  EXPECT_EQ(all[5].plan.dp, 32);
  EXPECT_EQ(all[5].variant, "plan.zero_stage=3, cluster.nodes=4");
}

// zip: keys whose lists advance together (nodes with the global batch: weak scaling) are one axis; exclude: drops
// the points matching a map, include: keeps only those matching one.
TEST(Scenario, SweepZipsAxesAndFiltersPoints) {
  const std::string base = std::string(kGood) + "sweep:\n  plan.zero_stage: [1, 3]\n"
                                                "  zip:\n    cluster.nodes: [1, 2, 4]\n    plan.global_batch: [32, 64, 128]\n";
  const auto zipped = parse_scenarios(base, "s.yaml");
  ASSERT_EQ(zipped.size(), 6u);
  for (const auto& s : zipped) EXPECT_EQ(s.plan.global_batch, 32 * s.cluster.nodes);
  EXPECT_EQ(zipped[2].variant, "plan.zero_stage=1, cluster.nodes=4, plan.global_batch=128");
  const auto some = parse_scenarios(base + "  exclude:\n    - {plan.zero_stage: 3, cluster.nodes: 4}\n", "s.yaml");
  ASSERT_EQ(some.size(), 5u);
  EXPECT_EQ(some[4].variant, "plan.zero_stage=3, cluster.nodes=2, plan.global_batch=64");
  const auto only = parse_scenarios(base + "  include:\n    - {cluster.nodes: 1}\n    - {plan.global_batch: 128}\n", "s.yaml");
  ASSERT_EQ(only.size(), 4u);
  EXPECT_EQ(only[1].cluster.nodes, 4);
  expect_error(std::string(kGood) + "sweep:\n  zip:\n    cluster.nodes: [1, 2]\n    plan.global_batch: [64]\n",
               {13, 24, "sweep.zip.plan.global_batch", "a zipped list as long as cluster.nodes's"});
  expect_error(base + "  exclude:\n    - {plan.zero_stage: 2}\n", {16, 25, "sweep.exclude[0].plan.zero_stage", "one of the values"});
  expect_error(base + "  exclude:\n    - {plan.tp: 2}\n", {16, 7, "sweep.exclude[0]", "keys of this sweep's axes"});
}

// A rate too small for any machine is refused where it is written, not turned into an absurd iteration time.
TEST(Scenario, DegenerateBandwidthsAreRefused) {
  expect_error(replace(kGood, "nodes: 2", "nodes: 2\n  host: {link_bandwidth: 25B/s}"),
               {6, 26, "cluster.host.link_bandwidth", "at least 1MB/s (did you mean GB/s?)"});
}

TEST(Scenario, SweepValuesAreValidatedWhereTheyAreWritten) {
  const std::string yaml = std::string(kGood) + "sweep:\n  plan.zero_stage: [1, 7]\n";
  expect_error(yaml, {11, 24, "plan.zero_stage", "[0, 3]"});
  expect_error(std::string(kGood) + "sweep:\n  zero_stage: [1]\n", {11, 15, "sweep.zero_stage", "dotted paths"});
  // A value the axis makes wrong elsewhere is named where it is written (it was 1:1 in a sweep).
  expect_error(std::string(kGood) + "sweep:\n  plan.micro_batch: [2, 3]\n", {9, 17, "plan.global_batch", "not a multiple"});
}

TEST(Scenario, PresetOverridesApply) {
  const auto s = parse_scenarios(replace(kGood, "model: llama2-7b", "model: {preset: llama2-7b, seq_len: 8192}"), "s.yaml");
  EXPECT_EQ(s.at(0).model.seq_len, 8192);
  EXPECT_EQ(s.at(0).model.layers, 32);
}

TEST(Scenario, PipelineParallelismRules) {
  const auto s = parse_scenarios(replace(kGood, "zero_stage: 3", "zero_stage: 1\n  pp: 2\n  virtual_stages: 2"), "s.yaml");
  EXPECT_EQ(s.at(0).plan.pp, 2);
  EXPECT_EQ(s.at(0).plan.dp, 8);
  expect_error(replace(kGood, "zero_stage: 3", "zero_stage: 3\n  pp: 2"), {7, 15, "plan.zero_stage", "DDP or ZeRO-1 only"});
  expect_error(replace(kGood, "zero_stage: 3", "zero_stage: 1\n  pp: 3"), {8, 7, "plan.pp", "does not divide the cluster"});
  // 1F1B stages may differ by a layer, as DeepSpeed partitions them (32 layers on 3 stages: 11, 11, 10).
  const auto uneven =
      parse_scenarios(replace(replace(kGood, "nodes: 2", "nodes: 3"), "zero_stage: 3", "zero_stage: 1\n  pp: 3"), "s.yaml");
  EXPECT_EQ(uneven.at(0).plan.pp, 3);
  expect_error(replace(kGood, "zero_stage: 3", "zero_stage: 1\n  pp: 2\n  virtual_stages: 3"),
               {9, 19, "plan.virtual_stages", "not divisible by pp x virtual_stages"});
  expect_error(replace(kGood, "zero_stage: 3", "zero_stage: 1\n  virtual_stages: 2"),
               {8, 19, "plan.virtual_stages", "needs pipeline parallelism"});
}

}  // namespace
}  // namespace shardsim::scenario

namespace shardsim::scenario {
namespace {

const char* kFrontier = R"(model: gpt-20b-frontier
cluster: {preset: frontier, nodes: 4}
plan:
  zero_stage: 3
)";

TEST(ScenarioPartition, ZeroStagesResolveToShardFactors) {
  const auto s = parse_scenarios(kFrontier, "s.yaml").at(0);
  EXPECT_EQ(s.plan.partition, (core::PartitionSpec{32, 32, 32, 0}));
  EXPECT_TRUE(s.plan.is_plain_zero());
}

TEST(ScenarioPartition, LevelNamesAndAllResolveAgainstTheCluster) {
  const auto s = parse_scenarios(replace(kFrontier, "  zero_stage: 3\n",
                                         "  partition: {params: node, grads: gcd-pair, optimizer: all}\n"),
                                 "s.yaml")
                     .at(0);
  EXPECT_EQ(s.plan.partition, (core::PartitionSpec{8, 2, 32, 0}));
  EXPECT_FALSE(s.plan.is_plain_zero());
}

TEST(ScenarioPartition, DeepSpeedZeroPlusPlusKeys) {
  const auto s = parse_scenarios(std::string(kFrontier) +
                                     "  zero_quantized_weights: true\n  zero_hpz_partition_size: 8\n"
                                     "  zero_quantized_gradients: true\n",
                                 "s.yaml")
                     .at(0);
  EXPECT_EQ(s.plan.partition.secondary, 8);
  EXPECT_TRUE(s.plan.quantization.weights);
  EXPECT_TRUE(s.plan.quantization.gradients);
  EXPECT_EQ(s.plan.quantization.gradient_hops, (std::vector<int>{1, 2}));  // node, then slingshot
}

TEST(ScenarioPartition, MicsShardSize) {
  const auto s = parse_scenarios(std::string(kFrontier) + "  mics_shard_size: 16\n", "s.yaml").at(0);
  EXPECT_EQ(s.plan.partition, (core::PartitionSpec{16, 16, 16, 0}));
}

TEST(ScenarioPartition, HierarchyDefaultsToEveryLevelAndTheInnermostSecondary) {
  const auto s = parse_scenarios(std::string(kFrontier) + "  hierarchy: {}\n", "s.yaml").at(0);
  EXPECT_EQ(s.plan.partition, (core::PartitionSpec{32, 32, 32, 2}));
  EXPECT_EQ(s.plan.quantization.gradient_hops, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(s.plan.hierarchy_levels, 3);
}

TEST(ScenarioPartition, ClearErrors) {
  expect_error(std::string(kFrontier) + "  partition: {params: rack}\n", {5, 23, "plan.partition.params", "unknown network level 'rack'"});
  expect_error(std::string(kFrontier) + "  partition: {params: 3}\n", {5, 23, "plan.partition.params", "does not divide dp = 32"});
  expect_error(std::string(kFrontier) + "  partition: {grads: node, optimizer: gcd-pair}\n",
               {5, 39, "plan.partition.optimizer", "at least as finely as gradients"});
  expect_error(replace(kFrontier, "zero_stage: 3", "zero_stage: 2\n  zero_quantized_weights: true"),
               {5, 27, "plan.zero_quantized_weights", "qwZ needs partitioned parameters"});
  expect_error(std::string(kFrontier) + "  zero_hpz_partition_size: 3\n", {5, 28, "plan.zero_hpz_partition_size", "does not divide"});
  expect_error(std::string(kFrontier) + "  mics_shard_size: 8\n  partition: {params: 8}\n",
               {5, 20, "plan.mics_shard_size", "not both"});
  expect_error(std::string(kFrontier) + "  qgz_hops: [node, gcd-pair]\n  zero_quantized_gradients: true\n",
               {5, 20, "plan.qgz_hops[1]", "innermost level first"});
}

TEST(ScenarioPartition, WholeSectionSweepAxesMergeAndLabel) {
  const auto all = parse_scenarios(std::string(kFrontier) +
                                       "sweep:\n  plan:\n    - {label: base}\n    - {label: mics, mics_shard_size: 8}\n",
                                   "s.yaml");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].variant, "base");
  EXPECT_EQ(all[1].variant, "mics");
  EXPECT_EQ(all[1].plan.partition.params, 8);
}

}  // namespace
}  // namespace shardsim::scenario

namespace shardsim::scenario {
namespace {

const char* kLassen = R"(model: gpt-neox-20b
cluster: {preset: lassen, nodes: 8}
plan:
  tp: 2
  zero_stage: 1
  compression:
)";

TEST(ScenarioCompression, ZfpRatioFollowsItsRateAndMpcHasDefaults) {
  const auto s = parse_scenarios(std::string(kLassen) + "    gradients: {codec: zfp, rate: 4}\n    tensor: {codec: mpc}\n",
                                 "s.yaml")
                     .at(0);
  EXPECT_DOUBLE_EQ(s.plan.compression.gradients.ratio, 4.0);  // 16-bit gradients at 4 bits per value
  EXPECT_EQ(s.plan.compression.tensor.codec, core::Codec::kMpc);
  EXPECT_GT(s.plan.compression.tensor.ratio, 1.0);
  EXPECT_FALSE(s.plan.compression.pipeline.on());
}

TEST(ScenarioCompression, ClearErrors) {
  expect_error(std::string(kLassen) + "    gradients: {codec: zfp, rate: 16}\n",
               {7, 35, "plan.compression.gradients.rate", "does not compress 16-bit fp16 data"});
  expect_error(std::string(kLassen) + "    gradients: {codec: zfp, ratio: 2}\n",
               {7, 36, "plan.compression.gradients.ratio", "give rate"});
  expect_error(std::string(kLassen) + "    tensor: {codec: mpc, ratio: 0.5}\n",
               {7, 33, "plan.compression.tensor.ratio", "ratio >= 1"});
  expect_error(std::string(kLassen) + "    gradients: {codec: lz4}\n",
               {7, 24, "plan.compression.gradients.codec", "zfp, mpc, none"});
  expect_error(std::string(kLassen) + "    optimizer: {codec: mpc}\n", {7, 5, "plan.compression.optimizer", "unknown key"});
}

}  // namespace
}  // namespace shardsim::scenario

namespace shardsim::scenario {
namespace {

TEST(ScenarioOffload, RulesAndErrors) {
  const std::string base = "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1}\nplan:\n  zero_stage: 2\n";
  const auto s = parse_scenarios(base + "  offload_optimizer: {device: cpu, ratio: 0.25}\n", "s.yaml").at(0);
  EXPECT_TRUE(s.plan.offload.optimizer);
  EXPECT_DOUBLE_EQ(s.plan.offload.ratio, 0.25);
  EXPECT_FALSE(s.plan.is_plain_zero());
  expect_error(replace(base, "zero_stage: 2", "zero_stage: 0") + "  offload_optimizer: {device: cpu}\n",
               {5, 22, "plan.offload_optimizer", "needs sharded optimizer states"});
  expect_error(base + "  offload_optimizer: {device: nvme}\n", {5, 31, "plan.offload_optimizer.device", "zero_stage 3"});
  expect_error(base + "  offload_optimizer: {device: cpu, ratio: 2}\n", {5, 43, "plan.offload_optimizer.ratio", "(0, 1]"});
}

// A machine described once in a scenario file of its own (cluster.machine, relative to the file that names it): its
// cluster, which the keys beside it change as they change a preset's; a missing file, a preset beside it, and a
// machine file whose cluster names yet another file are errors at the key.
TEST(ScenarioCluster, MachineFromAnotherScenarioFile) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "shardsim_machine_test";
  std::filesystem::create_directories(dir / "machines");
  std::ofstream(dir / "machines" / "box.yaml")
      << "model: llama2-7b\ncluster:\n  preset: polaris\n  name: box\n  nodes: 4\n  network:\n"
         "    - {name: nvlink, ranks: 4, bandwidth: 100GB/s, latency: 2us}\n"
         "    - {name: fabric, ranks: all, bandwidth: 20GB/s, latency: 5us}\n"
         "  collective_library: {net_step_latency: {LL128: 20us}}\nplan: {zero_stage: 1}\n";
  const std::string yaml =
      "model: llama2-7b\ncluster: {machine: machines/box.yaml, nodes: 8}\nplan: {zero_stage: 3, micro_batch: 1}\n";
  const std::string file = (dir / "run.yaml").string();
  std::ofstream(file) << yaml;
  const Scenario s = load_scenarios(file).at(0);
  const Scenario machine = load_scenarios((dir / "machines" / "box.yaml").string()).at(0);
  EXPECT_EQ(s.cluster.name, "box");
  EXPECT_EQ(s.cluster.nodes, 8);  // the key beside it
  ASSERT_EQ(s.cluster.levels.size(), 2u);
  EXPECT_EQ(s.cluster.levels[1].name, "fabric");
  EXPECT_DOUBLE_EQ(s.cluster.levels[1].link_bandwidth.value(), 20e9);
  EXPECT_DOUBLE_EQ(s.cluster.library.net_step_s[1], 20e-6);
  EXPECT_EQ(s.cluster.device.name, machine.cluster.device.name);
  Scenario same = machine;
  same.cluster.nodes = 8;
  same.plan = s.plan;
  same.model = s.model;
  EXPECT_EQ(evaluate(s).run.iteration_time.value(), evaluate(same).run.iteration_time.value());
  // A copy with another plan (search's winner, sweep points) names the machine file absolutely: it runs from anywhere.
  const std::string copy = scenario_with_plan(file, s.plan, s.cluster, "copy");
  EXPECT_NE(copy.find((dir / "machines" / "box.yaml").string()), std::string::npos) << copy;
  EXPECT_EQ(parse_scenarios(copy, "elsewhere/copy.yaml").at(0).cluster.levels[1].name, "fabric");
  // Errors at the key, in the file that names the machine.
  auto error_of = [&](const std::string& text) -> std::string {
    std::ofstream(file) << text;
    try {
      (void)load_scenarios(file);
    } catch (const core::ConfigError& e) {
      EXPECT_EQ(e.where().file, file) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "no error for " << text;
    return "";
  };
  EXPECT_NE(error_of(replace(yaml, "machines/box.yaml", "machines/none.yaml")).find("does not exist"), std::string::npos);
  EXPECT_NE(error_of(replace(yaml, "{machine:", "{preset: polaris, machine:")).find("either preset or machine"),
            std::string::npos);
  std::ofstream(dir / "machines" / "twice.yaml") << "model: llama2-7b\ncluster: {machine: box.yaml}\nplan: {}\n";
  EXPECT_NE(error_of(replace(yaml, "machines/box.yaml", "machines/twice.yaml")).find("not itself another file"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

// DeepSpeed's BF16_Optimizer is what fp32 gradient accumulation means in a plan, so only where DeepSpeed builds it;
// CUDA_LAUNCH_BLOCKING is a run setting any plan may have. Both round-trip through the scenario file.
TEST(ScenarioPlan, GradAccumDtypeAndLaunchBlocking) {
  const std::string base = "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1}\nplan:\n  zero_stage: 0\n";
  const auto s = parse_scenarios(base + "  grad_accum_dtype: fp32\n  launch_blocking: true\n", "s.yaml").at(0);
  ASSERT_TRUE(s.plan.grad_accum_dtype.has_value());
  EXPECT_EQ(*s.plan.grad_accum_dtype, core::Dtype::kFp32);
  EXPECT_TRUE(s.plan.launch_blocking);
  const Scenario back = written_back(base + "  grad_accum_dtype: fp32\n  launch_blocking: true\n", s, "grad_accum");
  EXPECT_EQ(back.plan.grad_accum_dtype, s.plan.grad_accum_dtype);
  EXPECT_TRUE(back.plan.launch_blocking);
  EXPECT_EQ(evaluate(back).run.iteration_time.value(), evaluate(s).run.iteration_time.value());
  EXPECT_FALSE(parse_scenarios(base, "s.yaml").at(0).plan.launch_blocking);
  expect_error(replace(base, "zero_stage: 0", "zero_stage: 1") + "  grad_accum_dtype: fp32\n",
               {5, 21, "plan.grad_accum_dtype", "BF16_Optimizer"});
  expect_error(base + "  grad_accum_dtype: fp32\n  framework: megatron\n", {5, 21, "plan.grad_accum_dtype", "framework deepspeed"});
  expect_error(base + "  grad_accum_dtype: fp64\n", {5, 21, "plan.grad_accum_dtype", "fp32"});
}

// DeepSpeed's stage3_model_persistence_threshold: a size like the other buckets, unset by default, refused below 0,
// and round-trips through the scenario file.
TEST(ScenarioPlan, ModelPersistenceThreshold) {
  const std::string base = "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1}\nplan:\n  zero_stage: 3\n";
  EXPECT_FALSE(parse_scenarios(base, "s.yaml").at(0).plan.model_persistence_threshold.has_value());
  const auto s = parse_scenarios(base + "  model_persistence_threshold: 100kB\n", "s.yaml").at(0);
  ASSERT_TRUE(s.plan.model_persistence_threshold.has_value());
  EXPECT_DOUBLE_EQ(s.plan.model_persistence_threshold->value(), 1e5);
  const Scenario back = written_back(base + "  model_persistence_threshold: 100kB\n", s, "model_persistence");
  ASSERT_TRUE(back.plan.model_persistence_threshold.has_value());
  EXPECT_DOUBLE_EQ(back.plan.model_persistence_threshold->value(), 1e5);
  expect_error(base + "  model_persistence_threshold: -1kB\n", {5, 32, "plan.model_persistence_threshold", "non-negative"});
}

// DeepSpeed's zero_optimization.reduce_scatter: off, its ZeRO optimizers all-reduce their buckets; refused where no
// DeepSpeed ZeRO optimizer would read it, and with qgZ, which it would bypass; round-trips through the scenario file.
TEST(ScenarioPlan, ReduceScatterIsDeepSpeedsZeroKey) {
  const std::string base = "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 2}\nplan:\n  zero_stage: 3\n";
  const auto s = parse_scenarios(base + "  reduce_scatter: false\n", "s.yaml").at(0);
  EXPECT_FALSE(s.plan.reduce_scatter);
  EXPECT_TRUE(s.plan.reduces_buckets_by_all_reduce());
  EXPECT_TRUE(parse_scenarios(base, "s.yaml").at(0).plan.reduce_scatter);
  EXPECT_FALSE(written_back(base + "  reduce_scatter: false\n", s, "reduce_scatter").plan.reduce_scatter);
  expect_error(base + "  reduce_scatter: false\n  framework: fsdp\n", {5, 19, "plan.reduce_scatter", "framework fsdp"});
  expect_error(replace(base, "zero_stage: 3", "zero_stage: 0") + "  reduce_scatter: false\n",
               {5, 19, "plan.reduce_scatter", "zero_stage 0"});
  expect_error(replace(base, "zero_stage: 3", "zero_stage: 1") + "  reduce_scatter: false\n  pp: 2\n",
               {5, 19, "plan.reduce_scatter", "pipeline"});
  expect_error(base + "  reduce_scatter: false\n  zero_quantized_gradients: true\n",
               {5, 19, "plan.reduce_scatter", "qgZ"});
  expect_error(replace(base, "zero_stage: 3", "partition: {params: 1, grads: 8, optimizer: 8}") +
                   "  reduce_scatter: false\n",
               {5, 19, "plan.reduce_scatter", "reduced otherwise"});
  // Whole parameters and gradients, sharded optimizer states (InternEvo's zero1): its buckets all-reduced.
  EXPECT_TRUE(parse_scenarios(replace(base, "zero_stage: 3", "partition: {params: 1, grads: 1, optimizer: 8}") +
                                  "  reduce_scatter: false\n",
                              "s.yaml")
                  .at(0)
                  .plan.reduces_buckets_by_all_reduce());
}

// param_sync: how the updated parameters reach the ranks after the step, DeepSpeed's all-gather (the default) or
// InternEvo's broadcast per owner; refused where a plan syncs nothing after its step and with pipelines; it
// round-trips through the scenario file.
TEST(ScenarioPlan, ParamSyncIsAnAllGatherOrABroadcastPerOwner) {
  const std::string base = "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 2}\nplan:\n  zero_stage: 1\n";
  EXPECT_EQ(parse_scenarios(base, "s.yaml").at(0).plan.param_sync, core::ParamSync::kAllGather);
  const auto s = parse_scenarios(base + "  param_sync: broadcast\n", "s.yaml").at(0);
  EXPECT_EQ(s.plan.param_sync, core::ParamSync::kBroadcast);
  EXPECT_EQ(written_back(base + "  param_sync: broadcast\n", s, "param_sync").plan.param_sync,
            core::ParamSync::kBroadcast);
  expect_error(replace(base, "zero_stage: 1", "zero_stage: 3") + "  param_sync: broadcast\n",
               {5, 15, "plan.param_sync", "no such sync"});
  expect_error(base + "  param_sync: broadcast\n  pp: 2\n", {5, 15, "plan.param_sync", "pipeline"});
  expect_error(base + "  param_sync: scatter\n", {5, 15, "plan.param_sync", "broadcast"});
}

// InternEvo's overlap_sync_param: the next forward waits for the sync of updated parameters block by block; refused
// where a plan syncs nothing after its step (parameters sharded as the optimizer states) and with pipelines; it
// round-trips through the scenario file.
TEST(ScenarioPlan, OverlapSyncParamNeedsASyncAfterTheStep) {
  const std::string base = "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 2}\nplan:\n  zero_stage: 1\n";
  const auto s = parse_scenarios(base + "  overlap_sync_param: true\n", "s.yaml").at(0);
  EXPECT_TRUE(s.plan.overlap_sync_param);
  EXPECT_FALSE(parse_scenarios(base, "s.yaml").at(0).plan.overlap_sync_param);
  EXPECT_TRUE(written_back(base + "  overlap_sync_param: true\n", s, "overlap_sync_param").plan.overlap_sync_param);
  expect_error(replace(base, "zero_stage: 1", "zero_stage: 3") + "  overlap_sync_param: true\n",
               {5, 23, "plan.overlap_sync_param", "nothing to gather after the step"});
  expect_error(base + "  overlap_sync_param: true\n  pp: 2\n", {5, 23, "plan.overlap_sync_param", "pipeline"});
  expect_error(base + "  overlap_sync_param: 3\n", {5, 23, "plan.overlap_sync_param", "true or false"});
}

// InternEvo's overlap_sync_grad: on by default (the hooks reduce each bucket as it fills); off, the step reduces them
// after the pass. Refused with pipelines and with another framework's lowering; it round-trips through the scenario
// file.
TEST(ScenarioPlan, OverlapSyncGradIsInternEvosHookedReduction) {
  const std::string base = "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 2}\nplan:\n  zero_stage: 1\n";
  EXPECT_TRUE(parse_scenarios(base, "s.yaml").at(0).plan.overlap_sync_grad);
  const auto s = parse_scenarios(base + "  overlap_sync_grad: false\n", "s.yaml").at(0);
  EXPECT_FALSE(s.plan.overlap_sync_grad);
  EXPECT_FALSE(written_back(base + "  overlap_sync_grad: false\n", s, "overlap_sync_grad").plan.overlap_sync_grad);
  expect_error(base + "  overlap_sync_grad: false\n  pp: 2\n", {5, 22, "plan.overlap_sync_grad", "pipeline"});
  expect_error(replace(base, "zero_stage: 1", "framework: fsdp") + "  overlap_sync_grad: false\n",
               {5, 22, "plan.overlap_sync_grad", "framework fsdp"});
  expect_error(base + "  overlap_sync_grad: 0.5\n", {5, 22, "plan.overlap_sync_grad", "true or false"});
}

// grad_comm_dtype: DeepSpeed's communication_data_type. Unset, the reductions carry the training dtype; fp32 doubles
// what a bf16 run's ZeRO reductions send and adds the casts before and after each bucket, and the BF16_Optimizer's
// all-reduce carries fp32 as well; written back; DeepSpeed's alone.
TEST(ScenarioPlan, GradCommDtypeIsDeepSpeedsCommunicationDataType) {
  const std::string base = "model: {preset: llama2-7b, layers: 4}\ncluster: {preset: dgx-h100, nodes: 2}\nplan:\n"
                           "  zero_stage: 2\n  micro_batch: 1\n  global_batch: 16\n";
  auto reductions = [](const Evaluation& ev) {
    double wire = 0.0, casts = 0.0;
    for (const auto& t : ev.graph.tasks()) {
      if (t.purpose != graph::Purpose::kGradReduce) continue;
      (t.kind == graph::TaskKind::kCollective ? wire : casts) += t.bytes;
    }
    return std::pair{wire, casts};
  };
  const auto plain = parse_scenarios(base, "s.yaml").at(0);
  EXPECT_FALSE(plain.plan.grad_comm_dtype.has_value());
  const auto fp32 = parse_scenarios(base + "  grad_comm_dtype: fp32\n", "s.yaml").at(0);
  ASSERT_EQ(fp32.plan.grad_comm_dtype, std::optional<core::Dtype>(core::Dtype::kFp32));
  const auto [plain_wire, plain_casts] = reductions(evaluate(plain));
  const auto [fp32_wire, fp32_casts] = reductions(evaluate(fp32));
  ASSERT_GT(plain_wire, 0.0);
  EXPECT_NEAR(fp32_wire, 2.0 * plain_wire, 1e-9 * plain_wire);
  EXPECT_GT(fp32_casts, plain_casts);
  // The BF16_Optimizer (bf16, no ZeRO stage): its fp32 gradients travel in bf16 unless the key says fp32.
  const std::string z0 = replace(base, "zero_stage: 2", "zero_stage: 0\n  grad_accum_dtype: fp32");
  const auto [bf16_wire, unused] = reductions(evaluate(parse_scenarios(z0, "s.yaml").at(0)));
  const auto [fp32_z0_wire, unused2] = reductions(evaluate(parse_scenarios(z0 + "  grad_comm_dtype: fp32\n", "s.yaml").at(0)));
  (void)unused;
  (void)unused2;
  EXPECT_NEAR(fp32_z0_wire, 2.0 * bf16_wire, 1e-9 * bf16_wire);
  EXPECT_EQ(written_back(base + "  grad_comm_dtype: fp32\n", fp32, "grad_comm_dtype").plan.grad_comm_dtype,
            std::optional<core::Dtype>(core::Dtype::kFp32));
  EXPECT_NE(report::render_table(fp32, evaluate(fp32)).find(", gradients reduced in fp32"), std::string::npos);
  expect_error(base + "  framework: fsdp\n  grad_comm_dtype: fp32\n", {8, 20, "plan.grad_comm_dtype", "framework fsdp"});
  expect_error(base + "  grad_comm_dtype: fp8\n", {7, 20, "plan.grad_comm_dtype", "fp32, bf16, fp16"});
}

// p2p_sync: whether Megatron's pipeline exchanges synchronise the device (on by default, as Megatron-LM before
// Megatron-Core); off for Megatron-Core's overlapped exchanges; written back when off; framework megatron's alone.
TEST(ScenarioPlan, P2pSyncIsMegatronsPipelineExchange) {
  const std::string base = "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 2}\nplan:\n  framework: megatron\n  pp: 2\n";
  EXPECT_TRUE(parse_scenarios(base, "s.yaml").at(0).plan.p2p_sync);
  const auto s = parse_scenarios(base + "  p2p_sync: false\n", "s.yaml").at(0);
  EXPECT_FALSE(s.plan.p2p_sync);
  EXPECT_FALSE(written_back(base + "  p2p_sync: false\n", s, "p2p_sync").plan.p2p_sync);
  expect_error(replace(base, "framework: megatron", "framework: deepspeed") + "  p2p_sync: false\n",
               {6, 13, "plan.p2p_sync", "framework megatron"});
  expect_error(base + "  p2p_sync: maybe\n", {6, 13, "plan.p2p_sync", "true or false"});
}

// tp_comm_overlap: Transformer Engine's userbuffers overlap the sequence-parallel exchanges with the GEMMs: each
// exchange's (tp - 1) / tp runs beside its block's compute on a stream of its own, not slowing it, its last chunk's
// 1 / tp on the compute stream after it; the bytes on the wire are the same, the iteration shorter. It needs
// sequence parallelism over tp > 1, and round-trips through the scenario file.
TEST(ScenarioPlan, TpCommOverlapRunsTheExchangesBesideTheGemms) {
  const std::string base = "model: {preset: llama2-70b, layers: 8}\ncluster: {preset: dgx-h100, nodes: 1}\n"
                           "plan:\n  framework: megatron\n  tp: 4\n  sequence_parallel: true\n  micro_batch: 1\n"
                           "  global_batch: 4\n  recompute: none\n";
  const auto plain = parse_scenarios(base, "s.yaml").at(0);
  const auto over = parse_scenarios(base + "  tp_comm_overlap: true\n", "s.yaml").at(0);
  EXPECT_FALSE(plain.plan.tp_comm_overlap);
  ASSERT_TRUE(over.plan.tp_comm_overlap);
  const auto a = evaluate(plain), b = evaluate(over);
  auto tp_bytes = [](const Evaluation& ev, graph::Stream stream) {
    double sum = 0.0;
    for (const auto& t : ev.graph.tasks()) {
      if (t.kind == graph::TaskKind::kCollective && t.purpose == graph::Purpose::kTensorParallel && t.stream == stream) sum += t.bytes;
    }
    return sum;
  };
  const double total = tp_bytes(a, graph::Stream::kCompute);
  ASSERT_GT(total, 0.0);
  EXPECT_EQ(tp_bytes(a, graph::Stream::kTpOverlap), 0.0);
  EXPECT_NEAR(tp_bytes(b, graph::Stream::kTpOverlap), 0.75 * total, 1e-6 * total);
  EXPECT_NEAR(tp_bytes(b, graph::Stream::kCompute), 0.25 * total, 1e-6 * total);
  EXPECT_LT(b.run.iteration_time.value(), a.run.iteration_time.value());
  EXPECT_LT(b.run.roles[0].exposed_by_purpose[static_cast<std::size_t>(graph::Purpose::kTensorParallel)].value(),
            0.5 * a.run.roles[0].exposed_by_purpose[static_cast<std::size_t>(graph::Purpose::kTensorParallel)].value());
  EXPECT_TRUE(written_back(base + "  tp_comm_overlap: true\n", over, "tp_comm_overlap").plan.tp_comm_overlap);
  expect_error(replace(base, "  sequence_parallel: true\n", "") + "  tp_comm_overlap: true\n",
               {9, 20, "plan.tp_comm_overlap", "sequence_parallel"});
}

// attention_kernel picks whose FlashAttention kernels run (llm-foundry's Triton port, cuDNN's, or FlashAttention-2's
// CUDA kernels by default); it is written back, and it means nothing without FlashAttention.
TEST(ScenarioPlan, AttentionKernelChoosesFlashAttentionsKernels) {
  const std::string base = "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1}\nplan:\n  zero_stage: 3\n";
  const auto fa2 = parse_scenarios(base + "  flash_attention: true\n", "s.yaml").at(0);
  EXPECT_EQ(fa2.plan.attention_kernel, core::AttentionKernel::kFlash2);
  const auto triton =
      parse_scenarios(base + "  flash_attention: true\n  attention_kernel: triton\n", "s.yaml").at(0);
  EXPECT_EQ(triton.plan.attention_kernel, core::AttentionKernel::kTriton);
  EXPECT_GT(evaluate(triton).run.iteration_time.value(), evaluate(fa2).run.iteration_time.value());
  const std::string triton_file = base + "  flash_attention: true\n  attention_kernel: triton\n";
  EXPECT_EQ(written_back(triton_file, triton, "attention_kernel").plan.attention_kernel, core::AttentionKernel::kTriton);
  // A device's Triton rates given in the scenario make the file their source.
  const auto own = parse_scenarios(replace(base, "nodes: 1}", "nodes: 1, device: {triton_attention_efficiency: 0.3}}"),
                                   "mine.yaml")
                       .at(0);
  EXPECT_EQ(own.cluster.device.triton_attention_efficiency, 0.3);
  EXPECT_EQ(own.cluster.device.triton_attention_source, "mine.yaml");
  EXPECT_NE(triton.cluster.device.triton_attention_source.find("mosaic-mpt-h100-long"), std::string::npos);
  expect_error(base + "  attention_kernel: triton\n", {5, 21, "plan.attention_kernel", "flash_attention"});
  expect_error(base + "  flash_attention: true\n  attention_kernel: cuda\n",
               {6, 21, "plan.attention_kernel", "flash2"});
  // cuDNN's kernels: the H100's FlashAttention-2 schedule at cuDNN's published speed-up, faster than both; a device
  // given in the scenario may state its own speed-up, the file then its source; without one, FlashAttention-2's
  // rates, borrowed.
  const auto cudnn = parse_scenarios(base + "  flash_attention: true\n  attention_kernel: cudnn\n", "s.yaml").at(0);
  EXPECT_EQ(cudnn.plan.attention_kernel, core::AttentionKernel::kCudnn);
  EXPECT_LT(evaluate(cudnn).run.iteration_time.value(), evaluate(fa2).run.iteration_time.value());
  EXPECT_FALSE(cudnn.cluster.device.attention_rates(core::AttentionKernel::kCudnn).guessed);
  const auto mine = parse_scenarios(replace(base, "nodes: 1}", "nodes: 1, device: {cudnn_attention_speedup: 1.2, "
                                                               "cudnn_attention_backward_speedup: 1.1}}") +
                                        "  flash_attention: true\n  attention_kernel: cudnn\n",
                                    "mine.yaml")
                        .at(0);
  EXPECT_EQ(mine.cluster.device.attention_source(core::AttentionKernel::kCudnn), "mine.yaml");
  EXPECT_NEAR(mine.cluster.device.attention_rates(core::AttentionKernel::kCudnn).forward,
              1.2 * mine.cluster.device.attention_rates(core::AttentionKernel::kFlash2).forward, 1e-12);
  EXPECT_EQ(written_back(triton_file, cudnn, "attention_kernel").plan.attention_kernel, core::AttentionKernel::kCudnn);
  expect_error(replace(base, "nodes: 1}", "nodes: 1, device: {cudnn_attention_speedup: 40}}"),
               {2, 73, "cluster.device.cudnn_attention_speedup", "speed-up"});
}

// DeepSpeed's ZeRO-3 on one rank with the parameters on the host: a unit's hooks wait for its copy (NoGatherHandle's
// wait synchronises the stream the copy runs on) and the next copy waits for the host, so copies and hooks take turns.
TEST(ScenarioPlan, OneRankParameterOffloadTakesTurnsWithTheHooks) {
  const std::string base = "model: {preset: llama2-7b, layers: 4}\n"
                           "cluster: {preset: dgx-h100, nodes: 1, devices_per_node: 1}\n"
                           "plan: {zero_stage: 3, framework: deepspeed, micro_batch: 1, global_batch: 1, "
                           "offload_optimizer: {device: cpu}, offload_param: {device: cpu}}\n";
  engine::EngineOptions keep;
  keep.keep_timings = true;
  const auto ev = evaluate(parse_scenarios(base, "s.yaml").at(0), keep);
  std::map<int, double> copy_start, copy_end, host_start, host_end;
  for (std::size_t i = 0; i < ev.graph.tasks().size(); ++i) {
    const auto& t = ev.graph.tasks()[i];
    if (t.phase != graph::Phase::kForward || t.micro != 0) continue;
    if (t.kind == graph::TaskKind::kCopy && t.stream == graph::Stream::kHostToDevice) {
      copy_start[t.unit] = ev.run.timings[i].start_s;
      copy_end[t.unit] = ev.run.timings[i].end_s;
    }
    if (t.kind == graph::TaskKind::kHostCompute && t.purpose == graph::Purpose::kFramework) {
      host_start[t.unit] = ev.run.timings[i].start_s;
      host_end[t.unit] = ev.run.timings[i].end_s;
    }
  }
  ASSERT_EQ(copy_end.size(), 6u);  // the embedding, four blocks, the head
  for (const auto& [u, end] : copy_end) {
    if (host_start.count(u)) {
      EXPECT_GE(host_start.at(u), end - 1e-12) << "unit " << u;
    }
    if (host_end.count(u - 1)) {
      EXPECT_GE(copy_start.at(u), host_end.at(u - 1) - 1e-12) << "unit " << u;
    }
  }
  // Taking turns, the forward lasts at least every copy and every unit's hooks end to end.
  double serial = 0.0;
  for (const auto& [u, end] : copy_end) serial += end - copy_start.at(u);
  for (const auto& [u, end] : host_end) serial += end - host_start.at(u);
  EXPECT_GE(host_end.rbegin()->second - copy_start.begin()->second, serial - 1e-9);
  // Each copy is a fresh device tensor (NoGatherHandle's ds_tensor.to(device)), held until the unit is released:
  // the timeline's peak holds at least the largest unit's parameters, and all of them are released by the end.
  const auto& role = ev.run.roles.at(0);
  double largest = 0.0;
  for (const auto& u : ev.costs.units) largest = std::max(largest, u.params * 2.0);
  EXPECT_GE(role.peak_memory_by_kind[static_cast<std::size_t>(graph::MemKind::kGatheredParams)], largest - 1.0);
  double net = 0.0;
  for (const auto& e : ev.graph.mem_events()) {
    if (e.kind == graph::MemKind::kGatheredParams) net += e.bytes;
  }
  EXPECT_NEAR(net, 0.0, 1.0);
}

// Megatron-DeepSpeed runs Megatron's layers under DeepSpeed's engine: model_code picks whose per-block host time the
// framework thread spends, independent of the framework; unset, it follows the framework.
TEST(ScenarioPlan, ModelCodeIsNotTheFramework) {
  const std::string base = "model: llama2-7b\ncluster: {preset: dgx-a100, nodes: 1}\nplan:\n  zero_stage: 1\n";
  const auto hf = parse_scenarios(base, "s.yaml").at(0);
  const auto meg = parse_scenarios(base + "  model_code: megatron\n", "s.yaml").at(0);
  EXPECT_FALSE(hf.plan.megatron_model_code());
  EXPECT_TRUE(meg.plan.megatron_model_code());
  EXPECT_EQ(meg.plan.framework, core::Framework::kDeepSpeed);
  EXPECT_TRUE(parse_scenarios(base + "  framework: megatron\n", "s.yaml").at(0).plan.megatron_model_code());
  EXPECT_FALSE(
      parse_scenarios(base + "  framework: megatron\n  model_code: huggingface\n", "s.yaml").at(0).plan.megatron_model_code());
  // Megatron's layers cost the host less per backward block than Hugging Face's: where the host's time shows (the
  // framework thread waiting for its launches) the iteration is shorter.
  auto blocking = [](Scenario sc) {
    sc.plan.launch_blocking = true;
    return evaluate(sc).run.iteration_time.value();
  };
  EXPECT_LT(blocking(meg), blocking(hf));
  EXPECT_TRUE(written_back(base + "  model_code: megatron\n", meg, "model_code").plan.megatron_model_code());
  expect_error(base + "  model_code: torch\n", {5, 15, "plan.model_code", "megatron"});
}

// Whether ZeRO-3's gathers and gradient reductions share one process group: the framework's default (FSDP, and
// DeepSpeed under Megatron's model code), or what plan.shared_dp_group says; the key survives a copy of the plan.
TEST(ScenarioPlan, SharedDpGroupDefaultsToTheFrameworksGroupsAndRoundTrips) {
  const std::string base = "model: llama2-7b\ncluster: {preset: dgx-a100, nodes: 2}\nplan:\n  zero_stage: 3\n";
  EXPECT_FALSE(parse_scenarios(base, "s.yaml").at(0).plan.shares_dp_group());
  EXPECT_TRUE(parse_scenarios(base + "  model_code: megatron\n", "s.yaml").at(0).plan.shares_dp_group());
  EXPECT_TRUE(parse_scenarios(base + "  framework: fsdp\n", "s.yaml").at(0).plan.shares_dp_group());
  const Scenario off = parse_scenarios(base + "  model_code: megatron\n  shared_dp_group: false\n", "s.yaml").at(0);
  EXPECT_FALSE(off.plan.shares_dp_group());
  EXPECT_TRUE(parse_scenarios(base + "  shared_dp_group: true\n", "s.yaml").at(0).plan.shares_dp_group());
  EXPECT_FALSE(written_back(base, off, "shared_dp_group").plan.shares_dp_group());
  expect_error(base + "  shared_dp_group: sometimes\n", {5, 20, "plan.shared_dp_group", "true or false"});
}

// ZeRO-Infinity: the optimizer (and the parameters) in swap files on the node's NVMe, which the cluster must
// describe; sub_group_size only where the optimizer is swapped.
TEST(ScenarioOffload, NvmeNeedsTheNodesDrives) {
  const std::string base = "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1}\nplan:\n  zero_stage: 3\n";
  expect_error(base + "  offload_optimizer: {device: nvme}\n",
               {5, 31, "plan.offload_optimizer.device", "cluster.host.nvme_read"});
  expect_error(base + "  offload_optimizer: {device: cpu}\n  sub_group_size: 100000000\n",
               {6, 19, "plan.sub_group_size", "device: nvme"});
  const std::string drives = replace(base, "nodes: 1}", "nodes: 1, host: {nvme_read: 24GB/s, nvme_write: 12GB/s}}");
  const auto s = parse_scenarios(drives + "  offload_optimizer: {device: nvme, nvme_path: /local_nvme, buffer_count: 5, "
                                          "pipeline_read: true}\n  offload_param: {device: nvme}\n  sub_group_size: 200000000\n",
                                 "s.yaml")
                     .at(0);
  EXPECT_TRUE(s.plan.offload.optimizer && s.plan.offload.optimizer_nvme && s.plan.offload.pipeline);
  EXPECT_TRUE(s.plan.offload.params && s.plan.offload.params_nvme);
  EXPECT_EQ(s.plan.offload.buffer_count, 5);
  EXPECT_DOUBLE_EQ(s.plan.offload.sub_group, 2e8);
  EXPECT_DOUBLE_EQ(s.cluster.host.nvme_read.value(), 24e9);
  expect_error(drives + "  offload_optimizer: {device: nvme, pipeline: true}\n",
               {5, 37, "plan.offload_optimizer.pipeline", "unknown key"});
  // The swappers' settings act on NVMe only; parameter buffers are the plan's.
  expect_error(drives + "  offload_optimizer: {device: cpu, pipeline_read: true}\n",
               {5, 51, "plan.offload_optimizer.pipeline_read", "needs device: nvme"});
  expect_error(drives + "  offload_optimizer: {device: nvme}\n  offload_param: {device: cpu, buffer_size: 1000}\n",
               {6, 45, "plan.offload_param.buffer_size", "needs device: nvme"});
  expect_error(drives + "  offload_optimizer: {device: nvme}\n  offload_param: {device: nvme, max_in_cpu: 1000}\n",
               {6, 33, "plan.offload_param.max_in_cpu", "unknown key"});
  const auto buffers = parse_scenarios(drives + "  offload_optimizer: {device: nvme}\n"
                                                "  offload_param: {device: nvme, buffer_count: 2, buffer_size: 1000}\n",
                                       "s.yaml")
                           .at(0);
  EXPECT_EQ(buffers.plan.offload.param_buffer_count, 2);
  EXPECT_DOUBLE_EQ(buffers.plan.offload.param_buffer_size, 1000.0);
  // The delayed update is ZeRO-Offload's.
  expect_error(base + "  delayed_update: true\n", {5, 19, "plan.delayed_update", "offload_optimizer"});
  EXPECT_TRUE(parse_scenarios(base + "  offload_optimizer: {device: cpu}\n  delayed_update: true\n", "s.yaml")
                  .at(0)
                  .plan.offload.delayed_update);
}

}  // namespace
}  // namespace shardsim::scenario

namespace shardsim::scenario {
namespace {

std::string indent(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = text.find('\n', start);
    out += "  " + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  return out;
}

// A resolved plan written out (plan_to_yaml, in the scenario file it came from: what `search --emit-scenario`
// writes) parses back to the same plan, and the copy runs to the same iteration time: every shipped scenario and
// every sweep variant whose machine is the file's, with ZeRO++, hpZ, the hierarchy, offload and compression among
// them.
// Float8 linears need a device with an fp8 peak, and fp8 weight gathers are FSDP's.
TEST(ScenarioPlan, Float8NeedsAnFp8DeviceAndFsdpForItsGathers) {
  const std::string f8 = "zero_stage: 3\n  float8: {recipe: tensorwise}";
  EXPECT_TRUE(parse_scenarios(replace(kGood, "zero_stage: 3", f8), "s.yaml").at(0).plan.float8.linear);
  expect_error(replace(replace(kGood, "dgx-h100", "dgx-a100"), "zero_stage: 3", f8),
               {8, 11, "plan.float8", "has none (cluster.device.peak.fp8)"});
  expect_error(replace(kGood, "zero_stage: 3", "zero_stage: 3\n  float8: {recipe: rowwise}"),
               {8, 20, "plan.float8.recipe", "tensorwise, delayed"});
  expect_error(replace(kGood, "zero_stage: 3", "zero_stage: 3\n  framework: fsdp\n  float8: {recipe: delayed, fsdp_all_gather: true}"),
               {9, 46, "plan.float8.fsdp_all_gather", "recipe tensorwise"});
  expect_error(replace(kGood, "zero_stage: 3", "zero_stage: 3\n  float8: {recipe: tensorwise, fsdp_all_gather: true}"),
               {8, 49, "plan.float8.fsdp_all_gather", "framework fsdp"});
  expect_error(replace(kGood, "zero_stage: 3", "zero_stage: 3\n  recompute_every: 2"),
               {8, 20, "plan.recompute_every", "set plan.recompute too"});
  EXPECT_EQ(parse_scenarios(replace(kGood, "zero_stage: 3", "zero_stage: 3\n  recompute: full\n  recompute_every: 2"), "s.yaml")
                .at(0).plan.recompute_every, 2);
  expect_error(replace(kGood, "zero_stage: 3", "zero_stage: 3\n  cross_entropy: liger"),
               {8, 18, "plan.cross_entropy", "torch, fused, megatron"});
}

TEST(ScenarioYamlDump, PlansRoundTripThroughTheirScenarioFile) {
  namespace fs = std::filesystem;
  int checked = 0;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(SHARDSIM_SOURCE_DIR) / "scenarios")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    const auto variants = load_scenarios(f.string());
    const Scenario base = parse_scenarios(scenario_with_plan(f.string(), variants[0].plan, variants[0].cluster, "x"),
                                          f.string()).at(0);
    for (const auto& v : variants) {
      // (a sweep over the machine or the model makes variants this file's sections do not describe: by key, or by a
      // labelled cluster map that redefines its network)
      if (v.variant.find("cluster.") != std::string::npos || v.variant.find("model.") != std::string::npos) continue;
      const auto same_level = [](const core::NetworkLevel& a, const core::NetworkLevel& b) {
        return a.domain_ranks == b.domain_ranks && a.shared_by == b.shared_by &&
               a.link_bandwidth.value() == b.link_bandwidth.value() && a.latency.value() == b.latency.value();
      };
      if (!std::equal(v.cluster.levels.begin(), v.cluster.levels.end(), base.cluster.levels.begin(),
                      base.cluster.levels.end(), same_level)) {
        continue;
      }
      ASSERT_EQ(v.cluster.nodes, base.cluster.nodes) << v.variant;
      const std::string text = scenario_with_plan(f.string(), v.plan, v.cluster, "copy");
      const Scenario c = parse_scenarios(text, f.string()).at(0);
      EXPECT_EQ(c.name, "copy");
      const auto& a = v.plan;
      const auto& b = c.plan;
      const std::string where = f.filename().string() + " " + v.variant + "\n" + text;
      EXPECT_EQ(a.partition, b.partition) << where;
      EXPECT_EQ(a.quantization.weights, b.quantization.weights) << where;
      EXPECT_EQ(a.quantization.gradients, b.quantization.gradients) << where;
      EXPECT_EQ(a.quantization.gradient_hops, b.quantization.gradient_hops) << where;
      EXPECT_EQ(a.hierarchy_levels, b.hierarchy_levels) << where;
      EXPECT_EQ(a.offload.optimizer, b.offload.optimizer) << where;
      EXPECT_EQ(a.offload.params, b.offload.params) << where;
      EXPECT_EQ(a.offload.optimizer_nvme, b.offload.optimizer_nvme) << where;
      EXPECT_EQ(a.offload.params_nvme, b.offload.params_nvme) << where;
      EXPECT_EQ(a.offload.pipeline, b.offload.pipeline) << where;
      EXPECT_EQ(a.offload.sub_group, b.offload.sub_group) << where;
      EXPECT_EQ(a.offload.delayed_update, b.offload.delayed_update) << where;
      EXPECT_EQ(a.offload.param_buffer_count, b.offload.param_buffer_count) << where;
      EXPECT_EQ(a.offload.param_buffer_size, b.offload.param_buffer_size) << where;
      EXPECT_EQ(a.compression.gradients.codec, b.compression.gradients.codec) << where;
      EXPECT_EQ(a.compression.parameters.ratio, b.compression.parameters.ratio) << where;
      EXPECT_EQ(a.compression.gradients.compress.value(), b.compression.gradients.compress.value()) << where;
      EXPECT_EQ(a.overlaps_comm(), b.overlaps_comm()) << where;
      EXPECT_EQ(a.framework, b.framework) << where;
      EXPECT_EQ(a.recompute, b.recompute) << where;
      EXPECT_EQ(a.recompute_every, b.recompute_every) << where;
      EXPECT_EQ(a.model_code, b.model_code) << where;
      EXPECT_EQ(a.cross_entropy, b.cross_entropy) << where;
      EXPECT_EQ(a.float8.linear, b.float8.linear) << where;
      EXPECT_EQ(a.float8.all_gather, b.float8.all_gather) << where;
      EXPECT_EQ(evaluate(v).run.iteration_time.value(), evaluate(c).run.iteration_time.value()) << where;
      ++checked;
    }
  }
  EXPECT_GE(checked, 15);
}

// What `shardsim models --show` / `clusters --show` print parses back to the same specs.
TEST(ScenarioYamlDump, EveryPresetRoundTrips) {
  for (const auto& cname : topology::cluster_preset_names()) {
    const core::ClusterSpec& c = *topology::find_cluster_preset(cname);
    for (const auto& mname : core::model_preset_names()) {
      const core::ModelSpec& m = *core::find_model_preset(mname);
      if (!c.device.peak_for(m.param_dtype)) continue;
      const std::string yaml = "model:\n" + indent(model_to_yaml(m)) + "cluster:\n" + indent(cluster_to_yaml(c)) +
                               "plan: {zero_stage: 3}\n";
      const Scenario s = parse_scenarios(yaml, "dump.yaml").at(0);
      EXPECT_DOUBLE_EQ(s.model.total_params(), m.total_params()) << mname;
      EXPECT_EQ(s.model.param_dtype, m.param_dtype) << mname;
      EXPECT_EQ(s.model.kv_heads, m.kv_heads) << mname;
      const auto& d = s.cluster.device;
      EXPECT_DOUBLE_EQ(d.hbm.value(), c.device.hbm.value()) << cname;
      EXPECT_NEAR(d.hbm_bandwidth.value(), c.device.hbm_bandwidth.value(), 1e-6) << cname;
      EXPECT_NEAR(d.peak_for(m.param_dtype)->value(), c.device.peak_for(m.param_dtype)->value(), 1e-3) << cname;
      EXPECT_DOUBLE_EQ(d.gemm_efficiency, c.device.gemm_efficiency) << cname;
      EXPECT_DOUBLE_EQ(d.memory_efficiency, c.device.memory_efficiency) << cname;
      EXPECT_EQ(d.stream_efficiency, c.device.stream_efficiency) << cname;
      EXPECT_EQ(d.compute_units, c.device.compute_units) << cname;
      EXPECT_NEAR(d.kernel_overhead.value(), c.device.kernel_overhead.value(), 1e-15) << cname;
      EXPECT_DOUBLE_EQ(d.runtime_reserved.value(), c.device.runtime_reserved.value()) << cname;
      EXPECT_DOUBLE_EQ(s.cluster.host.memory.value(), c.host.memory.value()) << cname;
      ASSERT_EQ(s.cluster.levels.size(), c.levels.size()) << cname;
      for (std::size_t l = 0; l < c.levels.size(); ++l) {
        EXPECT_NEAR(s.cluster.levels[l].link_bandwidth.value(), c.levels[l].link_bandwidth.value(), 1e-3) << cname;
        EXPECT_NEAR(s.cluster.levels[l].latency.value(), c.levels[l].latency.value(), 1e-15) << cname;
        EXPECT_EQ(s.cluster.levels[l].shared_by, c.levels[l].shared_by) << cname;
        EXPECT_EQ(s.cluster.levels[l].group_nodes, c.levels[l].group_nodes) << cname;
      }
      EXPECT_NEAR(s.cluster.library.tree_cross_group_share, c.library.tree_cross_group_share, 1e-12) << cname;
      // The collective library comes along: a copy of a preset prices its collectives as the preset does.
      const auto& lib = s.cluster.library;
      EXPECT_EQ(lib.family, c.library.family) << cname;
      EXPECT_EQ(lib.protocols, c.library.protocols) << cname;
      EXPECT_EQ(lib.amd_host, c.library.amd_host) << cname;
      EXPECT_EQ(lib.intra, c.library.intra) << cname;
      EXPECT_EQ(lib.generation, c.library.generation) << cname;
      EXPECT_NEAR(lib.latency_scale, c.library.latency_scale, 1e-9) << cname;
      for (std::size_t p = 0; p < 3; ++p) {
        EXPECT_NEAR(lib.net_step_s[p], c.library.net_step_s[p], 1e-15) << cname;
        EXPECT_NEAR(lib.tree_step_s[p], c.library.tree_step_s[p], 1e-15) << cname;
      }
      // And the analytical engine gives the copy the preset's iteration (the link graph, which a copy does not carry,
      // is the SimGrid engine's).
      Scenario preset = s;
      preset.cluster = c;
      preset.cluster.nodes = s.cluster.nodes;
      const double t_copy = evaluate(s).run.iteration_time.value();
      const double t_preset = evaluate(preset).run.iteration_time.value();
      EXPECT_NEAR(t_copy / t_preset, 1.0, 1e-9) << cname << " / " << mname;
    }
  }
}

}  // namespace
}  // namespace shardsim::scenario

// ------------------------------------------------------------------ cluster.topology (a user's node graph)
namespace shardsim::scenario {
namespace {

const char* kTopo = R"(name: box
model: llama2-7b
cluster:
  name: pcie-box
  nodes: 4
  devices_per_node: 4
  device: {peak: {bf16: 756TFLOP/s}, hbm: 80GB, hbm_bandwidth: 2000GB/s}
  network:
    - {name: pcie, ranks: 4, bandwidth: 25GB/s, shared_by: 2, latency: 3us}
    - {name: ib, ranks: all, bandwidth: 12.5GB/s, shared_by: 4, latency: 5us}
  topology:
    devices: [gpu0, gpu1, gpu2, gpu3]
    hosts: [cpu]
    nics: [nic0]
    switches: [plx0, plx1]
    links:
      - {between: [gpu0, plx0], bandwidth: 25GB/s, latency: 1us}
      - {between: [gpu1, plx0], bandwidth: 25GB/s, latency: 1us}
      - {between: [gpu2, plx1], bandwidth: 25GB/s, latency: 1us}
      - {between: [gpu3, plx1], bandwidth: 25GB/s, latency: 1us}
      - {between: [plx0, cpu], bandwidth: 25GB/s}
      - {between: [plx1, cpu], bandwidth: 25GB/s}
      - {between: [plx0, nic0], bandwidth: 25GB/s}
    fabric: {kind: fat_tree, port_bandwidth: 12.5GB/s, switch_bandwidth: 12.5GB/s, leaf_nodes: 2, spines: 2}
plan: {zero_stage: 3, micro_batch: 1, global_batch: 32}
)";

TEST(ScenarioTopology, ReadsAUsersNodeGraphAndFabric) {
  const auto s = parse_scenarios(kTopo, "s.yaml").front();
  ASSERT_TRUE(s.cluster.topology);
  const auto& t = *s.cluster.topology;
  EXPECT_EQ(t.devices.size(), 4u);
  EXPECT_EQ(t.links.size(), 7u);
  EXPECT_EQ(t.fabric.kind, core::FabricSpec::Kind::kFatTree);
  EXPECT_DOUBLE_EQ(t.fabric.port_bandwidth.value(), 12.5e9);
  EXPECT_EQ(t.fabric.leaf_nodes, 2);
  EXPECT_DOUBLE_EQ(t.links[4].latency.value(), 0.0);  // latency defaults to 0
}

// The fabric's first tier is the outermost level's groups: a fat tree's leaf, a dragonfly group (one machine); a
// network that says otherwise is refused.
TEST(ScenarioTopology, TheFabricsFirstTierIsTheNetworksGroups) {
  const auto s = parse_scenarios(kTopo, "s.yaml").front();
  EXPECT_EQ(s.cluster.levels.back().group_nodes, 2);  // leaf_nodes
  const auto same = parse_scenarios(replace(kTopo, "shared_by: 4, latency: 5us}", "shared_by: 4, latency: 5us, group_nodes: 2}"),
                                    "s.yaml").front();
  EXPECT_EQ(same.cluster.levels.back().group_nodes, 2);
  expect_error(replace(kTopo, "shared_by: 4, latency: 5us}", "shared_by: 4, latency: 5us, group_nodes: 4}"),
               {12, 5, "cluster.topology", "group_nodes of 4 nodes; this one's holds 2"});
}

TEST(ScenarioTopology, BadNodeGraphsNameTheLineAndKey) {
  // A link to a vertex that does not exist.
  expect_error(replace(kTopo, "between: [plx0, nic0]", "between: [plx0, nic9]"),
               {23, 26, "cluster.topology.links[6].between[1]", "did you mean 'nic0'"});
  // A device count that is not devices_per_node.
  expect_error(replace(kTopo, "devices: [gpu0, gpu1, gpu2, gpu3]", "devices: [gpu0, gpu1, gpu2]"),
               {12, 14, "cluster.topology.devices", "expected 4 devices"});
  // A name used twice.
  expect_error(replace(kTopo, "switches: [plx0, plx1]", "switches: [plx0, cpu]"),
               {15, 22, "cluster.topology.switches[1]", "not used before"});
  // A zero-bandwidth link.
  expect_error(replace(kTopo, "{between: [plx1, cpu], bandwidth: 25GB/s}", "{between: [plx1, cpu], bandwidth: 0GB/s}"),
               {22, 0, "cluster.topology.links[5].bandwidth", "positive"});
  // A device with no route to the others (gpu3 linked to nothing).
  expect_error(replace(kTopo, "      - {between: [gpu3, plx1], bandwidth: 25GB/s, latency: 1us}\n", ""),
               {12, 5, "cluster.topology", "linked to gpu3"});
  // No NIC for a job over several nodes.
  expect_error(replace(replace(kTopo, "    nics: [nic0]\n", ""), "      - {between: [plx0, nic0], bandwidth: 25GB/s}\n", ""),
               {12, 5, "cluster.topology", "at least one NIC"});
  // A dragonfly whose groups cannot hold their nodes' NICs.
  expect_error(replace(kTopo, "{kind: fat_tree, port_bandwidth: 12.5GB/s, switch_bandwidth: 12.5GB/s, leaf_nodes: 2, spines: 2}",
                       "{kind: dragonfly, switch_bandwidth: 25GB/s, group_nodes: 64, group_switches: 2, "
                       "endpoints_per_switch: 16, global_links: 2, global_bandwidth: 25GB/s}"),
               {12, 5, "cluster.topology", "switches per dragonfly group"});
  // cluster.fabric: a misspelt key, a zero rate.
  expect_error(replace(kTopo, "  nodes: 4\n", "  nodes: 4\n  fabric: {port_bandwith: 10GB/s}\n"),
               {6, 12, "cluster.fabric.port_bandwith", "did you mean 'port_bandwidth'"});
  expect_error(replace(kTopo, "  nodes: 4\n", "  nodes: 4\n  fabric: {port_bandwidth: 0GB/s}\n"),
               {6, 28, "cluster.fabric.port_bandwidth", "positive"});
  // A fabric key that does not belong to the kind.
  expect_error(replace(kTopo, "leaf_nodes: 2, spines: 2}", "leaf_nodes: 2, spines: 2, global_links: 3}"),
               {24, 0, "cluster.topology.fabric.global_links", "global_links"});
}

}  // namespace
}  // namespace shardsim::scenario

namespace shardsim::scenario {
namespace {

// A preset keeps its identity under another display name (the SimGrid engine still builds it link by link); a
// preset whose node or network the scenario redefines is no longer that machine, and both engines see the
// levels as written.
TEST(ClusterPresetIdentity, SurvivesRenamingNotRedefinition) {
  auto cluster = [](const std::string& section) {
    return parse_scenarios("model: llama2-7b\ncluster: " + section + "\nplan: {zero_stage: 1}\n", "c.yaml").at(0).cluster;
  };
  const auto renamed = cluster("{preset: frontier, name: my-frontier, nodes: 2}");
  EXPECT_EQ(renamed.name, "my-frontier");
  EXPECT_EQ(renamed.preset, "frontier");
  const auto links = topology::LinkTopology::build(renamed, topology::TopologyKind::kAuto);
  EXPECT_NE(links.description().find("Frontier: HPE Cray EX235a"), std::string::npos) << links.description();
  const auto half = cluster("{preset: dgx-h100, nodes: 1, devices_per_node: 4}");
  EXPECT_TRUE(half.preset.empty());
  const auto derived = topology::LinkTopology::build(half, topology::TopologyKind::kAuto);
  EXPECT_NE(derived.description().find("derived from its network levels"), std::string::npos) << derived.description();
  const auto own_network = cluster(
      "{preset: dgx-h100, nodes: 2, network: [{name: nv, ranks: 8, bandwidth: 100GB/s, latency: 2us}, "
      "{name: ib, ranks: all, bandwidth: 10GB/s, latency: 5us}]}");
  EXPECT_TRUE(own_network.preset.empty());
}

}  // namespace
}  // namespace shardsim::scenario

namespace shardsim::scenario {
namespace {

// cluster.collective_library changes the preset's library; every key is checked.
TEST(Scenario, CollectiveLibraryKeysChangeThePresetsLibrary) {
  const auto s = parse_scenarios(
      replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {latency_scale: 3, host_cpu: amd, protocols: [LL, Simple]}"),
      "s.yaml")[0];
  EXPECT_EQ(s.cluster.library.family, core::CollectiveLibrarySpec::Family::kNccl);  // the preset's
  EXPECT_DOUBLE_EQ(s.cluster.library.latency_scale, 3.0);
  EXPECT_TRUE(s.cluster.library.amd_host);
  EXPECT_EQ(s.cluster.library.protocols, (std::array<bool, 3>{true, false, true}));
  EXPECT_EQ(s.cluster.library.generation, core::CollectiveLibrarySpec::Generation::kHopper);
  const auto ab = parse_scenarios(replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: alpha-beta"), "s.yaml")[0];
  EXPECT_EQ(ab.cluster.library.family, core::CollectiveLibrarySpec::Family::kAlphaBeta);
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: mpich"),
               {6, 23, "cluster.collective_library", "nccl"});
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {latency_scale: 50}"),
               {6, 39, "cluster.collective_library.latency_scale", "0.25 to 10"});
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {protocols: [LL129]}"),
               {6, 36, "cluster.collective_library.protocols[0]", "LL128"});
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {protocol: [LL]}"),
               {6, 24, "cluster.collective_library.protocol", "did you mean 'protocols'"});
  // Measured network steps per protocol, any subset; the others stay the table's.
  const auto steps = parse_scenarios(
      replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {net_step_latency: {LL: 11us, Simple: 0.06ms}}"),
      "s.yaml")[0];
  EXPECT_EQ(steps.cluster.library.net_step_s, (std::array<double, 3>{11e-6, -1.0, 60e-6}));
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {net_step_latency: {LL: 0us}}"),
               {6, 47, "cluster.collective_library.net_step_latency.LL", "above 0 to 1 ms"});
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {net_step_latency: {LL129: 1us}}"),
               {6, 43, "cluster.collective_library.net_step_latency.LL129", "LL128"});
  // A tree's network hops, measured apart from the ring's steps.
  const auto hops = parse_scenarios(
      replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {tree_step_latency: {LL: 6us, LL128: 36us}}"),
      "s.yaml")[0];
  EXPECT_EQ(hops.cluster.library.tree_step_s, (std::array<double, 3>{6e-6, 36e-6, -1.0}));
  EXPECT_EQ(hops.cluster.library.net_step_s, (std::array<double, 3>{-1.0, -1.0, -1.0}));
  // Rings paced by their network step: off by default, on or off by key.
  EXPECT_FALSE(hops.cluster.library.paced_rings);
  const auto paced = parse_scenarios(
      replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {paced_rings: true}"), "s.yaml")[0];
  EXPECT_TRUE(paced.cluster.library.paced_rings);
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {paced_rings: often}"),
               {6, 37, "cluster.collective_library.paced_rings", "true or false"});
  // What a tree keeps of its bandwidth past one group of the fabric: the fitted share, a fraction by key.
  EXPECT_DOUBLE_EQ(paced.cluster.library.tree_cross_group_share, core::kFittedTreeCrossGroupShare);
  const auto share = parse_scenarios(
      replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {tree_cross_group_share: 1}"), "s.yaml")[0];
  EXPECT_DOUBLE_EQ(share.cluster.library.tree_cross_group_share, 1.0);
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {tree_cross_group_share: 1.5}"),
               {6, 48, "cluster.collective_library.tree_cross_group_share", "a fraction in (0, 1]"});
  // NCCL's version picks its tuning table; RCCL and alpha-beta have none.
  const auto v21 = parse_scenarios(
      replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {library: nccl, version: \"2.21\"}"), "s.yaml")[0];
  EXPECT_EQ(v21.cluster.library.nccl_minor, 21);
  EXPECT_EQ(steps.cluster.library.nccl_minor, 18);
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {version: 2.17}"),
               {6, 33, "cluster.collective_library.version", "2.18 to 2.30"});
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {library: rccl, version: 2.21}"),
               {6, 48, "cluster.collective_library.version", "NCCL only"});
  // RCCL's tuning model is the one its system model of the node names: 0 (its default) or 3 (the MI250X node's).
  const auto m3 = parse_scenarios(
      replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {library: rccl, tuning_model: 3}"), "s.yaml")[0];
  EXPECT_EQ(m3.cluster.library.rccl_tuning_model, 3);
  EXPECT_EQ(steps.cluster.library.rccl_tuning_model, 0);
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {library: rccl, tuning_model: 2}"),
               {6, 53, "cluster.collective_library.tuning_model", "rome_model_74"});
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {tuning_model: 3}"),
               {6, 38, "cluster.collective_library.tuning_model", "RCCL only"});
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {tree_step_latency: {Simple: 2ms}}"),
               {6, 52, "cluster.collective_library.tree_step_latency.Simple", "above 0 to 1 ms"});
  // A step of a protocol the library does not run here would go unused: refused.
  expect_error(replace(kGood, "  nodes: 2",
                       "  nodes: 2\n  collective_library: {protocols: [LL, Simple], tree_step_latency: {LL128: 36us}}"),
               {6, 76, "cluster.collective_library.tree_step_latency.LL128", "not among the library's protocols"});
  // NVLS: the DGX H100's NVSwitch has it; another library, or a node the scenario redefines, does not unless
  // restated; NVLS is NCCL's.
  EXPECT_TRUE(s.cluster.library.nvls);
  EXPECT_FALSE(ab.cluster.library.nvls);
  const auto rccl = parse_scenarios(replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {library: rccl}"),
                                    "s.yaml")[0];
  EXPECT_FALSE(rccl.cluster.library.nvls);
  const std::string own_node =
      "  nodes: 2\n  network: [{name: nv, ranks: 8, bandwidth: 300GB/s, latency: 2us}, "
      "{name: ib, ranks: all, bandwidth: 50GB/s, latency: 5us}]";
  EXPECT_FALSE(parse_scenarios(replace(kGood, "  nodes: 2", own_node), "s.yaml")[0].cluster.library.nvls);
  EXPECT_TRUE(parse_scenarios(replace(kGood, "  nodes: 2", own_node + "\n  collective_library: {nvls: true}"), "s.yaml")[0]
                  .cluster.library.nvls);
  expect_error(replace(kGood, "  nodes: 2", "  nodes: 2\n  collective_library: {library: rccl, nvls: true}"),
               {6, 45, "cluster.collective_library.nvls", "NCCL's"});
}

}  // namespace
}  // namespace shardsim::scenario
