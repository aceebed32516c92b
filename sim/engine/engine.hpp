#pragma once
// Engine: what runs one iteration's task graph on a machine. Two kinds share the interface and the task graph:
// the analytical engine (closed forms and list scheduling, fast enough for search) and the SimGrid engine
// (flow-level network with contention). A scenario names its kind; create_engine builds it.
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "sim/core/cluster_spec.hpp"
#include "sim/core/plan_spec.hpp"
#include "sim/engine/run_result.hpp"
#include "sim/graph/task_graph.hpp"
#include "topology/link_topology.hpp"

namespace shardsim::engine {

struct EngineOptions {
  bool keep_timings = true;     ///< fill RunResult::timings
  bool memory_timeline = true;  ///< replay memory events for the peak and the per-role timeline
  /// Fill RunResult::roles (where each role's time goes). Without it a run gives the iteration time alone, as a
  /// plan search needs it: the analytical engine then skips its per-role pass over the schedule.
  bool breakdown = true;
  topology::TopologyKind topology = topology::TopologyKind::kAuto;  ///< the SimGrid engine's platform
  /// Called as tasks finish (tasks done, tasks in all) by engines whose runs take long (SimGrid); may be empty.
  std::function<void(std::size_t, std::size_t)> progress;
};

enum class EngineKind { kAnalytical, kSimGrid };

/** @brief "analytical" or "simgrid" (as scenarios and the command line spell them). */
std::string_view engine_name(EngineKind k);
/** @brief The kind named `name`, or nullopt. */
std::optional<EngineKind> parse_engine_kind(std::string_view name);

class Engine {
 public:
  virtual ~Engine() = default;
  /** @brief Runs one iteration of `g`; `out` may be reused between calls. */
  virtual void run(const graph::TaskGraph& g, const EngineOptions& options, RunResult& out) = 0;
};

/** @brief An engine of `kind` for `cluster`, pricing collectives with `algorithm`. Throws core::ConfigError when the
 *  SimGrid engine cannot build the machine (or the build has no SimGrid). */
std::unique_ptr<Engine> create_engine(EngineKind kind, const core::ClusterSpec& cluster,
                                      core::CollectiveAlgorithm algorithm, const EngineOptions& options = {});

}  // namespace shardsim::engine
