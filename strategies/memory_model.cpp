#include "strategies/memory_model.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "sim/core/dtype.hpp"
#include "sim/core/plan_spec.hpp"
#include "strategies/lowering_common.hpp"
#include "strategies/pipeline_layout.hpp"

namespace shardsim::strategies {

ModelStates model_state_bytes(double psi, int nd, int zero_stage, double param_bytes, double grad_bytes,
                              double optimizer_k) {
  ModelStates s;
  const double n = nd;
  s.params = param_bytes * psi / (zero_stage >= 3 ? n : 1.0);
  s.grads = grad_bytes * psi / (zero_stage >= 2 ? n : 1.0);
  s.optimizer = optimizer_k * psi / (zero_stage >= 1 ? n : 1.0);
  return s;
}

ModelStates sharded_state_bytes(double psi, const core::PartitionSpec& shards, double param_bytes, double grad_bytes,
                                double optimizer_k) {
  ModelStates s;
  s.params = param_bytes * psi / shards.params;
  s.grads = grad_bytes * psi / shards.grads;
  s.optimizer = optimizer_k * psi / shards.optimizer;
  return s;
}

ModelStates device_state_bytes(double psi, const core::PlanSpec& plan, const core::PartitionSpec& shards,
                               double param_bytes, double grad_bytes, double optimizer_k) {
  ModelStates s = sharded_state_bytes(psi, shards, param_bytes, grad_bytes, optimizer_k);
  if (plan.offload.optimizer) {
    s.optimizer *= 1.0 - plan.offload.ratio;
    s.grads *= 1.0 - plan.offload.ratio;
  }
  if (plan.offload.params) s.params = 0.0;
  return s;
}

OffloadedStates offloaded_state_bytes(double psi, const core::PlanSpec& plan, double optimizer_k, double param_bytes) {
  OffloadedStates out;
  if (plan.offload.optimizer) {
    const double shard = plan.offload.ratio * psi / plan.shards().optimizer;
    const double states = shard * (optimizer_k + 4.0);
    if (plan.offload.optimizer_nvme) {
      // The swapper's pinned fp32 buffers, each of the largest sub-group (partitioned_optimizer_swapper.py:
      // buffer_count x largest_numel), and the fp32 gradients of the sub-group being updated.
      out.nvme += states;
      out.host += plan.offload.buffer_count * std::min(shard, plan.offload.sub_group) * 4.0;
    } else {
      out.host += states;
    }
  }
  if (plan.offload.params) {
    const double partition = psi / plan.shards().params;
    if (plan.offload.params_nvme) {
      out.nvme += partition * param_bytes;
      out.host += std::min(partition, plan.offload.param_buffer_count * plan.offload.param_buffer_size) * param_bytes;
    } else {
      out.host += partition * param_bytes;
    }
  }
  return out;
}

int zero3_live_units(const ModelCosts& costs, const core::ModelSpec& model, const core::PlanSpec& plan) {
  // FSDP's limit_all_gathers lets the next unit's gather run while the current one computes, no further.
  if (plan.framework == core::Framework::kFsdp) return 2;
  // DeepSpeed's coordinator prefetches until its live bound holds it (deepspeed_prefetch.hpp).
  (void)model;
  return costs.fetch.ahead + 1;
}

namespace {

// One rank holding `units` (all of them without pipelining, one stage's with it), with `activations` bytes of
// activations at its peak.
MemoryBreakdown rank_memory(const core::ModelSpec& model, const core::ClusterSpec& cluster, const core::PlanSpec& plan,
                            const ModelCosts& costs, const std::vector<int>& units, double activations,
                            const std::string& activation_note) {
  MemoryBreakdown mb;
  const double pb = core::dtype_bytes(model.param_dtype);
  const double gb = gradient_memory_bytes(model, plan);
  const core::PartitionSpec sh = lowered_shards(model, plan);
  const double k = model.optimizer_bytes_per_param();
  double params = 0.0;
  double largest = 0.0;
  for (int u : units) {
    params += costs.units[static_cast<std::size_t>(u)].params;
    largest = std::max(largest, costs.units[static_cast<std::size_t>(u)].params);
  }
  const ModelStates st = device_state_bytes(params, plan, sh, pb, gb, k);
  auto note = [](double bytes_per_param, int shard) {
    return shard > 1 ? fmt::format("{} B/param /{}", bytes_per_param, shard) : fmt::format("{} B/param", bytes_per_param);
  };
  mb.items.push_back({"parameters", core::Bytes(st.params),
                      plan.offload.params ? std::string(plan.offload.params_nvme ? "offloaded to NVMe" : "offloaded to the host")
                                          : note(pb, sh.params)});
  mb.items.push_back({"gradients", core::Bytes(st.grads),
                      deepspeed_bf16_optimizer(model, plan)
                          ? fmt::format("{} B/param: bf16 and their fp32 accumulators (DeepSpeed's bf16 optimizer)", gb)
                          : note(gb, sh.grads)});
  mb.items.push_back({"optimizer states", core::Bytes(st.optimizer),
                      plan.offload.optimizer ? fmt::format("{:.0f}% offloaded to {}", 100.0 * plan.offload.ratio,
                                                           plan.offload.optimizer_nvme ? "NVMe" : "the host")
                                             : note(k, sh.optimizer)});
  if (sh.secondary > 0) {
    mb.items.push_back({"hpZ secondary parameters", core::Bytes(pb * params / sh.secondary),
                        fmt::format("{} B/param /{}", pb, sh.secondary)});
  }
  mb.items.push_back({"activations", core::Bytes(activations), activation_note});

  if (assembles_units(plan) && holds_fetched_params(plan)) {
    const int live = zero3_live_units(costs, model, plan);
    mb.items.push_back({"gathered parameters", core::Bytes(live * largest * pb),
                        fmt::format("{} units live (current + prefetch)", live)});
  }

  double buffers = 0.0;
  std::string buf_note;
  if (plan.framework == core::Framework::kMegatron) {
    buf_note = "none: reduced in place in the gradient buffer";  // buckets are views of the contiguous buffer
  } else if (reduces_in_ddp_buckets(plan, sh)) {
    buffers = 2.0 * plan.ddp_bucket.value();
    buf_note = "2 gradient buckets";
  } else {
    // FSDP reduce-scatters a unit's gradients at a time; DeepSpeed fills reduce_bucket-sized buckets.
    const bool fsdp = plan.framework == core::Framework::kFsdp;
    const double bucket = fsdp ? largest * gb : plan.reduce_bucket.value();
    // DeepSpeed's ZeRO-3 keeps one flat bucket (stage3.py __ipg_bucket_flat_buffer); a second bucket's worth is
    // alive while one is laid out and reduced beside it, which a single rank never does.
    const bool one_rank_stage3 = !fsdp && plan.zero_stage == 3 && sh.grads == 1;
    const double ipg = (plan.overlaps_comm() && !one_rank_stage3 ? 2.0 : 1.0) * bucket;
    // The updated-parameter all-gather runs after the step, when no reduce bucket is alive (a broadcast per owner,
    // InternEvo's, writes in place: no buffer).
    const bool gathers_after_step = sh.params < sh.optimizer && plan.param_sync == core::ParamSync::kAllGather;
    buffers = gathers_after_step ? std::max(ipg, plan.allgather_bucket.value()) : ipg;
    buf_note = fsdp ? (plan.overlaps_comm() ? "2 units' gradients (overlap)" : "1 unit's gradients")
                    : (ipg > bucket ? "2 reduce buckets (overlap)" : "1 reduce bucket");
    if (quantizes_gradients(cluster, plan)) {
      // qgZ keeps the INT4 copy of a bucket and its received pieces beside the fp16 bucket.
      buffers += (plan.overlaps_comm() ? 2.0 : 1.0) * plan.reduce_bucket.value() * 0.25 * 2.0;
      buf_note += " + qgZ INT4 buffers";
    }
  }
  mb.items.push_back({"communication buffers", core::Bytes(buffers), buf_note});
  mb.items.push_back({"workspace", plan.workspace, "allowance [guess]"});
  mb.items.push_back({"runtime reserved", cluster.device.runtime_reserved, cluster.device.name});

  double total = 0.0;
  for (const auto& it : mb.items) total += it.bytes.value();
  mb.total = core::Bytes(total);
  mb.capacity = cluster.device.hbm;
  const OffloadedStates offloaded = offloaded_state_bytes(params, plan, k, pb);
  mb.host_bytes = offloaded.host;
  mb.host_capacity = cluster.host.memory.value() / cluster.devices_per_node;
  mb.nvme_bytes = offloaded.nvme;
  mb.nvme_capacity = cluster.host.nvme_capacity.value() / cluster.devices_per_node;
  mb.fits = mb.total <= mb.capacity && mb.host_bytes <= mb.host_capacity &&
            (mb.nvme_capacity <= 0.0 || mb.nvme_bytes <= mb.nvme_capacity);
  return mb;
}

}  // namespace

MemoryBreakdown estimate_memory(const core::ModelSpec& model, const core::ClusterSpec& cluster,
                                const core::PlanSpec& plan, const ModelCosts& costs) {
  const std::string mode = fmt::format("recompute {}, micro-batch {}", plan.recompute_label(), plan.micro_batch);
  if (plan.pp <= 1) {
    // One micro-batch in flight: every unit's saved activations plus the largest transient: a recomputed one,
    // present while that unit's backward runs, or the loss's, while the head's forward runs (the last unit's: the
    // others' are saved by then as well).
    std::vector<int> all(costs.units.size());
    double saved = 0.0;
    double transient = 0.0;
    for (std::size_t u = 0; u < costs.units.size(); ++u) {
      all[u] = static_cast<int>(u);
      saved += costs.units[u].act_saved.value();
      transient = std::max({transient, costs.units[u].act_transient.value(), costs.units[u].fwd_transient.value()});
    }
    return rank_memory(model, cluster, plan, costs, all, saved + transient, mode);
  }
  // Pipelined: each stage keeps the activations of the chunk-micro-batches its schedule has in flight; the
  // report shows the stage that needs the most.
  const PipelineLayout layout(static_cast<int>(costs.units.size()), plan);
  MemoryBreakdown worst;
  for (int st = 0; st < layout.stages(); ++st) {
    double live = 0.0;
    double peak = 0.0;
    for (const PipelineOp& op : layout.schedule(st)) {
      double chunk = 0.0;
      for (int u : layout.units(op.chunk)) chunk += costs.units[static_cast<std::size_t>(u)].act_saved.value();
      live += op.forward ? chunk : -chunk;
      peak = std::max(peak, live);
    }
    double transient = 0.0;
    const std::vector<int> units = layout.stage_units(st);
    for (int u : units) {
      const UnitCost& c = costs.units[static_cast<std::size_t>(u)];
      transient = std::max({transient, c.act_transient.value(), c.fwd_transient.value()});
    }
    MemoryBreakdown mb = rank_memory(model, cluster, plan, costs, units, peak + transient,
                                     fmt::format("{}, {} in flight", mode, layout.max_in_flight(st)));
    mb.stage = st;
    if (st == 0 || mb.total > worst.total) worst = mb;
  }
  return worst;
}

}  // namespace shardsim::strategies
