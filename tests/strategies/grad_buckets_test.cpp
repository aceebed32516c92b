// Gradient buckets closed at a parameter tensor's edge by each framework's rule, and the tensors a unit's backward
// hands over.
#include "strategies/grad_buckets.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <vector>

#include "sim/core/model_spec.hpp"
#include "strategies/lowering_common.hpp"
#include "strategies/model_costs.hpp"
#include "strategies/partitioned_strategy.hpp"
#include "tests/test_clusters.hpp"

namespace shardsim::strategies {
namespace {

// The buckets a rule makes of one unit whose tensors hold `sizes` bytes, in that order.
std::vector<double> buckets_of(const std::vector<double>& sizes, double bucket, BucketRule rule) {
  std::vector<double> out;
  auto emit = [&](const BucketFill& f, graph::TaskId, int, int) {
    out.push_back(f.bytes);
    return graph::TaskId{0};
  };
  GradBuckets b(bucket, rule, true, emit);
  std::vector<BucketFill> fills;
  for (const double s : sizes) fills.push_back(BucketFill{s, 1});
  b.add(0, fills, 0, 0, true);
  return out;
}

TEST(GradBuckets, DeepSpeedReducesBeforeATensorWouldOverflowTheBucket) {
  // A tensor that fits joins; one that would overflow closes the bucket first; one larger than the bucket goes alone,
  // and so does the small one caught between two large ones.
  EXPECT_EQ(buckets_of({3, 1, 5, 1}, 4, BucketRule::kReduceBeforeOverflow), (std::vector<double>{4, 5, 1}));
  EXPECT_EQ(buckets_of({1, 5, 1, 1}, 4, BucketRule::kReduceBeforeOverflow), (std::vector<double>{1, 5, 2}));
}

// The reduction of what is left when the pass ends is the epilogue's (flushed); a bucket the last tensors closed by
// the rule is not.
TEST(GradBuckets, TheLastPartialBucketIsTheEpiloguesReduction) {
  auto emit = [](const BucketFill&, graph::TaskId, int, int) { return graph::TaskId{0}; };
  GradBuckets b(4, BucketRule::kReduceBeforeOverflow, true, emit);
  b.add(0, std::vector<BucketFill>{{3, 1}, {2, 1}}, 1, 0, false);
  EXPECT_FALSE(b.flushed());
  b.add(0, std::vector<BucketFill>{{1, 1}}, 0, 0, true);  // 2 + 1 fits: the flush reduces what is left
  EXPECT_TRUE(b.flushed());
  GradBuckets whole(4, BucketRule::kCloseWhenFull, true, emit);
  whole.add(0, std::vector<BucketFill>{{4, 1}}, 0, 0, true);  // full: closed by the rule, nothing left to flush
  EXPECT_FALSE(whole.flushed());
}

TEST(GradBuckets, DdpAndMegatronCloseABucketOnceItIsFull) {
  // The tensor that fills (or overflows) the bucket is in it.
  EXPECT_EQ(buckets_of({3, 1, 5, 1}, 4, BucketRule::kCloseWhenFull), (std::vector<double>{4, 5, 1}));
  EXPECT_EQ(buckets_of({1, 5, 1, 1}, 4, BucketRule::kCloseWhenFull), (std::vector<double>{6, 2}));
}

TEST(GradBuckets, ZeroSizeReducesEachUnitAndInfiniteSizeOnlyTheLast) {
  for (const BucketRule rule : {BucketRule::kCloseWhenFull, BucketRule::kReduceBeforeOverflow}) {
    std::vector<double> out;
    auto emit = [&](const BucketFill& f, graph::TaskId, int, int) {
      out.push_back(f.bytes);
      return graph::TaskId{0};
    };
    GradBuckets per_unit(0.0, rule, true, emit);
    const std::vector<BucketFill> unit{{2, 1}, {3, 1}};
    per_unit.add(0, unit, 1, 0, false);
    per_unit.add(0, unit, 0, 0, true);
    EXPECT_EQ(out, (std::vector<double>{5, 5}));
    out.clear();
    GradBuckets whole(std::numeric_limits<double>::infinity(), rule, true, emit);
    whole.add(0, unit, 1, 0, false);
    whole.add(0, unit, 0, 0, true);
    EXPECT_EQ(out, (std::vector<double>{10}));
  }
}

TEST(GradBuckets, DeepSpeedZeroUsesItsRuleAndTheOthersCloseWhenFull) {
  core::PlanSpec p;
  p.framework = core::Framework::kDeepSpeed;
  p.dp = 8;
  p.zero_stage = 1;
  EXPECT_EQ(gradient_bucket_rule(p), BucketRule::kReduceBeforeOverflow);
  p.zero_stage = 0;  // DeepSpeed without ZeRO reduces in DDP's buckets
  EXPECT_EQ(gradient_bucket_rule(p), BucketRule::kCloseWhenFull);
  p.framework = core::Framework::kMegatron;
  EXPECT_EQ(gradient_bucket_rule(p), BucketRule::kCloseWhenFull);
}

// A GPT block's tensors as its backward hands them over: the second MLP linear's bias, then its weight, up to the
// first norm; together they are the unit's parameters.
TEST(GradBuckets, AUnitHandsItsTensorsOverLastModuleFirstBiasBeforeWeight) {
  core::ModelSpec m = *core::find_model_preset("gpt-neox-20b");
  ASSERT_TRUE(m.linear_bias);
  core::PlanSpec plan;
  const ModelCosts costs = compute_model_costs(m, plan);
  for (std::size_t u = 0; u < costs.units.size(); ++u) {
    const std::vector<BucketFill> fills = backward_tensor_fills(costs, u, 2.0);
    double bytes = 0.0;
    int tensors = 0;
    for (const BucketFill& f : fills) {
      bytes += f.bytes;
      tensors += f.tensors;
    }
    EXPECT_DOUBLE_EQ(bytes, 2.0 * costs.units[u].params) << "unit " << u;
    EXPECT_EQ(tensors, costs.units[u].tensors) << "unit " << u;
  }
  const std::vector<BucketFill> block = backward_tensor_fills(costs, 1, 2.0);
  const double h = m.hidden, f = m.ffn_hidden;
  ASSERT_GE(block.size(), 4u);
  EXPECT_DOUBLE_EQ(block[0].bytes, 2.0 * h);      // the second MLP linear's bias
  EXPECT_DOUBLE_EQ(block[1].bytes, 2.0 * h * f);  // its weight
  EXPECT_DOUBLE_EQ(block[2].bytes, 2.0 * f);      // the first MLP linear's bias
  EXPECT_DOUBLE_EQ(block.back().bytes, 2.0 * h);  // the first norm's scale
}

// qgZ quantises a block's matrices and all-to-alls each one, payload and scales, over every hop; its biases and
// norms (vectors) and any matrix whose size does not divide by twice the world go through a plain reduce-scatter
// each (deepspeed@v0.14.4 runtime/comm/coalesced_collectives.py all_to_all_quant_reduce).
TEST(GradBuckets, QgzQuantisesMatricesAndReducesVectorsOneByOne) {
  core::ModelSpec m = *core::find_model_preset("gpt-neox-20b");
  m.layers = 2;
  const core::ClusterSpec cluster = testing::two_level(4);
  core::PlanSpec plan;
  plan.dp = cluster.total_devices();
  plan.global_batch = plan.dp;
  plan.zero_stage = 3;
  plan.quantization.gradients = true;
  plan.quantization.gradient_hops = {0, 1};
  plan.partition = core::PlanSpec{plan}.shards();
  const ModelCosts costs = compute_model_costs(m, plan);
  graph::TaskGraph g;
  PartitionedStrategy().lower(LoweringInput{m, cluster, plan, costs}, g);
  std::map<graph::CollectiveOp, int> reductions;
  for (const auto& t : g.tasks()) {
    if (t.kind == graph::TaskKind::kCollective && t.purpose == graph::Purpose::kGradReduce) {
      reductions[t.op] += static_cast<int>(t.calls);
    }
  }
  int matrices = 0, vectors = 0;
  const TensorFillRules rules{.all_to_all_divisor = 2.0 * plan.dp};
  for (std::size_t u = 0; u < costs.units.size(); ++u) {
    for (const BucketFill& f : backward_tensor_fills(costs, u, 2.0, rules)) {
      matrices += f.tensors - f.unquantised;
      vectors += f.unquantised;
    }
  }
  ASSERT_GT(matrices, 0);
  ASSERT_GT(vectors, 0);
  EXPECT_EQ(reductions[graph::CollectiveOp::kAllToAll], matrices * 2 * 2);  // two hops, payload and scales
  EXPECT_EQ(reductions[graph::CollectiveOp::kReduceScatter], vectors);
}

// Megatron's model code holds a LLaMA block's q, k and v as one weight and SwiGLU's gate and up as another
// (query_key_value, dense_h_to_4h of twice the FFN width), whatever the model's Hugging Face layout: DeepSpeed fills
// its buckets from those tensors. The LLaMA-style 7B of the Polaris offload runs at TP 2 (1.47 B elements per rank)
// in DeepSpeed's reduce_bucket_size of 5e8 elements: six buckets of 429-495 M elements, then the word embedding's
// 103 M alone after the backward, as DeepSpeed's rule cuts Megatron-DeepSpeed's tensors (the split the runs'
// bwd_allreduce time follows: mauryaavinash95/deep-optimizer-states-results@a9408cdb, 70-81 ms at TP 2, where a bucket
// of 485 M ends the backward at TP 4 and takes 1.05 s).
TEST(GradBuckets, MegatronsFusedTensorsAreWhatDeepSpeedBuckets) {
  core::ModelSpec m = *core::find_model_preset("llama2-7b");
  ASSERT_FALSE(m.fused_qkv);
  ASSERT_FALSE(m.fused_gate_up);
  m.kv_heads = 4;
  m.ffn_hidden = 10880;
  m.vocab = 50304;
  m.seq_len = 2048;
  core::PlanSpec plan;
  plan.tp = 2;
  EXPECT_EQ(backward_tensor_fills(compute_model_costs(m, plan), 1, 2.0).size(), 9u);  // HF: 7 linears, 2 norms
  plan.model_code = core::ModelCode::kMegatron;
  const ModelCosts costs = compute_model_costs(m, plan);
  const std::vector<BucketFill> block = backward_tensor_fills(costs, 1, 2.0);
  ASSERT_EQ(block.size(), 6u);  // down, gate+up, norm, dense, qkv, norm
  const double h = m.hidden, f = m.ffn_hidden, kv = h / m.heads * m.kv_heads;
  EXPECT_DOUBLE_EQ(block[1].bytes, 2.0 * 2.0 * h * f / 2.0);
  EXPECT_DOUBLE_EQ(block[4].bytes, 2.0 * h * (h + 2.0 * kv) / 2.0);
  EXPECT_EQ(costs.units[1].modules, 6);

  std::vector<double> buckets;
  auto emit = [&](const BucketFill& fill, graph::TaskId, int, int) {
    buckets.push_back(fill.bytes / 2.0 / 1e6);
    return graph::TaskId{0};
  };
  GradBuckets b(5e8 * 2.0, BucketRule::kReduceBeforeOverflow, true, emit);
  for (std::size_t u = costs.units.size(); u-- > 0;) b.add(0, backward_tensor_fills(costs, u, 2.0), int(u), 0, u == 0);
  ASSERT_EQ(buckets.size(), 7u);
  const std::vector<double> expected{468.1, 491.9, 495.0, 470.4, 491.9, 428.9, 103.0};
  for (std::size_t i = 0; i < buckets.size(); ++i) EXPECT_NEAR(buckets[i], expected[i], 1.0) << "bucket " << i;
}

}  // namespace
}  // namespace shardsim::strategies
