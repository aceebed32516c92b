// The SimGrid engine against the analytical engine: on a topology without shared links they must agree within
// 2% on every built-in scenario (every sweep variant); on the link-accurate machines contention can only slow
// an iteration down; results are deterministic.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/engine/simgrid_adapter.hpp"
#include "sim/engine/simgrid_engine.hpp"
#include "sim/report/collective_report.hpp"
#include "sim/scenario/evaluate.hpp"
#include "sim/scenario/scenario.hpp"
#include "topology/cluster_presets.hpp"

namespace {

namespace fs = std::filesystem;
using namespace shardsim;

scenario::Evaluation on_simgrid(scenario::Scenario s, topology::TopologyKind kind) {
  s.engine = engine::EngineKind::kSimGrid;
  engine::EngineOptions opts;
  opts.topology = kind;
  return scenario::evaluate(s, opts);
}

TEST(SimGridEngine, AgreesWithAnalyticalWithoutSharedLinksOnEveryBuiltInScenario) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(SHARDSIM_SOURCE_DIR) / "scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    for (const auto& s : scenario::load_scenarios(entry.path().string())) {
      scenario::Scenario sa = s;
      sa.engine = engine::EngineKind::kAnalytical;  // whatever engine the scenario names
      const auto a = scenario::evaluate(sa);
      const auto g = on_simgrid(s, topology::TopologyKind::kIdeal);
      const double ta = a.run.iteration_time.value();
      const double tg = g.run.iteration_time.value();
      EXPECT_NEAR(tg / ta, 1.0, 0.02) << s.name << " (" << entry.path().filename().string() << "): analytical " << ta
                                      << " s, simgrid " << tg << " s";
      ++checked;
    }
  }
  EXPECT_GE(checked, 8);
}

scenario::Scenario small(const std::string& cluster, int nodes, int stage) {
  const std::string yaml = "name: t\nmodel: {preset: llama2-7b, dtypes: {params: fp16, grads: fp16, optimizer: fp32}}\ncluster: {preset: " + cluster + ", nodes: " +
                           std::to_string(nodes) + "}\nplan: {zero_stage: " + std::to_string(stage) +
                           ", micro_batch: 1, global_batch: " + std::to_string(nodes * 16) + ", recompute: full}\n";
  return scenario::parse_scenarios(yaml, "<test>").front();
}

// A group wider than one pipeline stage's ranks (the model-parallel group that takes the gradient norm across the
// stages: pp x tp members) is placed across the stages, every member a device of the cluster: a pipeline of 8
// stages x tp 2 on 16 GPUs ran its norm on ranks past the cluster's end and died.
TEST(SimGridEngine, GroupsSpanningThePipelinesStagesStayOnTheCluster) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  const std::string yaml =
      "name: t\nmodel: {preset: llama2-7b, layers: 8}\ncluster: {preset: dgx-a100, nodes: 2}\n"
      "plan: {framework: megatron, zero_stage: 0, micro_batch: 1, recompute: full, tp: 2, pp: 8, global_batch: 8}\n";
  const scenario::Scenario s = scenario::parse_scenarios(yaml, "<test>").front();
  const auto a = scenario::evaluate(s);
  const auto g = on_simgrid(s, topology::TopologyKind::kIdeal);
  EXPECT_NEAR(g.run.iteration_time.value() / a.run.iteration_time.value(), 1.0, 0.02);
}

// Compute slowed beside communication: both engines re-evaluate a kernel's progress when a collective or a
// communication kernel (ZeRO-3's gather copies, here) of its rank starts or ends.
TEST(SimGridEngine, SlowsComputeBesideCollectivesAsTheAnalyticalEngineDoes) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  for (const char* cluster : {"dgx-h100", "frontier"}) {
    scenario::Scenario s = small(cluster, 2, 3);
    s.cluster.device.comm_compute_slowdown = 2.0;
    scenario::Scenario sa = s;
    sa.engine = engine::EngineKind::kAnalytical;
    const double ta = scenario::evaluate(sa).run.iteration_time.value();
    const double tg = on_simgrid(s, topology::TopologyKind::kIdeal).run.iteration_time.value();
    // Both run the same events: on an ideal network they agree to the clock's resolution.
    EXPECT_NEAR(tg / ta, 1.0, 1e-6) << cluster << ": analytical " << ta << " s, simgrid " << tg << " s";
    sa.cluster.device.comm_compute_slowdown = 1.0;
    EXPECT_LT(scenario::evaluate(sa).run.iteration_time.value(), ta) << cluster;
  }
}

// NVLS all-reduces (a DGX H100's gradients inside its node): the SimGrid engine moves each GPU's (n + 1) / n of the
// buffer through the switch at NVLS's share of the links, the analytical engine prices the same; on an ideal network
// they agree to the clock's resolution, and the report names the algorithm.
TEST(SimGridEngine, RunsNvlsAllReducesAsTheAnalyticalEngineDoes) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  const std::string yaml =
      "name: t\nmodel: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1}\n"
      "plan: {zero_stage: 0, micro_batch: 1, global_batch: 8, recompute: full}\n";
  scenario::Scenario s = scenario::parse_scenarios(yaml, "<test>").front();
  ASSERT_TRUE(s.cluster.library.nvls);
  const double ta = scenario::evaluate(s).run.iteration_time.value();
  const double tg = on_simgrid(s, topology::TopologyKind::kIdeal).run.iteration_time.value();
  EXPECT_NEAR(tg / ta, 1.0, 1e-6) << "analytical " << ta << " s, simgrid " << tg << " s";
  s.cluster.library.nvls = false;
  const double rings = scenario::evaluate(s).run.iteration_time.value();
  EXPECT_GT(rings, ta);  // the rings move 2 (n - 1) / n of the gradients each way, NVLS (n + 1) / n at 0.85
  EXPECT_NEAR(on_simgrid(s, topology::TopologyKind::kIdeal).run.iteration_time.value() / rings, 1.0, 1e-6);
  // `best` runs NVLS too (at the link's latency), the gradients' all-reduce exposed here (no overlap).
  s.cluster.library.nvls = true;
  s.plan.algorithm = core::CollectiveAlgorithm::kBest;
  s.plan.overlap_comm = false;
  const double tb = scenario::evaluate(s).run.iteration_time.value();
  EXPECT_NEAR(on_simgrid(s, topology::TopologyKind::kIdeal).run.iteration_time.value() / tb, 1.0, 1e-6);
  s.cluster.library.nvls = false;
  EXPECT_GT(scenario::evaluate(s).run.iteration_time.value(), tb);
}

// PAT (NCCL 2.23 on): ZeRO-3's gathers over the data-parallel groups of a tp-8 plan on 16 DGX H100s, one rank per
// node, run as PAT where NCCL's table picks it (the persistent parameters' small gathers after the step); both engines
// move a ring's bytes per rank at PAT's share of the bus bandwidth, and on an ideal network they agree to the clock's
// resolution.
// The scenario `yaml` on both engines where no link is shared: one of its calls is what `runs` looks for, and the
// engines agree.
template <class Pred>
void expect_engines_agree(const std::string& yaml, Pred runs) {
  scenario::Scenario s = scenario::parse_scenarios(yaml, "<test>").front();
  const auto ev = scenario::evaluate(s);
  bool found = false;
  for (const auto& c : report::collective_rows(s, ev, 0)) found = found || runs(c);
  EXPECT_TRUE(found);
  const double ta = ev.run.iteration_time.value();
  const double tg = on_simgrid(s, topology::TopologyKind::kIdeal).run.iteration_time.value();
  EXPECT_NEAR(tg / ta, 1.0, 1e-6) << "analytical " << ta << " s, simgrid " << tg << " s";
}

TEST(SimGridEngine, RunsPatAsTheAnalyticalEngineDoes) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  expect_engines_agree(
      "name: t\nmodel: llama2-7b\ncluster: {preset: dgx-h100, nodes: 16, collective_library: {version: \"2.26\"}}\n"
      "plan: {zero_stage: 3, tp: 8, micro_batch: 1, global_batch: 16, recompute: full}\n",
      [](const auto& c) { return c.algorithm == core::CollectiveAlgorithm::kPat; });
}

// InternEvo's sync of updated parameters, one NCCL broadcast per owner (plan.param_sync), runs on both engines as a
// ring of n steps carrying the whole buffer over every edge: they agree where no link is shared.
TEST(SimGridEngine, RunsBroadcastsAsTheAnalyticalEngineDoes) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  expect_engines_agree(
      "name: t\nmodel: llama2-7b\ncluster: {preset: dgx-a100, nodes: 4}\n"
      "plan: {micro_batch: 1, global_batch: 64, partition: {params: 1, grads: 1, optimizer: all}, reduce_scatter: "
      "false, param_sync: broadcast}\n",
      [](const auto& c) { return c.op == graph::CollectiveOp::kBroadcast; });
}

TEST(SimGridEngine, ContentionOnRealTopologiesOnlySlowsDown) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  for (const char* cluster : {"frontier", "lassen", "dgx-h100"}) {
    const auto s = small(cluster, 4, 3);
    const auto ideal = on_simgrid(s, topology::TopologyKind::kIdeal);
    const auto links = on_simgrid(s, topology::TopologyKind::kLinks);
    EXPECT_GE(links.run.iteration_time.value(), ideal.run.iteration_time.value() * 0.999) << cluster;
    ASSERT_FALSE(links.run.network.busiest.empty()) << cluster;
    EXPECT_GT(links.run.network.flows, 0u) << cluster;
  }
}

// One all-gather of `bytes` over a group of `shape` on `c`: SimGrid's time over the analytical engine's.
double one_all_gather_ratio(const core::ClusterSpec& c, const graph::GroupShape& shape, double bytes,
                            topology::TopologyKind kind, core::CollectiveAlgorithm algorithm) {
  graph::TaskGraph g;
  const auto role = g.add_role("rank");
  const auto grp = g.add_group({"dp", shape});
  g.add_collective(role, graph::Stream::kParamGather, graph::CollectiveOp::kAllGather, graph::Purpose::kParamGatherFwd,
                   grp, core::Bytes(bytes), 0, 0);
  engine::SimGridOptions opts;
  opts.topology = kind;
  engine::SimGridEngine sim(c, algorithm, opts);
  engine::AnalyticalEngine ana(c, algorithm);
  return sim.run(g).iteration_time.value() / ana.run(g).iteration_time.value();
}

TEST(SimGridEngine, SharedNicHalvesTheFabricBandwidthOfARing) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  // One ring all-gather over 2 Frontier nodes: the fabric crossing is spread over the 8 GCDs of a node, two
  // per 25 GB/s NIC, so each moves its share at 12.5 GB/s: the analytical per-rank figure.
  graph::GroupShape shape;
  shape.size = 16;
  shape.levels = 3;
  shape.ranks_within = {2, 8, 16};
  EXPECT_NEAR(one_all_gather_ratio(small("frontier", 2, 3).cluster, shape, 16e9, topology::TopologyKind::kLevels,
                                   core::CollectiveAlgorithm::kRing),
              1.0, 0.01);
}

// Both engines price a collective as the cluster's library runs it: the same algorithm, protocol and latency
// (NCCL's LL for a small all-gather, LL128 / Simple for large ones) on a topology without shared links.
TEST(SimGridEngine, RunsTheLibrarysChoiceAsTheAnalyticalEngineDoes) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  const core::ClusterSpec c = small("dgx-h100", 4, 3).cluster;
  ASSERT_EQ(c.library.family, core::CollectiveLibrarySpec::Family::kNccl);
  graph::GroupShape shape;
  shape.size = 32;
  shape.levels = 2;
  shape.ranks_within = {8, 32};
  for (double bytes : {64e3, 64e6, 4e9}) {
    EXPECT_NEAR(one_all_gather_ratio(c, shape, bytes, topology::TopologyKind::kIdeal, core::CollectiveAlgorithm::kAuto),
                1.0, 0.01)
        << bytes << " B";
  }
}

// A task that stands for several back-to-back calls (graph::Task::calls: qgZ's all-to-alls, one per matrix) costs
// what that many calls of its share cost, on both engines: each pays the library's latency again.
TEST(SimGridEngine, RepeatedCallsCostWhatTheCallsCostOnBothEngines) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  const core::ClusterSpec c = small("dgx-h100", 4, 3).cluster;
  graph::GroupShape shape;
  shape.size = 32;
  shape.levels = 2;
  shape.ranks_within = {8, 32};
  for (const graph::CollectiveOp op : {graph::CollectiveOp::kReduceScatter, graph::CollectiveOp::kAllToAll}) {
    auto run = [&](auto& engine, double bytes, std::uint32_t calls) {
      graph::TaskGraph g;
      const auto role = g.add_role("rank");
      const auto grp = g.add_group({"dp", shape});
      g.add_collective(role, graph::Stream::kGradReduce, op, graph::Purpose::kGradReduce, grp, core::Bytes(bytes), 0,
                       0, calls);
      return engine.run(g).iteration_time.value();
    };
    engine::AnalyticalEngine ana(c, core::CollectiveAlgorithm::kAuto);
    engine::SimGridOptions opts;
    opts.topology = topology::TopologyKind::kIdeal;
    engine::SimGridEngine sim(c, core::CollectiveAlgorithm::kAuto, opts);
    const double one = run(ana, 2e6, 1);
    EXPECT_NEAR(run(ana, 12e6, 6), 6.0 * one, 1e-9 * one);
    EXPECT_GT(run(ana, 12e6, 6), run(ana, 12e6, 1));  // five more latencies
    EXPECT_NEAR(run(sim, 12e6, 6) / run(ana, 12e6, 6), 1.0, 0.01) << static_cast<int>(op);
    EXPECT_NEAR(run(sim, 12e6, 6) / (6.0 * run(sim, 2e6, 1)), 1.0, 1e-6) << static_cast<int>(op);
  }
}

// RCCL's paced rings on Frontier (collective_library.paced_rings): the SimGrid engine runs the steps beside the flows
// and ends the call no earlier than the floor, as the analytical engine takes the longer of the two: at 64 MB over
// 32 nodes the steps bound the call (on the link graph too), at 16 GB over 4 the transfer does.
TEST(SimGridEngine, PacedRingsEndWithTheirStepsOrTheirTransferAsTheAnalyticalEngine) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  const core::ClusterSpec c = small("frontier", 32, 3).cluster;
  ASSERT_TRUE(c.library.paced_rings);
  graph::GroupShape wide;
  wide.size = 256;
  wide.levels = 3;
  wide.ranks_within = {2, 8, 256};
  graph::GroupShape narrow = wide;
  narrow.size = 32;
  narrow.ranks_within = {2, 8, 32};
  for (auto kind : {topology::TopologyKind::kIdeal, topology::TopologyKind::kLevels, topology::TopologyKind::kLinks}) {
    EXPECT_NEAR(one_all_gather_ratio(c, wide, 64e6, kind, core::CollectiveAlgorithm::kAuto), 1.0, 0.001)
        << static_cast<int>(kind);
  }
  for (auto kind : {topology::TopologyKind::kIdeal, topology::TopologyKind::kLevels}) {
    EXPECT_NEAR(one_all_gather_ratio(c, narrow, 16e9, kind, core::CollectiveAlgorithm::kAuto), 1.0, 0.01)
        << static_cast<int>(kind);
  }
}

TEST(SimGridEngine, Deterministic) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  const auto s = small("frontier", 2, 3);
  const auto a = on_simgrid(s, topology::TopologyKind::kLinks);
  const auto b = on_simgrid(s, topology::TopologyKind::kLinks);
  ASSERT_EQ(a.run.timings.size(), b.run.timings.size());
  for (std::size_t i = 0; i < a.run.timings.size(); ++i) {
    EXPECT_EQ(a.run.timings[i].start_s, b.run.timings[i].start_s);
    EXPECT_EQ(a.run.timings[i].end_s, b.run.timings[i].end_s);
  }
}

// The engine reports its progress task by task (the command line's progress line for long runs); the simulation
// runs in a child process, so the calls are recorded in a file.
TEST(SimGridEngine, ReportsProgressTaskByTask) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  auto s = small("frontier", 2, 3);
  s.engine = engine::EngineKind::kSimGrid;
  const fs::path log = fs::temp_directory_path() / ("shardsim-progress-" + std::to_string(::getpid()));
  engine::EngineOptions opts;
  opts.progress = [&](std::size_t done, std::size_t total) {
    std::ofstream(log, std::ios::app) << done << " " << total << "\n";
  };
  const auto ev = scenario::evaluate(s, opts);
  std::ifstream in(log);
  std::size_t calls = 0, done = 0, total = 0, last = 0;
  while (in >> done >> total) {
    ++calls;
    EXPECT_EQ(done, last + 1);
    last = done;
  }
  EXPECT_EQ(total, ev.graph.size());
  EXPECT_EQ(calls, ev.graph.size());
  fs::remove(log);
}

TEST(SimGridEngine, CacheOffGivesTheSameTimeWhenCollectivesRunAlone) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  auto s = small("dgx-h100", 2, 3);
  const auto costs = strategies::compute_model_costs(s.model, s.plan, &s.cluster.device);
  scenario::Evaluation ev = scenario::evaluate(s);
  engine::SimGridOptions on;
  on.topology = topology::TopologyKind::kLinks;
  engine::SimGridOptions off = on;
  off.cache_collectives = false;
  const double t_on = engine::SimGridEngine(s.cluster, s.plan.algorithm, on).run(ev.graph).iteration_time.value();
  const double t_off = engine::SimGridEngine(s.cluster, s.plan.algorithm, off).run(ev.graph).iteration_time.value();
  EXPECT_NEAR(t_on / t_off, 1.0, 0.01);
  (void)costs;
}

}  // namespace

namespace {

using namespace shardsim;

// Runs `f` in a child process (SimGrid keeps global state) and returns the double it produced.
template <typename F>
double in_child(F f) {
  int fds[2];
  if (::pipe(fds) != 0) return -2.0;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const double v = f();
    (void)!::write(fds[1], &v, sizeof v);
    ::_exit(0);
  }
  ::close(fds[1]);
  double v = -3.0;
  if (::read(fds[0], &v, sizeof v) != sizeof v) v = -4.0;
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  return v;
}

TEST(SimGridEngine, ExportedPlatformLoadsInSimGridAndTimesATransfer) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  core::ClusterSpec c = *topology::find_cluster_preset("frontier");
  c.nodes = 2;
  const auto topo = topology::LinkTopology::build(c, topology::TopologyKind::kLinks);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("shardsim-platform-" + std::to_string(::getpid()) + ".xml")).string();
  {
    std::ofstream out(path);
    out << topo.to_simgrid_xml();
  }
  // 1 GB between nodes crosses one Slingshot port each way, at what the machine's slingshot level says a NIC
  // gives (the levels and the link graph are one description): 1 GB / that, plus a few microseconds.
  const double expect = 1e9 / c.levels.back().link_bandwidth.value();
  const double t = in_child([&] { return engine::time_transfer_on_platform_file(path, "n0.gcd0", "n1.gcd3", 1e9); });
  std::filesystem::remove(path);
  EXPECT_GT(t, expect);
  EXPECT_LT(t, expect + 20e-6);
  // A scenario's NIC bandwidth reaches the link graph.
  core::ClusterSpec wide = c;
  wide.levels.back().link_bandwidth = core::BytesPerSec(2.0 * c.levels.back().link_bandwidth.value());
  EXPECT_NE(topology::LinkTopology::build(wide, topology::TopologyKind::kLinks).to_simgrid_xml(), topo.to_simgrid_xml());
}

// A scenario's iteration on the SimGrid engine, link by link, with node symmetry (first) and without (second);
// the replay cache off, so that the flows counted are those symmetry saves.
std::pair<engine::RunResult, engine::RunResult> with_and_without_symmetry(const std::string& yaml) {
  const auto s = scenario::parse_scenarios(yaml, "<test>").front();
  const auto ev = scenario::evaluate(s);
  engine::SimGridOptions on;
  on.topology = topology::TopologyKind::kLinks;
  on.cache_collectives = false;
  engine::SimGridOptions off = on;
  off.node_symmetry = false;
  return {engine::SimGridEngine(s.cluster, s.plan.algorithm, on).run(ev.graph),
          engine::SimGridEngine(s.cluster, s.plan.algorithm, off).run(ev.graph)};
}

TEST(SimGridEngine, NodeSymmetryGivesTheTimesOfTheFullSimulation) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  // 48 Frontier nodes (past the symmetry threshold), ZeRO-3 and ZeRO++: one node per class of paths (on one
  // switch, across switches, the ring's wrap-around) is simulated.
  for (const char* plan : {"{zero_stage: 3, micro_batch: 1, global_batch: 768, recompute: full}",
                           "{zero_stage: 3, micro_batch: 1, global_batch: 768, recompute: full, "
                           "zero_quantized_weights: true, zero_quantized_gradients: true, zero_hpz_partition_size: 8}"}) {
    const auto [a, b] = with_and_without_symmetry(
        std::string("name: t\nmodel: gpt-20b-frontier\ncluster: {preset: frontier, nodes: 48}\nplan: ") + plan + "\n");
    EXPECT_NEAR(a.iteration_time.value() / b.iteration_time.value(), 1.0, 1e-3) << plan;
    EXPECT_LT(a.network.flows, b.network.flows / 4) << plan;
  }
}

// A two-block model keeps the full simulations below short.
constexpr const char* kSmallModel =
    "model: {name: small, layers: 2, hidden: 2048, heads: 16, ffn_hidden: 8192, vocab: 32000, seq_len: 2048, "
    "dtypes: {params: fp16, grads: fp16, optimizer: fp32}}\n";

TEST(SimGridEngine, NodeSymmetryAcrossDragonflyGroupsGivesTheTimesOfTheFullSimulation) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  // 136 Frontier nodes: the ring crosses switches (every 16 nodes) and one dragonfly group boundary (128 nodes)
  // and wraps around. One node per class of paths is simulated: far fewer flows, the same times.
  const auto [a, b] = with_and_without_symmetry(std::string("name: t\n") + kSmallModel +
                                                "cluster: {preset: frontier, nodes: 136}\n"
                                                "plan: {zero_stage: 3, micro_batch: 1, global_batch: 1088}\n");
  EXPECT_NEAR(a.iteration_time.value() / b.iteration_time.value(), 1.0, 1e-3);
  EXPECT_LT(a.network.flows, b.network.flows / 20);
}

// The same on the fat trees: Lassen's dual-rail one and the DGX H100's rail-optimised one, where a ring crosses
// leaf switches every few nodes.
TEST(SimGridEngine, NodeSymmetryOnFatTreesGivesTheTimesOfTheFullSimulation) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  for (const char* cluster : {"{preset: lassen, nodes: 48}", "{preset: dgx-h100, nodes: 40}"}) {
    const auto [a, b] = with_and_without_symmetry(std::string("name: t\n") + kSmallModel + "cluster: " + cluster +
                                                  "\nplan: {zero_stage: 3, micro_batch: 1}\n");
    EXPECT_NEAR(a.iteration_time.value() / b.iteration_time.value(), 1.0, 1e-3) << cluster;
    EXPECT_LT(a.network.flows, b.network.flows / 10) << cluster;
  }
}

}  // namespace

namespace {

using namespace shardsim;

TEST(SimGridEngine, FabricOverrideChangesTheLinksAndTheAnalyticalEnginesPorts) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  const std::string base =
      "name: t\nmodel: gpt-20b-frontier\ncluster: {preset: frontier, nodes: 8, fabric: {port_bandwidth: PORT}}\n"
      "plan: {zero_stage: 3, micro_batch: 1, recompute: full}\n";
  auto with = [&](const std::string& port) {
    std::string y = base;
    y.replace(y.find("PORT"), 4, port);
    return scenario::parse_scenarios(y, "<test>").front();
  };
  const auto fast = with("25GB/s");
  const auto slow = with("2.5GB/s");
  // The ports are the level above the node for the analytical engine: a what-if on them moves both engines.
  EXPECT_DOUBLE_EQ(slow.cluster.levels.back().link_bandwidth.value(), 2.5e9);
  EXPECT_GT(scenario::evaluate(slow).run.iteration_time.value(),
            1.5 * scenario::evaluate(fast).run.iteration_time.value());
  const auto tf = on_simgrid(fast, topology::TopologyKind::kLinks);
  const auto ts = on_simgrid(slow, topology::TopologyKind::kLinks);
  EXPECT_GT(ts.run.iteration_time.value(), 1.5 * tf.run.iteration_time.value());
  // The slowed port is what bounds the collectives, and its rate is the override's.
  ASSERT_FALSE(ts.run.network.bounding.empty());
  EXPECT_NE(ts.run.network.bounding[0].name.find("hsn"), std::string::npos) << ts.run.network.bounding[0].name;
  EXPECT_DOUBLE_EQ(ts.run.network.bounding[0].bandwidth_Bps, 2.5e9);
}

}  // namespace
