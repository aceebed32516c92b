#pragma once
// SimGridEngine: runs the same TaskGraph as the AnalyticalEngine, and returns the same RunResult, on a
// flow-level network simulated by SimGrid over a link-by-link topology, so that transfers sharing a link
// (a NIC two GCDs share, an Infinity Fabric link a route forwards through, a rail, a dragonfly global link)
// slow each other down — inside one collective and between collectives that overlap in time.
//
// How a task runs:
//   - compute, kernels and host work: the analytical duration (no network involved);
//   - a collective: its algorithm's traffic (ring, tree, hierarchical, all-to-all, send/recv; auto resolves
//     as the analytical engine does) as payload-free transfers between the real members of the group over
//     their real routes. A ring is its channels, one per port as NCCL/RCCL build them: at each network level
//     the crossing traffic is spread over the members of a sub-domain, each member sending to its counterpart
//     in the next sub-domain. All of a ring's identical steps travel as one transfer per edge (what the real
//     system keeps in flight), and the per-step latency of the real route is paid once per step;
//   - every copy of the group that shares links with it runs at the same time (both TP ranks' DP groups
//     share the NICs); copies in other domains are identical and disjoint and are not simulated;
//   - a host copy: transfers between each device of one node and its CPU.
// Symmetry for scale: one rank role stands for all ranks of the role (as in the graph), and a collective that
// starts while the network is idle replays the duration of an identical collective that ran alone; if another
// transfer starts before the replay ends, the rest of it becomes real transfers again.
//
// Each simulation runs in a child process (SimGrid keeps global state), so one program may run many.
#include "sim/core/cluster_spec.hpp"
#include "sim/core/plan_spec.hpp"
#include <optional>
#include <string>

#include "sim/engine/analytical_engine.hpp"
#include "sim/engine/run_result.hpp"
#include "sim/graph/task_graph.hpp"
#include "topology/link_topology.hpp"

namespace shardsim::engine {

/// The most devices the SimGrid engine simulates: its platform holds hosts and links per device (about 8 KB each,
/// and time with them: 800,000 devices took 6 GB and 51 s here), so beyond 16,384 nodes of 8 the analytical engine
/// is the tool.
inline constexpr int kMaxSimGridDevices = 131072;

/** @brief Why the SimGrid engine cannot run `cluster` (a build without SimGrid, more devices than
 *  kMaxSimGridDevices), or nullopt: what a scenario's `engine: simgrid` and the command line's `--engine simgrid`
 *  are checked against before anything runs. */
std::optional<std::string> simgrid_refusal(const core::ClusterSpec& cluster);

struct SimGridOptions {
  topology::TopologyKind topology = topology::TopologyKind::kAuto;
  bool cache_collectives = true;  ///< replay identical collectives that run alone
  /// simulate, in a group spanning many nodes, one node for all nodes whose traffic takes identical paths
  bool node_symmetry = true;
  int busiest_links = 8;          ///< how many links NetworkReport::busiest keeps
};

class SimGridEngine : public Engine {
 public:
  /** @brief Builds and validates the topology of `cluster`. Throws core::ConfigError when it cannot be built
   *  (no route, a zero-bandwidth link, a node graph that does not match the device count) or when this build
   *  has no SimGrid. */
  SimGridEngine(const core::ClusterSpec& cluster, core::CollectiveAlgorithm algorithm, SimGridOptions options = {});

  /** @brief Runs one iteration of `g`. */
  void run(const graph::TaskGraph& g, const EngineOptions& options, RunResult& out) override;
  /** @brief Convenience wrapper returning a fresh result. */
  RunResult run(const graph::TaskGraph& g, const EngineOptions& options = {});

  [[nodiscard]] const topology::LinkTopology& topology() const { return topology_; }

 private:
  const core::ClusterSpec& cluster_;
  core::CollectiveAlgorithm algorithm_;
  SimGridOptions options_;
  topology::LinkTopology topology_;
  AnalyticalEngine analytical_;
};

}  // namespace shardsim::engine
