#pragma once
// What NCCL / RCCL do for one collective call: the algorithm and protocol their tuning model picks, and the time
// that model gives it. Both engines price `collective_algorithm: auto` with it, so a collective costs what the
// library would make of it, not the fastest algorithm imaginable.
//
// The model follows the libraries' own source (the selection they ship, with its tables):
//  - NCCL 2.18 (NVIDIA/nccl@v2.18.3-1: src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime), the
//    version PyTorch 2.1 ships: per algorithm (ring; tree for all-reduce) and protocol (LL, LL128, Simple) a
//    latency  base + (steps - network steps) x intra-node hop + network steps x network hop, and a bandwidth
//    busBw x protocol factor (LL: a quarter of it, capped by llMaxBw; LL128: 0.92; tree: 0.92 and half the
//    algorithm bandwidth); a call takes the pair with the least  latency + bytes / bandwidth  by those tables.
//    The pair chosen then costs what the machine's hops take (CollectiveLibrarySpec: measured scales, measured
//    network steps per protocol): the library's choice is made on its tables, not on the machine's truth.
//  - RCCL (ROCm/rccl src/graph/tuning.cc at 0cbce2a7 and at rocm-6.2.2, d380693772a8, RCCL 2.20.5): the tuning model
//    its system model of the node names (CollectiveLibrarySpec::rccl_tuning_model: 0, the one a node without its own
//    model gets, or 3, the MI250X node's), each with its own latency table, bandwidth ratios per algorithm and
//    protocol, and size-dependent correction factors.
// busBw, the library's Simple-protocol bus bandwidth, is what the machine's network levels give a ring
// (collective_cost.cpp): the library's channel search is not modelled, nor are CollNet / NVLS across nodes, nor the
// per-channel caps that need the channel count. NVLS inside a node is (CollectiveLibrarySpec::nvls), and so is PAT
// (NCCL 2.23 and later: all-gather and reduce-scatter over one rank per node, pat_available()).
#include <string_view>

#include "sim/core/cluster_spec.hpp"
#include "sim/core/plan_spec.hpp"
#include "sim/graph/task_graph.hpp"

namespace shardsim::engine {

/// in the order of CollectiveLibrarySpec::protocols
enum class Protocol : std::uint8_t { kLL, kLL128, kSimple };
std::string_view protocol_name(Protocol p);

/** @brief The steps of a ring over `n` ranks: n - 1 for an all-gather or a reduce-scatter, 2 (n - 1) for an
 *  all-reduce (its reduce-scatter, then its all-gather), n for a broadcast (NCCL's tuning model: the chain's n - 1
 *  hops and the root's copy in). */
int ring_steps(graph::CollectiveOp op, int n);

/** @brief A collective call as the library's tuning model sees it. */
struct LibraryCall {
  graph::CollectiveOp op = graph::CollectiveOp::kAllReduce;
  int ranks = 1;
  int nodes = 1;          ///< nodes the group spans (ranks / ranks per node)
  double bytes = 0.0;     ///< NCCL's nBytes: the all-reduce buffer, the all-gather output, the reduce-scatter input
  double bus_Bps = 0.0;   ///< Simple-protocol ring bus bandwidth the machine gives this group
  /// the group's nodes span more than one first-tier group of the fabric (core::NetworkLevel::group_nodes): a tree
  /// then costs CollectiveLibrarySpec::tree_cross_group_share of its bandwidth, which the library's choice ignores
  bool beyond_group = false;
};

/** @brief The library's choice for one call and what it costs. */
struct LibraryChoice {
  core::CollectiveAlgorithm algorithm = core::CollectiveAlgorithm::kRing;  ///< kRing, kTree or kNvls
  Protocol protocol = Protocol::kSimple;
  double latency_s = 0.0;  ///< the latency the call costs (the measured hops), not the table's
  /// A paced ring's floor (CollectiveLibrarySpec::paced_rings): the call takes at least this, its transfer beneath
  /// it, and latency_s is what the floor adds to the transfer (at least the library's own latency). 0: not paced.
  double paced_s = 0.0;
  double unpaced_latency_s = 0.0;  ///< where paced_s > 0: the library's own latency, before the floor
  /// the protocol's bandwidth over the Simple ring's bus bandwidth: the bandwidth term is the ring's bytes per
  /// edge / (bus_Bps x bandwidth_factor) for rings and PAT (which moves a ring's bytes per rank), bytes x 2 /
  /// (bus_Bps x bandwidth_factor) for trees, and bytes x (n + 1) / n / (bus_Bps x bandwidth_factor) for NVLS
  /// (nvls_edge_factor)
  double bandwidth_factor = 1.0;
  double time_s = 0.0;
};

/** @brief What each GPU sends to (and receives from) the NVSwitch in an NVLS all-reduce of `n` ranks, per byte of
 *  the buffer: its buffer for the switch to reduce, then its share of the result to multicast, (n + 1) / n. */
double nvls_edge_factor(int n);
/** @brief What NVLS gets of the links a ring gets (NCCL's nvlsEfficiency for Hopper, 0.85). */
double nvls_efficiency();

/** @brief Whether `library` has PAT for `call` (NVIDIA/nccl src/graph/tuning.cc, ncclPatEnable, 2.23 to 2.30): NCCL
 *  2.23 or later, an all-gather or a reduce-scatter, one rank on each of two or more nodes, and the Simple protocol
 *  allowed (PAT runs only under Simple). */
bool pat_available(const core::CollectiveLibrarySpec& library, const LibraryCall& call);

/** @brief The algorithm and protocol `library` picks for `call` (only `algorithm` when it is kRing, kTree or kPat; a
 *  tree is only an all-reduce's; NVLS where CollectiveLibrarySpec::nvls allows it and the algorithm is not
 *  forced; PAT where pat_available() and the algorithm is not forced to a ring), and their time. Precondition:
 *  family is NCCL or RCCL; call.ranks >= 2; call.op is an all-reduce, all-gather, reduce-scatter or broadcast (a
 *  ring's only: NCCL's tuning model has no other algorithm for it); bus_Bps > 0;
 *  pat_available() where `algorithm` is kPat. */
LibraryChoice choose_library_call(const core::CollectiveLibrarySpec& library, const LibraryCall& call,
                                  core::CollectiveAlgorithm algorithm = core::CollectiveAlgorithm::kAuto);

/** @brief How much longer a tree all-reduce's bytes take than a full pipeline's under protocol `p`: 1 + (stages - 1)
 *  / chunks, its 2 log2(nodes) network stages (up to the root and down) crossed whole by each chunk of a channel
 *  (NCCL's proxy sends a step once the GPU has written all of it), the first one before the pipeline is full; the
 *  chunks per channel as the library cuts the call (NCCL src/enqueue.cc: the protocol's step, LL128's chunks halved
 *  for the tree's steps, 2.18-2.19's Simple ones for its depth; the channels cut down for small calls). 1 inside a
 *  node. */
double tree_pipeline_fill(const core::CollectiveLibrarySpec& library, const LibraryCall& call, Protocol p);

/** @brief What one network step of a ring costs under protocol `p`: the measured step where `library` has one
 *  (CollectiveLibrarySpec::net_step_s), else the library's table x its network latency scale (seconds).
 *  Precondition: family is NCCL or RCCL. */
double network_step_s(const core::CollectiveLibrarySpec& library, Protocol p);

/** @brief What one network hop of a tree costs under protocol `p`: the measured tree hop where `library` has one
 *  (CollectiveLibrarySpec::tree_step_s), else the ring's measured step, else the library's tree table x its network
 *  latency scale (seconds). Precondition: family is NCCL or RCCL. */
double tree_step_s(const core::CollectiveLibrarySpec& library, Protocol p);

}  // namespace shardsim::engine
