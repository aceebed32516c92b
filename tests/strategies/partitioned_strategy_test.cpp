#include "strategies/partitioned_strategy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "sim/engine/analytical_engine.hpp"
#include "strategies/memory_model.hpp"
#include "tests/test_clusters.hpp"

namespace shardsim::strategies {
namespace {

using graph::Purpose;

struct Case {
  core::ModelSpec model;
  core::ClusterSpec cluster;
  core::PlanSpec plan;

  Case(int nodes, int stage, int micros) : cluster(testing::two_level(nodes)) {
    model = *core::find_model_preset("llama2-7b");
    model.layers = 4;
    plan.dp = cluster.total_devices();
    plan.global_batch = plan.dp * micros;
    plan.zero_stage = stage;
    plan.algorithm = core::CollectiveAlgorithm::kRing;
    // The papers' schedule, whose volumes the tests derive by hand: every parameter gathered before its forward and
    // again before its backward (DeepSpeed without its prefetch and reuse, deepspeed_prefetch_test.cpp).
    plan.prefetch_bucket = plan.max_reuse_distance = core::Bytes(0.0);
  }
  void resolve_zero() { plan.partition = core::PlanSpec{plan}.shards(); }

  struct Out {
    double time;
    std::array<double, graph::kMaxLevels> bytes;
    double peak;
    std::map<Purpose, int> counts;
  };
  Out run(const Strategy& s) const {
    const ModelCosts costs = compute_model_costs(model, plan);
    graph::TaskGraph g;
    s.lower(LoweringInput{model, cluster, plan, costs}, g);
    engine::AnalyticalEngine eng(cluster, plan.algorithm);
    const auto r = eng.run(g);
    Out o{r.iteration_time.value(), r.roles[0].bytes_by_level, r.roles[0].peak_memory_bytes, {}};
    for (const auto& t : g.tasks()) {
      if (t.kind == graph::TaskKind::kCollective) ++o.counts[t.purpose];
    }
    return o;
  }
};

// ZeRO++ (Wang et al. 2023, Sec. 3): cross-node volume per micro-batch falls from 3M (ZeRO-3: forward
// gather M, backward gather M, gradient reduce-scatter M) to 0.75M (INT8 forward gather 0.5M, hpZ backward
// gather inside the node 0, INT4 gradients 0.25M). Bytes leaving a node = per-rank bytes above the node
// level x ranks per node.
TEST(PartitionedStrategy, ZeroPlusPlusCutsCrossNodeVolumeToAQuarter) {
  Case z3(8, 3, 1);
  z3.resolve_zero();
  Case zpp = z3;
  zpp.plan.partition.secondary = 4;  // one node
  zpp.plan.quantization.weights = true;
  zpp.plan.quantization.gradients = true;
  zpp.plan.quantization.gradient_hops = {0, 1};
  const auto a = z3.run(PartitionedStrategy());
  const auto b = zpp.run(PartitionedStrategy());
  const double n = 32, nodes = 8;
  const double m = z3.model.total_params() * 2.0;  // bf16 parameter bytes (tp = 1)
  EXPECT_NEAR(a.bytes[1] * 4, 3.0 * m * (n - 1) / n, 0.001 * m);
  // 0.5M (qwZ, plus fp32 scales per 8192 elements) + 0.25M (qgZ's inter-node hop among 8 nodes).
  const double expected = 0.5 * m * (n - 1) / n * (1 + 8.0 / 8192) + 0.25 * m * (nodes - 1) / nodes * (1 + 16.0 / 8192);
  EXPECT_NEAR(b.bytes[1] * 4, expected, 0.001 * m);
  EXPECT_NEAR(b.bytes[1] / a.bytes[1], 0.25, 0.02);
  EXPECT_LT(b.time, a.time);
}

TEST(PartitionedStrategy, HpzCostsTwoPsiOverItsGroupInMemory) {
  Case c(8, 3, 1);
  c.resolve_zero();
  const ModelCosts costs = compute_model_costs(c.model, c.plan);
  const double before = estimate_memory(c.model, c.cluster, c.plan, costs).total.value();
  c.plan.partition.secondary = 4;
  const double after = estimate_memory(c.model, c.cluster, c.plan, costs).total.value();
  EXPECT_NEAR(after - before, 2.0 * costs.params_per_rank / 4, 1.0);
  // The backward gathers stay inside the node.
  const auto r = c.run(PartitionedStrategy());
  Case plain(8, 3, 1);
  plain.resolve_zero();
  const auto p = plain.run(PartitionedStrategy());
  EXPECT_NEAR(p.bytes[1] - r.bytes[1], 2.0 * costs.params_per_rank * (32.0 - 1) / 32 / 4, 1e-3 * p.bytes[1]);
}

// hpZ's secondary copy serves every gather until the step drops it: with two micro-batches only the first forward
// gathers across nodes; the second's gathers, like both backwards, stay inside the node. Per-rank bytes leaving the
// node: without hpZ 2 micro-batches x (forward + backward) x M (n - 1) / n; with it the first forward's alone.
TEST(PartitionedStrategy, HpzSecondaryServesTheLaterMicroBatchesForwards) {
  Case c(8, 3, 2);
  c.resolve_zero();
  c.plan.partition.secondary = 4;  // one node
  graph::TaskGraph g;
  const ModelCosts costs = compute_model_costs(c.model, c.plan);
  PartitionedStrategy().lower(LoweringInput{c.model, c.cluster, c.plan, costs}, g);
  std::map<int, std::set<int>> group_sizes;  // micro-batch -> sizes of the groups its forward gathers span
  for (const auto& t : g.tasks()) {
    if (t.kind == graph::TaskKind::kCollective && t.purpose == Purpose::kParamGatherFwd) {
      group_sizes[t.micro].insert(g.groups()[t.group].shape.size);
    }
  }
  EXPECT_EQ(group_sizes[0], (std::set<int>{32}));
  EXPECT_EQ(group_sizes[1], (std::set<int>{4}));
  const auto r = c.run(PartitionedStrategy());
  const double m = c.model.total_params() * 2.0, n = 32;
  const double cross_node = r.bytes[1] * 4;  // per-rank bytes above the node level x ranks per node
  EXPECT_NEAR(cross_node / (m * (n - 1) / n), 1.0 + 2.0 /* the gradients' reduce-scatters */, 0.02);
}

// MiCS (Zhang et al. 2022) = (g, g, g): gathers and reduce-scatters inside g ranks every micro-batch, and one
// all-reduce of the 1/g shard across dp/g replicas at the boundary. Per-rank bytes by hand (ring):
// per micro 3 (g-1)/g M inside; at the boundary 2 (r-1)/r M/g across, r = dp/g.
TEST(PartitionedStrategy, MicsVolumesMatchTheHandDerivation) {
  Case c(8, 3, 2);
  c.plan.partition = core::PartitionSpec{4, 4, 4, 0};
  const auto o = c.run(PartitionedStrategy());
  const double m = c.model.total_params() * 2.0, g = 4, r = 8, micros = 2;
  // (+ the norms DeepSpeed keeps gathered, gathered again inside the group after the step: 9 x h bf16 elements)
  const double persistent = 9.0 * c.model.hidden * 2.0 * (g - 1) / g;
  EXPECT_NEAR(o.bytes[0], micros * 3.0 * (g - 1) / g * m + persistent, 1e-6 * m);
  EXPECT_NEAR(o.bytes[1], 2.0 * (r - 1) / r * m / g + 2 * 4.0 * 7.0 / 32 / 4, 1e-6 * m);  // + the grad-norm scalar
  EXPECT_EQ(describe_partition(c.plan), "mics-4");
  // DeepSpeed's MiCS all-reduces the partitions tensor by tensor (all_reduce_coalesced: one ncclAllReduce each).
  int tensors = 0;
  for (const auto& u : compute_model_costs(c.model, c.plan).units) tensors += u.tensors;
  graph::TaskGraph lowered;
  PartitionedStrategy().lower(LoweringInput{c.model, c.cluster, c.plan, compute_model_costs(c.model, c.plan)}, lowered);
  int all_reduces = 0;
  for (const auto& t : lowered.tasks()) {
    if (t.kind == graph::TaskKind::kCollective && t.purpose == Purpose::kGradReduce &&
        t.op == graph::CollectiveOp::kAllReduce) {
      all_reduces += static_cast<int>(t.calls);
    }
  }
  EXPECT_EQ(all_reduces, tensors);
}

// An AMSP point with optimizer states sharded wider than parameters and gradients: the boundary reduce-scatter
// runs over the OS/G owners and the updated parameters come back over OS/P ranks.
TEST(PartitionedStrategy, AmspPointWithWiderOptimizerSharding) {
  Case c(8, 3, 1);
  c.plan.partition = core::PartitionSpec{4, 4, 32, 0};
  const auto o = c.run(PartitionedStrategy());
  EXPECT_GE(o.counts.at(Purpose::kParamUpdateGather), 1);
  EXPECT_EQ(describe_partition(c.plan), "amsp P4/G4/OS32");
  const ModelCosts costs = compute_model_costs(c.model, c.plan);
  const auto mb = estimate_memory(c.model, c.cluster, c.plan, costs);
  EXPECT_NEAR(mb.items[2].bytes.value(), 12.0 * costs.params_per_rank / 32, 1.0);
  EXPECT_NEAR(mb.items[0].bytes.value(), 2.0 * costs.params_per_rank / 4, 1.0);
  // Hand-derived: per micro 3 (4-1)/4 M inside the node; boundary RS over 8 ranks of M/4 (stride 4: across
  // nodes), then the updated-parameter gather over 8 ranks of M/4 (across nodes).
  const double m = costs.params_per_rank * 2.0;
  EXPECT_NEAR(o.bytes[0], 3.0 * 0.75 * m + 9.0 * c.model.hidden * 2.0 * 0.75, 1e-6 * m);  // + the norms, as above
  EXPECT_NEAR(o.bytes[1], 2.0 * 7.0 / 8 * m / 4 + 2 * 4.0 * 31.0 / 32 / 4, 1e-6 * m);
}

// InternEvo's overlap_sync_param: the sync of updated parameters leaves the end of the step for the next forward,
// which waits for it unit by unit. The same bytes over the same ranks; each unit's first forward work starts after
// its own piece; the step no longer ends with a gather; the iteration is no longer for it.
TEST(PartitionedStrategy, OverlappedParameterSyncIsWaitedForByTheForward) {
  Case c(8, 3, 2);
  c.plan.partition = core::PartitionSpec{4, 4, 32, 0};
  const auto at_step = c.run(PartitionedStrategy());
  Case o = c;
  o.plan.overlap_sync_param = true;
  const auto in_forward = o.run(PartitionedStrategy());
  EXPECT_NEAR(in_forward.bytes[1], at_step.bytes[1], 1e-6 * at_step.bytes[1]);
  EXPECT_NEAR(in_forward.bytes[0], at_step.bytes[0], 1e-6 * at_step.bytes[0]);
  EXPECT_LT(in_forward.time, at_step.time);

  const ModelCosts costs = compute_model_costs(o.model, o.plan);
  graph::TaskGraph g;
  PartitionedStrategy().lower(LoweringInput{o.model, o.cluster, o.plan, costs}, g);
  engine::AnalyticalEngine eng(o.cluster, o.plan.algorithm);
  engine::EngineOptions keep;
  keep.keep_timings = true;
  const auto r = eng.run(g, keep);
  std::map<int, double> sync_end, first_forward_work;
  double sync_bytes = 0.0, optimizer_end = 0.0;
  for (std::size_t i = 0; i < g.tasks().size(); ++i) {
    const auto& t = g.tasks()[i];
    const auto& tm = r.timings[i];
    if (t.purpose == Purpose::kParamUpdateGather && t.stream == graph::Stream::kParamSync) {
      sync_end[t.unit] = tm.end_s;
      sync_bytes += t.bytes;
    }
    if (t.micro == 0 && (t.purpose == Purpose::kParamGatherFwd ||
                         (t.kind == graph::TaskKind::kCompute && t.phase == graph::Phase::kForward))) {
      auto [it, fresh] = first_forward_work.try_emplace(t.unit, tm.start_s);
      if (!fresh) it->second = std::min(it->second, tm.start_s);
    }
    if (t.kind == graph::TaskKind::kCompute && t.phase == graph::Phase::kOptimizer) optimizer_end = tm.end_s;
  }
  ASSERT_EQ(sync_end.size(), costs.units.size());
  EXPECT_NEAR(sync_bytes, costs.params_per_rank / 4 * 2.0, 1e-6 * sync_bytes);
  for (const auto& [u, end] : sync_end) EXPECT_GE(first_forward_work.at(u), end - 1e-12) << "unit " << u;
  // After the step only DeepSpeed's persistent parameters are gathered again (its own rule, stage3.py _post_step).
  double after_step = 0.0;
  for (std::size_t i = 0; i < g.tasks().size(); ++i) {
    const auto& t = g.tasks()[i];
    if (t.kind == graph::TaskKind::kCollective && r.timings[i].start_s >= optimizer_end - 1e-12) after_step += t.bytes;
  }
  EXPECT_GT(costs.fetch.persistent_elements, 0.0);
  EXPECT_NEAR(after_step, costs.fetch.persistent_elements * 2.0, 1.0);
}

// InternEvo's HybridZeroOptimizer (plan.param_sync broadcast, reduce_scatter false): the gradient buckets all-reduced
// over the data-parallel group, and after the step each of the zero1 group's owners broadcasts its updated shard, one
// call each: the same bytes as DeepSpeed's all-gather of the shards, but a ring's steps per owner, so more latency
// (here 8 owners over 32 ranks). With overlap_sync_param each unit's owners broadcast its part, as many as its tensors.
TEST(PartitionedStrategy, InternEvoBroadcastsEachOwnersUpdatedParameters) {
  Case c(4, 1, 2);
  c.plan.partition = core::PartitionSpec{1, 1, 8, 0};
  c.plan.reduce_scatter = false;
  const auto gathered = c.run(PartitionedStrategy());
  Case b = c;
  b.plan.param_sync = core::ParamSync::kBroadcast;
  const auto broadcast = b.run(PartitionedStrategy());
  EXPECT_GT(broadcast.time, gathered.time);
  const ModelCosts costs = compute_model_costs(b.model, b.plan);
  graph::TaskGraph g;
  PartitionedStrategy().lower(LoweringInput{b.model, b.cluster, b.plan, costs}, g);
  int broadcasts = 0, reductions = 0;
  for (const auto& t : g.tasks()) {
    if (t.kind != graph::TaskKind::kCollective) continue;
    if (t.purpose == Purpose::kParamUpdateGather) {
      EXPECT_EQ(t.op, graph::CollectiveOp::kBroadcast);
      EXPECT_EQ(t.calls, 8u);
      EXPECT_NEAR(t.bytes, costs.params_per_rank * 2.0, 1.0);  // each owner's eighth, to every rank
      ++broadcasts;
    }
    if (t.purpose == Purpose::kGradReduce) {
      // One all-reduce of each bucket over every data-parallel rank (utils.py reduce_tensor over ParallelMode.DATA).
      EXPECT_EQ(t.op, graph::CollectiveOp::kAllReduce);
      EXPECT_EQ(g.groups().at(t.group).name, "dp");
      ++reductions;
    }
  }
  EXPECT_EQ(broadcasts, 1);
  EXPECT_GT(reductions, 0);
  b.plan.overlap_sync_param = true;
  graph::TaskGraph per_unit;
  PartitionedStrategy().lower(LoweringInput{b.model, b.cluster, b.plan, costs}, per_unit);
  std::size_t units = 0;
  for (const auto& t : per_unit.tasks()) {
    if (t.purpose != Purpose::kParamUpdateGather) continue;
    const auto& u = costs.units.at(static_cast<std::size_t>(t.unit));
    EXPECT_EQ(t.op, graph::CollectiveOp::kBroadcast);
    EXPECT_EQ(t.calls, static_cast<std::uint32_t>(std::min(u.tensors, 8)));
    ++units;
  }
  EXPECT_EQ(units, costs.units.size());
}

// A process group's collectives run one at a time, in the order they are issued (PyTorch's ProcessGroupNCCL: one
// NCCL stream per group and device). DeepSpeed ZeRO-3 under Megatron's model-parallel unit and FSDP gather and
// reduce on one group: no gather overlaps a reduce-scatter, and the iteration is at least as long as with DeepSpeed's
// two groups (the world group for gathers, a clone of it for reductions), where they may run side by side.
TEST(PartitionedStrategy, GathersAndReductionsOfOneProcessGroupRunOneAtATime) {
  auto lower_and_run = [](const Case& c, bool expect_shared) {
    const ModelCosts costs = compute_model_costs(c.model, c.plan);
    graph::TaskGraph g;
    PartitionedStrategy().lower(LoweringInput{c.model, c.cluster, c.plan, costs}, g);
    const auto r = engine::AnalyticalEngine(c.cluster, c.plan.algorithm).run(g);
    std::vector<std::pair<double, double>> gathers, reductions;
    for (graph::TaskId i = 0; i < g.size(); ++i) {
      const auto& t = g.tasks()[i];
      if (t.kind != graph::TaskKind::kCollective) continue;
      const bool gather = t.purpose == Purpose::kParamGatherFwd || t.purpose == Purpose::kParamGatherBwd;
      if (!gather && t.purpose != Purpose::kGradReduce) continue;
      EXPECT_EQ(t.stream == graph::Stream::kGroupNccl, expect_shared) << g.label(i);
      (gather ? gathers : reductions).emplace_back(r.timings[i].start_s, r.timings[i].end_s);
    }
    int overlapping = 0;
    for (const auto& a : gathers) {
      for (const auto& b : reductions) overlapping += a.first < b.second - 1e-12 && b.first < a.second - 1e-12;
    }
    return std::pair(r.iteration_time.value(), overlapping);
  };
  Case c(2, 3, 2);
  c.model.layers = 16;
  c.cluster.levels[1].link_bandwidth = core::BytesPerSec(2e9);  // a slow network: the gathers run into the reductions
  c.plan.overlap_comm = true;
  c.plan.model_code = core::ModelCode::kHuggingFace;
  const auto [separate_s, side_by_side] = lower_and_run(c, false);
  EXPECT_GT(side_by_side, 0);  // two process groups: the premise of the comparison
  c.plan.model_code = core::ModelCode::kMegatron;
  const auto [shared_s, overlapping] = lower_and_run(c, true);
  EXPECT_EQ(overlapping, 0);
  EXPECT_GT(shared_s, separate_s * 1.05);
  c.plan.shared_dp_group = false;  // a script that gives DeepSpeed no model-parallel unit
  EXPECT_NEAR(lower_and_run(c, false).first, separate_s, 0.05 * separate_s);
  c.plan.shared_dp_group.reset();
  c.plan.framework = core::Framework::kFsdp;
  c.plan.model_code.reset();
  EXPECT_EQ(lower_and_run(c, true).second, 0);
}

TEST(PartitionedStrategy, MemoryEventsBalanceAndPeakStaysUnderTheStaticModel) {
  Case c(4, 3, 2);
  c.plan.partition = core::PartitionSpec{16, 16, 16, 4};
  c.plan.quantization.weights = true;
  c.plan.quantization.gradients = true;
  c.plan.quantization.gradient_hops = {0, 1};
  const ModelCosts costs = compute_model_costs(c.model, c.plan);
  graph::TaskGraph g;
  PartitionedStrategy().lower(LoweringInput{c.model, c.cluster, c.plan, costs}, g);
  double net = 0.0;
  for (const auto& e : g.mem_events()) net += e.bytes;
  EXPECT_NEAR(net, 0.0, 1e-3);
  engine::AnalyticalEngine eng(c.cluster, core::CollectiveAlgorithm::kAuto);
  const auto r = eng.run(g);
  EXPECT_LE(r.roles[0].peak_memory_bytes, estimate_memory(c.model, c.cluster, c.plan, costs).total.value());
}

}  // namespace
}  // namespace shardsim::strategies

namespace shardsim::strategies {
namespace {

// ZeRO-Offload as DeepSpeed 0.14's ZeRO-1/2 runs it: the gradients converted to fp32 on the device and sent
// (stage_1_and_2.py async_inplace_copy_grad_to_fp32_buffer_from_gpu), the updated fp32 partition back from pinned
// memory and cast on the device (from 0.14.1, PR #5301): 8 Psi bytes per step over PCIe for the whole model (here
// per rank: 8 Psi / N; the paper's 4 Psi counts 16-bit gradients and parameters), while the 12-byte Adam states
// and fp32 gradients live in host memory. CPU Adam is one host task, with no staging of the copy back.
TEST(Offload, MovesTheOptimizerToTheHostAndEightPsiOverPcie) {
  Case c(2, 2, 1);
  c.resolve_zero();
  c.plan.offload.optimizer = true;
  const ModelCosts costs = compute_model_costs(c.model, c.plan);
  const double n = 8, psi = costs.params_per_rank;
  const auto mb = estimate_memory(c.model, c.cluster, c.plan, costs);
  EXPECT_DOUBLE_EQ(mb.items[2].bytes.value(), 0.0);                  // no optimizer states on the device
  EXPECT_NEAR(mb.host_bytes, (12.0 + 4.0) * psi / n, 1.0);           // Adam states + fp32 gradients
  graph::TaskGraph g;
  PartitionedStrategy().lower(LoweringInput{c.model, c.cluster, c.plan, costs}, g);
  double down = 0.0, up = 0.0;
  int cpu = 0, staging = 0;
  for (const auto& t : g.tasks()) {
    // (Device-to-host copies run on the stream that reduced the bucket: the compute stream without overlap_comm.)
    if (t.kind == graph::TaskKind::kCopy && t.stream != graph::Stream::kHostToDevice) down += t.bytes;
    if (t.kind == graph::TaskKind::kCopy && t.stream == graph::Stream::kHostToDevice) up += t.bytes;
    if (t.kind == graph::TaskKind::kHostCompute && t.purpose == Purpose::kOffload) {  // not the framework thread
      ++(t.time_s >= 0.0 ? staging : cpu);
    }
  }
  // fp32 gradients down; the fp32 partition up from pinned memory and cast on the device (DeepSpeed 0.14.1 on),
  // with no host staging.
  EXPECT_NEAR(down, 4.0 * psi / n, 1e-6 * psi);
  EXPECT_NEAR(up, 4.0 * psi / n, 1e-6 * psi);
  EXPECT_EQ(cpu, 1);
  EXPECT_EQ(staging, 0);
  engine::AnalyticalEngine eng(c.cluster, core::CollectiveAlgorithm::kAuto);
  const auto r = eng.run(g);
  EXPECT_GT(r.roles[0].comm_by_purpose[static_cast<std::size_t>(Purpose::kOffload)].value(), 0.0);
  EXPECT_LE(r.roles[0].peak_memory_bytes, mb.total.value());
  EXPECT_EQ(describe_partition(c.plan), "zero-2 + offload");
}

// ZeRO-Offload's own case: ZeRO-3 on one rank, two micro-batches, the optimizer on the host.
Case one_rank_offload() {
  Case c(1, 3, 2);
  c.cluster = testing::flat(1);
  c.plan.dp = 1;
  c.plan.global_batch = 2;
  c.resolve_zero();
  c.plan.offload.optimizer = true;
  return c;
}

// The one-step delayed update (ZeRO-Offload paper, Sec. 4.3): CPU Adam on the previous iteration's gradients runs
// beside this iteration's forward and backward, so the iteration takes about the longer of the two, not their sum.
TEST(Offload, DelayedUpdateOverlapsTheStepWithTheNextIteration) {
  Case c = one_rank_offload();
  auto run = [&](bool delayed, double& cpu_start, double& cpu_s, double& backward_end) {
    c.plan.offload.delayed_update = delayed;
    const ModelCosts costs = compute_model_costs(c.model, c.plan);
    graph::TaskGraph g;
    PartitionedStrategy().lower(LoweringInput{c.model, c.cluster, c.plan, costs}, g);
    engine::AnalyticalEngine eng(c.cluster, core::CollectiveAlgorithm::kAuto);
    const auto r = eng.run(g);
    backward_end = 0.0;
    for (std::size_t t = 0; t < g.tasks().size(); ++t) {
      const auto& task = g.tasks()[t];
      if (task.kind == graph::TaskKind::kCompute && task.phase == graph::Phase::kBackward) {
        backward_end = std::max(backward_end, r.timings[t].end_s);
      }
      if (task.kind == graph::TaskKind::kHostCompute && task.time_s < 0.0) {  // CPU Adam (memory-bound)
        cpu_start = r.timings[t].start_s;
        cpu_s = r.timings[t].end_s - r.timings[t].start_s;
      }
    }
    return r.iteration_time.value();
  };
  double start = 0.0, cpu = 0.0, bwd = 0.0;
  const double plain = run(false, start, cpu, bwd);
  EXPECT_GE(start, bwd);
  const double delayed = run(true, start, cpu, bwd);
  EXPECT_LT(start, bwd);  // CPU Adam runs beside the backward now
  EXPECT_LT(delayed, plain - 0.5 * std::min(cpu, bwd));
  EXPECT_GE(delayed, std::max(cpu, bwd) * 0.999);
}

// ZeRO-Infinity with the optimizer on NVMe (DeepSpeed 0.14 stage3.py step): each sub-group's fp32 parameters,
// momentum, variance and gradients read before CPU Adam and written back after, the fp32 gradients written at the
// boundary; the host keeps only the swapper's buffers. Slower drives take longer; the pipelined swapper hides
// the reads and writes behind CPU Adam where there are several sub-groups.
TEST(Offload, NvmeSwapsTheOptimizerAroundCpuAdam) {
  Case c(1, 3, 1);
  c.resolve_zero();
  c.plan.offload.optimizer = true;
  c.plan.offload.optimizer_nvme = true;
  c.cluster.host.nvme_read = core::BytesPerSec(24e9);
  c.cluster.host.nvme_write = core::BytesPerSec(12e9);
  const ModelCosts costs = compute_model_costs(c.model, c.plan);
  const double n = c.cluster.total_devices(), psi = costs.params_per_rank;
  const auto mb = estimate_memory(c.model, c.cluster, c.plan, costs);
  EXPECT_NEAR(mb.nvme_bytes, (12.0 + 4.0) * psi / n, 1.0);
  EXPECT_NEAR(mb.host_bytes, 4.0 * 4.0 * psi / n, 1.0);  // 4 buffers of the one sub-group's fp32 values
  EXPECT_EQ(describe_partition(c.plan), "zero-3 + offload to nvme");
  const double with_nvme = c.run(PartitionedStrategy()).time;
  // The swap's share: read 16 and write 12 bytes per element in the step, 4 more written at the boundary, at the
  // device's share of the node's drives.
  const double per = c.cluster.devices_per_node;
  const double swap = psi / n * (16.0 / (24e9 / per) + 16.0 / (12e9 / per));
  Case cpu = c;
  cpu.plan.offload.optimizer_nvme = false;
  EXPECT_NEAR(with_nvme - cpu.run(PartitionedStrategy()).time, swap, 0.35 * swap);
  Case slow = c;
  slow.cluster.host.nvme_read = core::BytesPerSec(6e9);
  slow.cluster.host.nvme_write = core::BytesPerSec(3e9);
  EXPECT_GT(slow.run(PartitionedStrategy()).time, with_nvme + 2.0 * swap);
  Case pipelined = c;
  pipelined.plan.offload.sub_group = psi / n / 8.0;
  const double serial = pipelined.run(PartitionedStrategy()).time;
  pipelined.plan.offload.pipeline = true;
  EXPECT_LT(pipelined.run(PartitionedStrategy()).time, serial);
}

// ZeRO-Offload's own case, a large model on one GPU: the gradients still leave by bucket during backward, and CPU
// Adam runs after backward (DeepSpeed's step(); no delayed update), however short the backward is. (The
// offload-polaris validation set found CPU Adam starting with the forward pass on one rank.) ZeRO-3's
// partition_grads sends each micro-batch's 16-bit gradients to its pinned host buffer and back, and at the
// accumulation boundary once more, through a pageable temporary, into the fp32 host gradients; the host waits for
// that copy before it runs the backward on.
TEST(Offload, OneRankCopiesGradientsAndStepsAfterBackward) {
  Case c = one_rank_offload();
  const ModelCosts costs = compute_model_costs(c.model, c.plan);
  graph::TaskGraph g;
  PartitionedStrategy().lower(LoweringInput{c.model, c.cluster, c.plan, costs}, g);
  engine::AnalyticalEngine eng(c.cluster, core::CollectiveAlgorithm::kAuto);
  const auto r = eng.run(g);
  double down = 0.0, backward_end = 0.0, cpu_start = -1.0;
  for (std::size_t t = 0; t < g.tasks().size(); ++t) {
    const auto& task = g.tasks()[t];
    if (task.kind == graph::TaskKind::kCopy && task.stream == graph::Stream::kDeviceToHost) down += task.bytes;
    if (task.kind == graph::TaskKind::kCompute && task.phase == graph::Phase::kBackward) {
      backward_end = std::max(backward_end, r.timings[t].end_s);
    }
    if (task.kind == graph::TaskKind::kHostCompute) cpu_start = r.timings[t].start_s;
  }
  const double micros = c.plan.grad_accumulation();
  EXPECT_NEAR(down, (2.0 * micros + 2.0) * costs.params_per_rank, 1e-6 * costs.params_per_rank);
  EXPECT_GE(cpu_start, backward_end);
  // The backward's host work after a boundary copy waits for it.
  bool blocked = false;
  for (std::size_t t = 0; t < g.tasks().size(); ++t) {
    const auto& task = g.tasks()[t];
    if (task.kind != graph::TaskKind::kHostCompute || task.purpose != Purpose::kOffload || task.time_s < 0.0 ||
        task.phase != graph::Phase::kBackward) {
      continue;
    }
    for (graph::TaskId d : g.deps(static_cast<graph::TaskId>(t))) {
      blocked |= g.tasks()[d].kind == graph::TaskKind::kCopy && g.tasks()[d].stream == graph::Stream::kDeviceToHost;
    }
  }
  EXPECT_TRUE(blocked);
}

// ZeRO-3 Offload stages each gradient partition to the host through a pageable temporary (PyTorch's copy_ across
// devices and dtypes); glibc gives one of 32 MiB or more fresh memory every time, which the driver's copy faults in
// page by page: the staging costs host.page_fault per 4 KiB page of those partitions and nothing for smaller ones.
TEST(Offload, FreshHostTemporariesCostAPageFaultPerPage) {
  // The backward's offload staging on the host, seconds, for `dp` ranks and a time per page fault.
  auto staging_s = [](int dp, double fault) {
    Case c(1, 3, 1);
    c.cluster = testing::flat(dp);
    c.cluster.host.page_fault = core::Seconds(fault);
    c.plan.dp = dp;
    c.plan.global_batch = dp;
    c.resolve_zero();
    c.plan.offload.optimizer = true;
    const ModelCosts costs = compute_model_costs(c.model, c.plan);
    graph::TaskGraph g;
    PartitionedStrategy().lower(LoweringInput{c.model, c.cluster, c.plan, costs}, g);
    double s = 0.0;
    for (const auto& t : g.tasks()) {
      if (t.kind == graph::TaskKind::kHostCompute && t.purpose == Purpose::kOffload &&
          t.phase == graph::Phase::kBackward && t.time_s >= 0.0) {
        s += t.time_s;
      }
    }
    return s;
  };
  const double fault = 1e-6;
  auto faults_s = [&](double elements) { return elements * 2.0 / 4096.0 * fault; };  // bf16 pages
  // LLaMA-2-7B's shapes, 4 layers: on one rank every matrix is 32 MiB or more in bf16 (4096 x 4096 is 32 MiB).
  const double attention = 4.0 * 4.0 * 4096.0 * 4096.0;
  const double mlp = 4.0 * 3.0 * 4096.0 * 11008.0;
  const double tables = 2.0 * 32000.0 * 4096.0;  // the embedding and the untied head
  EXPECT_NEAR(staging_s(1, fault) - staging_s(1, 0.0), faults_s(attention + mlp + tables), 1e-9);
  // Halves: the attention matrices' 16 MiB are reused memory, the MLP's 45 MB and the tables' 131 MB fresh.
  EXPECT_NEAR(staging_s(2, fault) - staging_s(2, 0.0), faults_s((mlp + tables) / 2.0), 1e-9);
  // Quarters: only the tables' 65.5 MB; eighths: 31.25 MiB, none.
  EXPECT_NEAR(staging_s(4, fault) - staging_s(4, 0.0), faults_s(tables / 4.0), 1e-9);
  EXPECT_NEAR(staging_s(8, fault) - staging_s(8, 0.0), 0.0, 1e-12);
}

// ZeRO-3 with the parameters offloaded too (DeepSpeed's offload_param: cpu): no parameters on the device; every
// unit's partition comes from the host before each gather, forward and backward, and CPU Adam writes the 16-bit
// partition on the host, so nothing goes back up after the step.
TEST(Offload, OffloadedParametersComeFromTheHostBeforeEachGather) {
  Case c(1, 3, 1);
  c.resolve_zero();
  c.plan.offload.optimizer = true;
  c.plan.offload.params = true;
  const ModelCosts costs = compute_model_costs(c.model, c.plan);
  const double n = c.plan.dp, psi = costs.params_per_rank;
  const auto mb = estimate_memory(c.model, c.cluster, c.plan, costs);
  EXPECT_DOUBLE_EQ(mb.items[0].bytes.value(), 0.0);
  EXPECT_NEAR(mb.host_bytes, (12.0 + 4.0 + 2.0) * psi / n, 1.0);
  graph::TaskGraph g;
  PartitionedStrategy().lower(LoweringInput{c.model, c.cluster, c.plan, costs}, g);
  double up = 0.0;
  for (const auto& t : g.tasks()) {
    if (t.kind != graph::TaskKind::kCopy || t.stream != graph::Stream::kHostToDevice) continue;
    EXPECT_GE(t.micro, 0) << "an upload after the step";
    up += t.bytes;
  }
  // The 16-bit partition twice (forward and backward gathers), and the gradient shards back for their norm.
  EXPECT_NEAR(up, 2.0 * 2.0 * psi / n + 2.0 * psi / n, 1e-6 * psi);
  EXPECT_EQ(describe_partition(c.plan), "zero-3 + offload + parameters");
}

TEST(Offload, HalfOffloadKeepsHalfTheOptimizerOnTheDevice) {
  Case c(2, 1, 1);
  c.resolve_zero();
  c.plan.offload = core::OffloadSpec{true, 0.5};
  const ModelCosts costs = compute_model_costs(c.model, c.plan);
  const auto mb = estimate_memory(c.model, c.cluster, c.plan, costs);
  EXPECT_NEAR(mb.items[2].bytes.value(), 0.5 * 12.0 * costs.params_per_rank / 8, 1.0);
}

}  // namespace
}  // namespace shardsim::strategies
