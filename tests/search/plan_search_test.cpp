#include "sim/search/plan_search.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

#include "sim/core/errors.hpp"
#include "sim/scenario/evaluate.hpp"

namespace shardsim::search {
namespace {

scenario::Scenario base(const char* extra = "") {
  const std::string yaml = std::string(R"(model: {preset: llama2-7b, layers: 8}
cluster: {preset: dgx-h100, nodes: 2}
plan: {global_batch: 64, flash_attention: true}
)") + extra;
  return scenario::parse_scenarios(yaml, "s.yaml").at(0);
}

TEST(PlanSearch, RanksOnlyPlansThatFitFastestFirst) {
  const auto s = base();
  const auto r = search(s, default_space(s), 20, 1);
  ASSERT_FALSE(r.best.empty());
  EXPECT_GT(r.feasible, r.best.size());
  for (std::size_t i = 0; i < r.best.size(); ++i) {
    EXPECT_TRUE(r.best[i].evaluation.memory.fits);
    if (i > 0) {
      EXPECT_LE(r.best[i - 1].evaluation.run.iteration_time.value(), r.best[i].evaluation.run.iteration_time.value());
    }
  }
}

// Plans that differ only in ZeRO++ switches or offload and run within search.group_within of a faster plan of
// the same shape are listed under it, not ranked on their own; 0 turns grouping off.
TEST(PlanSearch, NearIdenticalPlansAreListedUnderTheFastest) {
  const auto s = base();
  auto space = default_space(s);
  const auto grouped = search(s, space, 10, 2);
  space.group_within = 0.0;
  const auto flat = search(s, space, 40, 2);
  auto shape = [](const core::PlanSpec& p) {
    const auto sh = p.shards();
    return std::make_tuple(sh.params, sh.grads, sh.optimizer, p.tp, p.pp, p.micro_batch, p.recompute);
  };
  std::size_t listed = 0;
  for (std::size_t i = 0; i < grouped.best.size(); ++i) {
    const auto& lead = grouped.best[i];
    const double t = lead.evaluation.run.iteration_time.value();
    for (const auto& x : lead.similar) {
      EXPECT_EQ(shape(x.plan), shape(lead.scenario.plan)) << x.strategy;
      EXPECT_GE(x.iteration_time_s, t);
      EXPECT_LE(x.iteration_time_s, t * 1.01) << x.strategy;
    }
    listed += 1 + lead.similar.size();
    for (std::size_t j = 0; j < i; ++j) {  // a later leader is no near-copy of an earlier one
      if (shape(grouped.best[j].scenario.plan) == shape(lead.scenario.plan)) {
        EXPECT_GT(t, grouped.best[j].evaluation.run.iteration_time.value() * 1.01);
      }
    }
  }
  EXPECT_GT(listed, grouped.best.size());  // this space has near-copies (qwZ / qgZ on and off)
  // Without grouping, the same plans in the same order, each on its own.
  ASSERT_GE(flat.best.size(), listed);
  for (const auto& k : flat.best) EXPECT_TRUE(k.similar.empty());
  EXPECT_EQ(flat.best[0].evaluation.run.iteration_time.value(), grouped.best[0].evaluation.run.iteration_time.value());
}

TEST(PlanSearch, TheWinnerBeatsEveryPlainZeroStageThatFits) {
  const auto s = base();
  const auto r = search(s, default_space(s), 1, 2);
  const double best = r.best.at(0).evaluation.run.iteration_time.value();
  for (int stage = 0; stage <= 3; ++stage) {
    for (int mb : {1, 2, 4}) {
      scenario::Scenario z = base();
      z.plan.zero_stage = stage;
      z.plan.micro_batch = mb;
      z.plan.partition = core::PartitionSpec{stage >= 3 ? 16 : 1, stage >= 2 ? 16 : 1, stage >= 1 ? 16 : 1, 0};
      const auto ev = scenario::evaluate(z);
      if (ev.memory.fits) {
        EXPECT_LE(best, ev.run.iteration_time.value() * (1 + 1e-12)) << "stage " << stage;
      }
    }
  }
}

// A plan counts as fitting when it leaves the margin free (2 GiB unless the scenario or --memory-margin says):
// a wider margin drops the plans nearest the cliff and keeps the rest in the same order.
TEST(PlanSearch, PlansMustLeaveTheMemoryMarginFree) {
  const auto s = base();
  auto sp = default_space(s);
  EXPECT_DOUBLE_EQ(sp.memory_margin.value(), 2.0 * core::kGiB);
  EXPECT_DOUBLE_EQ(default_space(base("search: {memory_margin: 5GiB}\n")).memory_margin.value(), 5.0 * core::kGiB);
  sp.memory_margin = core::Bytes(0.0);
  const auto none = search(s, sp, 5, 1);
  sp.memory_margin = core::Bytes(40.0 * core::kGiB);
  const auto wide = search(s, sp, 5, 1);
  EXPECT_EQ(none.feasible + none.infeasible, wide.feasible + wide.infeasible);
  EXPECT_LT(wide.feasible, none.feasible);
  ASSERT_FALSE(wide.best.empty());
  for (const auto& k : wide.best) EXPECT_GE(k.evaluation.memory.headroom().value(), 40.0 * core::kGiB);
  EXPECT_GE(wide.best[0].evaluation.run.iteration_time.value(), none.best[0].evaluation.run.iteration_time.value());
  EXPECT_THROW((void)scenario::parse_scenarios(std::string("model: llama2-7b\ncluster: dgx-h100\nsearch: {memory_margin: 5}\n"), "s.yaml"),
               core::ConfigError);
}

// The search stays inside what the scenario's framework has: FSDP's sharding strategies, Megatron's DDP and
// distributed optimizer.
TEST(PlanSearch, OnlyLayoutsTheFrameworkHas) {
  for (const char* fw : {"fsdp", "megatron"}) {
    auto s = base();
    s.plan.framework = *core::parse_framework(fw);
    const auto r = search(s, default_space(s), 1000, 1);
    ASSERT_FALSE(r.best.empty()) << fw;
    for (const auto& c : r.best) {
      EXPECT_FALSE(c.scenario.plan.framework_refusal().has_value()) << fw;
      EXPECT_EQ(c.scenario.plan.framework, s.plan.framework);
    }
    EXPECT_LT(r.best.size(), search(base(), default_space(s), 1000, 1).best.size()) << fw;
  }
}

// torchtitan's op-level recomputation is an FSDP2 recipe: the search tries it where the framework is FSDP only.
TEST(PlanSearch, OpLevelRecomputationIsSearchedUnderFsdp) {
  auto s = base();
  const auto has_op = [](const SearchSpace& sp) {
    return std::find(sp.recompute.begin(), sp.recompute.end(), core::Recompute::kSelectiveOp) != sp.recompute.end();
  };
  EXPECT_FALSE(has_op(default_space(s)));
  s.plan.framework = core::Framework::kFsdp;
  EXPECT_TRUE(has_op(default_space(s)));
  const auto r = search(s, default_space(s), 1000, 1);
  EXPECT_TRUE(std::any_of(r.best.begin(), r.best.end(), [](const auto& c) {
    return c.scenario.plan.recompute == core::Recompute::kSelectiveOp;
  }));
}

TEST(PlanSearch, SameAnswerWhateverTheThreadCount) {
  const auto s = base();
  const auto a = search(s, default_space(s), 10, 1);
  const auto b = search(s, default_space(s), 10, 3);
  ASSERT_EQ(a.best.size(), b.best.size());
  for (std::size_t i = 0; i < a.best.size(); ++i) {
    EXPECT_EQ(a.best[i].evaluation.strategy, b.best[i].evaluation.strategy);
    EXPECT_EQ(a.best[i].scenario.plan.tp, b.best[i].scenario.plan.tp);
    EXPECT_EQ(a.best[i].evaluation.run.iteration_time.value(), b.best[i].evaluation.run.iteration_time.value());
  }
  EXPECT_EQ(render_search(s, a).substr(0, 200), render_search(s, b).substr(0, 200));
}

TEST(PlanSearch, ModelsTooBigForTheMachineAreDroppedNotCrashed) {
  const std::string yaml = R"(model: gpt3-175b
cluster: {preset: dgx-h100, nodes: 1}
plan: {global_batch: 8}
)";
  const auto s = scenario::parse_scenarios(yaml, "s.yaml").at(0);
  const auto r = search(s, default_space(s), 5, 1);
  EXPECT_GT(r.infeasible, 0u);
  for (const auto& k : r.best) EXPECT_TRUE(k.evaluation.memory.fits);
  EXPECT_NE(render_search(s, r).find("plans:"), std::string::npos);
}

// A machine of 3 x 2^k devices (BLOOM's 48 nodes of 8) splits a power-of-two global batch only with a pipeline
// depth that takes the factor 3; DeepSpeed lets stages differ by a layer (70 layers on 12 stages), Megatron-LM
// does not. Where nothing of the space splits the job, the report says so instead of blaming memory.
TEST(PlanSearch, PipelineDepthsTakeTheMachinesFactorsAndStagesMayBeUneven) {
  const std::string yaml = R"(model: {preset: llama2-7b, layers: 70}
cluster: {preset: dgx-a100, nodes: 48}
plan: {tp: 8, pp: 12, global_batch: 2048, micro_batch: 1}
search: {tp: [8], micro_batch: [1], recompute: [full]}
)";
  const auto s = scenario::parse_scenarios(yaml, "s.yaml").at(0);
  const auto space = default_space(s);
  EXPECT_NE(std::find(space.pp.begin(), space.pp.end(), 12), space.pp.end());
  const auto r = search(s, space, 5, 1);
  ASSERT_FALSE(r.best.empty());
  for (const auto& b : r.best) {
    const auto& p = b.scenario.plan;
    EXPECT_EQ(2048 % (p.micro_batch * 48 * 8 / (p.tp * p.pp)), 0) << p.pp;
    EXPECT_EQ(p.pp % 3, 0) << p.pp;  // 384 / (8 x pp) divides 2048 only when pp takes the 3
  }
  EXPECT_TRUE(pipeline_depth_fits(s.model, s.plan, 12));
  auto megatron = s;
  megatron.plan.framework = core::Framework::kMegatron;
  EXPECT_FALSE(pipeline_depth_fits(megatron.model, megatron.plan, 12));  // 70 layers on 12 stages
  const auto none = search(megatron, default_space(megatron), 5, 1);
  EXPECT_EQ(none.feasible + none.infeasible, 0u);
  EXPECT_NE(render_search(megatron, none).find("no plan of the search space splits the job"), std::string::npos);
}

TEST(PlanSearch, SearchSectionNarrowsTheSpace) {
  const auto s = base("search: {tp: [2], pp: [1], micro_batch: [2], recompute: [full], shard_factors: [1, all], zero_plus_plus: false}\n");
  const auto sp = default_space(s);
  EXPECT_EQ(sp.tp, std::vector<int>{2});
  EXPECT_FALSE(sp.zero_plus_plus);
  const auto r = search(s, sp, 100, 1);
  // shard factors {1, 8} over P, G, OS with OS a multiple of G: 2 x 3 = 6 plans.
  EXPECT_EQ(r.feasible + r.infeasible, 6u);
  for (const auto& k : r.best) EXPECT_EQ(k.scenario.plan.tp, 2);
}

}  // namespace
}  // namespace shardsim::search

namespace shardsim::search {
namespace {

// LLaMA-2-70B on one DGX H100: 16 bytes x 69B / 8 GPUs does not fit in 80 GB whatever the sharding; moving the
// optimizer to the 2 TB host does.
TEST(PlanSearch, OffloadIsWhatMakesABigModelFitOnOneNode) {
  const std::string yaml = R"(model: llama2-70b
cluster: {preset: dgx-h100, nodes: 1}
plan: {global_batch: 8, flash_attention: true}
search: {pp: [1], micro_batch: [1], recompute: [full]}
)";
  auto s = scenario::parse_scenarios(yaml, "s.yaml").at(0);
  const auto without = search(s, default_space(s), 3, 1);
  EXPECT_TRUE(without.best.empty());
  s.search.offload = true;
  const auto with = search(s, default_space(s), 3, 1);
  ASSERT_FALSE(with.best.empty());
  EXPECT_TRUE(with.best[0].scenario.plan.offload.optimizer);
  EXPECT_GT(with.best[0].evaluation.memory.host_bytes, 0.0);
}

// Where the node's host memory cannot hold the optimizer either but its NVMe can, ZeRO-Infinity's swap files are
// what makes the model fit; without drives the search offers no NVMe plan.
TEST(PlanSearch, NvmeIsWhatMakesItFitWhereHostMemoryIsShort) {
  const std::string yaml = R"(model: llama2-70b
cluster: {preset: dgx-h100, nodes: 1, host: {memory: 256GB, nvme_read: 25GB/s, nvme_write: 12GB/s, nvme_capacity: 15TB}}
plan: {global_batch: 8, flash_attention: true}
search: {pp: [1], micro_batch: [1], recompute: [full], offload: true}
)";
  const auto s = scenario::parse_scenarios(yaml, "s.yaml").at(0);
  const auto r = search(s, default_space(s), 3, 1);
  ASSERT_FALSE(r.best.empty());
  EXPECT_TRUE(r.best[0].scenario.plan.offload.optimizer_nvme);
  EXPECT_GT(r.best[0].evaluation.memory.nvme_bytes, 0.0);
  EXPECT_LE(r.best[0].evaluation.memory.host_bytes, r.best[0].evaluation.memory.host_capacity);
  auto dry = s;
  dry.cluster.host.nvme_read = core::BytesPerSec(0.0);
  dry.cluster.host.nvme_write = core::BytesPerSec(0.0);
  EXPECT_TRUE(search(dry, default_space(dry), 3, 1).best.empty());
}

}  // namespace
}  // namespace shardsim::search
