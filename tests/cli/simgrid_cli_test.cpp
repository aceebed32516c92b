// The `shardsim` binary with the SimGrid engine and the topology command: a run with a trace, byte-identical
// reports, platform and Graphviz exports, and bad input answered with exit code 2 before anything runs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "sim/engine/simgrid_adapter.hpp"
#include "tests/cli/cli_support.hpp"

namespace {

using namespace shardsim::test;

Outcome run(const std::string& args) { return run_shardsim(args, false); }
fs::path temp_dir() { return shardsim::test::temp_dir("simgrid-cli"); }

TEST(SimGridCli, RunWritesATraceWithOverlapAndIsDeterministic) {
  if (!shardsim::engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  const fs::path dir = temp_dir();
  const fs::path trace = dir / "trace.json";
  const Outcome a = run("run scenarios/frontier_gpt20b_zero3.yaml --engine simgrid --trace " + trace.string());
  ASSERT_EQ(a.code, 0) << a.out;
  EXPECT_NE(a.out.find("engine    simgrid"), std::string::npos);
  EXPECT_NE(a.out.find("network (simgrid engine)"), std::string::npos);
  EXPECT_NE(a.out.find("bottleneck link"), std::string::npos);
  const auto j = nlohmann::json::parse(read(trace));
  // Communication on its own streams overlaps compute.
  double compute_end = 0.0;
  int overlapping = 0;
  std::vector<std::pair<double, double>> compute;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const double ts = e["ts"].get<double>();
    const double end = ts + e["dur"].get<double>();
    if (e["tid"] == 0) compute.emplace_back(ts, end);
    compute_end = std::max(compute_end, end);
  }
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X" || e["tid"] == 0) continue;
    const double ts = e["ts"].get<double>();
    for (const auto& [cs, ce] : compute) {
      if (cs < ts && ts < ce) {
        ++overlapping;
        break;
      }
    }
  }
  EXPECT_GT(overlapping, 10);
  const Outcome b = run("run scenarios/frontier_gpt20b_zero3.yaml --engine simgrid");
  EXPECT_EQ(a.out, b.out);
  fs::remove_all(dir);
}

TEST(SimGridCli, TopologyExportsPlatformAndDot) {
  const fs::path dir = temp_dir();
  const Outcome r = run("topology frontier --nodes 48 --export " + (dir / "platform.xml").string() + " --dot " +
                        (dir / "node.dot").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string xml = read(dir / "platform.xml");
  EXPECT_NE(xml.find("<host id=\"n47.gcd7\""), std::string::npos);
  EXPECT_EQ(xml.find("global.g0-g1"), std::string::npos) << "48 nodes fit in one dragonfly group";
  EXPECT_NE(read(dir / "node.dot").find("\"gcd0\" -- \"gcd1\""), std::string::npos);
  fs::remove_all(dir);
}

TEST(SimGridCli, TopologyOfAScenarioFileIsItsOwnNodeGraph) {
  const fs::path dir = temp_dir();
  const Outcome r = run("topology scenarios/pcie_box_user_topology.yaml --export " + (dir / "p.xml").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("node graph of the scenario (4 devices, 7 links), fat-tree fabric"), std::string::npos);
  EXPECT_NE(r.out.find("16 nodes"), std::string::npos);
  EXPECT_NE(read(dir / "p.xml").find("<host id=\"n15.gpu3\""), std::string::npos);
  EXPECT_EQ(run("topology scenarios/no_such_file.yaml").code, 2);
  fs::remove_all(dir);
}

TEST(SimGridCli, BadInputIsExitCodeTwo) {
  EXPECT_EQ(run("topology frontier --nodes 9409").code, 2);
  EXPECT_EQ(run("topology frontier --nodes 0").code, 2);
  EXPECT_EQ(run("topology nosuch").code, 2);
  EXPECT_EQ(run("topology frontier --kind sideways").code, 2);
  EXPECT_EQ(run("run scenarios/frontier_gpt20b_zero3.yaml --engine simgrid --topology sideways").code, 2);
  EXPECT_EQ(run("run scenarios/frontier_gpt20b_zero3.yaml --engine warp").code, 2);
}

}  // namespace

namespace {

// A user-described node graph and fabric, run on the scenario's own engine (simgrid): the whole report,
// network section included, is deterministic and kept as a golden file.
class SimGridGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(SimGridGolden, ReportMatchesTheGoldenFile) {
  if (!shardsim::engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  const Outcome r = run("run scenarios/" + GetParam() + ".yaml");
  ASSERT_EQ(r.code, 0) << r.out;
  const fs::path golden = kSource / "tests" / "golden" / (GetParam() + ".txt");
  if (std::getenv("SHARDSIM_UPDATE_GOLDEN")) {
    std::ofstream(golden, std::ios::binary) << r.out;
    GTEST_SKIP() << "rewrote " << golden;
  }
  EXPECT_EQ(r.out, read(golden));
}

INSTANTIATE_TEST_SUITE_P(Scenarios, SimGridGolden,
                         ::testing::Values("pcie_box_user_topology", "frontier_gpt20b_nic_sensitivity"));

TEST(SimGridCli, UserTopologyReportNamesItsPlatform) {
  if (!shardsim::engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  const Outcome r = run("run scenarios/pcie_box_user_topology.yaml");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("node graph of the scenario (4 devices, 7 links), fat-tree fabric"), std::string::npos);
}


}  // namespace

namespace {

TEST(SimGridCli, SearchRescoresItsTopPlansOnTheSimGridEngine) {
  EXPECT_EQ(run("search scenarios/search_llama13b_1024.yaml --top 3 --rescore warp").code, 2);
  if (!shardsim::engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  const Outcome r = run("search scenarios/search_llama13b_1024.yaml --top 3 --rescore simgrid");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto at = r.out.find("re-scored on the SimGrid engine");
  ASSERT_NE(at, std::string::npos) << r.out;
  // Three re-ranked rows follow the header, each naming its former rank.
  std::istringstream rows(r.out.substr(at));
  std::string line;
  int n = 0;
  std::getline(rows, line);
  std::getline(rows, line);
  while (std::getline(rows, line) && !line.empty()) ++n;
  EXPECT_EQ(n, 3);
}

}  // namespace

namespace {

TEST(SimGridCli, JsonCarriesTheNetworkSection) {
  if (!shardsim::engine::simgrid_available()) GTEST_SKIP() << "built without SimGrid";
  const fs::path dir = temp_dir();
  const Outcome r = run("run scenarios/pcie_box_user_topology.yaml --json " + (dir / "r.json").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(read(dir / "r.json"))["results"][0];
  EXPECT_EQ(j["engine"], "simgrid");
  ASSERT_FALSE(j["network"]["bounding_links"].empty());
  EXPECT_EQ(j["network"]["bounding_links"][0]["link"], "n0.nic0-rail0.leaf0 n0.nic0->rail0.leaf0");
  EXPECT_GT(j["network"]["busiest_links"][0]["utilisation"].get<double>(), 0.8);
  fs::remove_all(dir);
}

}  // namespace
