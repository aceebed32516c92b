#include "strategies/deepspeed_prefetch.hpp"

#include <gtest/gtest.h>

#include "sim/core/model_spec.hpp"
#include "strategies/model_costs.hpp"

namespace shardsim::strategies {
namespace {

core::PlanSpec zero3() {
  core::PlanSpec p;
  p.zero_stage = 3;
  p.dp = 64;
  p.framework = core::Framework::kDeepSpeed;
  return p;
}

ModelCosts costs_of(const char* preset, const core::PlanSpec& p) {
  return compute_model_costs(*core::find_model_preset(preset), p);
}

// Elements of the unit's parameters above the persistence threshold (what the forward must gather).
double gatherable(const ModelCosts& c, std::size_t u, double threshold) {
  double n = 0.0;
  for (const ModuleParams& m : c.modules_of(u)) {
    for (int j = 0; j < m.count; ++j) {
      const double t = m.tensors[static_cast<std::size_t>(j)];
      n += t > threshold ? t : 0.0;
    }
  }
  return n;
}

// The submodules are the model's: each block's parameters add up to the block's (norms included).
TEST(DeepSpeedPrefetch, SubmodulesHoldTheUnitsParameters) {
  for (const char* preset : {"llama-13b", "gpt-neox-20b", "gpt3-175b"}) {
    const ModelCosts c = costs_of(preset, zero3());
    for (std::size_t u = 0; u < c.units.size(); ++u) {
      double n = 0.0;
      for (const ModuleParams& m : c.modules_of(u)) n += m.tensors[0] + (m.count > 1 ? m.tensors[1] : 0.0);
      EXPECT_NEAR(n / c.units[u].params, 1.0, 1e-3) << preset << " unit " << u;
    }
    EXPECT_EQ(static_cast<int>(c.block_modules.size()), c.units[1].modules) << preset;
  }
}

// The forward gathers every parameter above the persistence threshold exactly once; the backward at most as much.
TEST(DeepSpeedPrefetch, TheForwardGathersEachParameterOnce) {
  const core::PlanSpec p = zero3();
  const ModelCosts c = costs_of("llama-13b", p);
  ASSERT_EQ(c.fetch.units.size(), c.units.size());
  const double threshold = p.persistence_threshold.value() / 2.0;
  for (std::size_t u = 0; u < c.units.size(); ++u) {
    EXPECT_DOUBLE_EQ(c.fetch.units[u][0].elements, gatherable(c, u, threshold)) << u;
    EXPECT_LE(c.fetch.units[u][1].elements, c.fetch.units[u][0].elements) << u;
    EXPECT_GE(c.fetch.units[u][0].gathers, 1) << u;
  }
}

// The persistent parameters are those at or under the threshold, until their total would pass the model's cap
// (stage3_model_persistence_threshold): after that the norms are fetched like the rest. LLaMA-13B has 2 norms of
// 5,120 per block and a final one: 81 in all.
TEST(DeepSpeedPrefetch, TheModelsCapLimitsThePersistentParameters) {
  core::PlanSpec p = zero3();
  const ModelCosts all = costs_of("llama-13b", p);
  EXPECT_EQ(all.fetch.persistent_tensors, 2 * 40 + 1);
  EXPECT_DOUBLE_EQ(all.fetch.persistent_elements, 81.0 * 5120.0);
  p.model_persistence_threshold = core::Bytes(10.5 * 5120.0 * 2.0);  // room for ten norms
  const ModelCosts capped = costs_of("llama-13b", p);
  EXPECT_EQ(capped.fetch.persistent_tensors, 10);
  EXPECT_DOUBLE_EQ(capped.fetch.persistent_elements, 10.0 * 5120.0);
  // The others are gathered in the passes: 71 norms more in the forward.
  double forward_all = 0.0, forward_capped = 0.0;
  for (std::size_t u = 0; u < all.units.size(); ++u) {
    forward_all += all.fetch.units[u][0].elements;
    forward_capped += capped.fetch.units[u][0].elements;
  }
  EXPECT_DOUBLE_EQ(forward_capped - forward_all, 71.0 * 5120.0);
}

// With the prefetch bucket at zero each submodule gathers its own parameters when it runs: one collective per
// submodule above the threshold, one parameter each (nothing to split), nothing ahead.
TEST(DeepSpeedPrefetch, WithoutPrefetchingEachSubmoduleGathersItself) {
  core::PlanSpec p = zero3();
  p.prefetch_bucket = core::Bytes(0.0);
  const ModelCosts c = costs_of("llama-13b", p);
  EXPECT_EQ(c.fetch.ahead, 0);
  for (std::size_t u = 0; u < c.units.size(); ++u) {
    EXPECT_EQ(c.fetch.units[u][0].gathers, c.units[u].gathered_modules) << u;
    EXPECT_EQ(c.fetch.units[u][0].split_params, 0) << u;
    EXPECT_EQ(c.fetch.units[u][1].split_params, 0) << u;
  }
}

// The lead grows until stage3_max_live_parameters holds it: the peak stays within one prefetch of the bound, and
// a smaller bound keeps fewer units ahead.
TEST(DeepSpeedPrefetch, TheLiveBoundHoldsThePrefetch) {
  core::PlanSpec p = zero3();
  const ModelCosts c = costs_of("llama-13b", p);
  const double live = p.max_live_parameters.value() / 2.0;
  const double bucket = p.prefetch_bucket.value() / 2.0;
  EXPECT_GE(c.fetch.peak_live_elements, live);
  EXPECT_LE(c.fetch.peak_live_elements, live + bucket + 32000.0 * 5120.0);  // at most a bucket and a tensor over
  EXPECT_GE(c.fetch.ahead, 2);  // 1e9 elements hold three of LLaMA-13B's 0.32e9-element blocks
  p.max_live_parameters = core::Bytes(2.0 * 4e8);
  EXPECT_LT(costs_of("llama-13b", p).fetch.ahead, c.fetch.ahead);
  // No live budget, no prefetch: each submodule gathers its own parameters when it runs.
  p.max_live_parameters = core::Bytes(0.0);
  EXPECT_EQ(costs_of("llama-13b", p).fetch.ahead, 0);
}

// What the trace uses again within stage3_max_reuse_distance stays gathered: a model smaller than half the distance
// is gathered once per step. What the prefetcher has already passed a later use of stays too, whatever the distance:
// at the end of the forward, the blocks the backward starts with.
TEST(DeepSpeedPrefetch, TheReuseDistanceKeepsTheEndOfTheForward) {
  core::PlanSpec p = zero3();
  core::ModelSpec small = *core::find_model_preset("llama-7b");
  small.layers = 1;  // 0.46e9 elements: every use again within 1e9
  double bwd = 0.0;
  for (const auto& u : compute_model_costs(small, p).fetch.units) bwd += u[1].elements;
  EXPECT_EQ(bwd, 0.0);
  // LLaMA-13B: only the last blocks of the forward stay (their next use within 1e9 elements).
  const ModelCosts big = costs_of("llama-13b", p);
  EXPECT_DOUBLE_EQ(big.fetch.units[1][1].elements, big.fetch.units[1][0].elements);
  EXPECT_LT(big.fetch.units[40][1].elements, big.fetch.units[40][0].elements);
  p.max_reuse_distance = core::Bytes(0.0);
  double kept = 0.0, kept_without = 0.0;
  const ModelCosts without = costs_of("llama-13b", p);
  for (std::size_t u = 0; u < big.units.size(); ++u) {
    kept += big.fetch.units[u][0].elements - big.fetch.units[u][1].elements;
    kept_without += without.fetch.units[u][0].elements - without.fetch.units[u][1].elements;
  }
  EXPECT_LT(kept_without, kept);
  EXPECT_GT(kept_without, 0.0);
}

// Prefetches coalesce several parameters where they are smaller than the bucket: some gathers are split rank by
// rank, never more parameters than were gathered.
TEST(DeepSpeedPrefetch, PrefetchesOfSmallParametersAreSplit) {
  const ModelCosts c = costs_of("llama-13b", zero3());
  int split = 0, params = 0;
  for (std::size_t u = 0; u < c.units.size(); ++u) {
    for (int pass = 0; pass < 2; ++pass) split += c.fetch.units[u][static_cast<std::size_t>(pass)].split_params;
    params += 2 * c.units[u].gathered_modules;
  }
  EXPECT_GT(split, 0);
  EXPECT_LT(split, params);
}

// FSDP and DeepSpeed ZeRO-1/2 have no such coordinator.
TEST(DeepSpeedPrefetch, OnlyDeepSpeedZero3HasIt) {
  core::PlanSpec p = zero3();
  p.framework = core::Framework::kFsdp;
  EXPECT_TRUE(costs_of("llama-13b", p).fetch.units.empty());
  p = zero3();
  p.zero_stage = 2;
  EXPECT_TRUE(costs_of("llama-13b", p).fetch.units.empty());
}

}  // namespace
}  // namespace shardsim::strategies
