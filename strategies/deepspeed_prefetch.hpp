#pragma once
// DeepSpeed ZeRO-3's parameter fetch coordinator, run over one step's trace of submodules (deepspeed@v0.14.4
// runtime/zero/partitioned_param_coordinator.py, PartitionedParameterCoordinator): what it gathers at each
// submodule, in how many collectives, how far ahead, and what it keeps gathered from the forward into the
// backward. The rules, as the source has them:
//  - fetch_sub_module gathers the submodule's parameters that are not available (one coalesced all-gather), waits
//    for those in flight, pops the submodule's own entries off the trace queue, then prefetches: it pops entries
//    until the elements it chose reach min(stage3_max_live_parameters - elements available,
//    stage3_prefetch_bucket_size) and gathers those not available in one coalesced all-gather. Every call pops at
//    least one parameter while the budget is positive, so the lead grows until the live bound holds it.
//  - the elements available count what is gathered or in flight and not yet released; release_sub_module releases
//    a submodule's parameters after it ran, except those the prefetcher has already passed a later use of, and
//    those used again within stage3_max_reuse_distance elements of the trace (the end of the forward's, used
//    again at the start of the backward).
//  - parameters no larger than stage3_param_persistence_threshold, while their total stays within
//    stage3_model_persistence_threshold, stay gathered through the passes (the fetches
//    skip them); their partitions are what the optimizer updates, so the step's end gathers each of them again
//    (stage3.py _post_step: persistent_parameters[0].all_gather -> _allgather_params_coalesced, one
//    all_gather_into_tensor per parameter on its partition group, waited on before the next forward).
// The first wait on a gather of more than one parameter splits it (AllGatherCoalescedHandle.wait: per parameter,
// a narrow of every rank's partition, a torch.cat and a record_stream per rank); a gather of one parameter
// writes the parameter directly (AllGatherHandle).
#include <array>
#include <span>
#include <vector>

#include "sim/core/plan_spec.hpp"

namespace shardsim::strategies {

/// One submodule's parameter tensors on one tensor-parallel rank, elements each, in the order DeepSpeed's ZeRO-3
/// trace records them (a linear's weight then its bias, a norm's scale then its shift).
struct ModuleParams {
  std::array<double, 2> tensors{};
  int count = 0;
  /// a norm (its tensors are vectors); otherwise the first tensor is a matrix (a linear's weight, an embedding
  /// table) and the second a vector (the bias)
  bool norm = false;
  bool operator==(const ModuleParams&) const = default;
};

/// What the coordinator does for one unit in one pass (0 forward, 1 backward, recomputation included).
struct UnitFetches {
  /// elements of this unit's parameters it gathers in the pass (the forward gathers all of them; the backward
  /// those released since)
  double elements = 0.0;
  /// coalesced all-gathers that this unit's submodules wait on first
  int gathers = 0;
  /// parameters of gathers of more than one that this unit's waits split out, rank by rank
  int split_params = 0;
};

struct FetchPlan {
  std::vector<std::array<UnitFetches, 2>> units;
  /// the most elements gathered and not yet released at once (what the live bound lets stay resident)
  double peak_live_elements = 0.0;
  /// units the gathers run ahead of the unit that issues them: the largest unit's parameters that fit in the peak,
  /// less the current one (0 without prefetching)
  int ahead = 0;
  /// the parameters at or under the persistence threshold (never fetched; gathered one by one after the step)
  int persistent_tensors = 0;
  double persistent_elements = 0.0;
};

/// One step's fetches, summed over the units.
struct FetchTotals {
  int gathers = 0;       ///< coalesced all-gathers, forward and backward
  int split_params = 0;  ///< parameters split out of gathers of several
  double forward_elements = 0.0;
  double kept_elements = 0.0;  ///< gathered in the forward and not again in the backward
};
FetchTotals totals(const FetchPlan& plan);

/** @brief DeepSpeed ZeRO-3's fetches over one step of the units whose submodules are `units` (in forward order),
 *  under `plan` (its prefetch bucket, live and reuse bounds and persistence threshold, converted to elements at
 *  `param_bytes` each); `largest_unit` is the most parameters one unit holds. */
FetchPlan deepspeed_fetch_plan(std::span<const std::vector<ModuleParams>* const> units, const core::PlanSpec& plan,
                               double param_bytes, double largest_unit);

}  // namespace shardsim::strategies
