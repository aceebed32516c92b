#include "strategies/pipeline_strategy.hpp"

#include <gtest/gtest.h>

#include <set>

#include "sim/engine/analytical_engine.hpp"
#include "strategies/lowering_common.hpp"
#include "strategies/memory_model.hpp"
#include "strategies/pipeline_layout.hpp"
#include "tests/test_clusters.hpp"

namespace shardsim::strategies {
namespace {

// A GPT-style model whose embedding and head cost next to nothing (vocabulary of 8), so every pipeline stage
// does the same work and the schedule's closed forms apply.
core::ModelSpec uniform_model(int layers) {
  core::ModelSpec m = *core::find_model_preset("gpt3-175b");
  m.layers = layers;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 32;
  m.ffn_hidden = 4 * 4096;
  m.vocab = 8;
  m.seq_len = 2048;
  return m;
}

struct Pipe {
  core::ModelSpec model;
  core::ClusterSpec cluster;
  core::PlanSpec plan;
  ModelCosts costs;
  graph::TaskGraph g;
  engine::RunResult r;

  Pipe(int p, int v, int micros, int layers = 16) : model(uniform_model(layers)), cluster(testing::flat(p)) {
    cluster.levels[0].link_bandwidth = core::BytesPerSec(1e18);  // transfers between stages cost ~nothing
    cluster.levels[0].latency = core::Seconds(0);
    plan.pp = p;
    plan.virtual_stages = v;
    plan.dp = 1;
    plan.global_batch = micros;
    costs = compute_model_costs(model, plan);
    PipelineStrategy().lower(LoweringInput{model, cluster, plan, costs}, g);
    engine::AnalyticalEngine eng(cluster, core::CollectiveAlgorithm::kAuto);
    r = eng.run(g);
  }
  // Forward + backward time of one micro-batch through stage 0 (all its chunks; the embedding makes it the
  // slowest stage, by a little).
  double stage_time() const { return phase_time(0, true); }
  // The optimizer step that follows the last backward.
  double step_time() const { return phase_time(-1, false); }
  double phase_time(int micro, bool passes) const {
    engine::AnalyticalEngine eng(cluster, core::CollectiveAlgorithm::kAuto);
    double t = 0.0;
    for (const auto& task : g.tasks()) {
      if (task.role != 0 || task.kind != graph::TaskKind::kCompute || task.micro != micro) continue;
      const bool pass = task.phase == graph::Phase::kForward || task.phase == graph::Phase::kBackward;
      if (pass == passes) t += eng.duration(g, task).value();
    }
    return t;
  }
};

// Narayanan et al. 2021, Sec. 2.2.1: 1F1B takes (m + p - 1) x (t_f + t_b); the bubble is (p - 1) / m of the
// ideal time.
TEST(PipelineStrategy, OneFOneBTakesMPlusPMinusOneSlots) {
  for (int p : {2, 4}) {
    for (int m : {1, 4, 8}) {
      Pipe x(p, 1, m);
      const double slot = x.stage_time();
      EXPECT_NEAR(x.r.iteration_time.value() / ((m + p - 1) * slot + x.step_time()), 1.0, 0.01) << "p " << p << " m " << m;
      // Every stage idles for the bubble.
      EXPECT_NEAR(x.r.roles[0].idle.value() / ((p - 1) * slot), 1.0, 0.02) << "p " << p << " m " << m;
    }
  }
}

// Sec. 2.2.2: interleaving v chunks per device shrinks the bubble to (p - 1) / (v m).
TEST(PipelineStrategy, InterleavingShrinksTheBubbleByV) {
  const int p = 4, m = 8;
  for (int v : {2, 4}) {
    Pipe x(p, v, m);
    const double slot = x.stage_time();
    EXPECT_NEAR(x.r.iteration_time.value() / ((m + (p - 1.0) / v) * slot + x.step_time()), 1.0, 0.01) << "v " << v;
  }
}

// DeepSpeed's uniform partition: BLOOM's 70 layers on 12 stages put 6 on the first ten and 5 on the last two, the
// embedding on stage 0 and the head on the last, each block once.
TEST(PipelineLayoutTest, UnevenStagesGetTheirExtraLayerFirst) {
  core::PlanSpec plan;
  plan.pp = 12;
  plan.dp = 1;
  plan.micro_batch = 1;
  plan.global_batch = 24;
  const PipelineLayout layout(70 + 2, plan);
  std::vector<int> seen(72, 0);
  for (int st = 0; st < 12; ++st) {
    const auto units = layout.stage_units(st);
    int blocks = 0;
    for (int u : units) {
      ++seen[static_cast<std::size_t>(u)];
      if (u != 0 && u != 71) ++blocks;
    }
    EXPECT_EQ(blocks, st < 10 ? 6 : 5) << "stage " << st;
  }
  for (int u = 0; u < 72; ++u) EXPECT_EQ(seen[static_cast<std::size_t>(u)], 1) << "unit " << u;
  EXPECT_EQ(layout.stage_units(0).front(), 0);
  EXPECT_EQ(layout.stage_units(11).back(), 71);
}

TEST(PipelineLayoutTest, ChunksCoverTheModelOnceAndSchedulesBalance) {
  core::PlanSpec plan;
  plan.pp = 4;
  plan.virtual_stages = 2;
  plan.dp = 1;
  plan.global_batch = 8;
  const PipelineLayout layout(16 + 2, plan);
  std::vector<int> seen(18, 0);
  for (int c = 0; c < layout.chunks(); ++c) {
    for (int u : layout.units(c)) ++seen[static_cast<std::size_t>(u)];
  }
  for (int n : seen) EXPECT_EQ(n, 1);
  for (int s = 0; s < 4; ++s) {
    int fwd = 0, bwd = 0;
    for (const auto& op : layout.schedule(s)) (op.forward ? fwd : bwd)++;
    EXPECT_EQ(fwd, 16);
    EXPECT_EQ(bwd, 16);
  }
  // 1F1B: stage 0 keeps p micro-batches in flight, the last stage one.
  plan.virtual_stages = 1;
  const PipelineLayout plain(16 + 2, plan);
  EXPECT_EQ(plain.max_in_flight(0), 4);
  EXPECT_EQ(plain.max_in_flight(3), 1);
}

// The gradient norm is taken over the whole model: each stage's step waits for a reduction across the stages that
// follows every stage's last backward; and for every stage (the last one included, which finishes its passes
// first) compute, exposed communication, exposed host work and idle time add up to the iteration.
TEST(PipelineStrategy, StagesStepAfterTheGlobalNormAndEveryStageAddsUpToTheIteration) {
  const Pipe pipe(4, 1, 8);
  const auto& g = pipe.g;
  int global_norms = 0;
  for (graph::TaskId t = 0; t < g.size(); ++t) {
    const auto& task = g.tasks()[t];
    if (task.purpose != graph::Purpose::kGradNorm || g.groups()[task.group].name != "stages") continue;
    ++global_norms;
    std::set<std::uint16_t> after;
    for (graph::TaskId d : g.deps(t)) after.insert(g.tasks()[d].role);
    EXPECT_EQ(after.size(), 4u) << g.label(t);
  }
  EXPECT_EQ(global_norms, 4);
  const double iteration = pipe.r.iteration_time.value();
  for (const auto& role : pipe.r.roles) {
    const double sum = (role.compute_busy + role.exposed_comm + role.exposed_host + role.idle).value();
    EXPECT_NEAR(sum, iteration, 1e-9 * iteration) << role.role;
  }
}

TEST(PipelineStrategy, MemoryTimelineStaysUnderTheStaticEstimateOnEveryStage) {
  Pipe x(4, 1, 8);
  const auto mb = estimate_memory(x.model, x.cluster, x.plan, x.costs);
  EXPECT_EQ(mb.stage, 0);  // stage 0 holds the most activations under 1F1B
  for (const auto& role : x.r.roles) EXPECT_LE(role.peak_memory_bytes, mb.total.value()) << role.role;
  EXPECT_GT(x.r.roles[0].peak_memory_bytes, x.r.roles[3].peak_memory_bytes);
}

TEST(PipelineStrategy, DataParallelReplicasReduceTheirStagesGradients) {
  core::ModelSpec model = uniform_model(8);
  core::ClusterSpec cluster = testing::two_level(2);  // 8 devices
  core::PlanSpec plan;
  plan.pp = 2;
  plan.dp = 4;
  plan.global_batch = 16;
  plan.zero_stage = 1;
  const ModelCosts costs = compute_model_costs(model, plan);
  graph::TaskGraph g;
  PipelineStrategy().lower(LoweringInput{model, cluster, plan, costs}, g);
  int reduces = 0, gathers = 0, p2p = 0;
  for (const auto& t : g.tasks()) {
    if (t.purpose == graph::Purpose::kGradReduce) ++reduces;
    if (t.purpose == graph::Purpose::kParamUpdateGather) ++gathers;
    if (t.purpose == graph::Purpose::kPipeline) ++p2p;
  }
  EXPECT_GE(reduces, 2);  // at least one bucket per stage
  EXPECT_GE(gathers, 2);  // ZeRO-1 gathers each stage's updated shards
  EXPECT_EQ(p2p, 2 * 4);  // each micro-batch crosses the one boundary forward and backward
  engine::AnalyticalEngine eng(cluster, core::CollectiveAlgorithm::kAuto);
  const auto r = eng.run(g);
  EXPECT_EQ(r.roles.size(), 2u);
}

// DeepSpeed's pipeline engine with the BF16_Optimizer (BLOOM's tr11-176B-ml: bf16, zero stage 0): each backward
// pass adds its stage's gradients into fp32 before the gradient goes to the previous stage, and the fp32
// all-reduce runs once the stage's schedule is done.
TEST(PipelineStrategy, Bf16OptimizerAccumulatesEveryPassAndReducesAfterTheFlush) {
  core::ModelSpec model = uniform_model(8);
  model.param_dtype = model.grad_dtype = core::Dtype::kBf16;
  core::ClusterSpec cluster = testing::two_level(2);  // 8 devices
  core::PlanSpec plan;
  plan.pp = 2;
  plan.dp = 4;
  plan.global_batch = 16;  // 4 micro-batches per replica
  plan.grad_accum_dtype = core::Dtype::kFp32;
  const ModelCosts costs = compute_model_costs(model, plan);
  graph::TaskGraph g;
  PipelineStrategy().lower(LoweringInput{model, cluster, plan, costs}, g);
  const PipelineLayout layout(static_cast<int>(costs.units.size()), plan);
  std::vector<double> stage_bytes;
  for (int s = 0; s < 2; ++s) {
    double params = 0.0;
    for (int u : layout.stage_units(s)) params += costs.units[static_cast<std::size_t>(u)].params;
    stage_bytes.push_back(params * kBf16AccumulateBytes);
  }
  int accumulations = 0, gathers = 0;
  std::vector<graph::TaskId> reductions;
  for (graph::TaskId i = 0; i < g.size(); ++i) {
    const auto& t = g.tasks()[i];
    if (t.kind == graph::TaskKind::kCompute && t.phase == graph::Phase::kBackward && t.flops == 0.0 &&
        t.bytes == stage_bytes[t.role]) {
      ++accumulations;
    }
    if (t.purpose == graph::Purpose::kGradReduce) reductions.push_back(i);
    if (t.purpose == graph::Purpose::kParamUpdateGather) ++gathers;
  }
  EXPECT_EQ(accumulations, 2 * 4);  // every stage, every micro-batch
  EXPECT_GE(reductions.size(), 2u);
  EXPECT_GE(gathers, 2);  // its own ZeRO-1: the updated bf16 shards gathered
  engine::AnalyticalEngine eng(cluster, core::CollectiveAlgorithm::kAuto);
  const auto r = eng.run(g);
  for (graph::TaskId red : reductions) {
    const auto& t = g.tasks()[red];
    EXPECT_EQ(t.op, graph::CollectiveOp::kAllReduce);
    for (graph::TaskId i = 0; i < g.size(); ++i) {
      const auto& c = g.tasks()[i];
      if (c.role == t.role && c.kind == graph::TaskKind::kCompute && c.phase == graph::Phase::kBackward) {
        EXPECT_LE(r.timings[i].end_s, r.timings[red].start_s + 1e-12);
      }
    }
  }
}

}  // namespace
}  // namespace shardsim::strategies

namespace shardsim::strategies {
namespace {

// Megatron-LM's pipeline exchanges synchronise the device and its host thread (p2p_communication.py: req.wait(),
// torch.cuda.synchronize()): where the host sets the pace (small blocks), a stage's thread waits for each
// activation and gradient, so 1F1B's (m + p - 1) slots are paid in host time too; a thread that may run ahead
// (framework deepspeed here) overlaps them.
TEST(PipelineStrategy, MegatronsExchangesHoldTheHostToTheSchedule) {
  auto iteration = [](core::Framework framework, bool p2p_sync = true) {
    core::ModelSpec m = uniform_model(8);
    m.hidden = 256;
    m.heads = 4;
    m.kv_heads = 4;
    m.ffn_hidden = 1024;
    m.seq_len = 256;
    core::ClusterSpec cluster = testing::flat(4);
    core::PlanSpec plan;
    plan.pp = 4;
    plan.dp = 1;
    plan.global_batch = 2;
    plan.recompute = core::Recompute::kNone;
    plan.framework = framework;
    plan.p2p_sync = p2p_sync;
    const ModelCosts costs = compute_model_costs(m, plan);
    graph::TaskGraph g;
    PipelineStrategy().lower(LoweringInput{m, cluster, plan, costs}, g);
    int syncs = 0;
    for (graph::TaskId t = 0; t < g.size(); ++t) {
      const auto& task = g.tasks()[t];
      if (task.kind != graph::TaskKind::kHostCompute || task.time_s != 0.0) continue;
      ++syncs;
      bool after_recv = false;
      for (graph::TaskId d : g.deps(t)) after_recv |= g.tasks()[d].purpose == graph::Purpose::kPipeline;
      EXPECT_TRUE(after_recv) << g.label(t);
    }
    engine::AnalyticalEngine eng(cluster, core::CollectiveAlgorithm::kAuto);
    const double slot = 2.0 * (cluster.host.megatron_block_forward + cluster.host.megatron_block_backward).value();
    return std::tuple{eng.run(g).iteration_time.value(), syncs, slot};
  };
  const auto [megatron, syncs, slot] = iteration(core::Framework::kMegatron);
  const auto [free_running, none, unused] = iteration(core::Framework::kDeepSpeed);
  (void)unused;
  // Each of the 2 micro-batches receives on 3 stages forward and 3 backward.
  EXPECT_EQ(syncs, 2 * 3 * 2);
  EXPECT_EQ(none, 0);
  // Two blocks per stage: (m + p - 1) = 5 slots of two blocks' host time, forward and backward.
  EXPECT_GE(megatron, 5.0 * slot * 0.95);
  EXPECT_GT(megatron, 1.2 * free_running);
  // Megatron-Core's overlapped exchanges (overlap_p2p_comm, batch_p2p_comm off: p2p_sync false) do not synchronise:
  // its thread runs ahead as DeepSpeed's does.
  const auto [core_overlapped, no_syncs, unused2] = iteration(core::Framework::kMegatron, false);
  (void)unused2;
  EXPECT_EQ(no_syncs, 0);
  EXPECT_LT(core_overlapped, megatron / 1.2);
}

}  // namespace
}  // namespace shardsim::strategies

namespace shardsim::strategies {
namespace {

// With tensor parallelism and no sequence parallelism a boundary tensor crosses stages as each rank's 1/tp of it and
// the receiver gathers it back over its tensor-parallel group before using it (Megatron's scatter-gather exchange,
// DeepSpeed's partitioned pipe tensors); DeepSpeed also gathers a stage's own partitioned output before its
// backward. With sequence parallelism the split tensor is used as it is.
TEST(PipelineStrategy, PartitionedBoundaryTensorsAreGatheredOverTheTensorParallelGroup) {
  auto gathers = [](core::Framework framework, bool sequence_parallel) {
    const core::ModelSpec m = uniform_model(8);
    const core::ClusterSpec cluster = testing::flat(4);
    core::PlanSpec plan;
    plan.pp = 2;
    plan.tp = 2;
    plan.dp = 1;
    plan.global_batch = 3;  // 3 micro-batches
    plan.framework = framework;
    plan.sequence_parallel = sequence_parallel;
    const ModelCosts costs = compute_model_costs(m, plan);
    graph::TaskGraph g;
    PipelineStrategy().lower(LoweringInput{m, cluster, plan, costs}, g);
    int n = 0;
    for (graph::TaskId t = 0; t < g.size(); ++t) {
      const auto& task = g.tasks()[t];
      if (task.purpose != graph::Purpose::kPipeline || task.op != graph::CollectiveOp::kAllGather) continue;
      ++n;
      EXPECT_EQ(task.stream, graph::Stream::kCompute);
      EXPECT_EQ(task.bytes, costs.tp_allreduce_bytes.value());  // the whole tensor, tp x what crossed the stages
      bool after_exchange = false;
      for (graph::TaskId d : g.deps(t)) after_exchange |= g.tasks()[d].purpose == graph::Purpose::kPipeline;
      EXPECT_TRUE(after_exchange) << g.label(t);
    }
    return n;
  };
  // Per micro-batch: the second stage's received activation and the first stage's received gradient.
  EXPECT_EQ(gathers(core::Framework::kMegatron, false), 3 * 2);
  // DeepSpeed: and the first stage's own output before its backward.
  EXPECT_EQ(gathers(core::Framework::kDeepSpeed, false), 3 * 3);
  EXPECT_EQ(gathers(core::Framework::kMegatron, true), 0);
}

}  // namespace
}  // namespace shardsim::strategies
