#pragma once
// A Strategy lowers (model, cluster, plan) to one iteration's TaskGraph. Strategies see the machine only as
// a ClusterSpec and rank-group shapes; they never run anything.
#include <memory>

#include "sim/core/cluster_spec.hpp"
#include "sim/core/model_spec.hpp"
#include "sim/core/plan_spec.hpp"
#include "sim/graph/task_graph.hpp"
#include "strategies/model_costs.hpp"

namespace shardsim::strategies {

struct LoweringInput {
  const core::ModelSpec& model;
  const core::ClusterSpec& cluster;
  const core::PlanSpec& plan;  ///< resolved (dp, global_batch set) and validated
  const ModelCosts& costs;     ///< compute_model_costs(model, plan)
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  /** @brief Clears `g` and fills it with one iteration. Precondition: validated input. */
  virtual void lower(const LoweringInput& in, graph::TaskGraph& g) const = 0;
};

/** @brief The strategy that implements `plan`: PipelineStrategy for pp > 1, PartitionedStrategy for the
 *  partition space, plain ZeRO stages included (reports name plans with describe_partition). */
std::unique_ptr<Strategy> make_strategy(const core::PlanSpec& plan);

}  // namespace shardsim::strategies
