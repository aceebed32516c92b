#include "sim/engine/collective_library.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "sim/core/errors.hpp"

namespace shardsim::engine {
namespace {

using core::CollectiveAlgorithm;
using core::CollectiveLibrarySpec;
using graph::CollectiveOp;

constexpr int kTree = 0;
constexpr int kRing = 1;
constexpr int kNvlink = 0;
constexpr int kPci = 1;
constexpr int kNet = 2;
using ProtoRow = std::array<double, 3>;  // LL, LL128, Simple

// The tables of one library version, in microseconds and fractions, [algorithm: tree, ring][protocol].
struct Tables {
  std::array<ProtoRow, 2> base_us;
  std::array<std::array<ProtoRow, 2>, 3> hop_us;  // [NVLink, PCI, NET][algorithm][protocol]
};

// NVIDIA/nccl@v2.18.3-1 src/graph/tuning.cc: baseLat and hwLat.
constexpr Tables kNccl218{
    {{{6.8, 14.0, 0.0}, {6.6, 14.0, 8.4}}},
    {{{{{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}}},
      {{{1.0, 1.9, 6.0}, {1.0, 2.5, 5.7}}},
      {{{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}}}}},
};
// NCCL's llMaxBws [Volta-N1 / Intel-N2 / Intel-N4+][...], [Ampere-N1 / AMD-N2 / AMD-N4+], [Hopper-N1 / ...]
// (GB/s): single-node calls read the GPU generation's row, multi-node calls the host CPU's.
constexpr std::array<std::array<double, 3>, 3> kNcclLlMaxBw{{{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}}};
// NCCL 2.21's llMaxBws row for Hopper [N1 / N2 / N4+] (GB/s).
constexpr std::array<double, 3> kNcclHopperLlMaxBw221{141.0, 45.0, 35.0};
// NCCL's treeCorrectionFactor[protocol][log2(bytes / 64)] below 2^23 x 64 bytes.
constexpr std::array<std::array<double, 23>, 3> kNcclTreeCorrection{{
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
}};
// NVLS in NCCL 2.18's table (NVIDIA/nccl@v2.18.3-1 src/graph/tuning.cc): its base latency (Simple) and the ratio of
// its algorithm bandwidth to its bus bandwidth, here the ring's (NVLS's own channel search is not modelled).
constexpr double kNvlsBaseUs = 23.0;
constexpr double kNvlsTableRatio = 5.0 / 6.0;
// What NVLS gets of the links a ring gets: NCCL's nvlsEfficiency for Hopper (NVIDIA/nccl@v2.28.3-1
// src/graph/tuning.cc, where the table first states it; Blackwell 0.74).
constexpr double kNvlsEfficiency = 0.85;
// PAT in NCCL 2.23-2.30's table (NVIDIA/nccl@v2.23.4-1 src/graph/tuning.cc, unchanged to 2.30.7): an 8 us base,
// log2(nodes) network levels at the tree's network hop / 3.5 each, and 2.8 us per rank ("still a linear part"); its
// bus bandwidth 0.85 (2.23) or 0.75 (2.24 on) of the ring's, not converted to an algorithm bandwidth as a ring's is.
constexpr double kPatBaseUs = 8.0;
constexpr double kPatLevelDivisor = 3.5;
constexpr double kPatPerRankUs = 2.8;
// NCCL's ring "plateau" on multi-node Simple all-reduce applies when a channel's share of a rank's data is at least
// 64 bytes; the channel count comes from its topology search, which is not modelled. [guess] 16 channels.
constexpr double kAssumedChannels = 16.0;
// A tree's chunk per channel and loop, by protocol (NVIDIA/nccl@v2.18.3-1 src/init.cc, src/include/devcomm.h,
// src/enqueue.cc computeColl; the same to 2.30): the step of each protocol's buffer (NCCL_STEPS = 8 per buffer)
// holding one chunk: LL's 512 KiB buffer (8 lines of 16 bytes x 512 threads x 8 steps) carries 8 data bytes per
// line, 32 KiB a step; LL128's (120 x 8 bytes x 640 threads x 8 steps) 120 of each 128, 576,000 bytes; Simple's
// 4 MiB, 512 KiB.
constexpr std::array<double, 3> kTreeChunkBytes{32768.0, 576000.0, 524288.0};
// The bytes below which a call gives up a channel (enqueue.cc getAlgoInfo: nc x nt x threadThreshold): LL 512 threads
// x 8 bytes, LL128 640 x 8, Simple 512 x 64 (src/graph/tuning.cc maxThreads, src/include/comm.h thresholds).
constexpr std::array<double, 3> kTreeThreadBytes{4096.0, 5120.0, 32768.0};
// RCCL's (ROCm/rccl@rocm-6.2.2, RCCL 2.20.5, src/include/device.h, src/init.cc): 256 threads at most, so LL's buffer
// is half NCCL's (16 KiB of data a step) and LL128's 28 elements a thread (57,344-byte steps, 53,760 of data); its
// thresholds are NCCL's per thread.
constexpr std::array<double, 3> kRcclTreeChunkBytes{16384.0, 53760.0, 524288.0};
constexpr std::array<double, 3> kRcclTreeThreadBytes{2048.0, 2048.0, 16384.0};

// RCCL's tuning models (ROCm/rccl src/graph/tuning.cc): one latency table, bandwidth ratios per algorithm and
// protocol, and size-dependent correction factors each; all share RCCL's baseLat.
using RcclCorrection = std::array<std::array<double, 27>, 3>;
struct RcclTuningModel {
  Tables tables;
  std::array<std::array<ProtoRow, 2>, 2> bw_ratio;  // [<= 2 nodes, > 2 nodes][tree, ring][protocol]
  // treeCorrectionFactor and ringCorrectionFactor [protocol][min(log2(bytes / 64), 26)]; the ring's applies to
  // multi-node calls only.
  RcclCorrection tree_correction;
  RcclCorrection ring_correction;
};
// tuning_model_0, the model of a system RCCL has no model for (ROCm/rccl@0cbce2a7; the same at rocm-6.2.2,
// d380693772a8, RCCL 2.20.5).
constexpr RcclTuningModel kRcclModel0{
    {{{{12.0, 12.0, 17.0}, {12.0, 12.0, 17.0}}},
     {{{{{0.8, 1.4, 2.5}, {0.8, 2.2, 3.6}}},
       {{{2.2, 2.2, 5.7}, {2.2, 2.2, 5.7}}},
       {{{11.8, 18.2, 20.8}, {9.5, 19.8, 15.1}}}}}},
    {{
        {{{0.04, 0.22, 0.91}, {0.04, 0.34, 1.00}}},
        {{{0.04, 0.22, 0.95}, {0.04, 0.34, 1.00}}},
    }},
    {{
        {0.1, 0.2, 0.1, 0.1, 0.9, 0.3, 0.4, 0.1, 0.2, 0.4, 0.2, 0.1, 0.3, 0.3, 0.2, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1,
         0.1, 0.1, 0.1, 0.1, 0.1},
        {0.1, 0.3, 1.0, 0.1, 0.5, 1.0, 0.9, 1.0, 1.0, 1.0, 0.3, 0.1, 0.4, 0.5, 0.5, 0.4, 0.4, 0.3, 0.3, 0.2, 0.2, 0.2,
         0.2, 0.2, 0.2, 0.2, 0.2},
        {0.2, 1.0, 0.1, 0.1, 0.7, 0.2, 0.4, 0.1, 0.1, 0.3, 0.4, 0.3, 0.6, 0.8, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8,
         0.8, 0.8, 0.9, 0.9, 0.9},
    }},
    {{
        {0.1, 0.1, 0.1, 0.1, 0.1, 0.2, 0.4, 0.2, 0.3, 0.5, 0.3, 0.1, 0.5, 0.5, 0.3, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1,
         0.1, 0.1, 0.1, 0.1, 0.1},
        {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.3, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.8, 0.7, 0.5, 0.4, 0.4, 0.3,
         0.3, 0.3, 0.3, 0.3, 0.3},
        {1.0, 0.8, 0.2, 1.0, 1.0, 0.3, 1.0, 0.1, 0.1, 0.2, 0.2, 0.1, 0.5, 1.0, 0.8, 0.8, 1.0, 0.9, 1.0, 1.0, 1.0, 1.0,
         1.0, 1.0, 1.0, 1.0, 1.0},
    }},
};
// tuning_model_3 (ROCm/rccl@d380693772a8, rocm-6.2.2, RCCL 2.20.5: src/graph/tuning.cc lines 164-192): the model
// RCCL's system model of the MI250X node of Frontier and LUMI-G names (rome_model_74, "tuning=3",
// src/graph/rome_models.cc lines 523-533: 8 GCDs, 4 NICs, 4 NUMA domains). It has no LL128 (its ratio is 0), and
// prices LL at a fifth of the bus bandwidth where model 0 has a 25th.
constexpr RcclTuningModel kRcclModel3{
    {{{{12.0, 12.0, 17.0}, {12.0, 12.0, 17.0}}},
     {{{{{0.8, 0.0, 2.5}, {0.8, 0.0, 3.6}}},
       {{{2.2, 2.2, 5.7}, {2.2, 2.2, 5.7}}},
       {{{12.5, 0.0, 22.4}, {9.5, 0.0, 19.8}}}}}},
    {{
        {{{0.20, 0.00, 1.75}, {0.20, 0.00, 1.00}}},
        {{{0.20, 0.00, 0.96}, {0.20, 0.00, 1.00}}},
    }},
    {{
        {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 1.0, 1.0, 0.2, 1.0, 0.9, 1.0, 0.6, 0.4, 0.6, 0.4, 0.3, 0.3, 0.3, 0.3, 0.3, 0.2,
         0.2, 0.2, 0.2, 0.2, 0.2},
        {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
         0.0, 0.0, 0.0, 0.0, 0.0},
        {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.1, 0.1, 0.1, 0.2, 1.0, 0.8, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.8,
         0.7, 0.8, 0.9, 0.7, 0.7},
    }},
    {{
        {0.1, 0.1, 0.1, 0.1, 0.1, 0.3, 0.1, 0.2, 0.1, 0.4, 0.4, 0.2, 0.2, 0.3, 0.7, 0.5, 0.4, 0.3, 0.3, 0.3, 0.3, 0.2,
         0.2, 0.2, 0.2, 0.2, 0.2},
        {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
         0.0, 0.0, 0.0, 0.0, 0.0},
        {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.5, 1.0, 0.1, 0.3, 0.1, 0.1, 0.1, 0.2, 0.2, 0.2, 0.3, 0.4, 0.7, 1.0, 1.0,
         1.0, 1.0, 1.0, 1.0, 1.0},
    }},
};

const RcclTuningModel& rccl_model(const CollectiveLibrarySpec& lib) {
  SHARDSIM_ASSERT(lib.rccl_tuning_model == 0 || lib.rccl_tuning_model == 3, "an RCCL tuning model shardsim has");
  return lib.rccl_tuning_model == 3 ? kRcclModel3 : kRcclModel0;
}

// The library's table hop (us) for link class `hw`, algorithm `a`, protocol `p`, as its version has it: NCCL 2.19-2.22
// price a tree's Simple hop at 28 us on every link class, 2.23 on at 4 (NVLink, PCI) and 14 (network).
double table_hop_us(const CollectiveLibrarySpec& lib, int hw, int a, int p) {
  const bool rccl = lib.family == CollectiveLibrarySpec::Family::kRccl;
  if (!rccl && a == kTree && p == 2 && lib.nccl_minor >= 19) {
    if (lib.nccl_minor < 23) return 28.0;
    return hw == kNet ? 14.0 : 4.0;
  }
  const Tables& t = rccl ? rccl_model(lib).tables : kNccl218;
  return t.hop_us[static_cast<std::size_t>(hw)][static_cast<std::size_t>(a)][static_cast<std::size_t>(p)];
}

// The libraries' log2i: floor(log2(n)), 0 for n < 2.
int log2i(double n) {
  int l = 0;
  for (double v = n; v >= 2.0; v /= 2.0) ++l;
  return l;
}

}  // namespace

std::string_view protocol_name(Protocol p) { return core::protocol_name(static_cast<std::size_t>(p)); }

int ring_steps(CollectiveOp op, int n) {
  if (op == CollectiveOp::kAllReduce) return 2 * (n - 1);
  return op == CollectiveOp::kBroadcast ? n : n - 1;
}

double nvls_edge_factor(int n) { return (n + 1.0) / n; }

double nvls_efficiency() { return kNvlsEfficiency; }

bool pat_available(const CollectiveLibrarySpec& lib, const LibraryCall& call) {
  return lib.family == CollectiveLibrarySpec::Family::kNccl && lib.nccl_minor >= 23 &&
         (call.op == CollectiveOp::kAllGather || call.op == CollectiveOp::kReduceScatter) && call.nodes >= 2 &&
         call.ranks == call.nodes && lib.protocols[static_cast<std::size_t>(Protocol::kSimple)];
}

namespace {
// A ring's network step under protocol p (s): the measured one where `lib` has it, else `table_hop_us` (the table's
// hop the call is priced at) x the network latency scale.
double ring_step_s(const CollectiveLibrarySpec& lib, std::size_t pi, double table_hop_us) {
  if (lib.net_step_s[pi] >= 0.0) return lib.net_step_s[pi];
  return table_hop_us * lib.net_latency_scale * 1e-6;
}
}  // namespace

double tree_pipeline_fill(const CollectiveLibrarySpec& lib, const LibraryCall& call, Protocol p) {
  if (call.nodes < 2 || call.bytes <= 0.0) return 1.0;
  const int ppn = call.ranks / call.nodes;
  const int levels = log2i(call.nodes);
  const auto pi = static_cast<std::size_t>(p);
  // Channels: the library's count (its topology search, not modelled: kAssumedChannels) cut down for a small call
  // until each of a channel's threads has its threshold's bytes (enqueue.cc: nBytes < nc x nt x threadThreshold).
  const bool rccl = lib.family == CollectiveLibrarySpec::Family::kRccl;
  const double per_channel_min = (rccl ? kRcclTreeThreadBytes : kTreeThreadBytes)[pi];
  const double nc = std::clamp(std::floor(call.bytes / per_channel_min), 1.0, kAssumedChannels);
  double chunk = (rccl ? kRcclTreeChunkBytes : kTreeChunkBytes)[pi];
  // Whole chunks per channel at the current chunk size (enqueue.cc's integer nBytes / (nChannels x chunkSize)).
  auto per_channel = [&] { return std::floor(call.bytes / (nc * chunk)); };
  if (p == Protocol::kLL128) {
    // LL128 trees: chunks halved until the call has enough of them per channel for the tree's steps.
    const double nsteps = 1.0 + levels + 0.1 * ppn;
    while (per_channel() < nsteps * 64.0 / ppn && chunk > 131072.0) chunk /= 2.0;
    while (per_channel() < nsteps * 16.0 / ppn && chunk > 32768.0) chunk /= 2.0;
  } else if (p == Protocol::kSimple && (rccl || lib.nccl_minor <= 19)) {
    // NCCL 2.18-2.19 and RCCL: a Simple tree's chunks halved until there are 8, 4, then 1 per level of its depth.
    const double depth = ppn - 1 + levels;
    while (per_channel() < depth * 8.0 && chunk > 131072.0) chunk /= 2.0;
    while (per_channel() < depth * 4.0 && chunk > 65536.0) chunk /= 2.0;
    while (per_channel() < depth && chunk > 32768.0) chunk /= 2.0;
  }
  const double chunks = std::max(1.0, std::ceil(call.bytes / (nc * chunk)));
  const double stages = 2.0 * levels;  // up to the root and back down, one network hop per level each way
  return 1.0 + (stages - 1.0) / chunks;
}

double network_step_s(const CollectiveLibrarySpec& lib, Protocol p) {
  SHARDSIM_ASSERT(lib.family != CollectiveLibrarySpec::Family::kAlphaBeta, "not a tuned library");
  const auto pi = static_cast<std::size_t>(p);
  return ring_step_s(lib, pi, table_hop_us(lib, kNet, kRing, static_cast<int>(pi)));
}

double tree_step_s(const CollectiveLibrarySpec& lib, Protocol p) {
  SHARDSIM_ASSERT(lib.family != CollectiveLibrarySpec::Family::kAlphaBeta, "not a tuned library");
  const auto pi = static_cast<std::size_t>(p);
  if (lib.tree_step_s[pi] >= 0.0) return lib.tree_step_s[pi];
  if (lib.net_step_s[pi] >= 0.0) return lib.net_step_s[pi];
  return table_hop_us(lib, kNet, kTree, static_cast<int>(pi)) * lib.net_latency_scale * 1e-6;
}

LibraryChoice choose_library_call(const CollectiveLibrarySpec& lib, const LibraryCall& call,
                                  CollectiveAlgorithm algorithm) {
  const bool rccl = lib.family == CollectiveLibrarySpec::Family::kRccl;
  SHARDSIM_ASSERT(rccl || lib.family == CollectiveLibrarySpec::Family::kNccl, "not a tuned library");
  SHARDSIM_ASSERT(call.ranks >= 2 && call.nodes >= 1 && call.ranks % call.nodes == 0, "bad library call shape");
  SHARDSIM_ASSERT(call.bus_Bps > 0.0, "library call without bandwidth");
  const bool all_reduce = call.op == CollectiveOp::kAllReduce;
  SHARDSIM_ASSERT(all_reduce || call.op == CollectiveOp::kAllGather || call.op == CollectiveOp::kReduceScatter ||
                      call.op == CollectiveOp::kBroadcast,
                  "the tuning model covers all-reduce, all-gather, reduce-scatter and broadcast");
  const RcclTuningModel* rm = rccl ? &rccl_model(lib) : nullptr;  // RCCL's tables for this node, looked up once
  const Tables& t = rm ? rm->tables : kNccl218;
  const int minor = rccl ? CollectiveLibrarySpec::kMinNcclMinor : lib.nccl_minor;
  const int n = call.ranks;
  const int nodes = call.nodes;
  const int ppn = n / nodes;
  const int intra_hw = lib.intra == CollectiveLibrarySpec::IntraLink::kNvlink ? kNvlink : kPci;
  const int steps = ring_steps(call.op, n);
  // Network steps: a broadcast's chain enters every node but the root's, and until 2.22 the table counted the root's
  // too (nInterSteps = nNodes).
  const bool broadcast = call.op == CollectiveOp::kBroadcast;
  const int net_steps = all_reduce  ? (nodes > 1 ? (minor >= 23 ? 2 * (nodes - 1) : 2 * nodes) : 0)
                        : broadcast ? (nodes > 1 ? (minor >= 23 ? nodes - 1 : nodes) : 0)
                                    : nodes - 1;
  const double bus = call.bus_Bps / 1e9;  // GB/s, as the tables
  const int gen = static_cast<int>(lib.generation);
  const int size_index = nodes <= 2 ? nodes - 1 : 2;
  // NCCL 2.21 gave Hopper its own LL caps (the table's third row; 2.18 repeats Ampere's there).
  const double ll_max = gen == 2 && nodes == 1 && minor >= 21
                            ? kNcclHopperLlMaxBw221[static_cast<std::size_t>(size_index)]
                            : kNcclLlMaxBw[static_cast<std::size_t>(nodes == 1 ? gen : (lib.amd_host ? 1 : 0))]
                                          [static_cast<std::size_t>(size_index)];
  const int log_size = log2i(call.bytes / 64.0);
  const double net_overhead_us = nodes > 1 ? (lib.amd_host ? 2.0 : 1.0) : 0.0;

  // The library picks by its own tables (NCCL_ALGO / NCCL_PROTO aside, what its tuning model predicts); the call
  // then costs what the machine's hops really take: the measured scales on the base and the hops inside a node,
  // and on the network hops each protocol's measured step where one is given (lib.net_step_s), else the
  // table's scaled.
  LibraryChoice best;
  double best_predicted = std::numeric_limits<double>::infinity();
  const bool pat = pat_available(lib, call) &&
                   (algorithm == CollectiveAlgorithm::kAuto || algorithm == CollectiveAlgorithm::kPat);
  SHARDSIM_ASSERT(pat || algorithm != CollectiveAlgorithm::kPat, "PAT forced where the library has none");
  for (int a : {kTree, kRing}) {
    if (algorithm == CollectiveAlgorithm::kPat) break;
    if (a == kTree && (!all_reduce || algorithm == CollectiveAlgorithm::kRing)) continue;
    if (a == kRing && algorithm == CollectiveAlgorithm::kTree && all_reduce) continue;
    for (int p = 0; p < 3; ++p) {
      if (!lib.protocols[static_cast<std::size_t>(p)]) continue;
      const auto ai = static_cast<std::size_t>(a);
      const auto pi = static_cast<std::size_t>(p);
      // Bus bandwidth of this algorithm and protocol (GB/s).
      double bw = bus;
      if (rccl) {
        bw *= rm->bw_ratio[nodes <= 2 ? 0 : 1][ai][pi];
      } else {
        if (a == kRing && p == 0) {
          bw = std::min(ll_max, bw * (minor >= 21 ? 0.5 : (nodes > 1 || all_reduce) ? 1.0 / 4.0 : 1.0 / 3.0));
        }
        // LL128 rings: 0.92 of the bus bandwidth; one rank per node 0.7 until 2.22 (2.23 dropped the discount when it
        // moved such calls to the tree's network hop).
        if (a == kRing && p == 1) bw *= ppn < 2 && minor < 23 ? 0.7 : 0.92;
        if (a == kTree) bw *= 0.92;
        if (a == kTree && p == 0) bw = std::min(bw / 3.8, ll_max);
        if (a == kTree && p == 1) bw *= nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
      }
      // Size-dependent corrections of the bandwidth.
      double tree_correction = 1.0;
      if (rccl) {
        const auto li = static_cast<std::size_t>(std::min(log_size, 26));
        if (a == kTree) tree_correction = rm->tree_correction[pi][li];
        if (a == kRing && nodes > 1) bw *= rm->ring_correction[pi][li];
      } else if (a == kTree && log_size < 23) {
        tree_correction = kNcclTreeCorrection[pi][static_cast<std::size_t>(log_size)];
      }
      // The table's size corrections of a tree stand for what its pipeline loses at middle sizes; over nodes the call
      // pays that as its pipeline's fill (tree_pipeline_fill below) instead.
      double cost_bw = a == kTree && nodes > 1 ? bw : bw * tree_correction;
      // A tree past one group of the fabric: its edges across the upper tier set its pace (the table does not know).
      if (a == kTree && call.beyond_group) cost_bw *= lib.tree_cross_group_share;
      bw *= tree_correction;
      if (bw <= 0.0) continue;
      // Latency (us): the base, then hops inside a node and across the network.
      double intra = table_hop_us(lib, intra_hw, a, p);
      // NCCL 2.23 and later price the network hops of a call with one rank per node at the tree's ("with ppn=1
      // latencies are fully exposed").
      const double inter = table_hop_us(lib, kNet, !rccl && minor >= 23 && ppn == 1 ? kTree : a, p);
      // NCCL 2.23 gave the tree's Simple protocol a base latency (8.4 us; 0 before).
      double base_and_intra = !rccl && a == kTree && p == 2 && minor >= 23 ? 8.4 : t.base_us[ai][pi];
      double net_hops = 0.0;
      if (a == kRing) {
        intra = std::max(intra, p == 2 ? 3.0 * net_overhead_us : net_overhead_us);
        base_and_intra += (steps - net_steps) * intra;
        net_hops = net_steps;
      } else {
        base_and_intra += 2.0 * (ppn - 1) * intra;
        net_hops = 2.0 * log2i(nodes);
      }
      // The network step the call pays: the measured one of its algorithm (a tree's hop, a ring's step; a tree pays
      // the ring's where only that is measured), else the table's x the network latency scale.
      const double measured_net_us =
          (a == kTree ? tree_step_s(lib, static_cast<Protocol>(p)) : ring_step_s(lib, pi, inter)) * 1e6;
      double table_us = base_and_intra + net_hops * inter;
      double lat_us = base_and_intra * lib.latency_scale + net_hops * measured_net_us;
      if (!rccl && a == kRing && p == 2 && nodes > 1 && all_reduce && call.bytes / (kAssumedChannels * n) >= 64.0) {
        const double plateau = gen == 0 ? 1.9 : 1.4;  // NCCL: the "plateau effect of ring"
        table_us *= plateau;
        lat_us *= plateau;
      }
      // Algorithm bandwidth: a ring moves nBytes x steps / ranks over each edge, a tree twice nBytes.
      const double ratio = a == kRing ? static_cast<double>(n) / steps : 0.5;
      const double bandwidth_s = call.bytes / (bw * ratio * 1e9);
      const double cost_bandwidth_s = call.bytes / (cost_bw * ratio * 1e9);
      // A tree over nodes forwards each chunk whole at every network hop (the proxy sends a step once the GPU has
      // written all of it): the first chunk crosses every level before the pipeline is full. The library's table
      // does not count it; the call pays it.
      const double fill = a == kTree ? tree_pipeline_fill(lib, call, static_cast<Protocol>(p)) : 1.0;
      // A ring paced by its network step under Simple (lib.paced_rings): every step waits for one, the transfer
      // beneath them.
      const double unpaced_us = lat_us;
      double paced_us = 0.0;
      if (lib.paced_rings && a == kRing && p == 2 && nodes > 1) {
        paced_us = steps * measured_net_us;
        lat_us = std::max(lat_us, paced_us - bandwidth_s * 1e6);
      }
      const double predicted_s = table_us * 1e-6 + bandwidth_s;
      if (predicted_s < best_predicted) {
        best_predicted = predicted_s;
        best.algorithm = a == kRing ? CollectiveAlgorithm::kRing : CollectiveAlgorithm::kTree;
        best.protocol = static_cast<Protocol>(p);
        best.latency_s = lat_us * 1e-6;
        best.paced_s = paced_us * 1e-6;
        best.unpaced_latency_s = unpaced_us * 1e-6;
        best.bandwidth_factor = cost_bw / bus / fill;
        best.time_s = lat_us * 1e-6 + cost_bandwidth_s * fill;
      }
    }
  }
  // PAT (pat_available): picked by its table against the ring's; it costs its base at the measured latency scale, its
  // per-rank part at the network latency scale (with one rank per node, each rank's part is a network peer's), its
  // levels at the measured tree hop (else the table's scaled), and its bytes at the table's share of the bus bandwidth.
  if (pat) {
    const double levels = log2i(nodes);
    const double table_us =
        kPatBaseUs + levels * table_hop_us(lib, kNet, kTree, 2) / kPatLevelDivisor + n * kPatPerRankUs;
    const double share = minor == 23 ? 0.85 : 0.75;
    const double bandwidth_s = call.bytes / (bus * share * 1e9);
    const double predicted_s = table_us * 1e-6 + bandwidth_s;
    if (predicted_s < best_predicted) {
      best_predicted = predicted_s;
      best.algorithm = CollectiveAlgorithm::kPat;
      best.protocol = Protocol::kSimple;
      best.latency_s = (kPatBaseUs * lib.latency_scale + n * kPatPerRankUs * lib.net_latency_scale) * 1e-6 +
                       levels * tree_step_s(lib, Protocol::kSimple) / kPatLevelDivisor;
      best.paced_s = 0.0;
      best.unpaced_latency_s = best.latency_s;
      best.bandwidth_factor = share * (n - 1.0) / n;
      best.time_s = best.latency_s + bandwidth_s;
    }
  }
  // NVLS (lib.nvls): an all-reduce inside one node whose NVSwitch reduces, Simple only, not where NCCL_ALGO forces
  // ring or tree; picked by the table's 23 us and 5/6 of the bus bandwidth, it costs the base at the measured scale
  // and (n + 1) / n of the buffer each way per GPU at NVLS's share of the links.
  if (!rccl && lib.nvls && all_reduce && nodes == 1 && algorithm == CollectiveAlgorithm::kAuto &&
      lib.protocols[static_cast<std::size_t>(Protocol::kSimple)]) {
    const double predicted_s = kNvlsBaseUs * 1e-6 + call.bytes / (bus * kNvlsTableRatio * 1e9);
    if (predicted_s < best_predicted) {
      best_predicted = predicted_s;
      best.algorithm = CollectiveAlgorithm::kNvls;
      best.protocol = Protocol::kSimple;
      best.latency_s = kNvlsBaseUs * lib.latency_scale * 1e-6;
      best.paced_s = 0.0;
      best.unpaced_latency_s = best.latency_s;
      best.bandwidth_factor = kNvlsEfficiency;
      best.time_s = best.latency_s + call.bytes * nvls_edge_factor(n) / (call.bus_Bps * kNvlsEfficiency);
    }
  }
  SHARDSIM_ASSERT(best_predicted < std::numeric_limits<double>::infinity(), "no protocol enabled");
  return best;
}

}  // namespace shardsim::engine
