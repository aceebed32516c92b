#include "sim/engine/analytical_engine.hpp"

#include <gtest/gtest.h>

#include "tests/test_clusters.hpp"
#include "topology/placement.hpp"

namespace shardsim::engine {
namespace {

using graph::CollectiveOp;
using graph::Phase;
using graph::Purpose;
using graph::Stream;

// Device: 100 TFLOP/s x 0.5 = 50 TFLOP/s effective: 50e12 FLOPs take 1 s.
constexpr double kOneSecond = 50e12;

struct Fixture {
  core::ClusterSpec cluster = testing::flat(8);
  graph::TaskGraph g;
  std::uint16_t role = 0;
  std::uint16_t group = 0;
  Fixture() {
    role = g.add_role("rank");
    group = g.add_group({"dp", topology::strided_group_shape(cluster, 8, 1)});
  }
  // A collective taking exactly `seconds` on the flat cluster: all-gather, 7/8 M / 50 GB/s + 7 us.
  graph::TaskId gather(Stream s, double seconds, Purpose p = Purpose::kParamGatherFwd) {
    const double m = (seconds - 7e-6) * 50e9 * 8.0 / 7.0;
    return g.add_collective(role, s, CollectiveOp::kAllGather, p, group, core::Bytes(m), 0, 0);
  }
};

TEST(AnalyticalEngine, StreamsRunInOrderAndOverlapEachOther) {
  Fixture f;
  const auto c1 = f.g.add_compute(f.role, Phase::kForward, 1, 0, core::Flops(kOneSecond), core::Bytes(0));
  const auto a = f.gather(Stream::kParamGather, 0.5);  // runs beside c1
  const auto c2 = f.g.add_compute(f.role, Phase::kForward, 2, 0, core::Flops(kOneSecond), core::Bytes(0));
  f.g.add_dep(c2, a);
  AnalyticalEngine eng(f.cluster, core::CollectiveAlgorithm::kRing);
  const RunResult r = eng.run(f.g);
  EXPECT_DOUBLE_EQ(r.timings[c1].start_s, 0.0);
  EXPECT_NEAR(r.timings[a].start_s, 0.0, 1e-15);
  EXPECT_NEAR(r.timings[a].end_s, 0.5, 1e-12);
  EXPECT_NEAR(r.timings[c2].start_s, 1.0, 1e-12);  // stream order, not the gather, holds it
  EXPECT_NEAR(r.iteration_time.value(), 2.0, 1e-12);
  const auto& b = r.roles[0];
  EXPECT_NEAR(b.compute_busy.value(), 2.0, 1e-12);
  EXPECT_NEAR(b.comm_busy.value(), 0.5, 1e-12);
  EXPECT_NEAR(b.exposed_comm.value(), 0.0, 1e-12);
  EXPECT_NEAR(b.hidden_comm().value(), 0.5, 1e-12);
}

TEST(AnalyticalEngine, ComputeSlowsWhileACollectiveRunsBesideIt) {
  Fixture f;
  f.cluster.device.comm_compute_slowdown = 1.5;
  const auto c1 = f.g.add_compute(f.role, Phase::kForward, 1, 0, core::Flops(kOneSecond), core::Bytes(0));
  const auto a = f.gather(Stream::kParamGather, 0.5);  // beside the first 0.5 s of c1
  const auto c2 = f.g.add_compute(f.role, Phase::kForward, 2, 0, core::Flops(kOneSecond), core::Bytes(0));
  f.g.add_dep(c2, a);
  AnalyticalEngine eng(f.cluster, core::CollectiveAlgorithm::kRing);
  const RunResult r = eng.run(f.g);
  // c1 does 0.5 / 1.5 s of its work while the gather runs, the rest at full speed: it ends at 0.5 + 2/3.
  EXPECT_NEAR(r.timings[a].end_s, 0.5, 1e-12);
  EXPECT_NEAR(r.timings[c1].end_s, 0.5 + (1.0 - 0.5 / 1.5), 1e-12);
  EXPECT_NEAR(r.timings[c2].end_s, r.timings[c1].end_s + 1.0, 1e-12);  // nothing beside it
  f.cluster.device.comm_compute_slowdown = 1.0;
  AnalyticalEngine plain(f.cluster, core::CollectiveAlgorithm::kRing);
  EXPECT_NEAR(plain.run(f.g).iteration_time.value(), 2.0, 1e-12);
}

// Without the breakdown (a plan search's run) the engine gives the same iteration time, with and without a slowdown,
// and leaves the per-role parts, the timings and the memory timeline empty.
TEST(AnalyticalEngine, ARunWithoutBreakdownGivesTheSameIterationTimeAndNothingElse) {
  for (double slowdown : {1.0, 1.5}) {
    Fixture f;
    f.cluster.device.comm_compute_slowdown = slowdown;
    f.g.add_compute(f.role, Phase::kForward, 1, 0, core::Flops(kOneSecond), core::Bytes(0));
    const auto a = f.gather(Stream::kParamGather, 0.5);
    const auto c2 = f.g.add_compute(f.role, Phase::kForward, 2, 0, core::Flops(kOneSecond), core::Bytes(0));
    f.g.add_dep(c2, a);
    AnalyticalEngine eng(f.cluster, core::CollectiveAlgorithm::kRing);
    const RunResult full = eng.run(f.g);
    EngineOptions opts;
    opts.breakdown = false;
    RunResult r = full;  // a reused result: what an earlier run left in it goes
    eng.run(f.g, opts, r);
    EXPECT_EQ(r.iteration_time.value(), full.iteration_time.value());
    EXPECT_GT(full.iteration_time.value(), 2.0 - 1e-12);
    EXPECT_FALSE(full.roles.empty());
    EXPECT_TRUE(r.roles.empty());
    EXPECT_TRUE(r.timings.empty());
    EXPECT_TRUE(r.memory.empty());
  }
}

// A communication kernel (a gather's copy out, on the gather stream) slows the compute stream's kernels beside it as
// a collective does, and runs at its own speed beside them; beside a collective it slows too.
TEST(AnalyticalEngine, ComputeSlowsBesideCommunicationKernels) {
  Fixture f;
  f.cluster.device.comm_compute_slowdown = 1.5;
  const auto c1 = f.g.add_compute(f.role, Phase::kForward, 1, 0, core::Flops(kOneSecond), core::Bytes(0));
  const auto k = f.g.add_kernel(f.role, Stream::kParamGather, Purpose::kParamGatherFwd, 1, 0, core::Bytes(4e11));
  AnalyticalEngine eng(f.cluster, core::CollectiveAlgorithm::kRing);
  const double d = eng.duration(f.g, f.g.tasks()[k]).value();
  ASSERT_GT(d, 0.1);
  ASSERT_LT(d, 0.9);
  const RunResult r = eng.run(f.g);
  EXPECT_NEAR(r.timings[k].end_s, d, 1e-12);                       // unslowed beside compute
  EXPECT_NEAR(r.timings[c1].end_s, d + (1.0 - d / 1.5), 1e-12);  // slowed while it runs
  // The breakdown says what the slowdown added to compute.
  EXPECT_NEAR(r.roles[0].compute_slowed.value(), r.timings[c1].end_s - 1.0, 1e-12);
  // Beside a collective the kernel slows: the same kernel after a gather on the reduction stream.
  Fixture h;
  h.cluster.device.comm_compute_slowdown = 1.5;
  h.gather(Stream::kGradReduce, 2.0, Purpose::kGradReduce);
  const auto k2 = h.g.add_kernel(h.role, Stream::kParamGather, Purpose::kParamGatherFwd, 1, 0, core::Bytes(4e11));
  AnalyticalEngine eng2(h.cluster, core::CollectiveAlgorithm::kRing);
  EXPECT_NEAR(eng2.run(h.g).timings[k2].end_s, 1.5 * d, 1e-9);
}

TEST(AnalyticalEngine, CommunicationOnTheCriticalPathIsExposed) {
  Fixture f;
  const auto a = f.gather(Stream::kParamGather, 0.25);
  const auto c = f.g.add_compute(f.role, Phase::kForward, 1, 0, core::Flops(kOneSecond), core::Bytes(0));
  f.g.add_dep(c, a);
  const auto r2 = f.gather(Stream::kGradReduce, 0.75, Purpose::kGradReduce);
  f.g.add_dep(r2, c);
  AnalyticalEngine eng(f.cluster, core::CollectiveAlgorithm::kRing);
  const RunResult r = eng.run(f.g);
  EXPECT_NEAR(r.iteration_time.value(), 2.0, 1e-12);
  const auto& b = r.roles[0];
  EXPECT_NEAR(b.exposed_comm.value(), 1.0, 1e-12);
  EXPECT_NEAR(b.exposed_by_purpose[static_cast<std::size_t>(Purpose::kParamGatherFwd)].value(), 0.25, 1e-12);
  EXPECT_NEAR(b.exposed_by_purpose[static_cast<std::size_t>(Purpose::kGradReduce)].value(), 0.75, 1e-12);
  EXPECT_NEAR(b.idle.value(), 0.0, 1e-12);
}

// A framework's host thread: compute waits for the hooks that issue it. Host work the GPU waits on is exposed
// host work, not communication; host work beside compute is hidden; the four parts add up to the iteration.
TEST(AnalyticalEngine, HostWorkTheComputeWaitsForIsExposedApartFromCommunication) {
  Fixture f;
  const auto h1 = f.g.add_host_work(f.role, Purpose::kFramework, Phase::kForward, core::Seconds(0.5), 0, 0);
  const auto c1 = f.g.add_compute(f.role, Phase::kForward, 0, 0, core::Flops(kOneSecond), core::Bytes(0));
  f.g.add_dep(c1, h1);
  const auto h2 = f.g.add_host_work(f.role, Purpose::kFramework, Phase::kForward, core::Seconds(0.25), 1, 0);
  const auto c2 = f.g.add_compute(f.role, Phase::kForward, 1, 0, core::Flops(kOneSecond), core::Bytes(0));
  f.g.add_dep(c2, h2);
  AnalyticalEngine eng(f.cluster, core::CollectiveAlgorithm::kRing);
  const RunResult r = eng.run(f.g);
  EXPECT_NEAR(r.timings[h2].start_s, 0.5, 1e-12);  // the host runs ahead of the GPU
  EXPECT_NEAR(r.iteration_time.value(), 2.5, 1e-12);
  const auto& b = r.roles[0];
  EXPECT_NEAR(b.host_busy.value(), 0.75, 1e-12);
  EXPECT_NEAR(b.exposed_host.value(), 0.5, 1e-12);
  EXPECT_NEAR(b.exposed_host_by_purpose[static_cast<std::size_t>(Purpose::kFramework)].value(), 0.5, 1e-12);
  EXPECT_NEAR(b.comm_busy.value(), 0.0, 1e-12);
  EXPECT_NEAR(b.exposed_comm.value(), 0.0, 1e-12);
  EXPECT_NEAR((b.compute_busy + b.exposed_comm + b.exposed_host + b.idle).value(), 2.5, 1e-12);
}

// CUDA_LAUNCH_BLOCKING=1: the same two blocks, but the framework thread waits for what it launched, the gather on
// its side stream included, so host and device take turns: 0.5 + 1 + 0.25 + 1 s instead of 2.5 s.
TEST(AnalyticalEngine, UnderLaunchBlockingTheHostWaitsForEverythingItLaunched) {
  Fixture f;
  f.g.launch_blocking = true;
  const auto h1 = f.g.add_host_work(f.role, Purpose::kFramework, Phase::kForward, core::Seconds(0.5), 0, 0);
  EXPECT_TRUE(f.g.deps(h1).empty());
  const auto c1 = f.g.add_compute(f.role, Phase::kForward, 0, 0, core::Flops(kOneSecond), core::Bytes(0));
  f.g.add_dep(c1, h1);
  const auto a = f.gather(Stream::kParamGather, 1.2);
  f.g.add_dep(a, h1);
  const auto h2 = f.g.add_host_work(f.role, Purpose::kFramework, Phase::kForward, core::Seconds(0.25), 1, 0);
  ASSERT_EQ(f.g.deps(h2).size(), 2u);  // the last task of each device stream it launched on
  const auto c2 = f.g.add_compute(f.role, Phase::kForward, 1, 0, core::Flops(kOneSecond), core::Bytes(0));
  f.g.add_dep(c2, h2);
  // The step's second host stream (a delayed update) is not the launching thread: it waits for nothing extra.
  const auto step = f.g.add_host_work(f.role, Purpose::kOffload, Phase::kOptimizer, core::Seconds(0.1), -1, -1,
                                      Stream::kHostStep);
  EXPECT_TRUE(f.g.deps(step).empty());
  AnalyticalEngine eng(f.cluster, core::CollectiveAlgorithm::kRing);
  const RunResult r = eng.run(f.g);
  EXPECT_NEAR(r.timings[h2].start_s, 1.7, 1e-9);  // after the gather (0.5 + 1.2), not after c1 (1.5)
  EXPECT_NEAR(r.iteration_time.value(), 2.95, 1e-9);
  f.g.clear();
  EXPECT_FALSE(f.g.launch_blocking);  // a re-lowered plan starts without it
}

TEST(AnalyticalEngine, OverlappingCollectivesOnTwoStreamsAreCountedOnce) {
  Fixture f;
  f.gather(Stream::kParamGather, 1.0);
  f.gather(Stream::kGradReduce, 1.0, Purpose::kGradReduce);
  AnalyticalEngine eng(f.cluster, core::CollectiveAlgorithm::kRing);
  const RunResult r = eng.run(f.g);
  EXPECT_NEAR(r.roles[0].comm_busy.value(), 1.0, 1e-12);
  EXPECT_NEAR(r.roles[0].exposed_comm.value(), 1.0, 1e-12);
  EXPECT_NEAR(r.roles[0].comm_by_purpose[static_cast<std::size_t>(Purpose::kParamGatherFwd)].value(), 1.0, 1e-12);
}

TEST(AnalyticalEngine, MemoryTimelineTracksAllocationsAndFrees) {
  Fixture f;
  f.g.set_baseline(f.role, {.reserved = 100.0});
  const auto c1 = f.g.add_compute(f.role, Phase::kForward, 1, 0, core::Flops(kOneSecond), core::Bytes(0));
  f.g.add_mem(c1, false, graph::MemKind::kActivations, core::Bytes(50));
  const auto c2 = f.g.add_compute(f.role, Phase::kBackward, 1, 0, core::Flops(kOneSecond), core::Bytes(0));
  f.g.add_mem(c2, false, graph::MemKind::kActivations, core::Bytes(30));
  f.g.add_mem(c2, true, graph::MemKind::kActivations, core::Bytes(-80));
  AnalyticalEngine eng(f.cluster, core::CollectiveAlgorithm::kRing);
  const RunResult r = eng.run(f.g);
  EXPECT_DOUBLE_EQ(r.roles[0].peak_memory_bytes, 180.0);
  ASSERT_FALSE(r.memory.empty());
  EXPECT_DOUBLE_EQ(r.memory[0].back().bytes, 100.0);
}

TEST(AnalyticalEngine, ComputeTimeAddsGemmAndMemoryBoundParts) {
  Fixture f;
  const auto c = f.g.add_compute(f.role, Phase::kForward, 1, 0, core::Flops(kOneSecond), core::Bytes(1e12));
  AnalyticalEngine eng(f.cluster, core::CollectiveAlgorithm::kRing);
  EXPECT_NEAR(eng.duration(f.g, f.g.tasks()[c]).value(), 2.0, 1e-12);  // 1 s GEMM + 1 TB at 1 TB/s
}

}  // namespace
}  // namespace shardsim::engine
