#include "sim/engine/collective_cost.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/test_clusters.hpp"
#include "topology/cluster_presets.hpp"
#include "topology/placement.hpp"

namespace shardsim::engine {
namespace {

using core::CollectiveAlgorithm;
using graph::CollectiveOp;
using testing::flat;
using testing::two_level;

constexpr double kM = 1e9;  // 1 GB payload

double t(const core::ClusterSpec& c, int n, int stride, CollectiveOp op, CollectiveAlgorithm a, double m = kM) {
  return estimate_collective(c, topology::strided_group_shape(c, n, stride), op, core::Bytes(m), a).time.value();
}

TEST(CollectiveCost, RingAllReduceOnOneLevelIsTheTextbookFormula) {
  // 2(n-1)/n * M / B + 2(n-1) alpha (Patarasuk & Yuan 2009; Thakur et al. 2005).
  const auto c = flat(8);
  const double expected = 2.0 * 7.0 / 8.0 * kM / 50e9 + 2.0 * 7.0 * 1e-6;
  EXPECT_NEAR(t(c, 8, 1, CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing), expected, 1e-12);
}

TEST(CollectiveCost, RingReduceScatterAndAllGatherAreHalfAnAllReduce) {
  const auto c = flat(8);
  const double expected = 7.0 / 8.0 * kM / 50e9 + 7.0 * 1e-6;
  EXPECT_NEAR(t(c, 8, 1, CollectiveOp::kReduceScatter, CollectiveAlgorithm::kRing), expected, 1e-12);
  EXPECT_NEAR(t(c, 8, 1, CollectiveOp::kAllGather, CollectiveAlgorithm::kRing), expected, 1e-12);
}

// A broadcast is a chain: every rank but the root receives the buffer once, over n - 1 hops (NCCL's table counts
// n steps); any algorithm asked for runs it so.
TEST(CollectiveCost, RingBroadcastMovesTheBufferOverEveryEdge) {
  const auto c = flat(8);
  const double expected = kM / 50e9 + 8.0 * 1e-6;
  for (auto a : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kTree, CollectiveAlgorithm::kHierarchical,
                 CollectiveAlgorithm::kAuto, CollectiveAlgorithm::kBest}) {
    EXPECT_NEAR(t(c, 8, 1, CollectiveOp::kBroadcast, a), expected, 1e-12) << core::algorithm_name(a);
  }
}

TEST(CollectiveCost, SingleRankGroupsAreFree) {
  const auto c = flat(8);
  EXPECT_EQ(t(c, 1, 1, CollectiveOp::kAllReduce, CollectiveAlgorithm::kAuto), 0.0);
}

TEST(CollectiveCost, RingAcrossNodesIsPacedByTheSlowestLevel) {
  // 4 nodes x 4 ranks, group of all 16: node level capacity 1 x 100 GB/s; network: 4 ranks per node each
  // with 20/2 = 10 GB/s -> 40 GB/s crossing capacity: the network sets the pace.
  const auto c = two_level(4);
  const double per_edge = 2.0 * 15.0 / 16.0 * kM;
  const double expected = per_edge / 40e9 + 2.0 * 15.0 * 5e-6;
  const auto e = estimate_collective(c, topology::strided_group_shape(c, 16, 1), CollectiveOp::kAllReduce,
                                     core::Bytes(kM), CollectiveAlgorithm::kRing);
  EXPECT_NEAR(e.time.value(), expected, 1e-12);
  EXPECT_EQ(e.bottleneck_level, 1);
  // Bytes per rank: every rank sends per_edge in total, split over the levels its ring edges use:
  // 12 of 16 edges stay inside a node, 4 cross the network.
  EXPECT_NEAR(e.bytes_by_level[0], per_edge * 12.0 / 16.0, 1.0);
  EXPECT_NEAR(e.bytes_by_level[1], per_edge * 4.0 / 16.0, 1.0);
}

TEST(CollectiveCost, OneRankPerNodeGetsOnlyItsShareOfTheNic) {
  // Stride 4: one member per node, crossing capacity 1 x 10 GB/s.
  const auto c = two_level(4);
  const double expected = 2.0 * 3.0 / 4.0 * kM / 10e9 + 2.0 * 3.0 * 5e-6;
  EXPECT_NEAR(t(c, 4, 4, CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing), expected, 1e-12);
}

TEST(CollectiveCost, HierarchicalAllReduceIsReduceScatterAllReduceAllGather) {
  const auto c = two_level(4);
  // Level 0: 4 ranks per node, RS + AG of M: 2 x 3/4 M / 100 GB/s + 2 x 3 x 2 us.
  // Level 1: 4 nodes, all-reduce of M/4 per rank: 2 x 3/4 x M/4 / 10 GB/s + 2 x 3 x 5 us.
  const double expected = 2.0 * 0.75 * kM / 100e9 + 6 * 2e-6 + 2.0 * 0.75 * (kM / 4) / 10e9 + 6 * 5e-6;
  EXPECT_NEAR(t(c, 16, 1, CollectiveOp::kAllReduce, CollectiveAlgorithm::kHierarchical), expected, 1e-12);
}

TEST(CollectiveCost, TreeWinsSmallMessagesRingWinsLargeOnes) {
  const auto c = two_level(64);  // 256 ranks
  const auto small = estimate_collective(c, topology::strided_group_shape(c, 256, 1), CollectiveOp::kAllReduce,
                                         core::Bytes(1024), CollectiveAlgorithm::kAuto);
  EXPECT_EQ(small.algorithm, CollectiveAlgorithm::kTree);
  // Tree: 2M / (0.9 x 40 GB/s) + 2 ceil(log2 256) x 5 us (0.9: NCCL's tree derating).
  EXPECT_NEAR(small.time.value(), 2.0 * 1024 / (0.9 * 40e9) + 16 * 5e-6, 1e-12);
  const auto large = estimate_collective(c, topology::strided_group_shape(c, 256, 1), CollectiveOp::kAllReduce,
                                         core::Bytes(4e9), CollectiveAlgorithm::kAuto);
  EXPECT_NE(large.algorithm, CollectiveAlgorithm::kTree);
}

// `best` is the what-if of the fastest algorithm; `auto` is what NCCL runs: rings for all-gather and
// reduce-scatter, ring or tree for all-reduce — never the hierarchical scheme, which it does not have.
TEST(CollectiveCost, AutoIsWhatNcclRunsBestNeverLosesToAnExplicitAlgorithm) {
  const auto c = two_level(16);
  for (double m : {1e3, 1e6, 1e8, 1e10}) {
    EXPECT_DOUBLE_EQ(t(c, 64, 1, CollectiveOp::kAllGather, CollectiveAlgorithm::kAuto, m),
                     t(c, 64, 1, CollectiveOp::kAllGather, CollectiveAlgorithm::kRing, m));
    EXPECT_DOUBLE_EQ(t(c, 64, 1, CollectiveOp::kReduceScatter, CollectiveAlgorithm::kAuto, m),
                     t(c, 64, 1, CollectiveOp::kReduceScatter, CollectiveAlgorithm::kRing, m));
    EXPECT_DOUBLE_EQ(t(c, 64, 1, CollectiveOp::kAllReduce, CollectiveAlgorithm::kAuto, m),
                     std::min(t(c, 64, 1, CollectiveOp::kAllReduce, CollectiveAlgorithm::kRing, m),
                              t(c, 64, 1, CollectiveOp::kAllReduce, CollectiveAlgorithm::kTree, m)));
    for (auto op : {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter, CollectiveOp::kAllGather}) {
      const double best = t(c, 64, 1, op, CollectiveAlgorithm::kBest, m);
      for (auto a : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kTree, CollectiveAlgorithm::kHierarchical}) {
        EXPECT_LE(best, t(c, 64, 1, op, a, m) + 1e-15);
      }
    }
  }
}

// On a machine with NVLS, `best` knows it too: inside a DGX H100 a large all-reduce's ideal is NVLS (at its link's
// own latency), never slower than what NCCL runs; across nodes NVLS is not among the choices.
TEST(CollectiveCost, BestKnowsNvlsWhereTheSwitchReduces) {
  auto c = *topology::find_cluster_preset("dgx-h100");
  c.nodes = 2;
  ASSERT_TRUE(c.library.nvls);
  for (double m : {1e6, 1e8, 1e10}) {
    const auto best = estimate_collective(c, topology::strided_group_shape(c, 8, 1), CollectiveOp::kAllReduce,
                                          core::Bytes(m), CollectiveAlgorithm::kBest);
    EXPECT_LE(best.time.value(), t(c, 8, 1, CollectiveOp::kAllReduce, CollectiveAlgorithm::kAuto, m) + 1e-15) << m;
    if (m >= 1e8) {
      EXPECT_EQ(best.algorithm, CollectiveAlgorithm::kNvls) << m;
      EXPECT_NEAR(best.time.value(), 2e-6 + m * 9.0 / 8.0 / (0.85 * 363.5e9), 1e-12) << m;
    }
  }
  EXPECT_NE(estimate_collective(c, topology::strided_group_shape(c, 16, 1), CollectiveOp::kAllReduce, core::Bytes(1e10),
                                CollectiveAlgorithm::kBest).algorithm,
            CollectiveAlgorithm::kNvls);
  c.library.nvls = false;
  EXPECT_NE(estimate_collective(c, topology::strided_group_shape(c, 8, 1), CollectiveOp::kAllReduce, core::Bytes(1e10),
                                CollectiveAlgorithm::kBest).algorithm,
            CollectiveAlgorithm::kNvls);
}

TEST(CollectiveCost, AllToAllSendsEachLevelItsShare) {
  // 16 ranks on 4 nodes; each rank sends M/16 to each peer: 3/16 M inside the node, 12/16 M across.
  const auto c = two_level(4);
  const auto e = estimate_collective(c, topology::strided_group_shape(c, 16, 1), CollectiveOp::kAllToAll,
                                     core::Bytes(kM), CollectiveAlgorithm::kAuto);
  EXPECT_NEAR(e.bytes_by_level[0], kM * 3.0 / 16.0, 1.0);
  EXPECT_NEAR(e.bytes_by_level[1], kM * 12.0 / 16.0, 1.0);
  EXPECT_NEAR(e.time.value(), kM * 12.0 / 16.0 / 10e9 + 15 * 5e-6, 1e-12);
}

TEST(CollectiveCost, TimeGrowsWithPayload) {
  const auto c = two_level(8);
  double prev = 0.0;
  for (double m = 1e3; m <= 1e11; m *= 10) {
    const double now = t(c, 32, 1, CollectiveOp::kAllReduce, CollectiveAlgorithm::kAuto, m);
    EXPECT_GT(now, prev);
    prev = now;
  }
}

}  // namespace
}  // namespace shardsim::engine

namespace shardsim::engine {
namespace {

TEST(CompressedCollectives, WireCarriesPayloadOverRatioPlusCodecKernels) {
  const auto c = testing::two_level(4);
  const auto shape = topology::strided_group_shape(c, 16, 1);
  graph::CodecCost codec;
  codec.ratio = 4.0;
  codec.compress_s_per_byte = 1.0 / 100e9;
  codec.decompress_s_per_byte = 1.0 / 200e9;
  const double m = 1e9;
  const auto plain = estimate_collective(c, shape, graph::CollectiveOp::kAllReduce, core::Bytes(m / 4),
                                         core::CollectiveAlgorithm::kRing);
  const auto comp = estimate_compressed(c, shape, graph::CollectiveOp::kAllReduce, core::Bytes(m),
                                        core::CollectiveAlgorithm::kRing, codec);
  // Ring all-reduce: every step compresses and decompresses: 2 (n-1)/n M through each kernel.
  const double kernels = 2.0 * 15.0 / 16.0 * m * (1.0 / 100e9 + 1.0 / 200e9);
  EXPECT_NEAR(comp.time.value(), plain.time.value() + kernels, 1e-12);
  EXPECT_NEAR(comp.bytes_by_level[1], plain.bytes_by_level[1], 1e-6);
}

// MVAPICH2-GDR compresses on the inter-node path, messages of 1 MB and more: a group inside one node, and a
// collective whose steps send less, run as they would uncompressed; across nodes the same payload is compressed.
TEST(CompressedCollectives, OnlyMessagesAcrossNodesOfAMegabyteOrMoreAreCompressed) {
  const auto c = testing::two_level(4);
  graph::CodecCost codec;
  codec.ratio = 2.0;
  codec.compress_s_per_byte = 1.0 / 100e9;
  codec.decompress_s_per_byte = 1.0 / 100e9;
  const auto ring = core::CollectiveAlgorithm::kRing;
  const auto op = graph::CollectiveOp::kAllReduce;
  const auto node = topology::strided_group_shape(c, 4, 1);    // the 4 devices of one node
  const auto nodes = topology::strided_group_shape(c, 4, 4);   // one device in each of 4 nodes
  const double m = 64.0 * 1024 * 1024;
  EXPECT_FALSE(compresses(c, node, op, m));
  EXPECT_TRUE(compresses(c, nodes, op, m));
  EXPECT_EQ(estimate_compressed(c, node, op, core::Bytes(m), ring, codec).time.value(),
            estimate_collective(c, node, op, core::Bytes(m), ring).time.value());
  EXPECT_GT(estimate_compressed(c, nodes, op, core::Bytes(m), ring, codec).time.value(),
            estimate_collective(c, nodes, op, core::Bytes(m / 2), ring).time.value());
  // 4 MiB over 4 ranks: 1 MiB messages, compressed; 2 MiB: 512 KiB messages, not. A send's message is its payload.
  EXPECT_TRUE(compresses(c, nodes, op, 4.0 * 1024 * 1024));
  EXPECT_FALSE(compresses(c, nodes, op, 2.0 * 1024 * 1024));
  const auto pair = topology::strided_group_shape(c, 2, 4);
  EXPECT_TRUE(compresses(c, pair, graph::CollectiveOp::kSendRecv, 2.0 * 1024 * 1024));
  EXPECT_FALSE(compresses(c, pair, graph::CollectiveOp::kSendRecv, 512.0 * 1024));
}

TEST(CompressedCollectives, CodecVolumesPerOperation) {
  const double m = 800.0;
  EXPECT_DOUBLE_EQ(codec_volume(graph::CollectiveOp::kAllGather, 8, m).compressed, 100.0);  // own piece once
  EXPECT_DOUBLE_EQ(codec_volume(graph::CollectiveOp::kAllGather, 8, m).decompressed, 700.0);
  EXPECT_DOUBLE_EQ(codec_volume(graph::CollectiveOp::kReduceScatter, 8, m).compressed, 700.0);
  EXPECT_DOUBLE_EQ(codec_volume(graph::CollectiveOp::kAllToAll, 8, m).decompressed, 800.0);
  EXPECT_DOUBLE_EQ(codec_volume(graph::CollectiveOp::kAllReduce, 1, m).compressed, 0.0);
}

}  // namespace
}  // namespace shardsim::engine

// ---------------------------------------------------------------------------------------- the libraries

namespace shardsim::engine {
namespace {

using core::CollectiveLibrarySpec;

CollectiveLibrarySpec nccl() {
  CollectiveLibrarySpec l;
  l.family = CollectiveLibrarySpec::Family::kNccl;
  return l;
}

LibraryCall call(graph::CollectiveOp op, int ranks, int nodes, double bytes, double bus_gbps) {
  return LibraryCall{op, ranks, nodes, bytes, bus_gbps * 1e9};
}

// A tree past one first-tier group of the fabric (Frontier's dragonfly groups of 128 nodes, from its link graph) runs
// at the library's share of its bandwidth; the library picks as before, inside a group nothing changes, and rings
// (their neighbours in rank order) keep theirs.
TEST(CollectiveLibrary, ATreePastOneGroupOfTheFabricRunsAtItsShare) {
  core::ClusterSpec c = *topology::find_cluster_preset("frontier");
  ASSERT_EQ(c.levels.back().group_nodes, c.topology->fabric.group_nodes);  // one machine: the graph's groups
  ASSERT_EQ(c.levels.back().group_nodes, 128);
  c.nodes = 256;
  core::ClusterSpec one_group = c;
  one_group.levels.back().group_nodes = 0;
  const double share = c.library.tree_cross_group_share;
  ASSERT_LT(share, 1.0);
  auto est = [](const core::ClusterSpec& k, int ranks, CollectiveOp op) {
    return estimate_collective(k, topology::strided_group_shape(k, ranks, 1), op, core::Bytes(1 << 30),
                               core::CollectiveAlgorithm::kAuto);
  };
  const auto past = est(c, 2048, CollectiveOp::kAllReduce);  // 256 nodes: two groups
  const auto whole = est(one_group, 2048, CollectiveOp::kAllReduce);
  ASSERT_EQ(whole.algorithm, core::CollectiveAlgorithm::kTree);
  EXPECT_EQ(past.algorithm, whole.algorithm);
  EXPECT_EQ(past.protocol, whole.protocol);
  EXPECT_NEAR(past.bandwidth_factor / whole.bandwidth_factor, share, 1e-12);
  EXPECT_NEAR(past.time.value() - past.latency_s, (whole.time.value() - whole.latency_s) / share,
              1e-9 * whole.time.value());
  // 64 nodes: one group.
  EXPECT_DOUBLE_EQ(est(c, 512, CollectiveOp::kAllReduce).time.value(), est(one_group, 512, CollectiveOp::kAllReduce).time.value());
  // A ring across both groups.
  EXPECT_DOUBLE_EQ(est(c, 2048, CollectiveOp::kAllGather).time.value(), est(one_group, 2048, CollectiveOp::kAllGather).time.value());
}

// NVIDIA/nccl@v2.18.3-1 src/graph/tuning.cc, by hand: a ring all-gather over 16 ranks on 2 nodes of 8 (NVLink)
// pays 8.4 us (Simple base) + 14 intra-node steps at max(3.4, 3 x 1 us network overhead) + 1 network step at
// 14 us; a large buffer goes Simple at the full bus bandwidth.
TEST(CollectiveLibrary, NcclRingLatencyIsItsTuningModel) {
  const auto c = choose_library_call(nccl(), call(graph::CollectiveOp::kAllGather, 16, 2, 1e10, 100.0));
  EXPECT_EQ(c.algorithm, core::CollectiveAlgorithm::kRing);
  EXPECT_EQ(c.protocol, Protocol::kSimple);
  EXPECT_NEAR(c.latency_s * 1e6, 8.4 + 14 * 3.4 + 14.0, 1e-9);
  EXPECT_NEAR(c.time_s, c.latency_s + 1e10 * 15.0 / 16.0 / 100e9, 1e-12);
  EXPECT_DOUBLE_EQ(c.bandwidth_factor, 1.0);
}

// Small buffers go LL (lowest latency); large ones Simple; in between LL128 (0.92 of the bandwidth).
TEST(CollectiveLibrary, NcclPicksTheProtocolBySize) {
  const auto lib = nccl();
  const auto small = choose_library_call(lib, call(graph::CollectiveOp::kAllGather, 8, 1, 4096, 200.0));
  EXPECT_EQ(small.protocol, Protocol::kLL);
  EXPECT_NEAR(small.latency_s * 1e6, 6.6 + 7 * 0.6, 1e-9);
  // LL on one node: a third of the bus bandwidth for all-gather (a quarter for all-reduce), under llMaxBw.
  EXPECT_NEAR(small.bandwidth_factor, 200.0 / 3.0 / 200.0, 1e-12);
  const auto big = choose_library_call(lib, call(graph::CollectiveOp::kAllGather, 8, 1, 1e10, 200.0));
  EXPECT_EQ(big.protocol, Protocol::kSimple);
  CollectiveLibrarySpec no128 = lib;
  no128.protocols[1] = false;
  for (double bytes = 1e3; bytes < 1e11; bytes *= 3.0) {
    const auto c = choose_library_call(no128, call(graph::CollectiveOp::kAllReduce, 64, 8, bytes, 100.0));
    EXPECT_NE(c.protocol, Protocol::kLL128);
  }
}

// Trees only for all-reduce: 2 x ((ppn - 1) intra + log2(nodes) network) hops; they win small all-reduces across
// many nodes, where a ring pays a step per rank.
TEST(CollectiveLibrary, NcclTreesServeSmallAllReducesAcrossNodes) {
  const auto lib = nccl();
  const auto ar = choose_library_call(lib, call(graph::CollectiveOp::kAllReduce, 1024, 128, 1 << 20, 100.0));
  EXPECT_EQ(ar.algorithm, core::CollectiveAlgorithm::kTree);
  const auto ring = choose_library_call(lib, call(graph::CollectiveOp::kAllReduce, 1024, 128, 1 << 20, 100.0),
                                        core::CollectiveAlgorithm::kRing);
  EXPECT_LT(ar.time_s, ring.time_s);
  const auto ag = choose_library_call(lib, call(graph::CollectiveOp::kAllGather, 1024, 128, 1 << 20, 100.0));
  EXPECT_EQ(ag.algorithm, core::CollectiveAlgorithm::kRing);
  const auto tree = choose_library_call(lib, call(graph::CollectiveOp::kAllReduce, 16, 2, 1e10, 100.0),
                                        core::CollectiveAlgorithm::kTree);
  EXPECT_EQ(tree.algorithm, core::CollectiveAlgorithm::kTree);
  EXPECT_EQ(tree.protocol, Protocol::kSimple);
  // Tree Simple: base 0, 2 x (7 x 4.0 + 1 x 14) us; bandwidth 0.92 of the bus, half of it per direction, and the
  // pipeline's fill: 2 network stages, 1,193 chunks of 512 KiB on each of 16 channels.
  EXPECT_NEAR(tree.latency_s * 1e6, 2.0 * (7 * 4.0 + 14.0), 1e-9);
  EXPECT_NEAR(tree.time_s, tree.latency_s + 2.0 * 1e10 / (0.92 * 100e9) * (1.0 + 1.0 / 1193.0), 1e-12);
}

// A tree across nodes forwards each chunk whole at every network stage (2 log2(nodes) of them, up and down), so its
// bytes take 1 + (stages - 1) / chunks times a full pipeline's, the chunks per channel as NCCL cuts the call
// (src/enqueue.cc); the library still picks by its table (its size corrections), and the fill prices the pick.
TEST(CollectiveLibrary, TreesPayTheirPipelineFillAcrossNodes) {
  auto lib = nccl();
  const auto ar = [](int ranks, int nodes, double bytes) {
    return call(graph::CollectiveOp::kAllReduce, ranks, nodes, bytes, 12.5);
  };
  EXPECT_DOUBLE_EQ(tree_pipeline_fill(lib, ar(8, 1, 65536), Protocol::kLL), 1.0);  // inside a node: none
  // LL: 64 KiB on 16 channels of 4 KiB, one chunk each: every stage in turn, 6 on 8 nodes, 18 on 540.
  EXPECT_DOUBLE_EQ(tree_pipeline_fill(lib, ar(32, 8, 65536), Protocol::kLL), 6.0);
  EXPECT_DOUBLE_EQ(tree_pipeline_fill(lib, ar(2160, 540, 65536), Protocol::kLL), 18.0);
  // A small call keeps fewer channels (4 KiB each) but still one chunk: the same fill.
  EXPECT_DOUBLE_EQ(tree_pipeline_fill(lib, ar(32, 8, 8192), Protocol::kLL), 6.0);
  // 1 GiB under LL: 2,048 chunks of 32 KiB per channel.
  EXPECT_DOUBLE_EQ(tree_pipeline_fill(lib, ar(32, 8, 1 << 30), Protocol::kLL), 1.0 + 5.0 / 2048.0);
  // Simple, 16 MiB on 8 nodes of 4: NCCL 2.18 halves the 512 KiB chunks for the tree's depth (3 + 3) to 64 KiB, 16 per
  // channel; 2.20 keeps 512 KiB, 2 per channel.
  EXPECT_DOUBLE_EQ(tree_pipeline_fill(lib, ar(32, 8, 16 << 20), Protocol::kSimple), 1.0 + 5.0 / 16.0);
  lib.nccl_minor = 20;
  EXPECT_DOUBLE_EQ(tree_pipeline_fill(lib, ar(32, 8, 16 << 20), Protocol::kSimple), 1.0 + 5.0 / 2.0);
  // LL128: 576,000-byte chunks halved while a channel has fewer than (1 + log2(nodes) + 0.1 ppn) x 64 / ppn of them
  // (above 128 KiB), then x 16 / ppn (above 32 KiB): 4 MiB on 8 nodes of 4 ends at 18,000 bytes, 15 chunks a channel.
  EXPECT_DOUBLE_EQ(tree_pipeline_fill(lib, ar(32, 8, 4 << 20), Protocol::kLL128), 1.0 + 5.0 / 15.0);
  // The pick is the table's; its price carries the fill, in the time and in the bandwidth both engines move bytes at.
  lib.nccl_minor = 18;
  const auto c = choose_library_call(lib, ar(2160, 540, 65536));
  ASSERT_EQ(c.algorithm, core::CollectiveAlgorithm::kTree);
  ASSERT_EQ(c.protocol, Protocol::kLL);
  const double fill = tree_pipeline_fill(lib, ar(2160, 540, 65536), Protocol::kLL);
  EXPECT_NEAR(c.time_s, c.latency_s + 2.0 * 65536 / (c.bandwidth_factor * 12.5e9), 1e-12);
  // LL over the network: a 3.8th of 0.92 of the bus bandwidth (under llMaxBw), not the table's size correction.
  EXPECT_NEAR(c.bandwidth_factor, 0.92 / 3.8 / fill, 1e-12);
}

// A broadcast is NCCL's ring only (src/graph/tuning.cc): n steps, the network's nNodes of them until 2.22 and
// nNodes - 1 from 2.23, the bus bandwidth its algorithm bandwidth (nRanks / nsteps = 1), LL at a third inside a node.
TEST(CollectiveLibrary, NcclBroadcastsAsARingOfNSteps) {
  auto lib = nccl();
  const auto big = choose_library_call(lib, call(graph::CollectiveOp::kBroadcast, 16, 2, 1e10, 100.0));
  EXPECT_EQ(big.algorithm, core::CollectiveAlgorithm::kRing);
  EXPECT_EQ(big.protocol, Protocol::kSimple);
  // 8.4 us base + 14 in-node steps at max(3.4, 3 x 1 us) + 2 network steps at 14 us.
  EXPECT_NEAR(big.latency_s * 1e6, 8.4 + 14 * 3.4 + 2 * 14.0, 1e-9);
  EXPECT_NEAR(big.time_s, big.latency_s + 1e10 / 100e9, 1e-12);
  for (double bytes = 1e3; bytes < 1e11; bytes *= 7.0) {
    EXPECT_EQ(choose_library_call(lib, call(graph::CollectiveOp::kBroadcast, 64, 8, bytes, 100.0)).algorithm,
              core::CollectiveAlgorithm::kRing)
        << bytes;
  }
  lib.nccl_minor = 23;
  EXPECT_NEAR(choose_library_call(lib, call(graph::CollectiveOp::kBroadcast, 16, 2, 1e10, 100.0)).latency_s * 1e6,
              8.4 + 15 * 3.4 + 14.0, 1e-9);
  const auto small = choose_library_call(nccl(), call(graph::CollectiveOp::kBroadcast, 8, 1, 4096, 200.0));
  EXPECT_EQ(small.protocol, Protocol::kLL);
  EXPECT_NEAR(small.bandwidth_factor, 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(small.latency_s * 1e6, 6.6 + 8 * 0.6, 1e-9);
}

// NVLS (an NVSwitch that reduces): NCCL picks it for an all-reduce inside one node from the size where its table's
// 23 us and 5/6 of the bus bandwidth beat the ring's LL; each GPU then moves (n + 1) / n of the buffer each way at
// 0.85 of what a ring gets. Not for all-gathers, not across nodes, not under NCCL_ALGO=Ring, not in RCCL.
TEST(CollectiveLibrary, NvlsServesAllReducesInsideAnNvswitchNode) {
  auto lib = nccl();
  lib.nvls = true;
  lib.latency_scale = 2.0;
  const auto big = choose_library_call(lib, call(graph::CollectiveOp::kAllReduce, 8, 1, 1e9, 363.5));
  EXPECT_EQ(big.algorithm, core::CollectiveAlgorithm::kNvls);
  EXPECT_EQ(big.protocol, Protocol::kSimple);
  EXPECT_NEAR(big.latency_s * 1e6, 2.0 * 23.0, 1e-9);
  EXPECT_NEAR(big.time_s, big.latency_s + 1e9 * 9.0 / 8.0 / (0.85 * 363.5e9), 1e-12);
  EXPECT_DOUBLE_EQ(big.bandwidth_factor, 0.85);
  // 2 (n - 1) / n over (n + 1) / n at 0.85: 480 GB/s of bus bandwidth from a ring's 363.5 (a DGX H100 measures 480)
  EXPECT_NEAR(2.0 * 7.0 / 8.0 * 1e9 / (big.time_s - big.latency_s) / 1e9, 480.6, 0.1);
  EXPECT_EQ(choose_library_call(lib, call(graph::CollectiveOp::kAllReduce, 8, 1, 4096, 363.5)).algorithm,
            core::CollectiveAlgorithm::kRing);  // small: the ring's LL
  EXPECT_EQ(choose_library_call(lib, call(graph::CollectiveOp::kAllGather, 8, 1, 1e9, 363.5)).algorithm,
            core::CollectiveAlgorithm::kRing);
  EXPECT_NE(choose_library_call(lib, call(graph::CollectiveOp::kAllReduce, 16, 2, 1e9, 363.5)).algorithm,
            core::CollectiveAlgorithm::kNvls);
  EXPECT_EQ(choose_library_call(lib, call(graph::CollectiveOp::kAllReduce, 8, 1, 1e9, 363.5),
                                core::CollectiveAlgorithm::kRing).algorithm,
            core::CollectiveAlgorithm::kRing);
  auto rccl = lib;
  rccl.family = CollectiveLibrarySpec::Family::kRccl;
  EXPECT_NE(choose_library_call(rccl, call(graph::CollectiveOp::kAllReduce, 8, 1, 1e9, 363.5)).algorithm,
            core::CollectiveAlgorithm::kNvls);
  lib.nvls = false;
  EXPECT_EQ(choose_library_call(lib, call(graph::CollectiveOp::kAllReduce, 8, 1, 1e9, 363.5)).algorithm,
            core::CollectiveAlgorithm::kRing);
}

// A ring all-gather's latency grows with every rank; the measured scales multiply the table's parts.
TEST(CollectiveLibrary, LatencyGrowsWithRanksAndScalesApplyToTheirHops) {
  auto lib = nccl();
  double prev = 0.0;
  for (int nodes : {1, 2, 8, 64, 128}) {
    const auto c = choose_library_call(lib, call(graph::CollectiveOp::kAllGather, 8 * nodes, nodes, 1e8, 100.0));
    EXPECT_GT(c.latency_s, prev);
    prev = c.latency_s;
  }
  const auto one = choose_library_call(lib, call(graph::CollectiveOp::kAllGather, 16, 2, 1e10, 100.0));
  lib.latency_scale = 2.0;
  const auto intra = choose_library_call(lib, call(graph::CollectiveOp::kAllGather, 16, 2, 1e10, 100.0));
  EXPECT_NEAR(intra.latency_s * 1e6, 2.0 * (8.4 + 14 * 3.4) + 14.0, 1e-9);
  lib.latency_scale = 1.0;
  lib.net_latency_scale = 3.0;
  const auto net = choose_library_call(lib, call(graph::CollectiveOp::kAllGather, 16, 2, 1e10, 100.0));
  EXPECT_NEAR(net.latency_s - one.latency_s, 2.0 * 14e-6, 1e-12);
}

// The library picks by its own table; measured scales and network steps only price the pick. A ring all-gather
// over 128 nodes at 8 MB goes LL128 by NCCL's table: it still does when that protocol's network step is measured
// ten times slower than the table's (as on Slingshot through the OFI plugin), and then costs what was measured.
TEST(CollectiveLibrary, TheLibraryPicksByItsTableAndTheMeasuredStepsPriceThePick) {
  auto lib = nccl();
  const auto c = call(graph::CollectiveOp::kAllGather, 512, 128, 8e6, 40.0);
  const auto table = choose_library_call(lib, c);
  ASSERT_EQ(table.protocol, Protocol::kLL128);
  EXPECT_NEAR(network_step_s(lib, Protocol::kLL128), 4.0e-6, 1e-15);
  lib.net_step_s[1] = 50e-6;
  const auto slow = choose_library_call(lib, c);
  EXPECT_EQ(slow.protocol, Protocol::kLL128);
  EXPECT_NEAR(slow.latency_s - table.latency_s, 127 * (50e-6 - 4.0e-6), 1e-12);
  EXPECT_NEAR(slow.time_s - table.time_s, 127 * (50e-6 - 4.0e-6), 1e-12);
  EXPECT_DOUBLE_EQ(network_step_s(lib, Protocol::kLL128), 50e-6);
  // A latency scale prices the hops inside the node too, and leaves the pick alone.
  lib.latency_scale = 5.0;
  EXPECT_EQ(choose_library_call(lib, c).protocol, Protocol::kLL128);
  // A measured step replaces the table's on a tree's network hops too.
  auto tree_lib = nccl();
  const auto ar = call(graph::CollectiveOp::kAllReduce, 64, 8, 1 << 16, 100.0);
  const auto t0 = choose_library_call(tree_lib, ar, core::CollectiveAlgorithm::kTree);
  tree_lib.net_step_s[static_cast<std::size_t>(t0.protocol)] = 100e-6;
  const auto t1 = choose_library_call(tree_lib, ar, core::CollectiveAlgorithm::kTree);
  EXPECT_EQ(t1.protocol, t0.protocol);
  EXPECT_GT(t1.latency_s, t0.latency_s + 2 * 3 * 80e-6);
  // A measured tree hop prices the tree's 2 x log2(8) network hops and leaves the ring's steps alone.
  const auto pi = static_cast<std::size_t>(t0.protocol);
  tree_lib.tree_step_s[pi] = 5e-6;
  EXPECT_DOUBLE_EQ(tree_step_s(tree_lib, t0.protocol), 5e-6);
  EXPECT_DOUBLE_EQ(network_step_s(tree_lib, t0.protocol), 100e-6);
  const auto t2 = choose_library_call(tree_lib, ar, core::CollectiveAlgorithm::kTree);
  EXPECT_EQ(t2.protocol, t0.protocol);
  EXPECT_NEAR(t1.latency_s - t2.latency_s, 2 * 3 * (100e-6 - 5e-6), 1e-12);
  const auto ring1 = choose_library_call(tree_lib, ar, core::CollectiveAlgorithm::kRing);
  tree_lib.tree_step_s[pi] = -1.0;
  EXPECT_DOUBLE_EQ(choose_library_call(tree_lib, ar, core::CollectiveAlgorithm::kRing).latency_s, ring1.latency_s);
}

// NCCL's versions pick by their own tables (NVIDIA/nccl src/graph/tuning.cc at v2.18.3-1, v2.21.5-1, v2.23.4-1).
TEST(CollectiveLibrary, NcclVersionsPickByTheirOwnTables) {
  // 2.21: a ring's LL gets half the bus bandwidth (2.18: a quarter across nodes), under the same cap.
  auto lib = nccl();
  const auto small = call(graph::CollectiveOp::kAllGather, 32, 4, 1 << 16, 40.0);
  const auto ll18 = choose_library_call(lib, small);
  ASSERT_EQ(ll18.protocol, Protocol::kLL);
  EXPECT_NEAR(ll18.bandwidth_factor, 0.25, 1e-12);
  lib.nccl_minor = 21;
  const auto ll21 = choose_library_call(lib, small);
  ASSERT_EQ(ll21.protocol, Protocol::kLL);
  EXPECT_NEAR(ll21.bandwidth_factor, 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(ll21.latency_s, ll18.latency_s);
  // 2.19-2.22: a tree's Simple hop is 28 us on every link class; 2.23 on: 14 us over the network again.
  lib.nccl_minor = 18;
  EXPECT_DOUBLE_EQ(tree_step_s(lib, Protocol::kSimple), 14e-6);
  lib.nccl_minor = 19;
  EXPECT_DOUBLE_EQ(tree_step_s(lib, Protocol::kSimple), 28e-6);
  EXPECT_DOUBLE_EQ(network_step_s(lib, Protocol::kSimple), 14e-6);  // rings keep theirs
  lib.nccl_minor = 23;
  EXPECT_DOUBLE_EQ(tree_step_s(lib, Protocol::kSimple), 14e-6);
  // 2.23: a ring all-reduce over n nodes counts 2 (n - 1) network steps (2.18: 2 n), each 14 us under Simple.
  const auto ar = call(graph::CollectiveOp::kAllReduce, 32, 4, 1e10, 40.0);
  lib.nccl_minor = 18;
  const auto r18 = choose_library_call(lib, ar, core::CollectiveAlgorithm::kRing);
  lib.nccl_minor = 23;
  const auto r23 = choose_library_call(lib, ar, core::CollectiveAlgorithm::kRing);
  ASSERT_EQ(r18.protocol, Protocol::kSimple);
  ASSERT_EQ(r23.protocol, Protocol::kSimple);
  // Two network steps fewer, two in-node steps more (at max(3.4, 3 x 1 us network overhead) x the plateau 1.4).
  EXPECT_NEAR((r18.latency_s - r23.latency_s) * 1e6, 1.4 * 2 * (14.0 - 3.4), 1e-6);
}

// NCCL 2.23 and later price a call with one rank per node at the tree's network hop (NVIDIA/nccl@v2.23.4-1
// src/graph/tuning.cc: "with ppn=1 latencies are fully exposed"): an LL ring over 16 single-rank nodes pays 15 hops of
// 5.0 us where 2.22 paid the ring's 2.7, and the same call with two ranks per node keeps the ring's hop.
TEST(CollectiveLibrary, NcclPricesOneRankPerNodeAtTheTreesHopFrom223) {
  auto lib = nccl();
  lib.protocols = {true, false, false};
  const auto one = call(graph::CollectiveOp::kAllGather, 16, 16, 4096, 12.5);
  lib.nccl_minor = 22;
  EXPECT_NEAR(choose_library_call(lib, one, core::CollectiveAlgorithm::kRing).latency_s * 1e6, 6.6 + 15 * 2.7, 1e-9);
  lib.nccl_minor = 23;
  EXPECT_NEAR(choose_library_call(lib, one, core::CollectiveAlgorithm::kRing).latency_s * 1e6, 6.6 + 15 * 5.0, 1e-9);
  // 2.23 also dropped the 0.7 share of the bus bandwidth an LL128 ring over one rank per node got (0.92 since).
  auto ll128 = nccl();
  ll128.protocols = {false, true, false};
  ll128.nccl_minor = 22;
  EXPECT_NEAR(choose_library_call(ll128, one, core::CollectiveAlgorithm::kRing).bandwidth_factor, 0.7, 1e-12);
  ll128.nccl_minor = 23;
  EXPECT_NEAR(choose_library_call(ll128, one, core::CollectiveAlgorithm::kRing).bandwidth_factor, 0.92, 1e-12);
  const auto two = call(graph::CollectiveOp::kAllGather, 32, 16, 4096, 12.5);
  EXPECT_NEAR(choose_library_call(lib, two, core::CollectiveAlgorithm::kRing).latency_s * 1e6,
              6.6 + 16 * std::max(0.6, 1.0) + 15 * 2.7, 1e-9);  // in-node hops at least the 1 us overhead
}

// PAT (NCCL 2.23 on, one rank per node, all-gather and reduce-scatter, Simple only): NCCL's table prices it at 8 us +
// log2(nodes) x the tree's network hop / 3.5 + 2.8 us per rank, at 0.85 (2.23) or 0.75 (2.24 on) of the bus bandwidth
// as algorithm bandwidth; it wins small and mid gathers at scale, the ring large ones. The cost: the base at the
// latency scale, the per-rank part at the network latency scale, the levels at the measured tree hop.
TEST(CollectiveLibrary, PatServesGathersOverOneRankPerNodeFrom223) {
  auto lib = nccl();
  const auto small = call(graph::CollectiveOp::kAllGather, 64, 64, 65536, 12.5);
  EXPECT_FALSE(pat_available(lib, small));  // 2.18
  EXPECT_NE(choose_library_call(lib, small).algorithm, core::CollectiveAlgorithm::kPat);
  lib.nccl_minor = 24;
  ASSERT_TRUE(pat_available(lib, small));
  const auto pat = choose_library_call(lib, small);
  EXPECT_EQ(pat.algorithm, core::CollectiveAlgorithm::kPat);
  EXPECT_EQ(pat.protocol, Protocol::kSimple);
  EXPECT_NEAR(pat.latency_s * 1e6, 8.0 + 6 * 14.0 / 3.5 + 64 * 2.8, 1e-9);
  EXPECT_NEAR(pat.bandwidth_factor, 0.75 * 63.0 / 64.0, 1e-12);
  EXPECT_NEAR(pat.time_s, pat.latency_s + 65536 / (0.75 * 12.5e9), 1e-12);
  lib.nccl_minor = 23;
  EXPECT_NEAR(choose_library_call(lib, small).bandwidth_factor, 0.85 * 63.0 / 64.0, 1e-12);
  lib.nccl_minor = 30;
  // The measured scales and tree hop price the pick.
  lib.latency_scale = 2.0;
  lib.net_latency_scale = 1.5;
  lib.tree_step_s = {-1.0, -1.0, 21e-6};
  EXPECT_NEAR(choose_library_call(lib, small).latency_s * 1e6, 8.0 * 2.0 + 64 * 2.8 * 1.5 + 6 * 21.0 / 3.5, 1e-9);
  // A gigabyte goes ring (n / (n - 1) of the bus bandwidth against PAT's 0.75), unless NCCL_ALGO=PAT forces it.
  const auto big = call(graph::CollectiveOp::kReduceScatter, 64, 64, 1 << 30, 12.5);
  EXPECT_EQ(choose_library_call(lib, big).algorithm, core::CollectiveAlgorithm::kRing);
  EXPECT_EQ(choose_library_call(lib, big, core::CollectiveAlgorithm::kPat).algorithm, core::CollectiveAlgorithm::kPat);
  EXPECT_EQ(choose_library_call(lib, small, core::CollectiveAlgorithm::kRing).algorithm,
            core::CollectiveAlgorithm::kRing);
  // Never with two ranks on a node, for an all-reduce, without Simple, or in RCCL.
  EXPECT_FALSE(pat_available(lib, call(graph::CollectiveOp::kAllGather, 128, 64, 65536, 12.5)));
  EXPECT_NE(choose_library_call(lib, call(graph::CollectiveOp::kAllGather, 128, 64, 65536, 12.5)).algorithm,
            core::CollectiveAlgorithm::kPat);
  EXPECT_FALSE(pat_available(lib, call(graph::CollectiveOp::kAllReduce, 64, 64, 65536, 12.5)));
  auto no_simple = lib;
  no_simple.protocols = {true, true, false};
  EXPECT_FALSE(pat_available(no_simple, small));
  EXPECT_NE(choose_library_call(no_simple, small).algorithm, core::CollectiveAlgorithm::kPat);
  auto rccl = lib;
  rccl.family = CollectiveLibrarySpec::Family::kRccl;
  EXPECT_FALSE(pat_available(rccl, small));
}

// RCCL's default model: its own tables (Simple base 17 us; ring Simple over xGMI 3.6 us a hop, network 15.1 us).
TEST(CollectiveLibrary, RcclFollowsItsOwnTables) {
  CollectiveLibrarySpec lib;
  lib.family = CollectiveLibrarySpec::Family::kRccl;
  lib.protocols[1] = false;
  lib.amd_host = true;
  const auto c = choose_library_call(lib, call(graph::CollectiveOp::kAllGather, 16, 2, 1e10, 100.0));
  EXPECT_EQ(c.protocol, Protocol::kSimple);
  // Multi-node ring Simple: intra hop max(3.6, 3 x 2 us AMD network overhead) = 6 us.
  EXPECT_NEAR(c.latency_s * 1e6, 17.0 + 14 * 6.0 + 15.1, 1e-9);
  // ringCorrectionFactor[Simple][26] = 1.0 at 1e10 bytes.
  EXPECT_NEAR(c.time_s, c.latency_s + 1e10 * 15.0 / 16.0 / 100e9, 1e-12);
}

// RCCL picks by the tuning model its system model of the node names: model 3 (the MI250X node, rome_model_74;
// ROCm/rccl@d380693772a8 src/graph/tuning.cc) prices LL at a fifth of the bus bandwidth where model 0 has a 25th, so a
// 128 KiB all-reduce over 16 nodes stays on the tree's LL there; it has no LL128 whatever the protocols allowed, and
// its ring Simple network hop is 19.8 us (model 0: 15.1).
TEST(CollectiveLibrary, RcclPicksByTheNodesTuningModel) {
  CollectiveLibrarySpec lib;
  lib.family = CollectiveLibrarySpec::Family::kRccl;
  lib.amd_host = true;
  const auto mid = call(graph::CollectiveOp::kAllReduce, 128, 16, 128 * 1024, 40.0);
  const auto m0 = choose_library_call(lib, mid);
  lib.rccl_tuning_model = 3;
  const auto m3 = choose_library_call(lib, mid);
  EXPECT_EQ(m0.algorithm, core::CollectiveAlgorithm::kTree);
  EXPECT_EQ(m3.algorithm, core::CollectiveAlgorithm::kTree);
  EXPECT_NE(m0.protocol, Protocol::kLL);
  EXPECT_EQ(m3.protocol, Protocol::kLL);
  // bwRatio (treeCorrectionFactor[LL][log2(128 KiB / 64)], 1.0, is the table's), over the pipeline's fill: 8 network
  // stages on 16 nodes, one 8 KiB chunk on each of 16 channels.
  EXPECT_NEAR(m3.bandwidth_factor, 0.20 / 8.0, 1e-12);
  for (double bytes : {1e3, 1e5, 1e7, 1e9}) {
    for (auto op : {graph::CollectiveOp::kAllReduce, graph::CollectiveOp::kAllGather}) {
      EXPECT_NE(choose_library_call(lib, call(op, 16, 2, bytes, 40.0)).protocol, Protocol::kLL128) << bytes;
    }
  }
  EXPECT_DOUBLE_EQ(network_step_s(lib, Protocol::kSimple), 19.8e-6);
  lib.rccl_tuning_model = 0;
  EXPECT_DOUBLE_EQ(network_step_s(lib, Protocol::kSimple), 15.1e-6);
}

// A paced ring (RCCL on Frontier) steps at its network step under Simple: 2,047 steps of a 2,048-rank all-gather each
// take the measured 60 us, the transfer beneath them; the latency the call reports is what the steps add to the
// transfer. Where the transfer is the longer, or the ring stays in one node, or the protocol is LL, nothing changes.
TEST(CollectiveLibrary, PacedRingsStepAtTheirNetworkStepUnderSimple) {
  CollectiveLibrarySpec lib;
  lib.family = CollectiveLibrarySpec::Family::kRccl;
  lib.protocols = {true, false, true};
  lib.amd_host = true;
  lib.net_step_s = {26e-6, -1.0, 60e-6};
  CollectiveLibrarySpec chain = lib;
  lib.paced_rings = true;
  const auto latency_bound = call(graph::CollectiveOp::kAllGather, 2048, 256, 256e6, 100.0);
  const auto paced = choose_library_call(lib, latency_bound);
  const auto unpaced = choose_library_call(chain, latency_bound);
  ASSERT_EQ(paced.protocol, Protocol::kSimple);
  EXPECT_EQ(paced.algorithm, unpaced.algorithm);
  EXPECT_NEAR(paced.time_s, 2047 * 60e-6, 1e-12);
  EXPECT_GT(paced.time_s, 2.0 * unpaced.time_s);
  EXPECT_NEAR(paced.time_s - paced.latency_s, unpaced.time_s - unpaced.latency_s, 1e-12);  // the same transfer
  // All-reduce rings take 2 (n - 1) steps.
  const auto ar = choose_library_call(lib, call(graph::CollectiveOp::kAllReduce, 2048, 256, 256e6, 100.0),
                                      core::CollectiveAlgorithm::kRing);
  ASSERT_EQ(ar.algorithm, core::CollectiveAlgorithm::kRing);
  EXPECT_NEAR(ar.time_s, 2 * 2047 * 60e-6, 1e-12);
  // A transfer longer than the steps: the same call as without pacing.
  const auto bandwidth_bound = call(graph::CollectiveOp::kAllGather, 32, 4, 1e10, 100.0);
  EXPECT_DOUBLE_EQ(choose_library_call(lib, bandwidth_bound).time_s, choose_library_call(chain, bandwidth_bound).time_s);
  // One node: no network step to wait for.
  const auto one_node = call(graph::CollectiveOp::kAllGather, 8, 1, 64e6, 100.0);
  EXPECT_DOUBLE_EQ(choose_library_call(lib, one_node).time_s, choose_library_call(chain, one_node).time_s);
  // LL: NCCL's count of network steps.
  const auto small = call(graph::CollectiveOp::kAllGather, 2048, 256, 64e3, 100.0);
  const auto small_paced = choose_library_call(lib, small);
  ASSERT_EQ(small_paced.protocol, Protocol::kLL);
  EXPECT_DOUBLE_EQ(small_paced.time_s, choose_library_call(chain, small).time_s);
}

// The cost model hands the library the levels' ring bandwidth and the group's node count.
TEST(CollectiveLibrary, AutoOnATunedClusterIsTheLibrarysChoice) {
  auto c = testing::two_level(16);
  c.library = nccl();
  const auto shape = topology::strided_group_shape(c, 64, 1);
  for (double m : {1e3, 1e6, 1e9}) {
    const auto e = estimate_collective(c, shape, graph::CollectiveOp::kAllGather, core::Bytes(m),
                                       core::CollectiveAlgorithm::kAuto);
    // Levels: node 4 x ... network 4 ranks x 10 GB/s = 40 GB/s crossing capacity.
    const auto lib = choose_library_call(c.library, call(graph::CollectiveOp::kAllGather, 64, 16, m, 40.0));
    ASSERT_TRUE(e.protocol.has_value());
    EXPECT_EQ(*e.protocol, lib.protocol);
    EXPECT_NEAR(e.time.value(), lib.time_s, 1e-12 + 1e-12 * lib.time_s);
  }
}

}  // namespace
}  // namespace shardsim::engine
