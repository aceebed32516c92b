#pragma once
// Static memory model per device: model states under the ZeRO stage (the ZeRO paper's 2 + 2 + K bytes per
// parameter, sharded as stage 1/2/3 prescribe), activations of the micro-batch in flight, ZeRO-3's gathered
// parameters, communication buffers, a workspace allowance and the runtime's reservation. The verdict
// "fits" compares the total with HBM. The engine's memory timeline (task-graph events) refines the
// transient part; this model is what plan search filters on.
#include <string>
#include <vector>

#include "sim/core/cluster_spec.hpp"
#include "sim/core/model_spec.hpp"
#include "sim/core/plan_spec.hpp"
#include "strategies/model_costs.hpp"

namespace shardsim::strategies {

/** @brief Model-state bytes per device for Psi parameters over Nd data-parallel ranks at a ZeRO stage
 *  (Rajbhandari et al., SC20, Sec. 5): stage 0 (2+2+K)Psi, 1: 4Psi + K Psi/Nd, 2: 2Psi + (2+K)Psi/Nd,
 *  3: (4+K)Psi/Nd, with 2-byte parameters and gradients generalised to `param_bytes`/`grad_bytes`. */
struct ModelStates {
  double params = 0.0;
  double grads = 0.0;
  double optimizer = 0.0;
  [[nodiscard]] double total() const { return params + grads + optimizer; }
};
ModelStates model_state_bytes(double psi, int nd, int zero_stage, double param_bytes, double grad_bytes,
                              double optimizer_k);
/** @brief The same with AMSP shard factors: 2Psi/s_P + 2Psi/s_G + K Psi/s_OS (generalised byte sizes). */
ModelStates sharded_state_bytes(double psi, const core::PartitionSpec& shards, double param_bytes, double grad_bytes,
                                double optimizer_k);

/** @brief Model states one device keeps under `plan` for `psi` parameters sharded as `shards` (the plan's, as the
 *  framework lowers them: lowered_shards): the sharded states, less what ZeRO-Offload moves to the host (the
 *  CPU's share of the optimizer states and of the gradients). */
ModelStates device_state_bytes(double psi, const core::PlanSpec& plan, const core::PartitionSpec& shards,
                               double param_bytes, double grad_bytes, double optimizer_k);
/** @brief Where one device's offloaded states go: host memory (its CPU share of the optimizer states plus fp32
 *  gradients to accumulate into, and its parameter partition where parameters are offloaded) and, for what is
 *  swapped to NVMe (ZeRO-Infinity), the swap files, the host then keeping only the swapper's pinned buffers. */
struct OffloadedStates {
  double host = 0.0;
  double nvme = 0.0;
};
OffloadedStates offloaded_state_bytes(double psi, const core::PlanSpec& plan, double optimizer_k, double param_bytes);

struct MemoryItem {
  std::string name;
  core::Bytes bytes;
  std::string note;
};

struct MemoryBreakdown {
  std::vector<MemoryItem> items;
  core::Bytes total;
  core::Bytes capacity;
  bool fits = true;  ///< device and host both fit
  double host_bytes = 0.0;     ///< host memory one device needs (ZeRO-Offload), 0 without offload
  double host_capacity = 0.0;  ///< the node's host memory divided among its devices
  double nvme_bytes = 0.0;     ///< NVMe one device's swap files take (ZeRO-Infinity), 0 without
  double nvme_capacity = 0.0;  ///< the node's NVMe divided among its devices; 0: not described (not checked)
  int stage = -1;  ///< with pipeline parallelism: the stage this breakdown is for (the one needing the most)
  [[nodiscard]] core::Bytes headroom() const { return capacity - total; }
};

/** @brief Units of ZeRO-3 parameters kept gathered at once: the one computing plus those prefetched. */
int zero3_live_units(const ModelCosts& costs, const core::ModelSpec& model, const core::PlanSpec& plan);

/** @brief Per-device memory of `model` under `plan` on `cluster`, with `costs` from compute_model_costs. */
MemoryBreakdown estimate_memory(const core::ModelSpec& model, const core::ClusterSpec& cluster,
                                const core::PlanSpec& plan, const ModelCosts& costs);

}  // namespace shardsim::strategies
