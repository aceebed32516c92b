// Collective benchmarks as calibration input: nccl-tests' table (ranks from its "# Rank" lines, with or without
// the redop/root columns) and vTrain's CSV; and the DGX A100 preset's NVSwitch level is what a fit to vTrain's
// measured all-reduce gives (refit here, so a change to the collective model that moves it is seen).
#include "validate/collective_runs.hpp"
#include "validate/collective_checks.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "sim/engine/collective_cost.hpp"
#include "sim/scenario/scenario.hpp"
#include "topology/cluster_presets.hpp"

namespace shardsim::validate {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("shardsim-coll-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(p) << text;
  return p;
}

// The shipped collective benchmarks of one machine (and whose file name holds `part`), each sample tagged fit or check.
std::vector<CollectiveSample> shipped_samples(const std::string& cluster, const std::string& part = "") {
  std::vector<CollectiveSample> samples;
  for (const auto& c : load_collective_checks(std::string(SHARDSIM_SOURCE_DIR) + "/validate/data/collectives")) {
    if (c.cluster != cluster || fs::path(c.path).filename().string().find(part) == std::string::npos) continue;
    auto more = tagged_samples(c);
    samples.insert(samples.end(), more.begin(), more.end());
  }
  return samples;
}

TEST(CollectiveRuns, ReadsNcclTestsOutput) {
  const fs::path p = scratch("ar.txt",
                             "# nThread 1 nGpus 4 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5\n"
                             "#\n# Using devices\n"
                             "#  Rank  0 Group  0 Pid  101 on  node0 device  0 [0x07] NVIDIA A100-SXM4-80GB\n"
                             "#  Rank  1 Group  0 Pid  101 on  node0 device  1 [0x0b] NVIDIA A100-SXM4-80GB\n"
                             "#  Rank  2 Group  0 Pid  101 on  node0 device  2 [0x48] NVIDIA A100-SXM4-80GB\n"
                             "#  Rank  3 Group  0 Pid  101 on  node0 device  3 [0x4c] NVIDIA A100-SXM4-80GB\n"
                             "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                             "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
                             "     1048576        262144     float     sum      -1    40.10   26.15   39.22      0    39.80   26.35   39.52      0\n"
                             "     4194304       1048576     float     sum      -1    70.50   59.49   89.24      0    70.10   59.83   89.75      0\n"
                             "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 64.43\n");
  const auto s = load_collective_samples(p.string(), graph::CollectiveOp::kAllReduce, 0);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].ranks, 4);
  EXPECT_DOUBLE_EQ(s[1].bytes, 4194304.0);
  EXPECT_DOUBLE_EQ(s[1].seconds, 70.50e-6);
  EXPECT_NE(s[0].where.find(":10"), std::string::npos) << s[0].where;
  // Older nccl-tests print no redop / root columns.
  const fs::path old = scratch("old.txt", "#  Rank  0\n#  Rank  1\n  1048576  262144  float  33.0  31.8  31.8  0  33.1  31.7  31.7  0\n");
  const auto o = load_collective_samples(old.string(), graph::CollectiveOp::kAllGather, 0);
  ASSERT_EQ(o.size(), 1u);
  EXPECT_DOUBLE_EQ(o[0].seconds, 33.0e-6);
  EXPECT_EQ(o[0].ranks, 2);
  EXPECT_EQ(o[0].op, graph::CollectiveOp::kAllGather);
  // What it cannot read is an error at its line; a table without ranks needs them given.
  const fs::path bad = scratch("bad.txt", "#  Rank  0\n#  Rank  1\n  1048576  lots  float  33.0\n");
  EXPECT_THROW((void)load_collective_samples(bad.string(), graph::CollectiveOp::kAllReduce, 0), core::ConfigError);
  const fs::path csv = scratch("x.csv", "size(B),count,type,time(ns),busbw(GB/s),time(ns),busbw(GB/s)\n1048576,262144,float,92790,19.78,92150,19.91\n");
  EXPECT_THROW((void)load_collective_samples(csv.string(), graph::CollectiveOp::kAllReduce, 0), core::ConfigError);
  EXPECT_DOUBLE_EQ(load_collective_samples(csv.string(), graph::CollectiveOp::kAllReduce, 8)[0].seconds, 92790e-9);
  EXPECT_THROW((void)parse_collective_op("allreduce"), core::ConfigError);
  for (const auto& f : {p, old, bad, csv}) fs::remove(f);
}

// A log of several tests as nccl-tests writes it (each after its "# Collective test starting:" line): each test's
// rows get its own collective, its ranks from its "# Rank" lines and, where those name several hosts, the ranks
// on each; a test shardsim does not model is skipped and listed; a collective that contradicts the one asked for,
// uneven hosts and a CSV without its collective are errors.
TEST(CollectiveRuns, ReadsALogOfSeveralTestsWithTheirPlacement) {
  auto section = [](const std::string& test, const std::vector<std::string>& hosts, const std::string& rows) {
    std::string t = "# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807\n"
                    "# Collective test starting: " + test + "\n#\n# Using devices\n";
    for (std::size_t r = 0; r < hosts.size(); ++r) {
      t += "#  Rank  " + std::to_string(r) + " Group  0 Pid 4400" + std::to_string(r) + " on " + hosts[r] +
           " device  0 [0000:1b:00] NVIDIA H100 80GB HBM3\n";
    }
    return t + "#\n#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n"
               "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)\n" +
           rows + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 13.4689\n#\n# Collective test concluded: " + test + "\n\n";
  };
  const std::string a2a = "    33554432       2097152    double    none      -1  1282.93   26.15   13.08       0  1266.72   26.49   13.24    N/A\n";
  const std::string sr = "    33554432       4194304    double     sum      -1  2513.89   13.35   13.35       0  2504.26   13.40   13.40    N/A\n"
                         "    67108864       8388608    double     sum      -1  4986.68   13.46   13.46       0  4989.15   13.45   13.45    N/A\n";
  const std::string rd = "    33554432       4194304    double     sum       0  1000.00   33.55   33.55       0  1000.00   33.55   33.55    N/A\n";
  const std::vector<std::string> two = {"cnode2-001", "cnode2-002"};
  const std::vector<std::string> four = {"n1", "n1", "n2", "n2"};
  const std::string log = section("alltoall_perf", two, a2a) + section("reduce_perf", two, rd) +
                          section("sendrecv_perf", four, sr);
  std::vector<std::string> skipped;
  const auto s = parse_collective_samples(log, "log.txt", std::nullopt, 0, &skipped);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].op, graph::CollectiveOp::kAllToAll);
  EXPECT_EQ(s[0].ranks, 2);
  EXPECT_EQ(s[0].per_node, 1);
  EXPECT_EQ(s[0].device, "NVIDIA H100 80GB HBM3");
  EXPECT_DOUBLE_EQ(s[0].seconds, 1282.93e-6);
  for (std::size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(s[i].op, graph::CollectiveOp::kSendRecv);
    EXPECT_EQ(s[i].ranks, 4);
    EXPECT_EQ(s[i].per_node, 2);
  }
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].find("log.txt:"), std::string::npos) << skipped[0];
  EXPECT_NE(skipped[0].find("reduce_perf"), std::string::npos) << skipped[0];
  // The collective asked for must be the file's.
  EXPECT_THROW((void)parse_collective_samples(log, "log.txt", graph::CollectiveOp::kAllReduce, 0), core::ConfigError);
  EXPECT_EQ(parse_collective_samples(section("alltoall_perf", two, a2a), "a.txt", graph::CollectiveOp::kAllToAll, 0).size(), 1u);
  // A broadcast is read (the size column is the buffer every rank receives), under the name nccl-tests' MPI build
  // gives its binaries too.
  for (const std::string name : {"broadcast_perf", "broadcast_perf_mpi"}) {
    const auto bc = parse_collective_samples(section(name, two, rd), "b.txt", std::nullopt, 0);
    ASSERT_EQ(bc.size(), 1u) << name;
    EXPECT_EQ(bc[0].op, graph::CollectiveOp::kBroadcast) << name;
  }
  // Uneven hosts cannot be laid out as shardsim lays a group out.
  EXPECT_THROW((void)parse_collective_samples(section("sendrecv_perf", {"n1", "n1", "n2"}, sr), "u.txt", std::nullopt, 0),
               core::ConfigError);
  // A table that names no test needs its collective given.
  const std::string bare = "#  Rank  0\n#  Rank  1\n  1048576  262144  float  33.0  31.8  31.8  0  33.1  31.7  31.7  0\n";
  EXPECT_THROW((void)parse_collective_samples(bare, "b.txt", std::nullopt, 0), core::ConfigError);
  EXPECT_THROW((void)parse_collective_samples("size(B),count,type,time(ns)\n1,1,float,10\n", "c.csv", std::nullopt, 8),
               core::ConfigError);
}

// DeepSpeed's comms logger times every operation of the run: its lines of the collective asked for become one sample
// per size at the median of that size's calls, sizes in DeepSpeed's 1024-based units, an all-gather's logged input
// (one rank's share) scaled to the full output; the group (ranks, per node) is the user's to say, the log does not.
TEST(CollectiveRuns, ReadsDeepSpeedCommsLogs) {
  auto line = [](const std::string& op, double ms, const std::string& size) {
    return fmt::format("  0: [2023-06-10 09:44:34,814] [INFO] [logging.py:75:log_dist] [Rank 0] rank=0 | comm op: {} | "
                       "time (ms): {:.2f} | msg size: {} | algbw (Gbps): 1.00  | busbw (Gbps): 1.00 \n",
                       op, ms, size);
  };
  const std::string log = "  0: iteration 2 | elapsed time per iteration (s): 346.58\n" + line("broadcast", 0.2, "28.0 KB") +
                          line("all_reduce", 77.88, "350.0 MB") + line("all_reduce", 614.47, "2.73 GB") +
                          line("all_gather", 1.19, "14.0 MB") + line("all_reduce", 613.98, "2.73 GB") +
                          line("all_reduce | [Caller Func: allreduce_bucket]", 0.5, "1.0 KB") +
                          line("all_reduce", 618.07, "2.73 GB") + line("all_reduce", 1300.0, "2.73 GB") +
                          line("all_reduce", 0.05, "0B");  // nothing moved: skipped
  const auto ar = parse_collective_samples(log, "ds.log", graph::CollectiveOp::kAllReduce, 2, nullptr, 1);
  ASSERT_EQ(ar.size(), 3u);  // by size: 1 KiB, 350 MiB, 2.73 GiB
  EXPECT_DOUBLE_EQ(ar[0].bytes, 1024.0);
  EXPECT_DOUBLE_EQ(ar[0].seconds, 0.5e-3);
  EXPECT_DOUBLE_EQ(ar[1].bytes, 350.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(ar[2].bytes, std::round(2.73 * 1024 * 1024 * 1024));
  EXPECT_NEAR(ar[2].seconds, 0.5 * (614.47 + 618.07) * 1e-3, 1e-12);  // the median of four, a late call among them
  EXPECT_EQ(ar[2].where, "ds.log:4");
  for (const auto& a : ar) {
    EXPECT_EQ(a.ranks, 2);
    EXPECT_EQ(a.per_node, 1);
    EXPECT_EQ(a.op, graph::CollectiveOp::kAllReduce);
  }
  const auto ag = parse_collective_samples(log, "ds.log", graph::CollectiveOp::kAllGather, 8);
  ASSERT_EQ(ag.size(), 1u);
  EXPECT_DOUBLE_EQ(ag[0].bytes, 8 * 14.0 * 1024 * 1024);
  EXPECT_EQ(ag[0].per_node, 0);
  // The log does not say which collective or group to read: both must be given; one it lacks names what it has.
  EXPECT_THROW((void)parse_collective_samples(log, "ds.log", std::nullopt, 2), core::ConfigError);
  EXPECT_THROW((void)parse_collective_samples(log, "ds.log", graph::CollectiveOp::kAllReduce, 0), core::ConfigError);
  try {
    (void)parse_collective_samples(log, "ds.log", graph::CollectiveOp::kReduceScatter, 2);
    ADD_FAILURE() << "no reduce-scatter in the log";
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("7 x all_reduce"), std::string::npos) << e.what();
  }
  // A line it cannot read is named by its line.
  try {
    (void)parse_collective_samples(line("all_reduce", 1.0, "3.0 QB"), "bad.log", graph::CollectiveOp::kAllReduce, 2);
    ADD_FAILURE() << "an unknown unit";
  } catch (const core::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.log:1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'QB'"), std::string::npos) << e.what();
  }
}

// DeepSpeed's summary table (deepspeed.comm.log_summary): an average per operation and size; with show_straggler a
// second table whose average leaves out the waits for the slowest rank, which is taken where it has the size. A
// launcher's rank label ("0:") before each line is read through.
TEST(CollectiveRuns, ReadsDeepSpeedCommsSummaries) {
  auto pad = [](const std::vector<std::string>& cols) {
    std::string o;
    for (const auto& c : cols) o += fmt::format("{:<20}", c);
    return o + "\n";
  };
  const std::string plain = "0: " + pad({"Comm. Op", "Message Size", "Count", "Total Latency(ms)", "Avg Latency(ms)",
                                         "tput_avg (Gbps)", "busbw_avg (Gbps)"}) +
                            "0: all_reduce\n" + "0: " + pad({"", "4.0 B", "40", "1600.00", "40.00", "0.00", "0.00"}) +
                            "0: " + pad({"", "2.73 GB", "40", "45678.12", "1143.88", "41.19", "39.90"}) +
                            "0: all_gather\n" + "0: " + pad({"", "14.0 MB", "1296", "1555.20", "1.20", "2594.25", "2513.18"});
  const std::string straggler =
      "0: _______________________________\n0: Breakdown with straggler effect\n0: -------------------------------\n0: " +
      pad({"Comm. Op", "Message Size", "Count", "Total comm lat(ms)", "Total straggler(ms)", "Avg comm lat(ms)",
           "Avg straggler(ms)"}) +
      "0: all_reduce\n" + "0: " + pad({"", "2.73 GB", "40", "44000.00", "1678.12", "1100.00", "41.95"});
  const auto p = parse_collective_samples(plain, "sum.log", graph::CollectiveOp::kAllReduce, 32, nullptr, 1);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_DOUBLE_EQ(p[0].bytes, 4.0);
  EXPECT_DOUBLE_EQ(p[1].seconds, 1.14388);
  EXPECT_EQ(p[1].per_node, 1);
  const auto both = parse_collective_samples(plain + straggler, "sum.log", graph::CollectiveOp::kAllReduce, 32);
  ASSERT_EQ(both.size(), 1u);  // the straggler table's sizes only
  EXPECT_DOUBLE_EQ(both[0].seconds, 1.1);
  EXPECT_EQ(both[0].where, "sum.log:12");
  const auto ag = parse_collective_samples(plain + straggler, "sum.log", graph::CollectiveOp::kAllGather, 8);
  ASSERT_EQ(ag.size(), 1u);
  EXPECT_DOUBLE_EQ(ag[0].bytes, 8 * 14.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(ag[0].seconds, 1.2e-3);
}

// Fitting a network to a run placed one rank per node: the fit lays its group out over as many nodes as the run
// (2 ranks, 2 nodes: the network, not the NVSwitch), and recovers the network's bandwidth from the run's times.
TEST(CollectiveRuns, AFitTakesTheRunsPlacement) {
  scenario::Scenario machine;
  machine.cluster = *topology::find_cluster_preset("dgx-h100");
  machine.cluster.nodes = 2;
  auto truth = machine;
  auto& ib = truth.cluster.levels.back();
  ib.link_bandwidth = core::BytesPerSec(13.5e9);
  std::vector<CollectiveSample> samples;
  for (double bytes = 32.0 * 1048576; bytes <= 1024.0 * 1048576; bytes *= 2) {
    CollectiveSample c;
    c.op = graph::CollectiveOp::kSendRecv;
    c.ranks = 2;
    c.per_node = 1;
    c.bytes = bytes;
    c.seconds = engine::estimate_collective(truth.cluster, sample_group_shape(truth.cluster, 2, 1), c.op,
                                            core::Bytes(bytes), core::CollectiveAlgorithm::kAuto).time.value();
    c.where = "run.txt:1";
    samples.push_back(c);
  }
  const auto f = fit_collectives(samples, machine, {"network.infiniband.bandwidth"});
  EXPECT_NEAR(f.fit.values[0], 13.5e9, 0.01 * 13.5e9);
  // The same run read as two ranks of one node would be priced over the NVSwitch: it could not be fitted.
  EXPECT_EQ(sample_group_shape(machine.cluster, 2, 1).size, 2);
  EXPECT_GT(sample_devices(machine.cluster, 2, 1), 8);
}

// nccl-tests' older table prints a redop and no root column: its header says where the time is.
TEST(CollectiveRuns, ReadsTheOlderTableByItsHeader) {
  const auto c = load_collective_check(std::string(SHARDSIM_SOURCE_DIR) +
                                       "/validate/data/collectives/abci_8x8_all_reduce.txt");
  ASSERT_EQ(c.samples.size(), 24u);
  EXPECT_DOUBLE_EQ(c.samples[0].bytes, 4.0);
  EXPECT_NEAR(c.samples[0].seconds, 57.3e-6, 0.06e-6);
  EXPECT_DOUBLE_EQ(c.samples.back().bytes, 33554432.0);
  EXPECT_EQ(c.role, "check");
  EXPECT_EQ(c.ranks, 64);
}

TEST(CollectiveRuns, TheDgxA100NvswitchLevelIsTheFitToVtrainsMeasuredAllReduce) {
  std::vector<CollectiveSample> samples;
  for (int n = 2; n <= 8; ++n) {
    const fs::path f = fs::path(SHARDSIM_SOURCE_DIR) / "validate" / "data" / "vtrain" / "allreduce" /
                       ("a100_" + std::to_string(n) + "gpu.csv");
    auto more = load_collective_samples(f.string(), graph::CollectiveOp::kAllReduce, n);
    samples.insert(samples.end(), more.begin(), more.end());
  }
  ASSERT_EQ(samples.size(), 7u * 1024u);
  // Refit from the datasheet's link and NCCL's own latency table, as the preset's comment says it was made.
  scenario::Scenario machine;
  machine.cluster = *topology::find_cluster_preset("dgx-a100");
  auto& nv = machine.cluster.levels[0];
  const double fitted_bw = nv.link_bandwidth.value(), fitted_scale = machine.cluster.library.latency_scale;
  nv.link_bandwidth = core::BytesPerSec(300e9);
  machine.cluster.library.latency_scale = 1.0;
  const auto f = fit_collectives(samples, machine, {"collectives.latency_scale", "network.nvswitch.bandwidth"});
  EXPECT_TRUE(f.fit.converged) << f.fit.message;
  EXPECT_NEAR(f.fit.values[0] / fitted_scale, 1.0, 0.005) << "refit the preset: latency scale " << f.fit.values[0];
  EXPECT_NEAR(f.fit.values[1] / fitted_bw, 1.0, 0.005) << "refit the preset: bandwidth " << f.fit.values[1];
  EXPECT_LT(f.fit_after.mean_abs, f.fit_before.mean_abs);
}

// Polaris's network steps through the OFI plugin, its trees' network hops and NCCL's share of its NICs are the fit to
// ALCF's nccl-tests on 8 nodes and to its all-gather on 128 (the files marked role=fit: the ring's small-message time
// across scale fixes its LL step, the 8-node all-reduce's small trees the tree's), from NCCL's own table and the NICs'
// 25 GB/s; the 2- and 540-node runs of NCCL 2.18 and the 2- to 540-node runs of NCCL 2.21 are held out and come out
// better too.
TEST(CollectiveRuns, ThePolarisSlingshotStepsAreTheFitToAlcfsNcclTests) {
  const auto samples = shipped_samples("polaris");
  ASSERT_EQ(samples.size(), 295u);
  ASSERT_EQ(std::count_if(samples.begin(), samples.end(), [](const auto& c) { return !c.check; }), 59);
  scenario::Scenario machine;
  machine.cluster = *topology::find_cluster_preset("polaris");
  machine.cluster.nodes = 540;
  auto& nic = machine.cluster.levels[1];
  const double fitted_bw = nic.link_bandwidth.value();
  const auto fitted_steps = machine.cluster.library.net_step_s;
  const auto fitted_hops = machine.cluster.library.tree_step_s;
  nic.link_bandwidth = core::BytesPerSec(25e9);
  machine.cluster.library.net_step_s = {-1.0, -1.0, -1.0};
  machine.cluster.library.tree_step_s = {-1.0, -1.0, -1.0};
  const auto f = fit_collectives(samples, machine,
                                 {"collectives.net_step.LL", "collectives.net_step.LL128",
                                  "network.slingshot.bandwidth", "collectives.tree_step.LL",
                                  "collectives.tree_step.LL128"});
  EXPECT_TRUE(f.fit.converged) << f.fit.message;
  EXPECT_NEAR(f.fit.values[0] / fitted_steps[0], 1.0, 0.005) << "refit the preset: LL step " << f.fit.values[0];
  EXPECT_NEAR(f.fit.values[1] / fitted_steps[1], 1.0, 0.005) << "refit the preset: LL128 step " << f.fit.values[1];
  EXPECT_NEAR(f.fit.values[2] / fitted_bw, 1.0, 0.005) << "refit the preset: bandwidth " << f.fit.values[2];
  EXPECT_NEAR(f.fit.values[3] / fitted_hops[0], 1.0, 0.005) << "refit the preset: LL tree hop " << f.fit.values[3];
  EXPECT_NEAR(f.fit.values[4] / fitted_hops[1], 1.0, 0.005) << "refit the preset: LL128 tree hop " << f.fit.values[4];
  EXPECT_LT(fitted_steps[2], 0.0);  // Simple: NCCL's table
  EXPECT_LT(fitted_hops[2], 0.0);   // Simple: the ring's (NCCL's table)
  // A tree's hop is not a ring's step through the same transport: about half of it under LL.
  EXPECT_LT(fitted_hops[0], 0.7 * fitted_steps[0]);
  EXPECT_LT(f.fit_after.mean_abs, 0.5 * f.fit_before.mean_abs);
  EXPECT_LT(f.check_after.mean_abs, 0.6 * f.check_before.mean_abs);
}

// RCCL on a Frontier-class node: its tree hops (LL, Simple), its share of each Slingshot NIC and the scale of its
// table's base and in-node hops are the fit to RCCL's all-reduce on 1 and 8 LUMI-G nodes (the files marked role=fit),
// from RCCL's own table (tuning model 3, the node's) and the NICs' 25 GB/s; the 4- to 64-node runs are held out and come
// out better too. Its rings' LL step is Polaris's, which all-reduces cannot show.
TEST(CollectiveRuns, TheFrontierRcclNetworkIsTheFitToLumisAllReduce) {
  const auto samples = shipped_samples("frontier", "lumi_");
  ASSERT_EQ(samples.size(), 78u);
  ASSERT_EQ(std::count_if(samples.begin(), samples.end(), [](const auto& c) { return !c.check; }), 26);
  scenario::Scenario machine;
  machine.cluster = *topology::find_cluster_preset("frontier");
  machine.cluster.nodes = 64;
  auto& nic = machine.cluster.levels[2];
  ASSERT_EQ(nic.name, "slingshot");
  auto& lib = machine.cluster.library;
  const double fitted_bw = nic.link_bandwidth.value();
  const auto fitted_hops = lib.tree_step_s;
  const double fitted_scale = lib.latency_scale;
  EXPECT_DOUBLE_EQ(lib.net_step_s[0], topology::find_cluster_preset("polaris")->library.net_step_s[0]);
  nic.link_bandwidth = core::BytesPerSec(25e9);
  lib.tree_step_s = {-1.0, -1.0, -1.0};
  lib.latency_scale = 1.0;
  const auto f = fit_collectives(samples, machine,
                                 {"collectives.latency_scale", "collectives.tree_step.LL",
                                  "collectives.tree_step.Simple", "network.slingshot.bandwidth"});
  EXPECT_TRUE(f.fit.converged) << f.fit.message;
  EXPECT_NEAR(f.fit.values[0] / fitted_scale, 1.0, 0.005) << "refit the preset: latency scale " << f.fit.values[0];
  EXPECT_NEAR(f.fit.values[1] / fitted_hops[0], 1.0, 0.005) << "refit the preset: LL tree hop " << f.fit.values[1];
  EXPECT_NEAR(f.fit.values[2] / fitted_hops[2], 1.0, 0.005) << "refit the preset: Simple tree hop " << f.fit.values[2];
  EXPECT_NEAR(f.fit.values[3] / fitted_bw, 1.0, 0.005) << "refit the preset: bandwidth " << f.fit.values[3];
  EXPECT_LT(fitted_hops[1], 0.0);  // LL128: off on the GCD
  EXPECT_LT(f.fit_after.mean_abs, 0.5 * f.fit_before.mean_abs) << f.fit_before.mean_abs << " -> " << f.fit_after.mean_abs;
  EXPECT_LT(f.check_after.mean_abs, 0.5 * f.check_before.mean_abs)
      << f.check_before.mean_abs << " -> " << f.check_after.mean_abs;
}

// RCCL's rings on Frontier are paced by their network step under Simple: every one of an all-gather's n - 1 steps takes
// at least one, the transfer beneath them. That step is the fit to RCCL 2.20's all-gathers on 1 to 256 Frontier nodes
// (Singh et al., arXiv 2504.18658 v2; the files marked role=fit), from RCCL's own table (model 3: 19.8 us); the reduce-scatters
// and the all-reduces are held out and come out better too.
TEST(CollectiveRuns, TheFrontierRingStepIsTheFitToRcclsAllGathers) {
  const auto samples = shipped_samples("frontier", "frontier_");
  ASSERT_EQ(samples.size(), 73u);
  ASSERT_EQ(std::count_if(samples.begin(), samples.end(), [](const auto& c) { return !c.check; }), 35);
  scenario::Scenario machine;
  machine.cluster = *topology::find_cluster_preset("frontier");
  machine.cluster.nodes = 256;
  auto& lib = machine.cluster.library;
  ASSERT_TRUE(lib.paced_rings);
  const double fitted_step = lib.net_step_s[2];
  lib.net_step_s[2] = -1.0;
  const auto f = fit_collectives(samples, machine, {"collectives.net_step.Simple"});
  EXPECT_TRUE(f.fit.converged) << f.fit.message;
  EXPECT_NEAR(f.fit.values[0] / fitted_step, 1.0, 0.005) << "refit the preset: Simple ring step " << f.fit.values[0];
  EXPECT_LT(f.fit_after.mean_abs, 0.8 * f.fit_before.mean_abs) << f.fit_before.mean_abs << " -> " << f.fit_after.mean_abs;
  EXPECT_LT(f.check_after.mean_abs, 0.9 * f.check_before.mean_abs)
      << f.check_before.mean_abs << " -> " << f.check_after.mean_abs;
}

// NCCL on CSCS Alps's GH200 nodes (machines/alps-gh200.yaml): LL and Simple only (each NIC hangs off its Grace, a path
// NCCL types PHB, where it enables LL128 only up to PXN), its tree hops (LL, Simple), its share of each NIC and its
// latency scale are the fit to the 1- and 8-node all-reduces, from Polaris's steps (which the rings keep); the 4- to
// 512-node runs (16 to 2,048 GPUs) are held out and come out better too. (Its 128-node file is the fit of the trees'
// share past a dragonfly group, below; these four parameters leave it out.)
TEST(CollectiveRuns, AlpsIsTheFitToItsOneAndEightNodeAllReduce) {
  const std::string dir = std::string(SHARDSIM_SOURCE_DIR) + "/validate/data/collectives";
  const auto shipped = shipped_samples("machines/alps-gh200.yaml");
  ASSERT_EQ(shipped.size(), 113u);
  ASSERT_EQ(std::count_if(shipped.begin(), shipped.end(), [](const auto& c) { return !c.check; }), 38);
  std::vector<CollectiveSample> samples;
  for (const auto& c : shipped) {
    if (c.check || c.ranks <= 32) samples.push_back(c);
  }
  ASSERT_EQ(std::count_if(samples.begin(), samples.end(), [](const auto& c) { return !c.check; }), 26);
  scenario::Scenario machine = scenario::load_scenarios(dir + "/machines/alps-gh200.yaml").at(0);
  auto& nic = machine.cluster.levels[1];
  auto& lib = machine.cluster.library;
  EXPECT_TRUE(lib.protocols[0] && !lib.protocols[1] && lib.protocols[2]);  // LL and Simple
  const double fitted_bw = nic.link_bandwidth.value();
  const auto fitted_hops = lib.tree_step_s;
  const double fitted_scale = lib.latency_scale;
  const auto polaris = topology::find_cluster_preset("polaris")->library.net_step_s;
  EXPECT_DOUBLE_EQ(lib.net_step_s[0], polaris[0]);
  nic.link_bandwidth = core::BytesPerSec(25e9);  // the line rate
  lib.tree_step_s = {-1.0, -1.0, -1.0};           // the rings' (Polaris's; Simple NCCL's table)
  lib.latency_scale = 1.9145;            // the A100's
  const auto f = fit_collectives(samples, machine,
                                 {"collectives.latency_scale", "collectives.tree_step.LL", "collectives.tree_step.Simple",
                                  "network.slingshot.bandwidth"});
  EXPECT_TRUE(f.fit.converged) << f.fit.message;
  EXPECT_NEAR(f.fit.values[0] / fitted_scale, 1.0, 0.005) << "refit the machine: latency scale " << f.fit.values[0];
  EXPECT_NEAR(f.fit.values[1] / fitted_hops[0], 1.0, 0.005) << "refit the machine: LL tree hop " << f.fit.values[1];
  EXPECT_NEAR(f.fit.values[2] / fitted_hops[2], 1.0, 0.005) << "refit the machine: Simple tree hop " << f.fit.values[2];
  EXPECT_NEAR(f.fit.values[3] / fitted_bw, 1.0, 0.005) << "refit the machine: bandwidth " << f.fit.values[3];
  EXPECT_LT(fitted_hops[1], 0.0);  // no LL128
  EXPECT_LT(f.fit_after.mean_abs, 0.3 * f.fit_before.mean_abs) << f.fit_before.mean_abs << " -> " << f.fit_after.mean_abs;
  EXPECT_LT(f.check_after.mean_abs, 0.3 * f.check_before.mean_abs)
      << f.check_before.mean_abs << " -> " << f.check_after.mean_abs;
}

// An all-reduce tree past one dragonfly group: Alps's cabinets hold 112 GH200 nodes (CSCS's hardware page), and the
// 1 GiB all-reduce's bus bandwidth falls from 91 GB/s on 4-64 nodes to 54-58 on 128-512. What a tree keeps of its
// bandwidth there (CollectiveLibrarySpec::tree_cross_group_share, every library's default) is the fit to the 128-node
// file; the 256- and 512-node files are held out and come out better too.
TEST(CollectiveRuns, TreesPastAGroupAreTheFitToAlpsAt128Nodes) {
  const std::string dir = std::string(SHARDSIM_SOURCE_DIR) + "/validate/data/collectives";
  std::vector<CollectiveSample> samples;
  for (const auto& c : shipped_samples("machines/alps-gh200.yaml")) {
    if (c.ranks >= 512) samples.push_back(c);
  }
  ASSERT_EQ(std::count_if(samples.begin(), samples.end(), [](const auto& c) { return !c.check; }), 12);
  ASSERT_EQ(std::count_if(samples.begin(), samples.end(), [](const auto& c) { return c.check; }), 24);
  scenario::Scenario machine = scenario::load_scenarios(dir + "/machines/alps-gh200.yaml").at(0);
  ASSERT_EQ(machine.cluster.levels.back().group_nodes, 112);
  auto& lib = machine.cluster.library;
  EXPECT_DOUBLE_EQ(lib.tree_cross_group_share, core::kFittedTreeCrossGroupShare);
  lib.tree_cross_group_share = 1.0;  // nothing lost past a group
  const auto f = fit_collectives(samples, machine, {"collectives.tree_cross_group_share"});
  EXPECT_TRUE(f.fit.converged) << f.fit.message;
  EXPECT_NEAR(f.fit.values[0] / core::kFittedTreeCrossGroupShare, 1.0, 0.005)
      << "refit kFittedTreeCrossGroupShare: " << f.fit.values[0];
  EXPECT_LT(f.fit_after.mean_abs, 0.85 * f.fit_before.mean_abs) << f.fit_before.mean_abs << " -> " << f.fit_after.mean_abs;
  EXPECT_LT(f.check_after.mean_abs, 0.8 * f.check_before.mean_abs)
      << f.check_before.mean_abs << " -> " << f.check_after.mean_abs;
}

// NCCL without its network plugin on Polaris (ALCF's setup (1): TCP sockets) is the machine in
// machines/polaris-tcp.yaml: its LL128 network step and NIC share are the fit to the 8-node setup-(1) runs, from the
// plugin's values; the 2- and 128-node runs are held out and come out better too.
TEST(CollectiveRuns, PolarisOverTcpIsTheFitToAlcfsSetupOne) {
  const std::string dir = std::string(SHARDSIM_SOURCE_DIR) + "/validate/data/collectives";
  const auto samples = shipped_samples("machines/polaris-tcp.yaml");
  ASSERT_EQ(samples.size(), 75u);
  scenario::Scenario machine = scenario::load_scenarios(dir + "/machines/polaris-tcp.yaml").at(0);
  machine.cluster.nodes = 128;
  auto& nic = machine.cluster.levels[1];
  const double fitted_bw = nic.link_bandwidth.value();
  const double fitted_step = machine.cluster.library.net_step_s[1];
  // From the plugin's values (the polaris preset's): what NCCL gets of a NIC through it, and its LL128 step.
  const core::ClusterSpec& plugin = *topology::find_cluster_preset("polaris");
  nic.link_bandwidth = plugin.levels[1].link_bandwidth;
  machine.cluster.library.net_step_s[1] = plugin.library.net_step_s[1];
  const auto f = fit_collectives(samples, machine, {"collectives.net_step.LL128", "network.slingshot.bandwidth"});
  EXPECT_TRUE(f.fit.converged) << f.fit.message;
  EXPECT_NEAR(f.fit.values[0] / fitted_step, 1.0, 0.005) << "refit the machine: LL128 step " << f.fit.values[0];
  EXPECT_NEAR(f.fit.values[1] / fitted_bw, 1.0, 0.005) << "refit the machine: bandwidth " << f.fit.values[1];
  EXPECT_LT(f.fit_after.mean_abs, 0.5 * f.fit_before.mean_abs);
  EXPECT_LT(f.check_after.mean_abs, 0.6 * f.check_before.mean_abs);
}

// NCCL on NERSC Perlmutter's GPU nodes (machines/perlmutter-gpu.yaml): its LL128 ring step is the fit to the all-gathers
// marked fit, from Polaris's (NCCL 2.18's) step; the reduce-scatters are held out and come out better too.
TEST(CollectiveRuns, PerlmutterIsTheFitToItsAllGathers) {
  const std::string dir = std::string(SHARDSIM_SOURCE_DIR) + "/validate/data/collectives";
  const auto samples = shipped_samples("machines/perlmutter-gpu.yaml");
  ASSERT_EQ(samples.size(), 46u);
  scenario::Scenario machine = scenario::load_scenarios(dir + "/machines/perlmutter-gpu.yaml").at(0);
  auto& lib = machine.cluster.library;
  const double fitted_step = lib.net_step_s[1];
  lib.net_step_s[1] = topology::find_cluster_preset("polaris")->library.net_step_s[1];
  const auto f = fit_collectives(samples, machine, {"collectives.net_step.LL128"});
  EXPECT_TRUE(f.fit.converged) << f.fit.message;
  EXPECT_NEAR(f.fit.values[0] / fitted_step, 1.0, 0.005) << "refit the machine: LL128 step " << f.fit.values[0];
  EXPECT_LT(f.fit_after.mean_abs, 0.3 * f.fit_before.mean_abs);
  EXPECT_LT(f.check_after.mean_abs, 0.5 * f.check_before.mean_abs);
}

// LUMI-G on the 2023 stack (machines/lumi-g-2023.yaml): what a GCD's traffic got of each NIC is the fit to the
// data-parallel all-reduces the 175B's 16-node run (a fit-set row) logged, eight at once on each node, from the
// frontier preset's 2024 rate; the same all-reduces over 4-32 replicas of the 32-256-node runs are held out and come
// out within 5% (at the 2024 rate they were 60% fast).
TEST(CollectiveRuns, Lumi2023IsTheFitToItsOwnRunsAllReduces) {
  const std::string dir = std::string(SHARDSIM_SOURCE_DIR) + "/validate/data/collectives";
  const auto samples = shipped_samples("machines/lumi-g-2023.yaml");
  ASSERT_EQ(samples.size(), 6u);
  ASSERT_EQ(std::count_if(samples.begin(), samples.end(), [](const auto& c) { return !c.check; }), 2);
  scenario::Scenario machine = scenario::load_scenarios(dir + "/machines/lumi-g-2023.yaml").at(0);
  machine.cluster.nodes = 32;
  auto& nic = machine.cluster.levels.back();
  const double fitted_bw = nic.link_bandwidth.value();
  nic.link_bandwidth = topology::find_cluster_preset("frontier")->levels.back().link_bandwidth;
  const auto f = fit_collectives(samples, machine, {"network.slingshot.bandwidth"});
  EXPECT_TRUE(f.fit.converged) << f.fit.message;
  EXPECT_NEAR(f.fit.values[0] / fitted_bw, 1.0, 0.005) << "refit the machine: bandwidth " << f.fit.values[0];
  EXPECT_LT(f.fit_after.mean_abs, 0.01);
  EXPECT_GT(f.check_before.mean_abs, 0.5);
  EXPECT_LT(f.check_after.mean_abs, 0.05);
}

// The DGX H100's NVSwitch level (and its link graph's GPU links, the same constant) is what NCCL's rings get of
// NVLink4: the fit to an 8-GPU all-gather (h100_1x8_all_gather.txt, role=fit), from the datasheet's 450 GB/s; the same
// run's reduce-scatter is held out and comes out better too. Its all-reduce (NVLS, not modelled) is held out as well and
// comes out worse: the check set's error as a whole is not asserted to improve.
TEST(CollectiveRuns, TheDgxH100NvswitchIsTheFitToItsSingleNodeAllGather) {
  const auto samples = shipped_samples("dgx-h100", "h100_1x8_");
  ASSERT_EQ(samples.size(), 30u);
  ASSERT_EQ(std::count_if(samples.begin(), samples.end(), [](const auto& c) { return !c.check; }), 10);
  scenario::Scenario machine;
  machine.cluster = *topology::find_cluster_preset("dgx-h100");
  machine.cluster.nodes = 1;
  auto& nvswitch = machine.cluster.levels[0];
  const double fitted_bw = nvswitch.link_bandwidth.value();
  ASSERT_TRUE(machine.cluster.topology);
  for (const auto& l : machine.cluster.topology->links) {
    if (l.b == "nvswitch") {
      EXPECT_DOUBLE_EQ(l.bandwidth.value(), fitted_bw) << l.a;  // one machine description
    }
  }
  nvswitch.link_bandwidth = core::BytesPerSec(450e9);  // the datasheet's
  const auto f = fit_collectives(samples, machine, {"network.nvswitch.bandwidth"});
  EXPECT_TRUE(f.fit.converged) << f.fit.message;
  EXPECT_NEAR(f.fit.values[0] / fitted_bw, 1.0, 0.005) << "refit the preset: NVSwitch bandwidth " << f.fit.values[0];
  EXPECT_LT(f.fit_after.mean_abs, 0.3 * f.fit_before.mean_abs) << f.fit_before.mean_abs << " -> " << f.fit_after.mean_abs;
}

// The machines that borrow another's fitted values (their files say whose) carry them as fitted: Kestrel Polaris's ring
// steps and NIC share and Alps's tree hops (LL, Simple) and latency scale; Perlmutter Polaris's LL ring step and NIC
// share, the A100's latency scale, Alps's tree hops (LL, Simple) and Polaris's LL128 one. A refit of Polaris or Alps
// that leaves them behind fails here.
TEST(CollectiveRuns, BorrowedNetworkValuesAreTheirSourcesValues) {
  const std::string dir = std::string(SHARDSIM_SOURCE_DIR) + "/validate/data/collectives/machines/";
  const core::ClusterSpec& polaris = *topology::find_cluster_preset("polaris");
  const core::ClusterSpec& a100 = *topology::find_cluster_preset("dgx-a100");
  const core::ClusterSpec alps = scenario::load_scenarios(dir + "alps-gh200.yaml").at(0).cluster;
  const core::ClusterSpec kestrel = scenario::load_scenarios(dir + "kestrel-gpu.yaml").at(0).cluster;
  const core::ClusterSpec perlmutter = scenario::load_scenarios(dir + "perlmutter-gpu.yaml").at(0).cluster;
  const double polaris_nic = polaris.levels.at(1).link_bandwidth.value();
  for (int p : {0, 1}) {
    const auto k = static_cast<std::size_t>(p);
    EXPECT_NEAR(kestrel.library.net_step_s[k] / polaris.library.net_step_s[k], 1.0, 1e-9) << "kestrel ring step " << p;
  }
  for (int p : {0, 2}) {  // Alps's tree hops: LL and Simple (it runs no LL128)
    const auto k = static_cast<std::size_t>(p);
    EXPECT_NEAR(kestrel.library.tree_step_s[k] / alps.library.tree_step_s[k], 1.0, 1e-9) << "kestrel tree hop " << p;
    EXPECT_NEAR(perlmutter.library.tree_step_s[k] / alps.library.tree_step_s[k], 1.0, 1e-9) << "perlmutter tree hop " << p;
  }
  EXPECT_LT(kestrel.library.tree_step_s[1], 0.0);  // an LL128 tree pays the ring's step
  EXPECT_NEAR(perlmutter.library.tree_step_s[1] / polaris.library.tree_step_s[1], 1.0, 1e-9);  // its preset's
  EXPECT_NEAR(perlmutter.library.net_step_s[0] / polaris.library.net_step_s[0], 1.0, 1e-9);
  EXPECT_NEAR(kestrel.levels.at(1).link_bandwidth.value() / polaris_nic, 1.0, 1e-9);
  EXPECT_NEAR(perlmutter.levels.at(1).link_bandwidth.value() / polaris_nic, 1.0, 1e-9);
  EXPECT_NEAR(kestrel.library.latency_scale / alps.library.latency_scale, 1.0, 1e-9);
  EXPECT_NEAR(perlmutter.library.latency_scale / a100.library.latency_scale, 1.0, 1e-9);
}

}  // namespace
}  // namespace shardsim::validate
