// The SimGrid engine against the analytical engine: on a topology without shared links they must agree within
// 2% on every built-in scenario (every sweep variant); on the link-accurate machines contention can only slow
// an iteration down; results are deterministic.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "sim/engine/simgrid_adapter.hpp"
#include "sim/engine/simgrid_engine.hpp"
#include "sim/scenario/evaluate.hpp"
#include "sim/scenario/scenario.hpp"

namespace {

namespace fs = std::filesystem;
using namespace shardsim;

scenario::Evaluation on_simgrid(scenario::Scenario s, topology::TopologyKind kind) {
  s.engine = "simgrid";
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
      const auto a = scenario::evaluate(s);
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

TEST(SimGridEngine, SharedNicHalvesTheFabricBandwidthOfARing) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  // One ring all-gather over 2 Frontier nodes: the fabric crossing is spread over the 8 GCDs of a node, two
  // per 25 GB/s NIC, so each moves its share at 12.5 GB/s: the analytical per-rank figure.
  core::ClusterSpec c = small("frontier", 2, 3).cluster;
  graph::TaskGraph g;
  const auto role = g.add_role("rank");
  graph::GroupShape shape;
  shape.size = 16;
  shape.levels = 3;
  shape.ranks_within = {2, 8, 16};
  const auto grp = g.add_group({"dp", shape});
  g.add_collective(role, graph::Stream::kParamGather, graph::CollectiveOp::kAllGather, graph::Purpose::kParamGatherFwd,
                   grp, core::Bytes(16e9), 0, 0);
  engine::SimGridOptions opts;
  opts.topology = topology::TopologyKind::kLevels;
  engine::SimGridEngine sim(c, core::CollectiveAlgorithm::kRing, opts);
  engine::AnalyticalEngine ana(c, core::CollectiveAlgorithm::kRing);
  const double ts = sim.run(g).iteration_time.value();
  const double ta = ana.run(g).iteration_time.value();
  EXPECT_NEAR(ts / ta, 1.0, 0.01);
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

TEST(SimGridEngine, CacheOffGivesTheSameTimeWhenCollectivesRunAlone) {
  if (!engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  auto s = small("dgx-h100", 2, 3);
  const auto costs = strategies::compute_model_costs(s.model, s.plan);
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
