#include "strategies/memory_model.hpp"

#include <gtest/gtest.h>

#include "sim/core/model_spec.hpp"
#include "strategies/lowering_common.hpp"
#include "strategies/model_costs.hpp"
#include "tests/test_clusters.hpp"

namespace shardsim::strategies {
namespace {

// Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models" (SC20),
// Figure 1 / Sec. 5: Psi = 7.5B, Nd = 64, K = 12 -> 120 GB (baseline), 31.4 GB (Pos), 16.6 GB (Pos+g),
// 1.9 GB (Pos+g+p). GB = 1e9 bytes.
TEST(MemoryModel, ReproducesTheZeroPaperWorkedExample) {
  const double psi = 7.5e9;
  EXPECT_NEAR(model_state_bytes(psi, 64, 0, 2, 2, 12).total() / 1e9, 120.0, 0.05);
  EXPECT_NEAR(model_state_bytes(psi, 64, 1, 2, 2, 12).total() / 1e9, 31.4, 0.05);
  EXPECT_NEAR(model_state_bytes(psi, 64, 2, 2, 2, 12).total() / 1e9, 16.6, 0.05);
  EXPECT_NEAR(model_state_bytes(psi, 64, 3, 2, 2, 12).total() / 1e9, 1.9, 0.05);
}

core::ModelSpec gpt_block_model() {
  core::ModelSpec m = *core::find_model_preset("gpt3-175b");
  m.layers = 1;
  return m;
}

// Korthikanti et al. 2022 (arXiv 2205.05198), Sec. 4.1 eq. (1): a GPT block stores sbh(34 + 5as/h) bytes.
TEST(MemoryModel, BlockActivationsMatchKorthikanti) {
  const core::ModelSpec m = gpt_block_model();
  core::PlanSpec p;
  p.micro_batch = 2;
  const ModelCosts c = compute_model_costs(m, p);
  const double s = m.seq_len, b = 2, h = m.hidden, a = m.heads;
  const double expected = s * b * h * (34.0 + 5.0 * a * s / h);
  EXPECT_NEAR(c.units[1].act_saved.value() / expected, 1.0, 1e-12);
}

// Without dropout nothing keeps a mask: the two after attention and MLP (2sbh) and the one on the attention
// probabilities (as^2b) go, leaving sbh(32 + 4as/h).
TEST(MemoryModel, NoDropoutKeepsNoMasks) {
  core::ModelSpec m = gpt_block_model();
  m.dropout = false;
  core::PlanSpec p;
  p.micro_batch = 2;
  const ModelCosts c = compute_model_costs(m, p);
  const double s = m.seq_len, b = 2, h = m.hidden, a = m.heads;
  EXPECT_NEAR(c.units[1].act_saved.value() / (s * b * h * (32.0 + 4.0 * a * s / h)), 1.0, 1e-12);
}

// Sec. 4.2.1, eq. (2): with t-way tensor parallelism sbh(10 + 24/t + 5as/(ht)).
TEST(MemoryModel, BlockActivationsWithTensorParallelismMatchKorthikanti) {
  const core::ModelSpec m = gpt_block_model();
  core::PlanSpec p;
  p.tp = 8;
  const ModelCosts c = compute_model_costs(m, p);
  const double s = m.seq_len, b = 1, h = m.hidden, a = m.heads, t = 8;
  const double expected = s * b * h * (10.0 + 24.0 / t + 5.0 * a * s / (h * t));
  EXPECT_NEAR(c.units[1].act_saved.value() / expected, 1.0, 1e-12);
}

// Sec. 4.2.2, eq. (4): tensor + sequence parallelism stores sbh(34/t + 5as/(ht)).
TEST(MemoryModel, BlockActivationsWithSequenceParallelismMatchKorthikanti) {
  const core::ModelSpec m = gpt_block_model();
  core::PlanSpec p;
  p.tp = 8;
  p.sequence_parallel = true;
  const ModelCosts c = compute_model_costs(m, p);
  const double s = m.seq_len, b = 1, h = m.hidden, a = m.heads, t = 8;
  const double expected = s * b * h * (34.0 / t + 5.0 * a * s / (h * t));
  EXPECT_NEAR(c.units[1].act_saved.value() / expected, 1.0, 1e-12);
}

// Transformer Engine's FP8 linears keep their inputs for the weight gradient in FP8 (te.Linear's saved inputmat):
// the two norms' outputs, the attention context and the MLP's activation output at a byte an element instead of two,
// 7 sbh of Korthikanti's 34 for a GPT block with sequence parallelism over t ranks (sbh(34 - 7)/t, flash attention);
// torchao's Float8Linear keeps its bf16 inputs.
TEST(MemoryModel, TransformerEnginesFp8LinearsKeepTheirInputsInFp8) {
  const core::ModelSpec m = gpt_block_model();
  core::PlanSpec p;
  p.micro_batch = 1;
  p.tp = 4;
  p.sequence_parallel = true;
  p.flash_attention = true;
  const double s = m.seq_len, b = 1, h = m.hidden, t = 4;
  const double bf16 = compute_model_costs(m, p).units[1].act_saved.value();
  EXPECT_NEAR(bf16 / (s * b * h * 34.0 / t), 1.0, 1e-12);
  p.float8.linear = true;
  p.float8.recipe = core::Float8Recipe::kDelayed;
  EXPECT_NEAR(compute_model_costs(m, p).units[1].act_saved.value() / (s * b * h * 27.0 / t), 1.0, 1e-12);
  p.float8.recipe = core::Float8Recipe::kTensorwise;
  EXPECT_NEAR(compute_model_costs(m, p).units[1].act_saved.value() / bf16, 1.0, 1e-12);
}

// Sec. 5 / Table 2: selective recomputation keeps sbh(10 + 24/t); full recomputation keeps 2sbh.
TEST(MemoryModel, RecomputationKeepsWhatKorthikantiSays) {
  const core::ModelSpec m = gpt_block_model();
  core::PlanSpec p;
  p.tp = 4;
  p.recompute = core::Recompute::kSelective;
  const double s = m.seq_len, h = m.hidden, t = 4;
  EXPECT_NEAR(compute_model_costs(m, p).units[1].act_saved.value() / (s * h * (10.0 + 24.0 / t)), 1.0, 1e-12);
  p.recompute = core::Recompute::kFull;
  const ModelCosts full = compute_model_costs(m, p);
  EXPECT_NEAR(full.units[1].act_saved.value(), 2.0 * s * h, 1e-6);
  EXPECT_GT(full.units[1].act_transient.value(), full.units[1].act_saved.value());
  EXPECT_DOUBLE_EQ(full.units[1].recompute_flops.value(), full.units[1].fwd_flops.value());
}

TEST(MemoryModel, BreakdownSumsToTotalAndVerdictFollowsCapacity) {
  core::ModelSpec m = *core::find_model_preset("llama2-7b");
  core::ClusterSpec c = testing::two_level(2);  // 8 devices, 32 GiB each
  core::PlanSpec p;
  p.dp = 8;
  p.global_batch = 8;
  p.zero_stage = 0;
  const ModelCosts costs = compute_model_costs(m, p);
  MemoryBreakdown mb = estimate_memory(m, c, p, costs);
  double sum = 0.0;
  for (const auto& it : mb.items) sum += it.bytes.value();
  EXPECT_DOUBLE_EQ(sum, mb.total.value());
  EXPECT_FALSE(mb.fits);  // 16 bytes x 6.7B = 108 GB of model states alone
  p.zero_stage = 3;
  p.recompute = core::Recompute::kFull;
  mb = estimate_memory(m, c, p, compute_model_costs(m, p));
  EXPECT_TRUE(mb.fits) << mb.total.value() / core::kGiB;
}

// qgZ's INT4 buffers exist only where DeepSpeed quantises the gradients, a world that spans nodes
// (quantizes_gradients, which the lowering follows too): on one node of 4 the buckets are plain.
TEST(MemoryModel, QgzBuffersOnlyWhereTheWorldSpansNodes) {
  const core::ModelSpec m = *core::find_model_preset("llama2-7b");
  core::PlanSpec p;
  p.zero_stage = 3;
  p.recompute = core::Recompute::kFull;
  p.reduce_bucket = core::Bytes(1e9);
  p.quantization.gradients = true;
  auto buffers = [&](int nodes) {
    const core::ClusterSpec c = testing::two_level(nodes);
    p.dp = nodes * c.devices_per_node;
    p.global_batch = p.dp;
    EXPECT_EQ(quantizes_gradients(c, p), nodes > 1);
    for (const auto& it : estimate_memory(m, c, p, compute_model_costs(m, p)).items) {
      if (it.name == "communication buffers") return std::pair{it.bytes.value(), it.note};
    }
    return std::pair{-1.0, std::string()};
  };
  const auto one = buffers(1);
  const auto two = buffers(2);
  EXPECT_EQ(one.first, 2e9) << one.second;
  EXPECT_EQ(one.second.find("qgZ"), std::string::npos) << one.second;
  EXPECT_EQ(two.first, 2e9 + 2.0 * 1e9 * 0.25 * 2.0) << two.second;
  EXPECT_NE(two.second.find("qgZ INT4 buffers"), std::string::npos) << two.second;
}

// DeepSpeed's ZeRO keeps its reduce buckets on one rank too: ZeRO-2 two of reduce_bucket (overlap on), ZeRO-3 its one
// flat bucket (nothing is reduced beside it on one rank); without ZeRO, DDP's two 25 MB buckets.
TEST(MemoryModel, OneRanksZeroKeepsDeepSpeedsBuckets) {
  const core::ModelSpec m = *core::find_model_preset("llama2-7b");
  const core::ClusterSpec c = testing::two_level(1);
  core::PlanSpec p;
  p.dp = 1;
  p.global_batch = 1;
  p.recompute = core::Recompute::kFull;
  p.reduce_bucket = core::Bytes(1e9);
  auto buffers = [&](int stage, std::optional<bool> overlap) {
    p.zero_stage = stage;
    p.overlap_comm = overlap;
    for (const auto& it : estimate_memory(m, c, p, compute_model_costs(m, p)).items) {
      if (it.name == "communication buffers") return it.bytes.value();
    }
    return -1.0;
  };
  EXPECT_EQ(buffers(0, std::nullopt), 2.0 * p.ddp_bucket.value());
  EXPECT_EQ(buffers(2, true), 2e9);
  EXPECT_EQ(buffers(2, false), 1e9);
  EXPECT_EQ(buffers(3, std::nullopt), 1e9);
  // DeepSpeed's ZeRO-3 with one partition gathers nothing into new memory; FSDP's FULL_SHARD copies its units out.
  auto gathered = [&](core::Framework f) {
    p.zero_stage = 3;
    p.framework = f;
    for (const auto& it : estimate_memory(m, c, p, compute_model_costs(m, p)).items) {
      if (it.name == "gathered parameters") return it.bytes.value();
    }
    return 0.0;
  };
  EXPECT_EQ(gathered(core::Framework::kDeepSpeed), 0.0);
  EXPECT_GT(gathered(core::Framework::kFsdp), 0.0);
  // With its partitions on the host it copies each fetched unit into a fresh device tensor (NoGatherHandle's
  // ds_tensor.to(device)): the live units count as with a gather.
  p.offload.params = true;
  p.offload.optimizer = true;
  const double held = gathered(core::Framework::kDeepSpeed);
  EXPECT_GT(held, 0.0);
  p.dp = 2;
  p.global_batch = 2;
  EXPECT_EQ(held, gathered(core::Framework::kDeepSpeed));
}

// The loss's fp32 copy of the logits counts once, with every unit's saved activations, where it is the largest
// transient.
TEST(MemoryModel, TheLossCopyOfTheLogitsIsTheLargestTransient) {
  const core::ModelSpec m = *core::find_model_preset("llama3-8b");
  const core::ClusterSpec c = testing::two_level(2);
  core::PlanSpec p;
  p.dp = 8;
  p.global_batch = 8;
  p.zero_stage = 3;
  p.flash_attention = true;
  p.recompute = core::Recompute::kFull;
  p.cross_entropy = core::CrossEntropy::kFused;
  const MemoryBreakdown fused = estimate_memory(m, c, p, compute_model_costs(m, p));
  p.cross_entropy = core::CrossEntropy::kTorch;
  const ModelCosts costs = compute_model_costs(m, p);
  const double logits = 8192.0 * 128256;
  ASSERT_GT(costs.units.back().fwd_transient.value(), costs.units[1].act_transient.value());
  const MemoryBreakdown torch = estimate_memory(m, c, p, costs);
  // 4 bytes more per logit saved (the fp32 log-softmax) and the 4-byte copy beside it, in place of the block's
  // recomputed transient.
  EXPECT_NEAR(torch.total.value() - fused.total.value(),
              logits * 8.0 - costs.units[1].act_transient.value(), 1.0);
}

// Recomputation on every second block only (torchtitan's selective layer option): those blocks keep their input
// and recompute, the others keep everything; memory and recomputed FLOPs fall between none and full.
TEST(MemoryModel, RecomputingEverySecondBlockKeepsTheOthersWhole) {
  core::ModelSpec m = gpt_block_model();
  m.layers = 2;
  core::PlanSpec p;
  p.recompute = core::Recompute::kFull;
  const ModelCosts full = compute_model_costs(m, p);
  p.recompute_every = 2;
  const ModelCosts half = compute_model_costs(m, p);
  p.recompute = core::Recompute::kNone;
  p.recompute_every = 1;
  const ModelCosts none = compute_model_costs(m, p);
  EXPECT_EQ(half.units[1].act_saved.value(), none.units[1].act_saved.value());  // block 0: kept whole
  EXPECT_EQ(half.units[1].recompute_flops.value(), 0.0);
  EXPECT_EQ(half.units[2].act_saved.value(), full.units[2].act_saved.value());  // block 1: recomputed
  EXPECT_EQ(half.units[2].recompute_flops.value(), full.units[2].recompute_flops.value());
  EXPECT_GT(half.hardware_flops_per_micro.value(), none.hardware_flops_per_micro.value());
  EXPECT_LT(half.hardware_flops_per_micro.value(), full.hardware_flops_per_micro.value());
}

TEST(MemoryModel, ShardingNeverIncreasesModelStates) {
  for (int n : {1, 2, 8, 64, 1024}) {
    double prev = 1e300;
    for (int stage = 0; stage <= 3; ++stage) {
      const double now = model_state_bytes(1e9, n, stage, 2, 2, 12).total();
      EXPECT_LE(now, prev);
      prev = now;
    }
  }
}

}  // namespace
}  // namespace shardsim::strategies
