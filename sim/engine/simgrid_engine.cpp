#include "sim/engine/simgrid_engine.hpp"

#include <functional>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iostream>
#include <limits>
#include <map>

#include "sim/core/errors.hpp"
#include "sim/engine/simgrid_adapter.hpp"

namespace shardsim::engine {
namespace {

using graph::CollectiveOp;
using graph::Task;
using graph::TaskGraph;
using graph::TaskId;
using graph::TaskKind;

constexpr std::size_t kStreams = static_cast<std::size_t>(graph::Stream::kCount);
// Groups spanning fewer nodes are simulated with every node's internal traffic.
constexpr int kMinNodesForSymmetry = 32;

// ------------------------------------------------------------------------------------------- placement

// Where the members of one group sit: the group of rank `base`'s role, and every copy of it that shares its
// top-level domain (copies elsewhere are identical and disjoint).
struct GroupGeometry {
  int n = 1;
  int top = -1;
  std::vector<int> within;  // members inside one domain of each level
  std::vector<int> radix;   // sub-domains spanned per level
  std::vector<std::vector<int>> copies;  // member index -> rank, per simulated copy

  [[nodiscard]] int w(int l) const { return l < 0 ? 1 : within[static_cast<std::size_t>(l)]; }
  [[nodiscard]] int r(int l) const { return radix[static_cast<std::size_t>(l)]; }
  /** Member that member p sends to at level l: the same position in the next sub-domain (cyclic: the last
   *  wraps to the first; else -1 for the last). */
  [[nodiscard]] int next(int p, int l, bool cyclic) const {
    const int k = r(l);
    if (k < 2) return -1;
    const int d = (p / w(l - 1)) % k;
    if (d < k - 1) return p + w(l - 1);
    return cyclic ? p - (k - 1) * w(l - 1) : -1;
  }
};

GroupGeometry place_group(const core::ClusterSpec& c, const graph::GroupShape& shape, int base, int block) {
  GroupGeometry geo;
  geo.n = shape.size;
  geo.top = shape.top_level();
  const int levels = shape.levels;
  geo.within.resize(static_cast<std::size_t>(levels));
  geo.radix.resize(static_cast<std::size_t>(levels));
  std::vector<int> dom(static_cast<std::size_t>(levels));
  std::vector<int> spacing(static_cast<std::size_t>(levels));
  for (int l = 0; l < levels; ++l) {
    const auto li = static_cast<std::size_t>(l);
    geo.within[li] = shape.within(l);
    geo.radix[li] = l == 0 ? shape.within(0) : std::max(1, shape.within(l) / shape.within(l - 1));
    dom[li] = std::min(c.domain_ranks(l), block);
    const int sub = l == 0 ? dom[0] : std::max(1, dom[li] / dom[li - 1]);
    spacing[li] = std::max(1, sub / std::max(1, geo.radix[li]));
  }
  if (geo.n <= 1 || geo.top < 0) return geo;
  int copies = 1;
  for (int l = 0; l <= geo.top; ++l) copies *= spacing[static_cast<std::size_t>(l)];
  copies = std::max(1, std::min(copies, dom[static_cast<std::size_t>(geo.top)] / geo.n));
  bool ok = true;
  for (int cp = 0; cp < copies && ok; ++cp) {
    std::vector<int> ranks(static_cast<std::size_t>(geo.n));
    for (int p = 0; p < geo.n; ++p) {
      int rank = base;
      int rest = p;
      int copy_rest = cp;
      for (int l = 0; l < levels; ++l) {
        const auto li = static_cast<std::size_t>(l);
        const int d = rest % geo.radix[li];
        rest /= geo.radix[li];
        int o = 0;
        if (l <= geo.top) {
          o = copy_rest % spacing[li];
          copy_rest /= spacing[li];
        }
        const int unit = l == 0 ? 1 : dom[li - 1];
        rank += (d * spacing[li] + o) * unit;
      }
      if (rank < base || rank >= base + block) ok = false;
      ranks[static_cast<std::size_t>(p)] = rank;
    }
    geo.copies.push_back(std::move(ranks));
  }
  if (!ok) {
    // A shape the strided layout does not produce. A group wider than one role's block spans the roles (the
    // model-parallel group that takes the gradient norm across pipeline stages): an equal share of its members in
    // each block. Otherwise consecutive ranks from `base`, wrapping at the cluster's end: every member is a device.
    const int total = c.total_devices();
    const int roles = block > 0 && total % block == 0 ? total / block : 1;
    const bool spans_roles = geo.n > block && roles > 1 && geo.n % roles == 0 && geo.n / roles <= block;
    const int per = spans_roles ? geo.n / roles : 0;  // members in each block
    geo.copies.assign(1, std::vector<int>(static_cast<std::size_t>(geo.n)));
    for (int p = 0; p < geo.n; ++p) {
      geo.copies[0][static_cast<std::size_t>(p)] = spans_roles ? (p / per) * block + p % per : (base + p) % total;
    }
  }
  return geo;
}

// ------------------------------------------------------------------------------------------- plans

struct Phase {
  double pre_delay_s = 0.0;  // latency of the steps beyond the first, and codec kernels
  double floor_s = 0.0;      // a paced ring's: the phase ends no earlier than this after it starts (0: none)
  std::vector<NetFlow> flows;
};

struct CommPlan {
  std::vector<Phase> phases;
  std::vector<std::pair<int, double>> link_bytes;  // (2 * link + reverse, bytes)
  double codec_s = 0.0;    // compression kernels (part of the phases' pre-delays)
  double latency_s = 0.0;  // per-step latencies beyond each phase's first step (the rest of the pre-delays)
  double paced_latency_s = 0.0;  // what paced rings' floors add to their transfers, as the analytical engine counts it
  int bound_link = -1;     // link direction with the most bytes per bandwidth: what bounds the plan alone
  double bound_s = 0.0;    // its bytes / bandwidth
};

struct PlanKey {
  int kind = 0;
  int role = 0;
  int group = 0;
  int op = 0;
  int purpose = 0;
  int stream = 0;
  std::uint32_t calls = 1;
  double bytes = 0.0;
  auto operator<=>(const PlanKey&) const = default;
};

class Planner {
 public:
  Planner(const core::ClusterSpec& c, const topology::LinkTopology& topo, core::CollectiveAlgorithm algorithm,
          const TaskGraph& g, bool node_symmetry)
      : c_(c), topo_(topo), algorithm_(algorithm), g_(g), node_symmetry_(node_symmetry),
        scratch_(2 * topo.link_count(), 0.0) {
    roles_ = std::max<int>(1, static_cast<int>(g.roles().size()));
    const int total = c.total_devices();
    block_ = total % roles_ == 0 ? total / roles_ : total;
  }

  CommPlan plan(const Task& t) {
    CommPlan p;
    const int base = roles_ > 1 && block_ < c_.total_devices() ? t.role * block_ : 0;
    if (t.kind == TaskKind::kCopy) {
      plan_copy(t, base, p);
    } else if (t.calls > 1) {
      Task one = t;
      one.bytes = t.bytes / t.calls;
      one.calls = 1;
      plan_collective(one, base, p);
      repeat(p, t.calls);
    } else {
      plan_collective(t, base, p);
    }
    account(p);
    return p;
  }

 private:
  int dev(int rank) const { return topo_.device_vertex(rank); }

  void plan_copy(const Task& t, int base, CommPlan& p) {
    // Every device of the node copies at once (each rank of the role does the same).
    const int dpn = c_.devices_per_node;
    const int first = (base / dpn) * dpn;
    Phase ph;
    for (int i = 0; i < dpn; ++i) {
      const int d = dev(first + i);
      const int h = topo_.host_vertex(first + i);
      if (t.stream == graph::Stream::kHostToDevice) {
        ph.flows.push_back(NetFlow{h, d, t.bytes});
      } else {
        ph.flows.push_back(NetFlow{d, h, t.bytes});
      }
    }
    p.phases.push_back(std::move(ph));
  }

  // `calls` back-to-back calls of the one `p` plans, as one transfer of their bytes: the pre-delay takes what the
  // calls' own transfers would have added (each call's pre-delay and route latency, less what the routes add to the
  // merged transfer), so that alone the plan takes `calls` times the one call's time, as the analytical engine
  // prices it (CollectiveEstimate repeated).
  void repeat(CommPlan& p, std::uint32_t calls) {
    const double k = calls;
    for (Phase& ph : p.phases) {
      const double one = bounding_latency(ph.flows);
      for (NetFlow& f : ph.flows) f.bytes *= k;
      ph.pre_delay_s = k * (ph.pre_delay_s + one) - bounding_latency(ph.flows);
      ph.floor_s *= k;
    }
    p.codec_s *= k;
    p.paced_latency_s *= k;
  }

  double max_latency(const std::vector<NetFlow>& flows) {
    double m = 0.0;
    for (const NetFlow& f : flows) {
      topo_.route(f.src_vertex, f.dst_vertex, hops_);
      m = std::max(m, topo_.route_latency_s(hops_));
    }
    return m;
  }

  // What the flows' route latencies add to their slowest transfer when nothing is shared: the last flow to finish
  // alone (its route's latency plus its bytes at its narrowest link) minus the longest transfer. A library's
  // latency less this is the pre-delay that makes an uncontended call cost latency + transfer, as the analytical
  // engine prices it, whichever flow bounds it (a flow through the switch may, with a shorter route than the NIC's).
  double bounding_latency(const std::vector<NetFlow>& flows) {
    double finish = 0.0;
    double transfer = 0.0;
    for (const NetFlow& f : flows) {
      topo_.route(f.src_vertex, f.dst_vertex, hops_);
      const double t = hops_.empty() ? 0.0 : f.bytes / topo_.route_bandwidth_Bps(hops_);
      finish = std::max(finish, topo_.route_latency_s(hops_) + t);
      transfer = std::max(transfer, t);
    }
    return finish - transfer;
  }

  void plan_collective(const Task& t, int base, CommPlan& p) {
    const graph::GroupShape& shape = g_.groups()[t.group].shape;
    const graph::CodecCost& codec = g_.codecs[static_cast<std::size_t>(t.purpose)];
    const int n = shape.size;
    if (n <= 1) return;
    const bool coded = codec.on() && compresses(c_, shape, t.op, t.bytes);
    const double wire = coded ? t.bytes / codec.ratio : t.bytes;
    double codec_s = 0.0;
    if (coded) {
      const CodecVolume v = codec_volume(t.op, n, t.bytes);
      codec_s = v.compressed * codec.compress_s_per_byte + v.decompressed * codec.decompress_s_per_byte;
    }
    p.codec_s = codec_s;
    const CollectiveEstimate est = estimate_collective(c_, shape, t.op, core::Bytes(wire), algorithm_);
    const GroupGeometry geo = place_group(c_, shape, base, block_);
    const double nn = n;

    if (t.op == CollectiveOp::kSendRecv) {
      Phase ph;
      ph.pre_delay_s = codec_s;
      if (roles_ > 1 && block_ < c_.total_devices()) {
        // Every rank of the stage sends to its peer in the next stage; those on the first node share its links.
        const int peers = std::min(block_, c_.devices_per_node);
        for (int i = 0; i < peers; ++i) {
          ph.flows.push_back(NetFlow{dev(base + i), dev((base + block_ + i) % c_.total_devices()), wire});
        }
      } else {
        for (const auto& ranks : geo.copies) {
          const int q = geo.w(geo.top - 1);
          ph.flows.push_back(NetFlow{dev(ranks[0]), dev(ranks[static_cast<std::size_t>(q)]), wire});
        }
      }
      p.phases.push_back(std::move(ph));
      return;
    }

    const std::vector<char> keep = representative_nodes(geo);
    auto level_flows = [&](int l, double bytes, bool cyclic, std::vector<NetFlow>& out) {
      if (geo.r(l) < 2 || bytes <= 0.0) return;
      for (const auto& ranks : geo.copies) {
        for (int m = 0; m < n; ++m) {
          const int q = geo.next(m, l, cyclic);
          if (q < 0) continue;
          if (!keep.empty() && !keep[static_cast<std::size_t>(ranks[static_cast<std::size_t>(m)] / c_.devices_per_node)]) {
            continue;
          }
          out.push_back(NetFlow{dev(ranks[static_cast<std::size_t>(m)]), dev(ranks[static_cast<std::size_t>(q)]), bytes});
        }
      }
    };

    if (t.op == CollectiveOp::kAllToAll) {
      Phase ph;
      for (int l = 0; l <= geo.top; ++l) {
        level_flows(l, wire * (geo.w(l) - geo.w(l - 1)) / nn, true, ph.flows);
      }
      ph.pre_delay_s = codec_s + std::max(0.0, nn - 2.0) * max_latency(ph.flows);
      p.phases.push_back(std::move(ph));
      return;
    }

    const bool all_reduce = t.op == CollectiveOp::kAllReduce;
    if (est.algorithm == core::CollectiveAlgorithm::kHierarchical) {
      bool first = true;
      for (int l = 0; l <= geo.top; ++l) {
        if (geo.r(l) < 2) continue;
        Phase ph;
        level_flows(l, est.bytes_by_level[static_cast<std::size_t>(l)], true, ph.flows);
        const double k = geo.r(l);
        const double steps = all_reduce ? 2.0 * (k - 1.0) : k - 1.0;
        ph.pre_delay_s = (first ? codec_s : 0.0) + std::max(0.0, steps - 1.0) * max_latency(ph.flows);
        first = false;
        p.phases.push_back(std::move(ph));
      }
      return;
    }
    // Ring, or a tree (all-reduce only) carried over the same channels at the tree's bandwidth and latency, or PAT
    // (a ring's bytes per rank at PAT's share); the flows carry what the protocol's bandwidth makes of the bytes (LL
    // and LL128 move less per second).
    const bool tree = all_reduce && est.algorithm == core::CollectiveAlgorithm::kTree;
    // NVLS: each GPU's buffer to the switch and its reduced share back, (n + 1) / n each way, as flows between ring
    // neighbours through the switch (the same bytes on each GPU's link).
    const bool nvls = est.algorithm == core::CollectiveAlgorithm::kNvls;
    const double per_edge = (nvls ? nvls_edge_factor(n) : ring_edge_factor(t.op, n)) * wire;
    const double steps = tree   ? 2.0 * std::ceil(std::log2(nn))
                         : nvls ? 1.0  // one trip through the switch
                                : static_cast<double>(ring_steps(t.op, n));
    Phase ph;
    for (int l = 0; l <= geo.top; ++l) {
      const double bytes = (tree ? 2.0 * wire : per_edge) / (est.bandwidth_factor * geo.w(l - 1));
      level_flows(l, bytes, l == geo.top, ph.flows);
    }
    // The library's latency is the whole call's, the first hop included (the flows pay that one: what their
    // routes add to the bounding transfer, bounding_latency); alpha-beta pays each further step at the route's
    // latency.
    // A paced ring's steps run beside its flows: the library's own latency before them, the floor under the whole.
    const double library_latency = est.paced_s > 0.0 ? est.unpaced_latency_s : est.latency_s;
    ph.pre_delay_s = codec_s + (est.protocol ? std::max(0.0, library_latency - bounding_latency(ph.flows))
                                             : std::max(0.0, steps - 1.0) * max_latency(ph.flows));
    if (est.paced_s > 0.0) {
      ph.floor_s = codec_s + est.paced_s;
      p.paced_latency_s += est.latency_s - est.unpaced_latency_s;
    }
    p.phases.push_back(std::move(ph));
  }

  // Symmetry: in a group spanning many nodes, most nodes move the same bytes over paths of the same links (inside
  // the nodes the same links of the node's template; outside, the same bandwidths and latencies, shared the same
  // way among the node's own flows) that no other node's flow of this collective touches outside the nodes: one
  // node of each such class stands for all of them, and only its flows, inside the node and out of it, are
  // simulated. A node whose flows share a fabric link direction with another node's (a switch port, a global
  // link) keeps all its flows, so every shared switch or global link is simulated in full; so does the first
  // node of each class, the slowest class included. (Inside a node, the flow arriving from the previous node
  // meets the node's own flows, as on every node; the one arriving at a class's node is not simulated.) On a full
  // Frontier's ring this leaves a handful of nodes (on one switch, across switches, across groups) of thousands.
  // Empty: keep every node. (Tested: same times as with every node simulated.)
  std::vector<char> representative_nodes(const GroupGeometry& geo) {
    const int dpn = c_.devices_per_node;
    if (!node_symmetry_ || geo.copies.empty() || geo.n / std::max(1, geo.w(geo.top - 1)) < kMinNodesForSymmetry ||
        c_.domain_ranks(geo.top) <= dpn) {
      return {};
    }
    // Every flow the collective may start (each level's ring, wrap-around included), by source node.
    std::vector<std::vector<std::pair<int, int>>> flows_of(static_cast<std::size_t>(c_.nodes));
    for (const auto& ranks : geo.copies) {
      for (int l = 0; l <= geo.top; ++l) {
        for (int m = 0; m < geo.n; ++m) {
          const int q = geo.next(m, l, true);
          if (q < 0) continue;
          const int a = ranks[static_cast<std::size_t>(m)];
          flows_of[static_cast<std::size_t>(a / dpn)].emplace_back(a, ranks[static_cast<std::size_t>(q)]);
        }
      }
    }
    const std::size_t directions = 2 * topo_.link_count();
    owner_.assign(directions, -1);   // the first node whose flows use a link direction
    local_.assign(directions, -1);   // its index among that node's link directions
    std::vector<char> keep(static_cast<std::size_t>(c_.nodes), 0);
    std::vector<char> shared(static_cast<std::size_t>(c_.nodes), 0);
    std::vector<std::vector<double>> signature(static_cast<std::size_t>(c_.nodes));
    for (int node = 0; node < c_.nodes; ++node) {
      const auto ni = static_cast<std::size_t>(node);
      if (flows_of[ni].empty()) continue;
      std::vector<double>& sig = signature[ni];
      int distinct = 0;
      for (const auto& [a, b] : flows_of[ni]) {
        topo_.route(dev(a), dev(b), hops_);
        sig.push_back(-1.0);  // between flows
        for (const topology::Hop& h : hops_) {
          const int dir = h.forward ? 0 : 1;
          if (const int local = topo_.link_in_node(h.link).second; local >= 0) {
            // inside a node (this one's or the next's, alike on every node): the template's link
            sig.push_back(-3.0 - 2.0 * local - dir);
            continue;
          }
          const auto k = static_cast<std::size_t>(2 * h.link + dir);
          if (owner_[k] < 0) {
            owner_[k] = node;
            local_[k] = distinct++;
          } else if (owner_[k] != node) {
            shared[ni] = 1;
            shared[static_cast<std::size_t>(owner_[k])] = 1;
          }
          sig.push_back(topo_.link_bandwidth_Bps(h.link));
          sig.push_back(topo_.link_latency_s(h.link));
          sig.push_back(owner_[k] == node ? local_[k] : -2.0);
        }
      }
    }
    std::map<std::vector<double>, int> classes;
    for (int node = 0; node < c_.nodes; ++node) {
      const auto ni = static_cast<std::size_t>(node);
      if (flows_of[ni].empty()) continue;
      if (shared[ni] || classes.emplace(std::move(signature[ni]), node).second) keep[ni] = 1;
    }
    return keep;
  }

  // Bytes per link direction of a plan (for the utilisation summary), computed once per distinct plan.
  void account(CommPlan& p) {
    touched_.clear();
    for (const Phase& ph : p.phases) {
      for (const NetFlow& f : ph.flows) {
        topo_.route(f.src_vertex, f.dst_vertex, hops_);
        for (const topology::Hop& h : hops_) {
          const auto k = static_cast<std::size_t>(2 * h.link + (h.forward ? 0 : 1));
          if (scratch_[k] == 0.0) touched_.push_back(static_cast<int>(k));
          scratch_[k] += f.bytes;
        }
      }
    }
    std::sort(touched_.begin(), touched_.end());
    for (int k : touched_) {
      const double b = scratch_[static_cast<std::size_t>(k)];
      p.link_bytes.emplace_back(k, b);
      scratch_[static_cast<std::size_t>(k)] = 0.0;
      const double s = b / topo_.link_bandwidth_Bps(k / 2);
      if (s > p.bound_s) {
        p.bound_s = s;
        p.bound_link = k;
      }
    }
    double delays = 0.0;
    for (const Phase& ph : p.phases) delays += ph.pre_delay_s;
    p.latency_s = std::max(0.0, delays - p.codec_s) + p.paced_latency_s;
  }

  const core::ClusterSpec& c_;
  const topology::LinkTopology& topo_;
  core::CollectiveAlgorithm algorithm_;
  const TaskGraph& g_;
  bool node_symmetry_ = true;
  int roles_ = 1;
  int block_ = 1;
  std::vector<double> scratch_;
  std::vector<int> touched_;
  std::vector<topology::Hop> hops_;
  std::vector<int> owner_, local_;
};

// ------------------------------------------------------------------------------------------- simulation

struct Running {
  bool cached = false;
  bool overlapped = false;
  bool convert = false;
};

struct SimOutput {
  std::vector<TaskTiming> timings;
  NetworkReport report;
  std::vector<double> link_bytes;
  std::vector<double> bound_s;  // per link direction: summed bytes/bandwidth of the collectives it bounds
};

class Simulation {
 public:
  Simulation(const core::ClusterSpec& c, const topology::LinkTopology& topo, core::CollectiveAlgorithm algorithm,
             const SimGridOptions& options, AnalyticalEngine& analytical, const TaskGraph& g)
      : topo_(topo), options_(options), analytical_(analytical), g_(g), planner_(c, topo, algorithm, g, options.node_symmetry),
        lanes_(options.topology == topology::TopologyKind::kIdeal ? static_cast<int>(kStreams) : 1),
        net_(topo, lanes_), slowdown_(c.device.comm_compute_slowdown) {}

  /** @brief Told (tasks done, tasks in all) as tasks finish. */
  void set_progress(std::function<void(std::size_t, std::size_t)> progress) { progress_ = std::move(progress); }

  SimOutput run() {
    const auto& tasks = g_.tasks();
    out_.timings.assign(tasks.size(), TaskTiming{});
    out_.link_bytes.assign(2 * topo_.link_count(), 0.0);
    out_.bound_s.assign(2 * topo_.link_count(), 0.0);
    done_.assign(tasks.size(), 0);
    const std::size_t roles = std::max<std::size_t>(1, g_.roles().size());
    comm_in_flight_.assign(roles, 0);
    kernels_in_flight_.assign(roles, 0);
    std::vector<std::vector<TaskId>> queues(roles * kStreams);
    for (TaskId i = 0; i < tasks.size(); ++i) {
      queues[tasks[i].role * kStreams + static_cast<std::size_t>(tasks[i].stream)].push_back(i);
    }
    for (std::size_t q = 0; q < queues.size(); ++q) {
      if (queues[q].empty()) continue;
      const std::string name = fmt::format("r{}.{}", q / kStreams, graph::stream_name(static_cast<graph::Stream>(q % kStreams)));
      net_.spawn(name, [this, list = std::move(queues[q])] { stream_actor(list); });
    }
    net_.run();
    out_.report.flows = net_.flows_started();
    out_.report.live_collectives = live_;
    out_.report.cached_collectives = cached_;
    return std::move(out_);
  }

 private:
  void stream_actor(const std::vector<TaskId>& list) {
    for (TaskId t : list) {
      for (TaskId d : g_.deps(t)) {
        while (true) {  // the count read before the check: a completion between the two is not missed
          const std::uint64_t seen = net_.notifications();
          if (done_[d]) break;
          net_.wait(seen);
        }
      }
      const double start = NetSim::now();
      const Task& task = g_.tasks()[t];
      if (task.kind == TaskKind::kCollective) {
        // Compute of this role slows while the collective runs (see compute()), where it interferes (graph::interferes:
        // not the userbuffers' exchanges).
        const bool slows = graph::interferes(task);
        if (slows) ++comm_in_flight_[task.role];
        if (slows && slowdown_ != 1.0) net_.raise_signal(task.role);
        run_network(task);
        if (slows) --comm_in_flight_[task.role];
        if (slows && slowdown_ != 1.0) net_.raise_signal(task.role);
      } else if (task.kind == TaskKind::kCopy) {
        run_network(task);
      } else if (graph::is_comm_kernel(task)) {
        // A communication kernel slows the compute stream's kernels while it runs (see compute()).
        ++kernels_in_flight_[task.role];
        if (slowdown_ != 1.0) net_.raise_signal(task.role);
        compute(task);
        --kernels_in_flight_[task.role];
        if (slowdown_ != 1.0) net_.raise_signal(task.role);
      } else {
        compute(task);
      }
      out_.timings[t] = TaskTiming{start, NetSim::now()};
      done_[t] = 1;
      net_.notify_all();
      if (progress_) progress_(++finished_, g_.tasks().size());
    }
  }

  // A kernel progresses at 1 / slowdown of its speed while what interferes with it runs on its role
  // (graph::runs_slowed, the analytical engine's rule): a collective, and for the compute stream's kernels a
  // communication kernel too; re-evaluated whenever one starts or ends.
  void compute(const Task& task) {
    double work = analytical_.duration(g_, task).value();
    if (slowdown_ == 1.0 || task.kind != TaskKind::kCompute) {
      NetSim::sleep_for(work);
      return;
    }
    while (work > 0.0) {
      const std::uint64_t seen = net_.signal_count(task.role);
      const bool slowed = graph::runs_slowed(task, comm_in_flight_[task.role], kernels_in_flight_[task.role]);
      const double rate = slowed ? 1.0 / slowdown_ : 1.0;
      const double t0 = NetSim::now();
      const double end = t0 + work / rate;
      if (end <= t0) break;  // below the clock's resolution
      if (net_.wait_signal(task.role, end, seen)) break;
      work -= (NetSim::now() - t0) * rate;
    }
  }

  int plan_index(const Task& t) {
    const PlanKey key{static_cast<int>(t.kind), t.role, t.group, static_cast<int>(t.op), static_cast<int>(t.purpose),
                      static_cast<int>(t.stream), t.calls, t.bytes};
    auto [it, fresh] = index_.try_emplace(key, static_cast<int>(plans_.size()));
    if (fresh) {
      plans_.push_back(planner_.plan(t));
      isolated_.push_back(-1.0);
    }
    return it->second;
  }

  // `lane`: the task's stream on the ideal platform (one copy of it per stream), else 0.
  void play(const CommPlan& p, double fraction, int lane) {
    for (const Phase& ph : p.phases) {
      const double start = NetSim::now();
      NetSim::sleep_for(ph.pre_delay_s * fraction);
      if (fraction == 1.0) {
        net_.transfer(ph.flows, lane);
      } else {
        std::vector<NetFlow> part = ph.flows;
        for (NetFlow& f : part) f.bytes *= fraction;
        net_.transfer(part, lane);
      }
      // A paced ring: its steps, beside the flows, may end after them.
      if (const double rest = start + ph.floor_s * fraction - NetSim::now(); rest > 0.0) NetSim::sleep_for(rest);
    }
  }

  void run_network(const Task& t) {
    const int pi = plan_index(t);
    const CommPlan& p = plans_[static_cast<std::size_t>(pi)];
    for (const auto& [k, b] : p.link_bytes) out_.link_bytes[static_cast<std::size_t>(k)] += b;
    if (p.bound_link >= 0) out_.bound_s[static_cast<std::size_t>(p.bound_link)] += p.bound_s;
    out_.report.step_latency_s += p.latency_s;
    out_.report.bandwidth_s += p.bound_s;
    if (p.phases.empty()) return;
    const int lane = lanes_ > 1 ? static_cast<int>(t.stream) : 0;
    Running me;
    const double replay = isolated_[static_cast<std::size_t>(pi)];
    if (options_.cache_collectives && replay >= 0.0 && running_.empty()) {
      // The network is idle and an identical collective ran alone: replay its duration, unless another
      // transfer starts meanwhile, in which case the rest becomes real transfers.
      me.cached = true;
      running_.push_back(&me);
      ++cached_;
      const double end = NetSim::now() + replay;
      while (NetSim::now() < end && !me.convert) net_.wait_until(end);
      if (me.convert && NetSim::now() < end && replay > 0.0) play(p, (end - NetSim::now()) / replay, lane);
    } else {
      me.overlapped = !running_.empty();
      bool wake = false;
      for (Running* o : running_) {
        o->overlapped = true;
        if (o->cached && !o->convert) {
          o->convert = true;
          wake = true;
        }
      }
      if (wake) net_.notify_all();
      running_.push_back(&me);
      ++live_;
      const double start = NetSim::now();
      play(p, 1.0, lane);
      if (!me.overlapped) isolated_[static_cast<std::size_t>(pi)] = NetSim::now() - start;
    }
    running_.erase(std::find(running_.begin(), running_.end(), &me));
  }

  const topology::LinkTopology& topo_;
  const SimGridOptions& options_;
  AnalyticalEngine& analytical_;
  const TaskGraph& g_;
  Planner planner_;
  int lanes_ = 1;  // the ideal platform: one copy per stream, so that nothing is shared at all
  NetSim net_;
  SimOutput out_;
  std::vector<char> done_;
  std::size_t finished_ = 0;
  std::function<void(std::size_t, std::size_t)> progress_;
  std::vector<int> comm_in_flight_;  ///< per role, collectives running now
  std::vector<int> kernels_in_flight_;  ///< per role, communication kernels running now
  double slowdown_;
  std::map<PlanKey, int> index_;
  std::deque<CommPlan> plans_;  // stable references: actors hold plans while others add new ones
  std::vector<double> isolated_;  // per plan: duration when it ran alone; < 0 unknown
  std::vector<Running*> running_;
  std::uint64_t live_ = 0;
  std::uint64_t cached_ = 0;
};

// ------------------------------------------------------------------------------------------- child process

class Writer {
 public:
  void num(double v) { buf_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void text(const std::string& s) {
    num(static_cast<double>(s.size()));
    buf_ += s;
  }
  [[nodiscard]] const std::string& bytes() const { return buf_; }

 private:
  std::string buf_;
};

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  double num() {
    double v = 0.0;
    SHARDSIM_ASSERT(pos_ + sizeof v <= s_.size(), "truncated simulation result");
    std::memcpy(&v, s_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string text() {
    const auto n = static_cast<std::size_t>(num());
    SHARDSIM_ASSERT(pos_ + n <= s_.size(), "truncated simulation result");
    std::string t = s_.substr(pos_, n);
    pos_ += n;
    return t;
  }

 private:
  const std::string& s_;
  std::size_t pos_ = 0;
};

void write_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    const ssize_t k = ::write(fd, s.data() + off, s.size() - off);
    if (k <= 0) return;
    off += static_cast<std::size_t>(k);
  }
}

std::string read_all(int fd) {
  std::string s;
  char buf[1 << 16];
  for (;;) {
    const ssize_t k = ::read(fd, buf, sizeof buf);
    if (k <= 0) break;
    s.append(buf, static_cast<std::size_t>(k));
  }
  return s;
}

// A link's kind: its label with node numbers replaced ("n12.gcd0-gcd2" -> "n*.gcd0-gcd2").
std::string link_kind(const std::string& label) {
  std::string o;
  for (std::size_t i = 0; i < label.size(); ++i) {
    const bool word_start = i == 0 || !std::isalnum(static_cast<unsigned char>(label[i - 1]));
    if (label[i] == 'n' && word_start && i + 1 < label.size() && std::isdigit(static_cast<unsigned char>(label[i + 1]))) {
      std::size_t j = i + 1;
      while (j < label.size() && std::isdigit(static_cast<unsigned char>(label[j]))) ++j;
      if (j < label.size() && label[j] == '.') {
        o += "n*";
        i = j - 1;
        continue;
      }
    }
    o += label[i];
  }
  return o;
}

std::string link_label(const topology::LinkTopology& topo, int key) {
  const topology::Link l = topo.link(key / 2);
  const bool reverse = key % 2 == 1;
  return fmt::format("{} {}->{}", l.name, topo.vertex(reverse ? l.b : l.a).name, topo.vertex(reverse ? l.a : l.b).name);
}

}  // namespace

std::optional<std::string> simgrid_refusal(const core::ClusterSpec& cluster) {
  if (!simgrid_available()) {
    return std::string("this shardsim was built without SimGrid (install libsimgrid-dev and rebuild); the analytical "
                       "engine runs");
  }
  if (cluster.total_devices() > kMaxSimGridDevices) {
    return fmt::format("{} nodes x {} = {} devices, over the SimGrid engine's limit of {}; the analytical engine runs "
                       "any size",
                       cluster.nodes, cluster.devices_per_node, cluster.total_devices(), kMaxSimGridDevices);
  }
  return std::nullopt;
}

namespace {
// (Scenarios and the command line check simgrid_refusal first, where they can say which file and key; this is the
// library's own guard.)
const core::ClusterSpec& runnable(const core::ClusterSpec& cluster) {
  if (const auto why = simgrid_refusal(cluster)) throw core::ConfigError(core::SourceLocation{}, "engine", *why);
  return cluster;
}
}  // namespace

SimGridEngine::SimGridEngine(const core::ClusterSpec& cluster, core::CollectiveAlgorithm algorithm,
                             SimGridOptions options)
    : cluster_(runnable(cluster)),
      algorithm_(algorithm),
      options_(options),
      topology_(topology::LinkTopology::build(cluster, options.topology)),
      analytical_(cluster, algorithm) {
  topology_.validate();
}

RunResult SimGridEngine::run(const TaskGraph& g, const EngineOptions& options) {
  RunResult r;
  run(g, options, r);
  return r;
}

void SimGridEngine::run(const TaskGraph& g, const EngineOptions& options, RunResult& out) {
  const auto wall_start = std::chrono::steady_clock::now();
  int fds[2];
  SHARDSIM_ASSERT(::pipe(fds) == 0, "cannot create a pipe for the simulation");
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  SHARDSIM_ASSERT(pid >= 0, "cannot fork the simulation process");
  if (pid == 0) {
    ::close(fds[0]);
    Writer w;
    int code = 0;
    try {
      Simulation sim(cluster_, topology_, algorithm_, options_, analytical_, g);
      sim.set_progress(options.progress);  // in this process: the parent's progress line, as forked
      SimOutput so = sim.run();
      w.text("ok");
      for (const TaskTiming& t : so.timings) {
        w.num(t.start_s);
        w.num(t.end_s);
      }
      w.num(static_cast<double>(so.report.flows));
      w.num(static_cast<double>(so.report.live_collectives));
      w.num(static_cast<double>(so.report.cached_collectives));
      double finish = 0.0;
      for (const TaskTiming& t : so.timings) finish = std::max(finish, t.end_s);
      w.num(so.report.step_latency_s);
      w.num(so.report.bandwidth_s);
      // The busiest link directions by utilisation over the iteration, and the links that bound collectives by
      // bound time; one link per kind (the same link in another node), ties: lower link first.
      auto write_top = [&](const std::vector<double>& score) {
        std::vector<std::pair<double, int>> ranked;
        for (std::size_t k = 0; k < score.size(); ++k) {
          if (score[k] > 0.0) ranked.emplace_back(score[k], static_cast<int>(k));
        }
        std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        std::vector<std::string> kinds;
        std::vector<int> top;
        for (const auto& [v, k] : ranked) {
          if (static_cast<int>(top.size()) >= options_.busiest_links) break;
          std::string kind = link_kind(topology_.link(k / 2).name);  // both directions: one kind
          if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) continue;
          kinds.push_back(std::move(kind));
          top.push_back(k);
        }
        w.num(static_cast<double>(top.size()));
        for (const int k : top) {
          const auto ki = static_cast<std::size_t>(k);
          const double bw = topology_.link_bandwidth_Bps(k / 2);
          w.text(link_label(topology_, k));
          w.num(so.link_bytes[ki]);
          w.num(bw);
          w.num(finish > 0.0 ? so.link_bytes[ki] / (bw * finish) : 0.0);
          w.num(so.bound_s[ki]);
        }
      };
      std::vector<double> util(so.link_bytes.size(), 0.0);
      for (std::size_t k = 0; k < util.size(); ++k) {
        util[k] = so.link_bytes[k] / topology_.link_bandwidth_Bps(static_cast<int>(k / 2));
      }
      write_top(util);
      write_top(so.bound_s);
      rusage ru{};
      ::getrusage(RUSAGE_SELF, &ru);
      w.num(static_cast<double>(ru.ru_maxrss) / 1024.0);
    } catch (const std::exception& e) {
      w = Writer{};
      w.text(std::string("error: ") + e.what());
      code = 1;
    }
    write_all(fds[1], w.bytes());
    ::close(fds[1]);
    ::_exit(code);
  }
  ::close(fds[1]);
  const std::string payload = read_all(fds[0]);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) {
    throw core::InternalError(fmt::format("the SimGrid simulation died (signal {})", WTERMSIG(status)));
  }
  Reader rd(payload);
  if (payload.empty()) throw core::InternalError("the SimGrid simulation returned nothing");
  const std::string head = rd.text();
  if (head != "ok") throw core::InternalError("the SimGrid simulation failed: " + head);
  std::vector<TaskTiming> timings(g.size());
  for (TaskTiming& t : timings) {
    t.start_s = rd.num();
    t.end_s = rd.num();
  }
  NetworkReport rep;
  rep.topology = topology_.description();
  rep.flows = static_cast<std::uint64_t>(rd.num());
  rep.live_collectives = static_cast<std::uint64_t>(rd.num());
  rep.cached_collectives = static_cast<std::uint64_t>(rd.num());
  rep.step_latency_s = rd.num();
  rep.bandwidth_s = rd.num();
  for (auto* list : {&rep.busiest, &rep.bounding}) {
    const auto keep = static_cast<std::size_t>(rd.num());
    for (std::size_t i = 0; i < keep; ++i) {
      LinkLoad l;
      l.name = rd.text();
      l.bytes = rd.num();
      l.bandwidth_Bps = rd.num();
      l.utilisation = rd.num();
      l.bound_s = rd.num();
      list->push_back(std::move(l));
    }
  }
  rep.peak_rss_mb = rd.num();
  rep.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  analytical_.summarise(g, timings, options, out);
  out.network = std::move(rep);
}

}  // namespace shardsim::engine
