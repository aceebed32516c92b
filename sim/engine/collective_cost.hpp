#pragma once
// Closed-form (alpha-beta) cost of collectives over the cluster's network levels, for the algorithms that
// NCCL/RCCL and MPI use: ring, (double binary) tree, and hierarchical (reduce-scatter up the levels,
// all-reduce at the top, all-gather back down).
//
// Payload convention, per rank, M = `payload`:
//   all-reduce      M = the buffer reduced (same on every rank)
//   reduce-scatter  M = the full input; each rank ends with M/n
//   all-gather      M = the full output; each rank contributes M/n
//   all-to-all      M = a rank's whole send buffer (M/n to each peer)
//   send-recv       M = the message
// Bandwidth model: a ring whose edges cross level-(l-1) domains uses level-l links. NCCL/RCCL build one
// ring channel per port, so the group's c = ranks_within(l-1) members inside one level-(l-1) domain push
// the crossing traffic in parallel: crossing capacity c * per_rank_bandwidth(l). The slowest level the
// group spans sets the pace; each algorithm step pays the largest latency among the levels used.
#include <array>
#include <optional>

#include "sim/core/cluster_spec.hpp"
#include "sim/core/plan_spec.hpp"
#include "sim/engine/collective_library.hpp"
#include "sim/graph/task_graph.hpp"

namespace shardsim::engine {

struct CollectiveEstimate {
  core::Seconds time;
  core::CollectiveAlgorithm algorithm = core::CollectiveAlgorithm::kRing;  ///< the one priced (auto resolved)
  /// the library protocol, when the cluster's collective library chose it (else alpha-beta from the levels)
  std::optional<Protocol> protocol;
  double latency_s = 0.0;  ///< the part of `time` that does not scale with bytes (without codec kernels)
  /// A paced ring's floor (LibraryChoice::paced_s): `time` is at least this; 0: not paced. unpaced_latency_s is
  /// then the library's own latency, which the SimGrid engine pays before the flows while the floor runs beside.
  double paced_s = 0.0;
  double unpaced_latency_s = 0.0;
  /// the algorithm's and protocol's bandwidth over the levels' ring bandwidth: a ring's flows carry bytes per
  /// edge / factor, a tree's 2 x bytes / factor
  double bandwidth_factor = 1.0;
  int bottleneck_level = -1;  ///< level whose bandwidth term dominates; -1 for a single-rank group
  std::array<double, graph::kMaxLevels> bytes_by_level{};  ///< bytes one rank sends on each level's links
};

/** @brief Cost of `op` on `payload` bytes over a group of shape `shape`. With a tuned library (NCCL, RCCL),
 *  all-reduce, all-gather and reduce-scatter under kAuto, kRing or kTree run as the library's tuning model runs them
 *  (collective_library.hpp: its algorithm and protocol, its latencies, bandwidth from the levels); kAuto with
 *  the alpha-beta library takes the faster of ring and tree; kHierarchical and kBest (the fastest of ring, tree
 *  and hierarchical, each at the links' own latencies: the ideal what-if) and all-to-all and send-recv are
 *  alpha-beta over the levels. Precondition: shape built for `cluster`. */
CollectiveEstimate estimate_collective(const core::ClusterSpec& cluster, const graph::GroupShape& shape,
                                       graph::CollectiveOp op, core::Bytes payload,
                                       core::CollectiveAlgorithm requested);

/** @brief What `calls` back-to-back calls cost, each the call `one` prices: its time, latencies and bytes `calls`
 *  times over (graph::Task::calls). */
CollectiveEstimate repeated(CollectiveEstimate one, std::uint32_t calls);

/** @brief Bytes a rank sends over each ring edge per byte of payload: 2(n-1)/n for all-reduce, (n-1)/n for
 *  all-gather, reduce-scatter and all-to-all, 1 for send-recv (nccl-tests' bus bandwidth over its algorithm
 *  bandwidth). */
double ring_edge_factor(graph::CollectiveOp op, int n);

/** @brief Uncompressed bytes a rank pushes through the compressor and the decompressor when `op` runs over
 *  `n` ranks compressed (MVAPICH compresses every message: ring reductions compress and decompress at every
 *  step, gathers compress a rank's own piece once and decompress what arrives). */
struct CodecVolume {
  double compressed = 0.0;
  double decompressed = 0.0;
};
CodecVolume codec_volume(graph::CollectiveOp op, int n, double payload);

/// The smallest message that MVAPICH2-GDR compresses: its default threshold for compressed point-to-point
/// messages, 1 MB (taken as 2^20 bytes [guess on the unit]), applied to each message a collective's steps send.
inline constexpr double kCompressionMinMessageBytes = 1024.0 * 1024.0;

/** @brief Whether a compressed collective's messages go through the codec. MVAPICH2-GDR compresses on the
 *  inter-node path (Zhou et al., "Designing High-Performance MPI Libraries with On-the-fly Compression for Modern
 *  GPU Clusters", IPDPS 2021: compression to relieve the inter-node fabric; inside a node a GPU's messages go by
 *  CUDA IPC), messages of at least kCompressionMinMessageBytes: a group inside one node, or one whose steps send
 *  less (payload / n per step of a ring or an all-to-all, the payload of a send), runs uncompressed. */
bool compresses(const core::ClusterSpec& cluster, const graph::GroupShape& shape, graph::CollectiveOp op,
                double payload);
/** @brief The nodes a group's members sit on (1 for a single rank). Precondition: validated spec
 *  (ClusterSpec::node_level). */
int nodes_spanned(const core::ClusterSpec& cluster, const graph::GroupShape& shape);
/** @brief Whether a group has members on more than one node (nodes_spanned > 1). */
bool crosses_nodes(const core::ClusterSpec& cluster, const graph::GroupShape& shape);

/** @brief estimate_collective with `codec` applied where it compresses (compresses()): the wire carries
 *  payload / ratio, and the codec's kernels run in series with the transfer. */
CollectiveEstimate estimate_compressed(const core::ClusterSpec& cluster, const graph::GroupShape& shape,
                                       graph::CollectiveOp op, core::Bytes payload, core::CollectiveAlgorithm requested,
                                       const graph::CodecCost& codec);

}  // namespace shardsim::engine
