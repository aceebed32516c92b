#pragma once
// The `plan:` section of a scenario: its keys parsed (file:line:column errors), then the values that name network
// levels resolved against the cluster and the plan checked against the model and the cluster.

#include <optional>
#include <string_view>

#include "sim/core/plan_spec.hpp"
#include "sim/scenario/config_node.hpp"
#include "sim/scenario/scenario.hpp"

namespace shardsim::scenario {

/// Plan values that name network levels ("node", "all") can only be resolved once the cluster is known: their nodes,
/// kept for resolve_plan.
struct PlanDeferred {
  std::optional<ConfigNode> params, grads, optimizer, secondary, mics, hops, hierarchy, qwz, qgz, compression, offload,
      offload_param, sub_group, delayed_update, grad_accum_dtype, grad_comm_dtype, float8, reduce_scatter, overlap_sync_param, overlap_sync_grad, param_sync,
      p2p_sync, tp_comm_overlap;
};

/** @brief The value of enum E that `n` names, one of `names` (listed in enum order); an error at `n` otherwise. */
template <class E, std::size_t N>
E named(const ConfigNode& n, const std::string_view (&names)[N]) {
  return *core::parse_named<E>(names, n.as_choice(names));
}

/** @brief The plan a scenario's `plan:` node gives, before the cluster is known; what names network levels goes to
 *  `later`. */
core::PlanSpec parse_plan(const ConfigNode& n, PlanDeferred& later);

/** @brief Resolves `s.plan`'s deferred values against `s.cluster` (shard factors, hierarchy levels, codecs, offload)
 *  and checks the plan against the model and the cluster; errors at the key of `root`'s plan (or model) at fault. */
void resolve_plan(Scenario& s, const ConfigNode& root, const PlanDeferred& later);

}  // namespace shardsim::scenario
