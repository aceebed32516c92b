#include "sim/engine/collective_cost.hpp"

#include <algorithm>
#include <cmath>

#include "sim/core/errors.hpp"

namespace shardsim::engine {
namespace {

using core::CollectiveAlgorithm;
using graph::CollectiveOp;
using graph::GroupShape;

struct LevelView {
  const core::ClusterSpec& cluster;
  const GroupShape& shape;
  [[nodiscard]] bool used(int l) const { return shape.within(l) > shape.within(l - 1); }
  [[nodiscard]] double bw(int l) const {
    return cluster.levels[static_cast<std::size_t>(l)].per_rank_bandwidth().value();
  }
  [[nodiscard]] double alpha(int l) const { return cluster.levels[static_cast<std::size_t>(l)].latency.value(); }
  // Sub-domains of level l-1 that the group spans inside one level-l domain.
  [[nodiscard]] int fan(int l) const { return shape.within(l) / shape.within(l - 1); }
};

// Flat ring moving `per_edge_bytes` over each ring edge in `steps` steps.
CollectiveEstimate ring(const LevelView& v, double per_edge_bytes, int steps) {
  CollectiveEstimate e;
  e.algorithm = CollectiveAlgorithm::kRing;
  const int n = v.shape.size;
  double slowest = 0.0;
  double alpha = 0.0;
  for (int l = 0; l < v.shape.levels; ++l) {
    if (!v.used(l)) continue;
    const double t = per_edge_bytes / (v.shape.within(l - 1) * v.bw(l));
    if (t > slowest) {
      slowest = t;
      e.bottleneck_level = l;
    }
    alpha = std::max(alpha, v.alpha(l));
    // Ring edges laid out domain by domain: n/within(l-1) edges cross level-(l-1) domains, n/within(l) of
    // those also cross level-l domains (and are counted at the higher level).
    const double edges = static_cast<double>(n) / v.shape.within(l - 1) - static_cast<double>(n) / v.shape.within(l);
    e.bytes_by_level[static_cast<std::size_t>(l)] = per_edge_bytes * edges / n;
  }
  // The top level's edges: the ring closes through it.
  const int top = v.shape.top_level();
  if (top >= 0) {
    e.bytes_by_level[static_cast<std::size_t>(top)] +=
        per_edge_bytes * (static_cast<double>(n) / v.shape.within(top)) / n;
  }
  e.latency_s = steps * alpha;
  e.time = core::Seconds(slowest + e.latency_s);
  return e;
}

// NCCL's tuning model derates tree bus bandwidth to 0.9x of the ring's (NVIDIA/nccl src/graph/tuning.cc,
// ncclTopoTuneModel: "busBw = std::min(busBw*.9, maxTreeBw)").
constexpr double kTreeBandwidthFactor = 0.9;

// Double binary tree all-reduce: every rank sends and receives about M in the reduce and M in the broadcast,
// pipelined, with 2 * ceil(log2 n) latency steps.
CollectiveEstimate tree_all_reduce(const LevelView& v, double m) {
  CollectiveEstimate e;
  e.algorithm = CollectiveAlgorithm::kTree;
  const int n = v.shape.size;
  double slowest = 0.0;
  double alpha = 0.0;
  for (int l = 0; l < v.shape.levels; ++l) {
    if (!v.used(l)) continue;
    const double t = 2.0 * m / (v.shape.within(l - 1) * v.bw(l) * kTreeBandwidthFactor);
    if (t > slowest) {
      slowest = t;
      e.bottleneck_level = l;
    }
    alpha = std::max(alpha, v.alpha(l));
  }
  const int top = v.shape.top_level();
  if (top >= 0) e.bytes_by_level[static_cast<std::size_t>(top)] = 2.0 * m / v.shape.within(top - 1);
  e.latency_s = 2.0 * std::ceil(std::log2(static_cast<double>(n))) * alpha;
  e.bandwidth_factor = kTreeBandwidthFactor;
  e.time = core::Seconds(slowest + e.latency_s);
  return e;
}

// NVLS all-reduce inside a node: each rank's (n + 1) / n of the buffer to and from the switch at NVLS's share of its
// links, one hop's latency (the what-if of `best`; where the library picks NVLS, its bytes per level, the time and
// latency being choose_library_call's).
CollectiveEstimate nvls_all_reduce(const LevelView& v, double m) {
  CollectiveEstimate e;
  e.algorithm = CollectiveAlgorithm::kNvls;
  const double bytes = m * nvls_edge_factor(v.shape.size);
  double slowest = 0.0;
  for (int l = 0; l < v.shape.levels; ++l) {
    if (!v.used(l)) continue;
    const double t = bytes / (v.shape.within(l - 1) * v.bw(l) * nvls_efficiency());
    if (t > slowest) {
      slowest = t;
      e.bottleneck_level = l;
    }
    e.latency_s = std::max(e.latency_s, v.alpha(l));
  }
  e.bytes_by_level[static_cast<std::size_t>(v.shape.top_level())] = bytes;
  e.bandwidth_factor = nvls_efficiency();
  e.time = core::Seconds(slowest + e.latency_s);
  return e;
}

// Hierarchical: for all-reduce, reduce-scatter level by level up to the top, all-reduce across the top
// level on what remains, all-gather back down; reduce-scatter and all-gather do one direction only. At level
// l the within(l-1) ranks of a sub-domain run within(l-1) parallel rings over fan(l) peers on M/within(l-1).
CollectiveEstimate hierarchical(const LevelView& v, CollectiveOp op, double m) {
  CollectiveEstimate e;
  e.algorithm = CollectiveAlgorithm::kHierarchical;
  const int top = v.shape.top_level();
  double total = 0.0;
  double worst = -1.0;
  for (int l = 0; l <= top; ++l) {
    if (!v.used(l)) continue;
    const double k = v.fan(l);
    const double chunk = m / v.shape.within(l - 1);
    double bytes = 0.0;
    double steps = 0.0;
    if (op == CollectiveOp::kAllReduce && l == top) {
      bytes = 2.0 * (k - 1.0) / k * chunk;
      steps = 2.0 * (k - 1.0);
    } else {
      const double one_way = (k - 1.0) / k * chunk;
      const bool both = op == CollectiveOp::kAllReduce;
      bytes = both ? 2.0 * one_way : one_way;
      steps = both ? 2.0 * (k - 1.0) : (k - 1.0);
    }
    const double t = bytes / v.bw(l) + steps * v.alpha(l);
    e.latency_s += steps * v.alpha(l);
    total += t;
    if (t > worst) {
      worst = t;
      e.bottleneck_level = l;
    }
    e.bytes_by_level[static_cast<std::size_t>(l)] = bytes;
  }
  e.time = core::Seconds(total);
  return e;
}

// Pairwise-exchange all-to-all: each rank sends M/n to every peer; what leaves a level-(l-1) domain but
// stays inside the level-l domain crosses level-l links. Link classes work in parallel.
CollectiveEstimate all_to_all(const LevelView& v, double m) {
  CollectiveEstimate e;
  e.algorithm = CollectiveAlgorithm::kRing;  // direct exchange; no algorithm choice
  const int n = v.shape.size;
  double slowest = 0.0;
  double alpha = 0.0;
  for (int l = 0; l < v.shape.levels; ++l) {
    if (!v.used(l)) continue;
    const double bytes = m * (v.shape.within(l) - v.shape.within(l - 1)) / n;
    const double t = bytes / v.bw(l);
    if (t > slowest) {
      slowest = t;
      e.bottleneck_level = l;
    }
    alpha = std::max(alpha, v.alpha(l));
    e.bytes_by_level[static_cast<std::size_t>(l)] = bytes;
  }
  e.latency_s = (n - 1) * alpha;
  e.time = core::Seconds(slowest + e.latency_s);
  return e;
}

// The collective as the cluster's library runs it: the ring's bandwidth over the levels is the library's
// Simple-protocol bus bandwidth; its tuning model picks the algorithm and protocol and gives the latency.
CollectiveEstimate library_collective(const LevelView& v, CollectiveOp op, double m, double per_edge, int steps,
                                      CollectiveAlgorithm requested) {
  CollectiveEstimate ring_e = ring(v, per_edge, steps);
  const double ring_bandwidth_s = ring_e.time.value() - ring_e.latency_s;
  LibraryCall call;
  call.op = op;
  call.ranks = v.shape.size;
  call.nodes = nodes_spanned(v.cluster, v.shape);
  call.beyond_group = v.cluster.levels[static_cast<std::size_t>(v.shape.top_level())].spans_groups(call.nodes);
  call.bytes = m;
  if (ring_bandwidth_s <= 0.0 || m <= 0.0) {
    call.bus_Bps = 1.0;  // nothing to move: only the latency counts
  } else {
    call.bus_Bps = per_edge / ring_bandwidth_s;
  }
  const LibraryChoice c = choose_library_call(v.cluster.library, call, requested);
  // PAT moves a ring's bytes per rank (at its own share of the bus bandwidth): the ring's bytes by level.
  CollectiveEstimate e = c.algorithm == CollectiveAlgorithm::kTree   ? tree_all_reduce(v, m)
                         : c.algorithm == CollectiveAlgorithm::kNvls ? nvls_all_reduce(v, m)
                                                                     : ring_e;
  e.bottleneck_level = ring_e.bottleneck_level;
  e.algorithm = c.algorithm;
  e.protocol = c.protocol;
  e.latency_s = c.latency_s;
  e.paced_s = c.paced_s;
  e.unpaced_latency_s = c.unpaced_latency_s;
  e.bandwidth_factor = c.bandwidth_factor;
  e.time = core::Seconds(m <= 0.0 ? c.latency_s : c.time_s);
  return e;
}

}  // namespace

CollectiveEstimate estimate_collective(const core::ClusterSpec& cluster, const GroupShape& shape, CollectiveOp op,
                                       core::Bytes payload, CollectiveAlgorithm requested) {
  SHARDSIM_ASSERT(shape.levels == static_cast<int>(cluster.levels.size()), "group shape from another cluster");
  SHARDSIM_ASSERT(payload.value() >= 0.0, "negative payload");
  const int n = shape.size;
  if (n <= 1) return CollectiveEstimate{};
  const LevelView v{cluster, shape};
  const double m = payload.value();

  if (op == CollectiveOp::kSendRecv) {
    // A point-to-point transfer between two members separated at the group's top level.
    CollectiveEstimate e;
    const int top = shape.top_level();
    e.bottleneck_level = top;
    e.bytes_by_level[static_cast<std::size_t>(top)] = m;
    e.time = core::Seconds(m / v.bw(top) + v.alpha(top));
    return e;
  }
  if (op == CollectiveOp::kAllToAll) return all_to_all(v, m);

  const bool all_reduce = op == CollectiveOp::kAllReduce;
  const double per_edge = ring_edge_factor(op, n) * m;
  const int steps = ring_steps(op, n);

  const bool tuned = cluster.library.family != core::CollectiveLibrarySpec::Family::kAlphaBeta &&
                     (requested == CollectiveAlgorithm::kAuto || requested == CollectiveAlgorithm::kRing ||
                      requested == CollectiveAlgorithm::kTree || requested == CollectiveAlgorithm::kPat);
  if (tuned) return library_collective(v, op, m, per_edge, steps, requested);

  switch (requested) {
    case CollectiveAlgorithm::kNvls:  // a library's pick, never a request; as a ring without one
    case CollectiveAlgorithm::kPat:   // a library's; as a ring without one
    case CollectiveAlgorithm::kRing: return ring(v, per_edge, steps);
    case CollectiveAlgorithm::kTree:
      // NCCL only has trees for all-reduce; other operations run as rings.
      return all_reduce ? tree_all_reduce(v, m) : ring(v, per_edge, steps);
    case CollectiveAlgorithm::kHierarchical:
      return op == CollectiveOp::kBroadcast ? ring(v, per_edge, steps) : hierarchical(v, op, m);
    case CollectiveAlgorithm::kAuto:
    case CollectiveAlgorithm::kBest: {
      // Alpha-beta: all-gather and reduce-scatter as rings, all-reduce as the faster of ring and tree; `best`
      // also tries the hierarchical scheme.
      CollectiveEstimate best = ring(v, per_edge, steps);
      if (all_reduce) {
        CollectiveEstimate t = tree_all_reduce(v, m);
        if (t.time < best.time) best = t;
      }
      if (requested == CollectiveAlgorithm::kBest && op != CollectiveOp::kBroadcast) {
        CollectiveEstimate h = hierarchical(v, op, m);
        if (h.time < best.time) best = h;
        // NVLS where the node's switch reduces (CollectiveLibrarySpec::nvls), at the links' own latency.
        if (all_reduce && cluster.library.nvls && !crosses_nodes(cluster, shape)) {
          CollectiveEstimate s = nvls_all_reduce(v, m);
          if (s.time < best.time) best = s;
        }
      }
      return best;
    }
  }
  SHARDSIM_ASSERT(false, "unknown collective algorithm");
}

CollectiveEstimate repeated(CollectiveEstimate one, std::uint32_t calls) {
  if (calls <= 1) return one;
  const double k = calls;
  one.time = core::Seconds(one.time.value() * k);
  one.latency_s *= k;
  one.paced_s *= k;
  one.unpaced_latency_s *= k;
  for (double& b : one.bytes_by_level) b *= k;
  return one;
}

double ring_edge_factor(CollectiveOp op, int n) {
  switch (op) {
    case CollectiveOp::kAllReduce: return 2.0 * (n - 1.0) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll: return (n - 1.0) / n;
    case CollectiveOp::kBroadcast: return 1.0;  // a chain: every rank but the root receives the buffer once
    case CollectiveOp::kSendRecv:
    case CollectiveOp::kCount: break;
  }
  return 1.0;
}

CodecVolume codec_volume(CollectiveOp op, int n, double m) {
  if (n <= 1) return {};
  const double f = (n - 1.0) / n;
  switch (op) {
    case CollectiveOp::kAllReduce: return {2.0 * f * m, 2.0 * f * m};
    case CollectiveOp::kReduceScatter: return {f * m, f * m};
    case CollectiveOp::kAllGather: return {m / n, f * m};
    case CollectiveOp::kBroadcast: return {m / n, f * m};  // the root compresses, the others decompress
    case CollectiveOp::kAllToAll:
    case CollectiveOp::kSendRecv: return {m, m};
    case CollectiveOp::kCount: break;
  }
  return {};
}

int nodes_spanned(const core::ClusterSpec& cluster, const GroupShape& shape) {
  // Members are laid out evenly: the group's size over its members inside one node's domain.
  if (shape.size <= 1) return 1;
  return shape.size / shape.within(cluster.node_level());
}

bool crosses_nodes(const core::ClusterSpec& cluster, const GroupShape& shape) { return nodes_spanned(cluster, shape) > 1; }

bool compresses(const core::ClusterSpec& cluster, const GroupShape& shape, CollectiveOp op, double payload) {
  if (shape.size <= 1 || !crosses_nodes(cluster, shape)) return false;
  const bool whole = op == CollectiveOp::kSendRecv || op == CollectiveOp::kBroadcast;  // one message of the payload
  const double message = whole ? payload : payload / shape.size;
  return message >= kCompressionMinMessageBytes;
}

CollectiveEstimate estimate_compressed(const core::ClusterSpec& cluster, const GroupShape& shape, CollectiveOp op,
                                       core::Bytes payload, CollectiveAlgorithm requested, const graph::CodecCost& codec) {
  if (!codec.on() || !compresses(cluster, shape, op, payload.value())) {
    return estimate_collective(cluster, shape, op, payload, requested);
  }
  CollectiveEstimate e = estimate_collective(cluster, shape, op, payload / codec.ratio, requested);
  const CodecVolume v = codec_volume(op, shape.size, payload.value());
  e.time += core::Seconds(v.compressed * codec.compress_s_per_byte + v.decompressed * codec.decompress_s_per_byte);
  return e;
}

}  // namespace shardsim::engine
