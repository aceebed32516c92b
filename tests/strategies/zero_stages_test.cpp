// DDP and ZeRO-1/2/3 as PartitionedStrategy lowers them (make_strategy), against the ZeRO paper and DeepSpeed.
#include "strategies/partitioned_strategy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>

#include "sim/engine/analytical_engine.hpp"
#include "strategies/lowering_common.hpp"
#include "strategies/memory_model.hpp"
#include "tests/test_clusters.hpp"

namespace shardsim::strategies {
namespace {

using graph::CollectiveOp;
using graph::Purpose;
using graph::TaskId;
using graph::TaskKind;

struct Lowered {
  core::ModelSpec model;
  core::ClusterSpec cluster;
  core::PlanSpec plan;
  ModelCosts costs;
  graph::TaskGraph g;

  Lowered(int stage, int micro_batches, int devices = 8, double bucket_bytes = 0.0) : cluster(testing::flat(devices)) {
    model = *core::find_model_preset("llama2-7b");
    model.layers = 4;
    plan.dp = devices;
    plan.micro_batch = 1;
    plan.global_batch = devices * micro_batches;
    plan.zero_stage = stage;
    if (bucket_bytes > 0.0) plan.reduce_bucket = plan.ddp_bucket = core::Bytes(bucket_bytes);
    costs = compute_model_costs(model, plan);
    PartitionedStrategy().lower(LoweringInput{model, cluster, plan, costs}, g);
  }

  // DeepSpeed ZeRO-3 without its prefetch and reuse (stage3_prefetch_bucket_size = stage3_max_reuse_distance = 0):
  // each submodule gathers its own parameters when it runs, in the forward and again in the backward, as the ZeRO
  // paper describes stage 3.
  Lowered& per_submodule() {
    plan.prefetch_bucket = plan.max_reuse_distance = core::Bytes(0.0);
    costs = compute_model_costs(model, plan);
    g = graph::TaskGraph();
    PartitionedStrategy().lower(LoweringInput{model, cluster, plan, costs}, g);
    return *this;
  }

  // Collective calls by purpose (a task may stand for several back to back: graph::Task::calls).
  std::map<Purpose, int> count_by_purpose() const {
    std::map<Purpose, int> n;
    for (const auto& t : g.tasks()) {
      if (t.kind == TaskKind::kCollective) n[t.purpose] += static_cast<int>(t.calls);
    }
    return n;
  }

  // Bytes one rank sends in the iteration (sum over levels), as the engine accounts them.
  double bytes_sent() const {
    engine::AnalyticalEngine eng(cluster, core::CollectiveAlgorithm::kRing);
    const auto r = eng.run(g);
    double sum = 0.0;
    for (double b : r.roles[0].bytes_by_level) sum += b;
    return sum;
  }
};

TEST(ZeroStages, CommunicationVolumesMatchTheZeroPaper) {
  // Sec. 7 of the ZeRO paper: stages 1 and 2 move 2 Psi like data parallelism, stage 3 moves 3 Psi (1.5x).
  const double ddp = Lowered(0, 1).bytes_sent();
  const double n = 8;
  const double psi_bytes = Lowered(0, 1).costs.params_per_rank * 2.0;
  EXPECT_NEAR(ddp / (2.0 * (n - 1) / n * psi_bytes), 1.0, 1e-9);
  auto reduce_scattered = [](int stage) {
    Lowered s(stage, 1);
    s.plan.bucket_all_reduce = false;
    PartitionedStrategy().lower(LoweringInput{s.model, s.cluster, s.plan, s.costs}, s.g);
    return s.bytes_sent();
  };
  EXPECT_NEAR(reduce_scattered(1) / ddp, 1.0, 1e-6);
  EXPECT_NEAR(reduce_scattered(2) / ddp, 1.0, 1e-6);
  // (DeepSpeed's stage 3 also gathers its persistent parameters, the norms, after the step: 9 x h of 1.07e9.)
  const double persistent = 9.0 * Lowered(0, 1).model.hidden * 2.0 * (n - 1) / n;
  EXPECT_NEAR((Lowered(3, 1).per_submodule().bytes_sent() - persistent) / ddp, 1.5, 1e-6);
  // DeepSpeed's defaults keep what the trace uses again within 1e9 elements gathered from the forward into the
  // backward: of this 1.07e9-parameter model, most.
  EXPECT_LT(Lowered(3, 1).bytes_sent() / ddp, 1.25);
  // DeepSpeed >= 0.12.4 all-reduces each ZeRO-1/2 bucket (use_multi_rank_bucket_allreduce) and then gathers the
  // updated parameters: 2 Psi + Psi, as much as stage 3.
  EXPECT_NEAR(Lowered(1, 1).bytes_sent() / ddp, 1.5, 1e-6);
  EXPECT_NEAR(Lowered(2, 1).bytes_sent() / ddp, 1.5, 1e-6);
}

TEST(ZeroStages, OverlapDefaultsAsDeepSpeed) {
  // deepspeed@v0.14.0 runtime/zero/config.py: overlap_comm defaults to true for stage 3 only.
  for (int stage = 0; stage <= 3; ++stage) {
    core::PlanSpec p;
    p.zero_stage = stage;
    EXPECT_EQ(p.overlaps_comm(), stage == 0 || stage == 3) << "stage " << stage;
    p.overlap_comm = true;
    EXPECT_TRUE(p.overlaps_comm());
  }
}

// InternEvo's overlap_sync_grad off: no hook reduces a bucket during the pass, so every gradient reduction starts once
// the last backward is done, and the same buckets are reduced (as many calls, as many bytes); on (the default) the
// first buckets are reduced beside the backward.
TEST(ZeroStages, WithoutReductionHooksTheStepReducesAfterThePass) {
  auto run = [](bool hooked) {
    Lowered s(2, 1, 8, 64e6);
    s.plan.overlap_comm = true;
    s.plan.overlap_sync_grad = hooked;
    s.g = graph::TaskGraph();
    PartitionedStrategy().lower(LoweringInput{s.model, s.cluster, s.plan, s.costs}, s.g);
    engine::AnalyticalEngine eng(s.cluster, core::CollectiveAlgorithm::kRing);
    const auto r = eng.run(s.g);
    double last_backward = 0.0, first_reduction = 1e30;
    int calls = 0;
    for (std::size_t t = 0; t < s.g.tasks().size(); ++t) {
      const auto& task = s.g.tasks()[t];
      if (task.kind == TaskKind::kCompute && task.phase == graph::Phase::kBackward) {
        last_backward = std::max(last_backward, r.timings[t].end_s);
      }
      if (task.kind == TaskKind::kCollective && task.purpose == Purpose::kGradReduce) {
        first_reduction = std::min(first_reduction, r.timings[t].start_s);
        calls += static_cast<int>(task.calls);
      }
    }
    return std::tuple{first_reduction - last_backward, calls, s.bytes_sent()};
  };
  const auto [hooked_lead, hooked_calls, hooked_bytes] = run(true);
  const auto [after_lead, after_calls, after_bytes] = run(false);
  EXPECT_LT(hooked_lead, 0.0);  // reductions start beside the backward
  EXPECT_GE(after_lead, 0.0);   // none before it is over
  EXPECT_GT(hooked_calls, 1);
  EXPECT_EQ(after_calls, hooked_calls);
  EXPECT_NEAR(after_bytes / hooked_bytes, 1.0, 1e-9);
}

TEST(ZeroStages, GradientAccumulationReducesWhereDeepSpeedDoes) {
  const int micros = 4;
  // DeepSpeed fetches each submodule's parameters above its persistence threshold (1e5 elements): LLaMA's
  // embedding, per block q, k, v, o, gate, up and down (not the two norms), then the output projection (not the
  // final norm).
  const int modules = 1 + 4 * 7 + 1;
  const double one_bucket = 1e12;  // every gradient of a micro-batch fits one bucket
  auto ddp = Lowered(0, micros, 8, one_bucket).count_by_purpose();
  auto z1 = Lowered(1, micros, 8, one_bucket).count_by_purpose();
  auto z2 = Lowered(2, micros, 8, one_bucket).count_by_purpose();
  auto z3 = Lowered(3, micros, 8, one_bucket).per_submodule().count_by_purpose();
  // Stage 0 and 1 reduce only in the last micro-batch; stage 2 and 3 in every one.
  EXPECT_EQ(ddp[Purpose::kGradReduce], 1);
  EXPECT_EQ(z1[Purpose::kGradReduce], 1);
  EXPECT_EQ(z2[Purpose::kGradReduce], micros);
  EXPECT_EQ(z3[Purpose::kGradReduce], micros);
  // Stage 3 gathers every submodule before forward and before backward, every micro-batch.
  EXPECT_EQ(z3[Purpose::kParamGatherFwd], micros * modules);
  EXPECT_EQ(z3[Purpose::kParamGatherBwd], micros * modules);
  EXPECT_EQ(z1[Purpose::kParamGatherFwd], 0);
  // Stages 1 and 2 gather the updated shards once; stage 3 only its persistent parameters (the two norms of each
  // block and the final norm), one all-gather each after the step (stage3.py _post_step).
  EXPECT_GE(z1[Purpose::kParamUpdateGather], 1);
  EXPECT_EQ(z3[Purpose::kParamUpdateGather], 4 * 2 + 1);
  EXPECT_EQ(ddp[Purpose::kGradNorm], 0);
  EXPECT_EQ(z3[Purpose::kGradNorm], 1);
}

TEST(ZeroStages, BucketsSplitGradientsBySize) {
  // 4 LLaMA-7B blocks (q, k, v, o: 16.8M elements each; gate, up, down: 45.1M; two norms of 4,096), embedding and
  // head 131.1M. DeepSpeed closes a 500 MB bucket (250M bf16 elements) before the tensor that would overflow it, in
  // the backward's order: the head with block 4's down and up (221.3M), then three buckets of 11-12 tensors across
  // the blocks (247.5M, 235.9M, 235.9M), then the embedding alone (131.1M): 5 per reduction (one unit a bucket, as
  // buckets were filled before, gave 3).
  EXPECT_EQ(Lowered(2, 1, 8, 500e6).count_by_purpose()[Purpose::kGradReduce], 5);
  EXPECT_EQ(Lowered(2, 2, 8, 500e6).count_by_purpose()[Purpose::kGradReduce], 10);
}

// DeepSpeed's ZeRO optimizers fill reduce_bucket_size buckets on one rank as on many; only an unpartitioned plan
// (zero_stage 0) reduces in DDP's 25 MB buckets.
TEST(ZeroStages, OneRanksZeroOptimizerFillsDeepSpeedsBuckets) {
  core::PlanSpec p;
  p.framework = core::Framework::kDeepSpeed;
  p.dp = 1;
  p.reduce_bucket = core::Bytes(1e9);
  EXPECT_EQ(gradient_bucket_bytes(p, 2.0, true), p.ddp_bucket.value());
  for (int stage : {1, 2, 3}) {
    p.zero_stage = stage;
    EXPECT_EQ(gradient_bucket_bytes(p, 2.0, true), 1e9) << "zero_stage " << stage;
  }
}

TEST(ZeroStages, DependenciesPointBackwardsAndMemoryEventsBalance) {
  for (int stage = 0; stage <= 3; ++stage) {
    Lowered s(stage, 3);
    for (graph::TaskId t = 0; t < s.g.size(); ++t) {
      for (graph::TaskId d : s.g.deps(t)) EXPECT_LT(d, t);
    }
    double net = 0.0;
    for (const auto& e : s.g.mem_events()) net += e.bytes;
    EXPECT_NEAR(net, 0.0, 1e-3) << "stage " << stage;
  }
}

TEST(ZeroStages, TimelinePeakStaysWithinTheStaticEstimate) {
  for (int stage = 0; stage <= 3; ++stage) {
    for (auto rc : {core::Recompute::kNone, core::Recompute::kSelective, core::Recompute::kFull}) {
      Lowered s(stage, 2);
      s.plan.recompute = rc;
      s.costs = compute_model_costs(s.model, s.plan);
      PartitionedStrategy().lower(LoweringInput{s.model, s.cluster, s.plan, s.costs}, s.g);
      engine::AnalyticalEngine eng(s.cluster, core::CollectiveAlgorithm::kAuto);
      const auto r = eng.run(s.g);
      const auto mb = estimate_memory(s.model, s.cluster, s.plan, s.costs);
      EXPECT_LE(r.roles[0].peak_memory_bytes, mb.total.value()) << "stage " << stage;
      EXPECT_GT(r.roles[0].peak_memory_bytes, s.g.baseline(0)) << "stage " << stage;
    }
  }
  // FSDP: two units gathered, a unit's gradients per reduce-scatter.
  Lowered f(3, 2);
  f.plan.framework = core::Framework::kFsdp;
  PartitionedStrategy().lower(LoweringInput{f.model, f.cluster, f.plan, f.costs}, f.g);
  engine::AnalyticalEngine eng(f.cluster, core::CollectiveAlgorithm::kAuto);
  const auto mb = estimate_memory(f.model, f.cluster, f.plan, f.costs);
  EXPECT_LE(eng.run(f.g).roles[0].peak_memory_bytes, mb.total.value());
  EXPECT_LT(mb.total.value(), estimate_memory(f.model, f.cluster, Lowered(3, 2).plan, f.costs).total.value());
}

TEST(ZeroStages, OverlapNeverHurtsAndOffPutsEverythingOnTheComputeStream) {
  for (int stage = 0; stage <= 3; ++stage) {
    // Without the framework's host thread (below): the GPU's streams alone.
    auto no_host = [](core::ClusterSpec& c) {
      c.host.fetch_hook = c.host.tensor_hook = c.host.module_hook = c.host.block_forward = c.host.block_backward =
          c.host.rank_slice = c.host.gather_split = c.host.zero_step = core::Seconds(0.0);
    };
    Lowered on(stage, 2);
    on.plan.overlap_comm = true;
    no_host(on.cluster);
    PartitionedStrategy().lower(LoweringInput{on.model, on.cluster, on.plan, on.costs}, on.g);
    Lowered off(stage, 2);
    off.plan.overlap_comm = false;
    no_host(off.cluster);
    PartitionedStrategy().lower(LoweringInput{off.model, off.cluster, off.plan, off.costs}, off.g);
    for (const auto& t : off.g.tasks()) EXPECT_EQ(t.stream, graph::Stream::kCompute);
    engine::AnalyticalEngine e1(on.cluster, core::CollectiveAlgorithm::kAuto);
    engine::AnalyticalEngine e2(off.cluster, core::CollectiveAlgorithm::kAuto);
    const double t_on = e1.run(on.g).iteration_time.value();
    const auto r_off = e2.run(off.g);
    EXPECT_LE(t_on, r_off.iteration_time.value() + 1e-12) << "stage " << stage;
    EXPECT_NEAR(r_off.roles[0].hidden_comm().value(), 0.0, 1e-12);
  }
}

// The framework's host thread, one task per unit and pass: each block's eager code, and with ZeRO-3 the fetch and
// release hooks (submodules x DeepSpeed's time per submodule + tensors x its time per tensor); each unit's compute
// waits for its task, and each gather for the task that issues it. DeepSpeed also slices every gradient per rank
// before each bucket's reduce-scatter (one more task per bucket).
TEST(ZeroStages, FrameworkHooksRunOnTheHostAheadOfTheComputeTheyIssue) {
  Lowered z3(3, 1);
  z3.per_submodule();  // no prefetch of several parameters: nothing to split
  const auto& host = z3.cluster.host;
  ASSERT_GT(host.module_hook.value(), 0.0);
  int hooks = 0;
  double hook_time = 0.0;
  for (graph::TaskId t = 0; t < z3.g.size(); ++t) {
    const auto& task = z3.g.tasks()[t];
    if (task.purpose != Purpose::kFramework) continue;
    ++hooks;
    hook_time += task.time_s;
    EXPECT_EQ(task.kind, TaskKind::kHostCompute);
    EXPECT_EQ(task.stream, graph::Stream::kHostCpu);
  }
  // Embedding, 4 blocks of 9 submodules, final norm and output projection; LLaMA: one tensor each.
  const int modules = 1 + 4 * 9 + 2;
  const int blocks = 4;
  const double eager = blocks * (host.block_forward + host.block_backward).value();
  const int buckets = z3.count_by_purpose()[Purpose::kGradReduce];
  // ... and DeepSpeed's step() once, before the optimizer's kernels.
  EXPECT_EQ(hooks, 2 * static_cast<int>(z3.costs.units.size()) + buckets + 1);
  EXPECT_NEAR(hook_time,
              2.0 * host.deepspeed_hook_time(modules, modules).value() + eager + 8.0 * modules * host.rank_slice.value() +
                  host.zero_step.value(),
              1e-12);
  // Every forward and backward compute waits on a hook.
  for (graph::TaskId t = 0; t < z3.g.size(); ++t) {
    const auto& task = z3.g.tasks()[t];
    if (task.kind != TaskKind::kCompute || task.purpose != Purpose::kCompute || task.phase == graph::Phase::kOptimizer) {
      continue;
    }
    bool waits = false;
    for (graph::TaskId d : z3.g.deps(t)) waits |= z3.g.tasks()[d].purpose == Purpose::kFramework;
    EXPECT_TRUE(waits) << z3.g.label(t);
  }
  // Hooks slower than the GPU work set the pace.
  Lowered slow(3, 1);
  slow.cluster.host.module_hook = core::Seconds(100.0 * host.module_hook.value());
  slow.per_submodule();
  engine::AnalyticalEngine eng(slow.cluster, core::CollectiveAlgorithm::kAuto);
  EXPECT_GE(eng.run(slow.g).iteration_time.value(), 2.0 * modules * slow.cluster.host.module_hook.value());
  // Without sharded parameters the thread runs the blocks' eager code and, for ZeRO-1/2, DeepSpeed's visit of
  // every gradient in backward (a tensor hook's time each) and its step().
  for (int stage = 0; stage <= 2; ++stage) {
    const Lowered s(stage, 1);
    double t = 0.0;
    for (const auto& task : s.g.tasks()) {
      if (task.purpose == Purpose::kFramework) t += task.time_s;
    }
    EXPECT_NEAR(t, eager + (stage > 0 ? modules * host.tensor_hook.value() + host.zero_step.value() : 0.0), 1e-12)
        << "stage " << stage;
  }
}

// DeepSpeed ZeRO's step streams its flat partitions (Adam and the passes around it) at the device's streaming rate,
// after step()'s host time, which waits for the gradients (it reads their norm back); the plain step keeps the
// memory-bound rate and no host time.
TEST(ZeroStages, DeepSpeedsStepStreamsItsPartitionsAfterItsHostTime) {
  for (int stage = 1; stage <= 3; ++stage) {
    const Lowered z(stage, 1);
    const auto& d = z.cluster.device;
    std::optional<graph::TaskId> opt;
    for (graph::TaskId t = 0; t < z.g.size(); ++t) {
      if (z.g.tasks()[t].phase == graph::Phase::kOptimizer && z.g.tasks()[t].kind == TaskKind::kCompute) opt = t;
    }
    ASSERT_TRUE(opt) << "stage " << stage;
    const auto& task = z.g.tasks()[*opt];
    EXPECT_NEAR(task.time_s, task.bytes / (d.hbm_bandwidth.value() * d.stream_efficiency_in_use()), 1e-15);
    const double shard = z.costs.params_per_rank / z.plan.shards().optimizer;
    EXPECT_NEAR(task.bytes, (optimizer_step_bytes(z.model, shard) + deepspeed_step_bytes(z.model, shard)).value(), 1e-3);
    bool after_host = false;
    for (graph::TaskId dep : z.g.deps(*opt)) {
      const auto& h = z.g.tasks()[dep];
      after_host |= h.kind == TaskKind::kHostCompute && h.phase == graph::Phase::kOptimizer &&
                    h.time_s == z.cluster.host.zero_step.value();
    }
    EXPECT_TRUE(after_host) << "stage " << stage;
  }
  const Lowered plain(0, 1);
  for (const auto& task : plain.g.tasks()) {
    if (task.phase != graph::Phase::kOptimizer) continue;
    EXPECT_NE(task.kind, TaskKind::kHostCompute);
    if (task.kind == TaskKind::kCompute) {
      EXPECT_LT(task.time_s, 0.0);  // bytes at the memory-bound rate
    }
  }
}

// DeepSpeed ZeRO-3 keeps its persistent parameters (at or under stage3_param_persistence_threshold) gathered, so the
// step's end gathers each of them again from the updated partitions (stage3.py _post_step ->
// _allgather_params_coalesced: one all_gather_into_tensor per parameter on its partition group), one after another
// (one task of that many calls, after the step); on one rank there is nothing to gather.
TEST(ZeroStages, DeepSpeedRegathersItsPersistentParametersAfterTheStep) {
  const Lowered z3(3, 1, 8);
  std::optional<TaskId> opt;
  std::vector<TaskId> gathers;
  for (TaskId t = 0; t < z3.g.size(); ++t) {
    const auto& task = z3.g.tasks()[t];
    if (task.phase == graph::Phase::kOptimizer && task.kind == TaskKind::kCompute) opt = t;
    if (task.purpose == Purpose::kParamUpdateGather) gathers.push_back(t);
  }
  ASSERT_TRUE(opt);
  ASSERT_EQ(gathers.size(), 1u);
  const auto& task = z3.g.tasks()[gathers[0]];
  EXPECT_EQ(task.op, CollectiveOp::kAllGather);
  EXPECT_EQ(task.calls, 4u * 2u + 1u);  // two RMSNorms per block and the final one
  EXPECT_NEAR(task.bytes, 9.0 * z3.model.hidden * 2.0, 1e-9);  // bf16 norm scales, gathered whole
  const auto deps = z3.g.deps(gathers[0]);
  ASSERT_EQ(deps.size(), 1u);
  EXPECT_EQ(deps[0], *opt);
  const Lowered one(3, 1, 1);
  EXPECT_EQ(one.count_by_purpose()[Purpose::kParamUpdateGather], 0);
}

// DeepSpeed ZeRO-3's host thread keeps at most two bucket reductions and two fetches in flight: the host's work
// for a bucket waits for the reduction three buckets back, and a unit's hooks for the unit holding the fetch
// three fetches back (stage3.py max_param_reduce_events, the coordinator's __max_ongoing_fetch_events); with
// collectives far slower than the host, the iteration is no shorter than the host's work plus that wait.
TEST(ZeroStages, DeepSpeedKeepsTwoReductionsAndTwoFetchesInFlight) {
  Lowered z3(3, 1, 8, 20e6);  // small buckets: several per backward
  z3.per_submodule();
  std::vector<TaskId> reduce_ends;  // each bucket's reduce-scatter, in order
  int host_waits_on_reduce = 0, host_waits_on_fetch = 0;
  for (TaskId id = 0; id < z3.g.size(); ++id) {
    const auto& task = z3.g.tasks()[id];
    if (task.kind == TaskKind::kCollective && task.purpose == Purpose::kGradReduce) reduce_ends.push_back(id);
    if (task.purpose != Purpose::kFramework) continue;
    for (TaskId d : z3.g.deps(id)) {
      const auto& dep = z3.g.tasks()[d];
      if (dep.purpose == Purpose::kGradReduce) {
        ++host_waits_on_reduce;
        // the bucket three back: two reductions were emitted after it
        ASSERT_GE(reduce_ends.size(), 3u);
        EXPECT_EQ(d, reduce_ends[reduce_ends.size() - 3]) << z3.g.label(id);
      }
      if (dep.purpose == Purpose::kParamGatherFwd || dep.purpose == Purpose::kParamGatherBwd) ++host_waits_on_fetch;
    }
  }
  ASSERT_GE(reduce_ends.size(), 4u);
  EXPECT_EQ(host_waits_on_reduce, static_cast<int>(reduce_ends.size()) - 3);  // all but the first three
  // Units of 7 fetches: every unit after the first gathering one waits, in both passes.
  EXPECT_GE(host_waits_on_fetch, 2 * 4);
  // FSDP has no such bound.
  Lowered fsdp(3, 1, 8, 20e6);
  fsdp.plan.framework = core::Framework::kFsdp;
  fsdp.g = graph::TaskGraph();
  PartitionedStrategy().lower(LoweringInput{fsdp.model, fsdp.cluster, fsdp.plan, fsdp.costs}, fsdp.g);
  for (TaskId id = 0; id < fsdp.g.size(); ++id) {
    if (fsdp.g.tasks()[id].purpose != Purpose::kFramework) continue;
    for (TaskId d : fsdp.g.deps(id)) EXPECT_EQ(fsdp.g.tasks()[d].kind, TaskKind::kHostCompute) << fsdp.g.label(id);
  }
}

// DeepSpeed 0.14's ZeRO-3 slices each gradient once per rank of the group before a bucket's reduce-scatter
// (reduce_scatter_coalesced), on the host: a cost that grows with the group, where FSDP's chunk_cat does not; and
// tensors at or under its persistence threshold are never gathered (a threshold of 0 gathers the norms too).
TEST(ZeroStages, DeepSpeedSlicesGradientsPerRankAndKeepsSmallTensorsGathered) {
  const int tensors = 1 + 4 * 9 + 2;
  for (int devices : {8, 64}) {
    Lowered z3(3, 1, devices);
    // Each reduce-scatter's layout kernel (before the in-place division, the kernel the collective waits for) waits
    // for the host's slicing of its bucket.
    double sliced = 0.0;
    int reductions = 0;
    for (TaskId id = 0; id < z3.g.size(); ++id) {
      const auto& task = z3.g.tasks()[id];
      if (task.kind != TaskKind::kCollective || task.purpose != Purpose::kGradReduce) continue;
      ++reductions;
      const TaskId divide = z3.g.deps(id)[0];
      ASSERT_EQ(z3.g.tasks()[divide].kind, TaskKind::kCompute) << z3.g.label(divide);
      const TaskId layout = z3.g.deps(divide)[0];
      int on_host = 0;
      for (TaskId d : z3.g.deps(layout)) {
        if (z3.g.tasks()[d].purpose != Purpose::kFramework) continue;
        ++on_host;
        sliced += z3.g.tasks()[d].time_s;
      }
      EXPECT_EQ(on_host, 1) << z3.g.label(layout);
    }
    EXPECT_GE(reductions, 1);
    EXPECT_NEAR(sliced, z3.cluster.host.rank_slice.value() * devices * tensors, 1e-12) << devices;
    // FSDP lays its buckets out without a per-rank loop.
    Lowered fsdp(3, 1, devices);
    fsdp.plan.framework = core::Framework::kFsdp;
    fsdp.g = graph::TaskGraph();
    PartitionedStrategy().lower(LoweringInput{fsdp.model, fsdp.cluster, fsdp.plan, fsdp.costs}, fsdp.g);
    int fsdp_host = 0;
    for (const auto& task : fsdp.g.tasks()) fsdp_host += task.purpose == Purpose::kFramework ? 1 : 0;
    EXPECT_EQ(fsdp_host, 2 * static_cast<int>(fsdp.costs.units.size()));
  }
  Lowered everything(3, 1);
  everything.plan.persistence_threshold = core::Bytes(0.0);
  everything.per_submodule();
  EXPECT_EQ(everything.count_by_purpose()[Purpose::kParamGatherFwd], 1 + 4 * 9 + 2);
  EXPECT_EQ(everything.count_by_purpose()[Purpose::kParamUpdateGather], 0);  // nothing persists
  EXPECT_EQ(Lowered(3, 1).per_submodule().count_by_purpose()[Purpose::kParamGatherFwd], 1 + 4 * 7 + 1);
}

// Without reduce_scatter DeepSpeed's ZeRO-3 all-reduces its contiguous gradient bucket and keeps its slices
// (stage3.py __avg_scatter_contiguous_grads): twice the ring's bytes of a reduce-scatter, and no per-rank slicing on
// the host before it.
TEST(ZeroStages, DeepSpeedWithoutReduceScatterAllReducesItsBuckets) {
  for (int devices : {8, 64}) {
    Lowered rs(3, 1, devices);
    Lowered ar(3, 1, devices);
    ar.plan.reduce_scatter = false;
    ar.g = graph::TaskGraph();
    PartitionedStrategy().lower(LoweringInput{ar.model, ar.cluster, ar.plan, ar.costs}, ar.g);
    double rs_bytes = 0.0, ar_bytes = 0.0;
    int rs_n = 0, ar_n = 0;
    for (const auto& t : rs.g.tasks()) {
      if (t.kind != TaskKind::kCollective || t.purpose != Purpose::kGradReduce) continue;
      EXPECT_EQ(t.op, CollectiveOp::kReduceScatter);
      rs_bytes += t.bytes;
      ++rs_n;
    }
    for (const auto& t : ar.g.tasks()) {
      if (t.kind != TaskKind::kCollective || t.purpose != Purpose::kGradReduce) continue;
      EXPECT_EQ(t.op, CollectiveOp::kAllReduce);
      ar_bytes += t.bytes;
      ++ar_n;
    }
    EXPECT_EQ(ar_n, rs_n) << devices;
    EXPECT_DOUBLE_EQ(ar_bytes, rs_bytes) << devices;  // the same buckets, now all-reduced
    // The host's per-rank slicing is gone: its framework time is the reduce-scatter plan's less rank_slice x ranks x
    // tensors.
    auto host = [](const Lowered& l) {
      double s = 0.0;
      for (const auto& t : l.g.tasks()) s += t.purpose == Purpose::kFramework ? t.time_s : 0.0;
      return s;
    };
    const int tensors = 1 + 4 * 9 + 2;
    EXPECT_NEAR(host(rs) - host(ar), rs.cluster.host.rank_slice.value() * devices * tensors, 1e-9) << devices;
    // All-reduce sends twice what reduce-scatter does.
    EXPECT_GT(ar.bytes_sent(), rs.bytes_sent());
  }
}

// DeepSpeed splits each completed gather of several parameters rank by rank on the host (AllGatherCoalescedHandle
// .wait): the coordinator's coalesced prefetches cost the host gather_split per rank and parameter, a cost that
// grows with the group; MiCS's gathers write the parameters in place.
TEST(ZeroStages, DeepSpeedSplitsCoalescedGathersPerRank) {
  auto split_s = [](int devices, bool mics) {
    Lowered z(3, 1, devices);
    if (mics) z.plan.partition = core::PartitionSpec{8, 8, 8, 0};
    auto host = [&](double split) {
      z.cluster.host.gather_split = core::Seconds(split);
      z.g = graph::TaskGraph();
      PartitionedStrategy().lower(LoweringInput{z.model, z.cluster, z.plan, z.costs}, z.g);
      double t = 0.0;
      for (const auto& task : z.g.tasks()) t += task.purpose == Purpose::kFramework ? task.time_s : 0.0;
      return t;
    };
    return host(1e-6) - host(0.0);
  };
  int split_params = 0;
  const Lowered z(3, 1);
  for (const auto& u : z.costs.fetch.units) split_params += u[0].split_params + u[1].split_params;
  ASSERT_GT(split_params, 0);
  EXPECT_NEAR(split_s(8, false), 1e-6 * 8 * split_params, 1e-12);
  EXPECT_NEAR(split_s(64, false), 1e-6 * 64 * split_params, 1e-12);
  EXPECT_NEAR(split_s(64, true), 0.0, 1e-12);
}

// DeepSpeed ZeRO-3 waits for its reduction stream at the end of every backward (independent_gradient_partition_
// epilogue): the next micro-batch's first host work, which issues its first fetches, follows the last reduction.
TEST(ZeroStages, DeepSpeedWaitsForTheLastReductionBeforeTheNextMicroBatch) {
  auto first_host_waits_on_reduction = [](core::Framework framework) {
    Lowered z(3, 2);
    z.plan.framework = framework;
    z.costs = compute_model_costs(z.model, z.plan);
    z.g = graph::TaskGraph();
    PartitionedStrategy().lower(LoweringInput{z.model, z.cluster, z.plan, z.costs}, z.g);
    for (TaskId id = 0; id < z.g.size(); ++id) {
      const auto& t = z.g.tasks()[id];
      if (t.purpose != Purpose::kFramework || t.micro != 1 || t.unit != 0 || t.phase != graph::Phase::kForward) continue;
      for (TaskId d : z.g.deps(id)) {
        const auto& dep = z.g.tasks()[d];
        if (dep.purpose == Purpose::kGradReduce && dep.micro == 0) return true;
      }
      return false;
    }
    ADD_FAILURE() << "no forward host task of micro-batch 1";
    return false;
  };
  EXPECT_TRUE(first_host_waits_on_reduction(core::Framework::kDeepSpeed));
  EXPECT_FALSE(first_host_waits_on_reduction(core::Framework::kFsdp));
}

// FSDP (FULL_SHARD, a unit per decoder layer): one all-gather per unit and pass, each unit's gradients
// reduce-scattered after its backward, one fetch's hooks per unit, the next unit's gather in flight at most.
TEST(ZeroStages, FsdpGathersAndReducesPerWrappedBlock) {
  Lowered ds(3, 2);
  ds.per_submodule();  // FSDP keeps nothing gathered from the forward into the backward
  Lowered fsdp(3, 2);
  fsdp.plan.framework = core::Framework::kFsdp;
  PartitionedStrategy().lower(LoweringInput{fsdp.model, fsdp.cluster, fsdp.plan, fsdp.costs}, fsdp.g);
  const int units = static_cast<int>(fsdp.costs.units.size());
  auto n = fsdp.count_by_purpose();
  EXPECT_EQ(n[Purpose::kParamGatherFwd], 2 * units);
  EXPECT_EQ(n[Purpose::kParamGatherBwd], 2 * units);
  EXPECT_EQ(n[Purpose::kGradReduce], 2 * units);
  EXPECT_GT(ds.count_by_purpose()[Purpose::kParamGatherFwd], n[Purpose::kParamGatherFwd]);
  // The same bytes as DeepSpeed's ZeRO-3, in fewer, larger collectives (less the norms DeepSpeed keeps gathered and
  // gathers again after the step: 9 x h bf16 elements over 8 ranks; FSDP gathers them with their blocks).
  const double persistent = 9.0 * ds.model.hidden * 2.0 * 7.0 / 8.0;
  EXPECT_NEAR(fsdp.bytes_sent(), ds.bytes_sent() - persistent, 1e-6 * ds.bytes_sent());
  double hooks = 0.0;
  int tensors = 0;
  for (const auto& u : fsdp.costs.units) tensors += u.tensors;
  for (const auto& t : fsdp.g.tasks()) {
    if (t.purpose == Purpose::kFramework) hooks += t.time_s;
  }
  const auto& host = fsdp.cluster.host;
  EXPECT_NEAR(hooks, 2.0 * (2.0 * host.hook_time(units, tensors).value() + 4 * (host.block_forward + host.block_backward).value()),
              1e-12);
  EXPECT_EQ(zero3_live_units(fsdp.costs, fsdp.model, fsdp.plan), 2);
}

// Megatron-LM's DDP: bf16 training reduces fp32 gradients, the whole buffer at once after the backward unless
// overlap_grad_reduce, then buckets of max(40M, 1M x dp) elements; nothing beside the gradient buffer.
TEST(ZeroStages, MegatronReducesFp32GradientsFromOneBuffer) {
  auto lowered = [](std::optional<bool> overlap) {
    Lowered s(0, 2);
    s.plan.framework = core::Framework::kMegatron;
    s.plan.overlap_comm = overlap;
    PartitionedStrategy().lower(LoweringInput{s.model, s.cluster, s.plan, s.costs}, s.g);
    return s;
  };
  const Lowered plain = lowered(std::nullopt);
  ASSERT_EQ(plain.model.param_dtype, core::Dtype::kBf16);
  EXPECT_FALSE(plain.plan.overlaps_comm());
  EXPECT_EQ(plain.count_by_purpose()[Purpose::kGradReduce], 1);
  const Lowered deepspeed(0, 2);
  EXPECT_NEAR(plain.bytes_sent() / deepspeed.bytes_sent(), 2.0, 1e-6);  // fp32 instead of bf16
  const Lowered overlapped = lowered(true);
  const double elements = plain.costs.params_per_rank;
  // Buckets of 40M elements, closed once full, tensor by tensor in the backward's order: the head's projection
  // (131M) alone; in each 7B block down, up and gate (45.1M each) one each, then o, v, k, q and the norms
  // (50.3M, 61.9M across two blocks); the embedding with the last block's rest: 1 + 4 x 4 + 1 = 18.
  EXPECT_EQ(overlapped.count_by_purpose()[Purpose::kGradReduce], 18);
  const auto mb = estimate_memory(plain.model, plain.cluster, plain.plan, plain.costs);
  for (const auto& it : mb.items) {
    if (it.name == "gradients") {
      EXPECT_DOUBLE_EQ(it.bytes.value(), 4.0 * elements);
    }
    if (it.name == "communication buffers") {
      EXPECT_EQ(it.bytes.value(), 0.0);
    }
  }
}

// DeepSpeed bf16 without ZeRO (grad_accum_dtype fp32, DeepSpeed's default there): its BF16_Optimizer adds each
// micro-batch's gradients into fp32 accumulators, all-reduces those after the last backward, one bucket of 5e8
// elements after another on the compute stream, each cast to the communication dtype (bf16) for the wire and back
// (deepspeed@v0.14.0 engine.py allreduce_bucket; a 175B's stage on LUMI logs 5.34 GiB per step for its 2.87 B
// gradients), and keeps the optimizer partitioned over the ranks.
TEST(ZeroStages, DeepSpeedsBf16OptimizerAccumulatesFp32AndReducesBf16AfterTheBackward) {
  Lowered plain(0, 3);
  Lowered bf16(0, 3);
  bf16.plan.grad_accum_dtype = core::Dtype::kFp32;
  PartitionedStrategy().lower(LoweringInput{bf16.model, bf16.cluster, bf16.plan, bf16.costs}, bf16.g);
  ASSERT_TRUE(deepspeed_bf16_optimizer(bf16.model, bf16.plan));
  ASSERT_FALSE(deepspeed_bf16_optimizer(plain.model, plain.plan));
  const double elements = bf16.costs.params_per_rank;
  int accumulations = 0;
  std::vector<TaskId> reductions;
  double cast_bytes = 0.0;
  for (TaskId i = 0; i < bf16.g.size(); ++i) {
    const auto& t = bf16.g.tasks()[i];
    if (t.kind == TaskKind::kCompute && t.phase == graph::Phase::kBackward &&
        t.bytes == elements * kBf16AccumulateBytes) {
      EXPECT_EQ(t.flops, 0.0);
      ++accumulations;
    }
    if (t.kind == TaskKind::kCollective && t.purpose == Purpose::kGradReduce) {
      EXPECT_EQ(t.op, CollectiveOp::kAllReduce);
      EXPECT_EQ(t.stream, graph::Stream::kCompute);
      reductions.push_back(i);
    }
    if (t.kind == TaskKind::kCompute && t.purpose == Purpose::kGradReduce) cast_bytes += t.bytes;
  }
  EXPECT_EQ(accumulations, 3);  // one per micro-batch
  // 7B-class gradients of a 4-block model in 5e8-element buckets, 2 bytes each on the wire.
  ASSERT_EQ(reductions.size(), static_cast<std::size_t>(std::ceil(elements / kDeepSpeedAllReduceBucketElements)));
  double reduced = 0.0;
  for (TaskId r : reductions) reduced += bf16.g.tasks()[r].bytes;
  EXPECT_DOUBLE_EQ(reduced, 2.0 * elements);
  // Flattened and cast down before (4 + 4 + 4 + 2 bytes), averaged, cast back and copied out after (2 + 2 + 2 + 4 +
  // 4 + 4).
  EXPECT_DOUBLE_EQ(cast_bytes, 32.0 * elements);
  engine::AnalyticalEngine eng(bf16.cluster, core::CollectiveAlgorithm::kRing);
  const auto run = eng.run(bf16.g);
  double last_backward = 0.0;
  for (TaskId i = 0; i < bf16.g.size(); ++i) {
    const auto& t = bf16.g.tasks()[i];
    if (t.kind == TaskKind::kCompute && t.phase == graph::Phase::kBackward) last_backward = std::max(last_backward, run.timings[i].end_s);
  }
  EXPECT_GE(run.timings[reductions.front()].start_s, last_backward - 1e-12);  // after every backward, not beside it
  // A bf16 all-reduce (2 x 2 bytes per element) and the updated bf16 shards' gather (2), against DDP's bf16
  // all-reduce (2 x 2).
  EXPECT_NEAR(bf16.bytes_sent() / plain.bytes_sent(), 1.5, 1e-6);
  const auto mb = estimate_memory(bf16.model, bf16.cluster, bf16.plan, bf16.costs);
  for (const auto& it : mb.items) {
    if (it.name == "gradients") {
      EXPECT_DOUBLE_EQ(it.bytes.value(), 6.0 * elements);
    }
    if (it.name == "optimizer states") {
      EXPECT_DOUBLE_EQ(it.bytes.value(), 12.0 * elements / 8.0);
    }
  }
  EXPECT_EQ(describe_partition(bf16.model, bf16.plan), "bf16-optimizer");
  EXPECT_EQ(describe_partition(plain.model, plain.plan), "ddp");
  // A ZeRO stage on one data-parallel rank partitions nothing but still runs the framework's ZeRO code.
  core::PlanSpec one = plain.plan;
  one.dp = 1;
  one.zero_stage = 3;
  EXPECT_EQ(describe_partition(plain.model, one), "zero-3 (one partition)");
}

TEST(ZeroStages, TensorParallelAddsTwoAllReducesPerBlockEachWay) {
  Lowered s(1, 1);
  s.plan.tp = 2;
  s.plan.dp = 4;
  s.plan.global_batch = 4;
  s.costs = compute_model_costs(s.model, s.plan);
  PartitionedStrategy().lower(LoweringInput{s.model, s.cluster, s.plan, s.costs}, s.g);
  // 4 blocks x (2 forward + 2 backward) + embedding 1 forward + 1 backward.
  EXPECT_EQ(s.count_by_purpose()[Purpose::kTensorParallel], 4 * 4 + 2);
  for (const auto& t : s.g.tasks()) {
    if (t.purpose == Purpose::kTensorParallel) {
      EXPECT_EQ(s.g.groups()[t.group].shape.size, 2);
      EXPECT_EQ(t.op, CollectiveOp::kAllReduce);
    }
  }
}

TEST(ZeroStages, SequenceParallelismSplitsEachAllReduceIntoReduceScatterAndAllGather) {
  Lowered s(1, 1);
  s.plan.tp = 2;
  s.plan.dp = 4;
  s.plan.global_batch = 4;
  s.plan.sequence_parallel = true;
  s.costs = compute_model_costs(s.model, s.plan);
  PartitionedStrategy().lower(LoweringInput{s.model, s.cluster, s.plan, s.costs}, s.g);
  std::map<CollectiveOp, int> ops;
  for (const auto& t : s.g.tasks()) {
    if (t.purpose == Purpose::kTensorParallel) ++ops[t.op];
  }
  EXPECT_EQ(ops[CollectiveOp::kAllReduce], 0);
  EXPECT_EQ(ops[CollectiveOp::kReduceScatter], 4 * 4 + 2);
  EXPECT_EQ(ops[CollectiveOp::kAllGather], 4 * 4 + 2);
  // The same bytes on the wire as the all-reduces they replace.
  Lowered plain(1, 1);
  plain.plan = s.plan;
  plain.plan.sequence_parallel = false;
  plain.costs = compute_model_costs(plain.model, plain.plan);
  PartitionedStrategy().lower(LoweringInput{plain.model, plain.cluster, plain.plan, plain.costs}, plain.g);
  EXPECT_NEAR(s.bytes_sent(), plain.bytes_sent(), 1e-6 * plain.bytes_sent());
}

// Recomputation issues a block's tensor-parallel exchanges again where it does not keep their outputs: full
// recomputation all of them; torchtitan's op-level policy the sequence-parallel all-gathers only (it saves the
// reduce-scatters' outputs).
TEST(ZeroStages, RecomputationRepeatsTheExchangesItDoesNotSave) {
  auto tp_ops = [](core::Recompute r) {
    Lowered s(1, 1);
    s.plan.tp = 2;
    s.plan.dp = 4;
    s.plan.global_batch = 4;
    s.plan.sequence_parallel = true;
    s.plan.recompute = r;
    s.costs = compute_model_costs(s.model, s.plan);
    PartitionedStrategy().lower(LoweringInput{s.model, s.cluster, s.plan, s.costs}, s.g);
    std::map<CollectiveOp, int> ops;
    for (const auto& t : s.g.tasks()) {
      if (t.purpose == Purpose::kTensorParallel) ++ops[t.op];
    }
    return ops;
  };
  const auto none = tp_ops(core::Recompute::kNone);
  const auto full = tp_ops(core::Recompute::kFull);
  const auto op = tp_ops(core::Recompute::kSelectiveOp);
  EXPECT_EQ(full.at(CollectiveOp::kReduceScatter) - none.at(CollectiveOp::kReduceScatter), 4 * 2);
  EXPECT_EQ(full.at(CollectiveOp::kAllGather) - none.at(CollectiveOp::kAllGather), 4 * 2);
  EXPECT_EQ(op.at(CollectiveOp::kReduceScatter), none.at(CollectiveOp::kReduceScatter));
  EXPECT_EQ(op.at(CollectiveOp::kAllGather) - none.at(CollectiveOp::kAllGather), 4 * 2);
}

// FSDP's fp8 weight gathers (torchao's float8 all-gather): the blocks' linear weights travel at a byte each; norms,
// the embedding and the head stay 16-bit.
TEST(ZeroStages, Fp8WeightGathersHalveTheLinearsShare) {
  auto gathered = [](bool fp8) {
    Lowered s(3, 1);
    s.plan.framework = core::Framework::kFsdp;
    s.plan.float8.linear = true;
    s.plan.float8.all_gather = fp8;
    s.costs = compute_model_costs(s.model, s.plan);
    s.g = graph::TaskGraph();
    PartitionedStrategy().lower(LoweringInput{s.model, s.cluster, s.plan, s.costs}, s.g);
    double bytes = 0.0;
    for (const auto& t : s.g.tasks()) {
      if (t.kind == TaskKind::kCollective && (t.purpose == Purpose::kParamGatherFwd || t.purpose == Purpose::kParamGatherBwd)) {
        bytes += t.bytes;
      }
    }
    return std::pair{bytes, s.costs};
  };
  const auto [bf16_bytes, costs] = gathered(false);
  const auto [fp8_bytes, fp8_costs] = gathered(true);
  const double linears = fp8_costs.units[1].float8_elements * 4;  // four blocks
  EXPECT_GT(linears, 0.0);
  EXPECT_EQ(costs.units[1].float8_elements, 0.0);
  // forward and backward gathers of every block: 2 x (2 - 1) bytes fewer per linear weight element
  EXPECT_NEAR(bf16_bytes - fp8_bytes, 2.0 * linears, 1e-6 * bf16_bytes);
}

TEST(ZeroStages, SingleRankHasNoCommunication) {
  Lowered s(3, 2, 1);
  EXPECT_TRUE(s.count_by_purpose().empty());
}

}  // namespace
}  // namespace shardsim::strategies

namespace shardsim::strategies {
namespace {

// Where the network is the bottleneck, compressing the data-parallel gradients pays (Xu et al. 2024).
TEST(Compression, HelpsWhenGradientReductionIsExposed) {
  core::ModelSpec model = *core::find_model_preset("llama2-7b");
  model.layers = 4;
  core::ClusterSpec cluster = testing::two_level(8);
  cluster.levels[1].link_bandwidth = core::BytesPerSec(1e9);  // a slow fabric
  core::PlanSpec plan;
  plan.dp = 32;
  plan.global_batch = 32;
  auto time = [&](const core::PlanSpec& p) {
    const auto costs = compute_model_costs(model, p);
    graph::TaskGraph g;
    PartitionedStrategy().lower(LoweringInput{model, cluster, p, costs}, g);
    engine::AnalyticalEngine eng(cluster, core::CollectiveAlgorithm::kAuto);
    return eng.run(g).iteration_time.value();
  };
  const double base = time(plan);
  core::PlanSpec zfp = plan;
  zfp.compression.gradients = core::CompressionSpec{core::Codec::kZfp, 4, 4.0, core::BytesPerSec(200e9),
                                                    core::BytesPerSec(250e9)};
  EXPECT_LT(time(zfp), 0.6 * base);
}

}  // namespace
}  // namespace shardsim::strategies
