#include "strategies/partitioned_strategy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <span>
#include <vector>

#include "sim/core/dtype.hpp"
#include "sim/core/errors.hpp"
#include "strategies/grad_buckets.hpp"
#include "strategies/lowering_common.hpp"
#include "strategies/memory_model.hpp"
#include "strategies/pipeline_strategy.hpp"
#include "topology/placement.hpp"

namespace shardsim::strategies {

using graph::CollectiveOp;
using graph::MemKind;
using graph::Phase;
using graph::Purpose;
using graph::Stream;
using graph::TaskId;

std::unique_ptr<Strategy> make_strategy(const core::PlanSpec& plan) {
  if (plan.pp > 1) return std::make_unique<PipelineStrategy>();
  return std::make_unique<PartitionedStrategy>();
}

std::string describe_partition(const core::ModelSpec& model, const core::PlanSpec& plan) {
  const std::string name = describe_partition(plan);
  if (!deepspeed_bf16_optimizer(model, plan)) return name;
  // DeepSpeed's BF16_Optimizer in place of DDP: its own ZeRO-1 over fp32 gradients.
  return "bf16-optimizer" + name.substr(std::string_view("ddp").size());
}

std::string describe_partition(const core::PlanSpec& plan) {
  if (plan.pp > 1) {
    core::PlanSpec flat = plan;
    flat.pp = 1;
    return fmt::format("{} + pp{}{}", describe_partition(flat), plan.pp,
                       plan.virtual_stages > 1 ? fmt::format(" (interleaved x{})", plan.virtual_stages) : "");
  }
  if (plan.offload.optimizer) {
    core::PlanSpec on_device = plan;
    on_device.offload = core::OffloadSpec{};
    return fmt::format("{} + offload{}{}{}{}", describe_partition(on_device),
                       plan.offload.ratio < 1.0 ? fmt::format(" {:.0f}%", 100.0 * plan.offload.ratio) : "",
                       plan.offload.optimizer_nvme ? " to nvme" : "",
                       plan.offload.params ? (plan.offload.params_nvme ? " + parameters to nvme" : " + parameters") : "",
                       plan.offload.delayed_update ? " (delayed update)" : "");
  }
  const core::PartitionSpec s = plan.shards();
  const int n = plan.dp;
  const auto& q = plan.quantization;
  if (plan.is_plain_zero()) {
    if (s.params == 1 && s.grads == 1 && s.optimizer == 1) {
      // A ZeRO stage over one data-parallel rank partitions nothing but still runs the framework's ZeRO code
      // (its hooks, buckets and copies), which the lowering schedules: say so rather than "ddp".
      return plan.zero_stage > 0 ? fmt::format("zero-{} (one partition)", plan.zero_stage) : "ddp";
    }
    return fmt::format("zero-{}", s.params == n ? 3 : s.grads == n ? 2 : 1);
  }
  std::string base;
  if (plan.hierarchy_levels > 0) {
    base = fmt::format("hierarchical-{}L", plan.hierarchy_levels);
  } else if (s.params == n && s.grads == n && s.optimizer == n) {
    base = q.weights || q.gradients || s.secondary ? "zero++" : "zero-3";
  } else if (s.params == s.grads && s.grads == s.optimizer) {
    base = fmt::format("mics-{}", s.params);
  } else {
    base = fmt::format("amsp P{}/G{}/OS{}", s.params, s.grads, s.optimizer);
  }
  std::vector<std::string> sw;
  if (q.weights) sw.push_back("qwZ");
  if (s.secondary) sw.push_back(fmt::format("hpZ{}", s.secondary));
  if (q.gradients) {
    sw.push_back(q.gradient_hops.size() == 2 ? std::string("qgZ") : fmt::format("qgZ{}", q.gradient_hops.size()));
  }
  if (sw.empty()) return base;
  std::string joined;
  for (std::size_t i = 0; i < sw.size(); ++i) joined += (i ? "+" : "") + sw[i];
  return fmt::format("{} ({})", base, joined);
}

namespace {

// Bytes of `elements` values block-quantised to `bits` with one fp32 scale per block.
double quantized_bytes(double elements, double bits, int block) {
  return elements * bits / 8.0 + std::ceil(elements / block) * 4.0;
}

}  // namespace

void PartitionedStrategy::lower(const LoweringInput& in, graph::TaskGraph& g) const {
  const auto& model = in.model;
  const auto& plan = in.plan;
  const auto& costs = in.costs;
  const auto& cluster = in.cluster;
  const core::PartitionSpec sh = lowered_shards(model, plan);
  // DeepSpeed's BF16_Optimizer (bf16 without ZeRO, deepspeed_bf16_optimizer): fp32 accumulation after every
  // backward, the fp32 gradients all-reduced after the last one, the optimizer partitioned over the ranks.
  const bool bf16_optimizer = deepspeed_bf16_optimizer(model, plan);
  const auto& quant = plan.quantization;
  const int n = plan.dp;
  const int tp = plan.tp;
  SHARDSIM_ASSERT(plan.pp == 1, "PartitionedStrategy lowers dp x tp plans only");
  SHARDSIM_ASSERT(sh.params >= 1 && sh.grads >= 1 && sh.optimizer % sh.grads == 0, "unresolved partition");

  g.clear();
  g.compute_dtype = model.param_dtype;
  g.launch_blocking = plan.launch_blocking;
  apply_compression(g, plan);
  const std::uint16_t role = g.add_role("rank");
  auto group = [&](const char* name, int size, int stride) {
    return g.add_group({name, topology::strided_group_shape(cluster, size, stride)});
  };
  const std::uint16_t dp_group = group("dp", n, tp);
  const std::uint16_t tp_group = tp > 1 ? group("tp", tp, 1) : dp_group;
  const std::uint16_t p_group = sh.params > 1 ? group("P", sh.params, tp) : dp_group;
  const std::uint16_t h_group = sh.secondary > 1 ? group("hpZ", sh.secondary, tp) : p_group;
  const std::uint16_t a_group = sh.grads > 1 ? group("G", sh.grads, tp) : dp_group;
  const int b_size = sh.optimizer / sh.grads;
  const int c_size = n / sh.optimizer;
  const std::uint16_t b_group = b_size > 1 ? group("OS/G", b_size, sh.grads * tp) : dp_group;
  const std::uint16_t c_group = c_size > 1 ? group("OS-replicas", c_size, sh.optimizer * tp) : dp_group;
  const int u_size = sh.params < sh.optimizer ? sh.optimizer / sh.params : 1;
  const std::uint16_t u_group = u_size > 1 ? group("OS->P", u_size, sh.params * tp) : dp_group;

  // qgZ hops: the G group's members inside each listed level, one hop per level boundary.
  struct Hop {
    std::uint16_t group;
    int size;
  };
  const bool qgz = quantizes_gradients(cluster, plan);
  std::vector<Hop> hops;
  if (qgz) {
    int covered = 1;
    for (const int size : qgz_hop_sizes(cluster, quant, sh.grads, tp)) {
      hops.push_back({group("qgZ-hop", size, covered * tp), size});
      covered *= size;
    }
  }

  const double pb = core::dtype_bytes(model.param_dtype);
  const double gb = gradient_bytes(model, plan);
  const double wire_gb = gradient_wire_bytes(model, plan);  // what the reductions carry per element
  const double k = model.optimizer_bytes_per_param();
  const ModelStates states =
      device_state_bytes(costs.params_per_rank, plan, sh, pb, gradient_memory_bytes(model, plan), k);
  g.set_baseline(role, {.params = states.params + (sh.secondary > 0 ? pb * costs.params_per_rank / sh.secondary : 0.0),
                        .grads = states.grads,
                        .optimizer = states.optimizer,
                        .reserved = plan.workspace.value() + cluster.device.runtime_reserved.value()});

  const bool overlap = plan.overlaps_comm();
  const Stream gather_stream = overlap ? Stream::kParamGather : Stream::kCompute;
  const Stream reduce_stream = overlap ? Stream::kGradReduce : Stream::kCompute;
  const int units = static_cast<int>(costs.units.size());
  const int micros = plan.grad_accumulation();
  const bool gather = sh.params > 1;
  // FSDP wraps and hooks its units whatever the world size (FULL_SHARD on one rank too); DeepSpeed's ZeRO-3
  // coordinator runs where parameters are partitioned.
  const bool hooked = assembles_units(plan);
  const int ahead = hooked ? zero3_live_units(costs, model, plan) - 1 : 0;
  const bool fsdp = plan.framework == core::Framework::kFsdp;
  // DeepSpeed's ZeRO-3 optimizer runs on any number of ranks (DeepSpeedZeroOptimizer_Stage3), one included.
  const bool ds_stage3 = plan.framework == core::Framework::kDeepSpeed && (sh.params > 1 || plan.zero_stage == 3);
  // Whether a fetch copies the unit's parameters into fresh memory (not DeepSpeed's ZeRO-3 with one partition).
  const bool assembles = assembles_into_new_memory(plan);
  // Whether a fetched unit occupies device memory until it is released (offloaded partitions copied in too).
  const bool holds = holds_fetched_params(plan);
  const double bucket_bytes = gradient_bucket_bytes(plan, gb, true);
  // A bucket reduced into its owners' shards: reduce-scatter, or DeepSpeed ZeRO-1/2's all-reduce of the bucket.
  const CollectiveOp shard_reduce =
      plan.reduces_buckets_by_all_reduce() ? CollectiveOp::kAllReduce : CollectiveOp::kReduceScatter;

  // Collectives of one process group run one at a time, in the order the host issues them (Stream::kGroupNccl):
  // the parameter gathers and the gradient reductions over the same ranks, where the framework runs them on one
  // group (PlanSpec::shares_dp_group; the same in DeepSpeed v0.9.3). hpZ's gathers and qgZ's all-to-alls have
  // process groups of their own.
  const bool shared_group =
      overlap && hooked && gather && sh.grads > 1 && sh.params == sh.grads && !qgz && plan.shares_dp_group();
  const Stream p_stream = shared_group ? Stream::kGroupNccl : gather_stream;  // the P group's gathers
  const Stream a_stream = shared_group ? Stream::kGroupNccl : reduce_stream;  // the G group's reductions

  // What the framework gathers per unit and pass (0 forward, 1 backward): FSDP the wrapped block, whole, in one
  // collective; DeepSpeed ZeRO-3 what its coordinator gathers (costs.fetch: the forward gathers every parameter
  // above the persistence threshold, the backward those released since, in coalesced all-gathers of a submodule's
  // parameters or of a prefetch), else one gather per submodule holding such a parameter.
  const FetchPlan* fetch =
      plan.framework == core::Framework::kDeepSpeed && costs.fetch.units.size() == static_cast<std::size_t>(units)
          ? &costs.fetch
          : nullptr;
  auto gathers = [&](std::size_t u, int pass) {
    if (fsdp) return 1;
    if (fetch) return std::max(1, fetch->units[u][static_cast<std::size_t>(pass)].gathers);
    return std::max(1, costs.units[u].gathered_modules);
  };
  // The share of the unit's parameters gathered in the backward: those the forward released (all of them but the
  // end of the forward's, kept within the reuse distance).
  auto regathered = [&](std::size_t u) {
    if (!fetch) return 1.0;
    const double forward = fetch->units[u][0].elements;
    return forward > 0.0 ? fetch->units[u][1].elements / forward : 1.0;
  };
  // DeepSpeed splits a completed gather of several parameters rank by rank on the host thread, where it first waits
  // on it (AllGatherCoalescedHandle.wait; MiCS's handle writes the parameters in place).
  const bool mics = !plan.is_plain_zero() && plan.hierarchy_levels == 0 && sh.params == sh.grads &&
                    sh.grads == sh.optimizer && sh.params < n && sh.secondary == 0;
  auto split_s = [&](std::size_t u, Phase phase) {
    if (!fetch || !gather || mics) return 0.0;
    const int pass = phase == Phase::kForward ? 0 : 1;
    const int world = pass == 1 && sh.secondary > 0 ? sh.secondary : sh.params;
    return fetch->units[u][static_cast<std::size_t>(pass)].split_params * world * cluster.host.gather_split.value();
  };
  // The framework's host thread, one task per unit and pass: the eager model code (host_block_time) and, where
  // parameters are assembled unit by unit, each fetch's hooks, which also issue the gathers they prefetch.
  // DeepSpeed ZeRO-1/2 visit every parameter's gradient in Python in backward (stage_1_and_2.py: a hook per
  // parameter with partitioned gradients or overlap_comm, else reduce_gradients' loop over them; each copies the
  // gradient into the bucket): the per-tensor part of the hooks' cost.
  const bool grad_hooks = !hooked && plan.framework == core::Framework::kDeepSpeed && plan.zero_stage >= 1;
  auto host_work = [&](const UnitCost& c, Phase phase, int unit, int micro) -> std::optional<TaskId> {
    double t = host_block_time(cluster.host, c, phase, plan);
    if (hooked) {
      t += (fsdp ? cluster.host.hook_time(1, c.tensors) : cluster.host.deepspeed_hook_time(c.modules, c.tensors)).value();
      t += split_s(static_cast<std::size_t>(unit), phase);
    } else if (grad_hooks && phase == Phase::kBackward) {
      t += c.tensors * cluster.host.tensor_hook.value();
    }
    if (t <= 0.0) return std::nullopt;
    return g.add_host_work(role, Purpose::kFramework, phase, core::Seconds(t), unit, micro);
  };

  // The sync of updated parameters (the optimizer shards gathered into the parameter layout) where the next forward
  // waits for it block by block (plan.overlap_sync_param, InternEvo's ParamAsyncBcastHandler): in the steady state
  // the previous step's sync runs beside this forward, so here it starts with the iteration, unit by unit, on the
  // zero1 group's communicator, and each unit's first forward (its gather of the updated shards, or its compute)
  // waits for its own piece. Otherwise the step ends with it (below).
  // (InternEvo's sync, plan.param_sync: each owner of a part of the unit broadcasts it, in place; InternEvo assigns
  // whole tensors to owners, so a unit has at most as many as its tensors.)
  const bool sync_in_forward = plan.overlap_sync_param && u_size > 1;
  const bool broadcasts = plan.param_sync == core::ParamSync::kBroadcast;
  std::vector<std::optional<TaskId>> synced(static_cast<std::size_t>(units));
  if (sync_in_forward) {
    for (int u = 0; u < units; ++u) {
      const UnitCost& c = costs.units[static_cast<std::size_t>(u)];
      const double bytes = c.params / sh.params * pb;
      if (!(bytes > 0.0)) continue;
      if (broadcasts) {
        const auto owners = static_cast<std::uint32_t>(std::clamp(c.tensors, 1, u_size));
        synced[static_cast<std::size_t>(u)] = g.add_collective(role, Stream::kParamSync, CollectiveOp::kBroadcast,
                                                               Purpose::kParamUpdateGather, u_group, core::Bytes(bytes),
                                                               u, -1, owners);
        continue;
      }
      const TaskId ag = g.add_collective(role, Stream::kParamSync, CollectiveOp::kAllGather, Purpose::kParamUpdateGather,
                                         u_group, core::Bytes(bytes), u, -1);
      g.add_mem(ag, false, MemKind::kGatherBuffer, core::Bytes(bytes));
      g.add_mem(ag, true, MemKind::kGatherBuffer, core::Bytes(-bytes));
      synced[static_cast<std::size_t>(u)] = ag;
    }
  }

  // The parameter gathers of a unit of `elements` over `grp` (one per fetch), INT8 when `quantize`, issued
  // once the compute of `wait_unit` is done (the live-parameter bound) and the host has issued them: first the copy
  // of this rank's shards into the gather's input (FSDP2: all_gather_copy_in's foreach_copy; DeepSpeed: the torch.cat
  // of its partitions into its slot of the flat buffer), a read and a write of the shard; then the gathers; then the
  // copy out of the gathered buffer into the parameters (DeepSpeed: a torch.cat per parameter after the wait;
  // FSDP2: split_with_sizes_copy), a read and a write of the unit; qwZ's dequantisation writes them itself. On
  // one rank FSDP's FULL_SHARD copies in and out (its all-gather is in place) and DeepSpeed copies nothing (the
  // task that stands for the fetch moves no bytes). Returns the task the compute waits on.
  auto gather_params = [&](double elements, int collectives, std::uint16_t grp, int shard, bool quantize, Purpose purpose,
                           int unit, int micro, std::int32_t wait_unit, const std::vector<TaskId>& computed,
                           std::optional<TaskId> issued_by) {
    const double full = elements * pb;
    // FSDP's fp8 weight gathers: the unit's float8 linears' share of what is gathered travels at a byte each.
    const UnitCost& gathered_unit = costs.units[static_cast<std::size_t>(unit)];
    const double fp8_share = gathered_unit.params > 0.0 ? gathered_unit.float8_elements / gathered_unit.params : 0.0;
    const double payload = quantize ? quantized_bytes(elements, 8.0, quant.block) : full - elements * fp8_share * (pb - 1.0);
    std::array<TaskId, 3> deps{};
    std::size_t n_deps = 0;
    if (wait_unit >= 0) deps[n_deps++] = computed[static_cast<std::size_t>(wait_unit)];
    if (issued_by) deps[n_deps++] = *issued_by;
    // The first forward gathers the unit's updated shards: after the previous step's sync of them.
    if (purpose == Purpose::kParamGatherFwd && micro == 0 && synced[static_cast<std::size_t>(unit)]) {
      deps[n_deps++] = *synced[static_cast<std::size_t>(unit)];
    }
    const std::span<const TaskId> after(deps.data(), n_deps);
    if (!quantize) {
      // Offloaded parameters: the rank's partition of the unit comes from host memory first (DeepSpeed 0.14
      // partition_parameters.py all_gather_coalesced: ds_tensor.to(device, non_blocking=True) from pinned memory).
      std::optional<TaskId> staged;
      if (plan.offload.params) {
        const Phase phase = purpose == Purpose::kParamGatherBwd ? Phase::kBackward : Phase::kForward;
        std::optional<TaskId> read;
        if (plan.offload.params_nvme) {
          // ZeRO-Infinity: the partition read from its swap file into a pinned buffer first, by the host that issues
          // the fetch (partitioned_param_coordinator.py __prefetch_nvme_param_partitions submits the reads when it
          // prefetches; here the host thread spends their time, as it would wait for them where it runs no ahead).
          read = g.add_host_work(role, Purpose::kOffload, phase,
                                 core::Seconds(elements / shard * pb / nvme_share(cluster).read), unit, micro);
          if (issued_by) g.add_dep(*read, *issued_by);
        }
        staged = g.add_copy(role, Stream::kHostToDevice, Purpose::kOffload, phase,
                            core::Bytes(elements / shard * pb), unit, micro);
        for (TaskId a : after) g.add_dep(*staged, a);
        if (read) g.add_dep(*staged, *read);
        // Unassembled (one partition), the copy itself is the unit's device tensor.
        if (!assembles) g.add_mem(*staged, false, MemKind::kGatheredParams, core::Bytes(full));
      }
      std::span<const TaskId> ready_after = staged ? std::span<const TaskId>(&*staged, 1) : after;
      std::optional<TaskId> copied_in;
      if (assembles) {
        copied_in = g.add_kernel(role, gather_stream, purpose, unit, micro, core::Bytes(2.0 * full / shard));
        for (TaskId a : ready_after) g.add_dep(*copied_in, a);
        g.add_mem(*copied_in, false, MemKind::kGatheredParams, core::Bytes(full));
        ready_after = std::span<const TaskId>(&*copied_in, 1);
      }
      std::optional<TaskId> gathered;
      if (gather) {
        const GatherChain c = add_module_gathers(g, role, grp == p_group ? p_stream : gather_stream, purpose, grp,
                                                 payload, collectives, unit, micro, ready_after);
        gathered = c.last;
      }
      const TaskId copy =
          g.add_kernel(role, gather_stream, purpose, unit, micro, core::Bytes(assembles ? 2.0 * full : 0.0));
      if (gathered) {
        g.add_dep(copy, *gathered);
      } else {
        for (TaskId a : ready_after) g.add_dep(copy, a);
      }
      return copy;
    }
    // Quantise this rank's shard before sending (qwZ), gather, dequantise what arrived.
    const TaskId first = g.add_kernel(role, gather_stream, purpose, unit, micro, core::Bytes(elements / shard * (pb + 1.0)));
    for (TaskId a : after) g.add_dep(first, a);
    g.add_mem(first, false, MemKind::kGatheredParams, core::Bytes(full));
    const GatherChain c = add_module_gathers(g, role, grp == p_group ? p_stream : gather_stream, purpose, grp, payload,
                                             collectives, unit, micro, std::span<const TaskId>(&first, 1));
    const TaskId dequantised = g.add_kernel(role, gather_stream, purpose, unit, micro, core::Bytes(elements * (1.0 + pb)));
    g.add_dep(dequantised, c.last);
    return dequantised;
  };

  // DeepSpeed ZeRO-3 keeps at most two bucket reductions and two parameter fetches in flight past the host: before
  // it reduces a bucket, and before it waits on a submodule's parameters, its host thread synchronises with the
  // event of the third-last one (deepspeed@v0.14.4 runtime/zero/stage3.py __reduce_and_partition_ipg_grads:
  // max_param_reduce_events = 2; partitioned_param_coordinator.py fetch_sub_module: __max_ongoing_fetch_events
  // = 2). Where the collectives are slow the host, and so every later launch and fetch it issues, waits for them.
  constexpr std::size_t kDeepSpeedInFlight = 2;
  std::vector<TaskId> reduce_ends;  // each bucket's last reduction task, in order
  // The reduction chain of one gradient bucket (fp16/bf16 bytes, the parameter tensors they belong to), in
  // micro-batch `micro`.
  TaskId emitted_from = 0;  // the first task of the reduction emit_reduction lowered last
  auto emit_reduction = [&](const BucketFill& fill, TaskId producer, int unit, int micro) {
    emitted_from = static_cast<TaskId>(g.size());
    const double bytes = fill.bytes;
    const int tensors = fill.tensors;
    const bool boundary = micro == micros - 1;
    const double elements = bytes / gb;
    // What crosses the wire: DeepSpeed casts the bucket to its communication dtype first and the reduced share back
    // after (recast, where that dtype is not the one the gradients are kept in).
    const double wire = elements * wire_gb;
    const bool recast = wire_gb != gb;
    TaskId last = producer;
    bool first = true;
    auto chain = [&](TaskId t) {
      g.add_dep(t, last);
      if (first) g.add_mem(t, false, MemKind::kGradBuffer, core::Bytes(bytes));
      first = false;
      last = t;
    };
    auto kernel = [&](double traffic) {
      chain(g.add_kernel(role, reduce_stream, Purpose::kGradReduce, unit, micro, core::Bytes(traffic)));
    };
    // ZeRO-3 and FSDP lay the bucket's gradients out rank by rank before reducing it (DeepSpeed's
    // reduce_scatter_coalesced: torch.cat; FSDP2: chunk_cat): a read and a write of the bucket. DeepSpeed slices
    // each gradient per rank in Python first, on the host thread that runs the backward hooks. Without
    // reduce_scatter DeepSpeed's ZeRO-3 divides its contiguous bucket in place and all-reduces it instead
    // (__avg_scatter_contiguous_grads: a read and a write, no per-rank loop).
    // (The hook runs when the host reaches it, in its own order, not when the GPU has produced the gradients.)
    auto laid_out = [&](double lay_bytes, int lay_tensors) {
      const double layout_s =
          ds_stage3 && sh.grads > 1 ? cluster.host.rank_slice.value() * sh.grads * lay_tensors : 0.0;
      const std::optional<TaskId> sliced =
          layout_s > 0.0 ? std::optional(g.add_host_work(role, Purpose::kFramework, Phase::kBackward,
                                                         core::Seconds(layout_s), unit, micro))
                         : std::nullopt;
      if (sliced && reduce_ends.size() > kDeepSpeedInFlight) {
        g.add_dep(*sliced, reduce_ends[reduce_ends.size() - 1 - kDeepSpeedInFlight]);
      }
      kernel(2.0 * lay_bytes);
      if (sliced) g.add_dep(last, *sliced);
      // DeepSpeed divides the laid-out bucket by the world size in place before reducing it
      // (reduce_scatter_coalesced: tensor_partition_flat_buffer.div_); FSDP2's reduce-scatter on one rank is NCCL's
      // copy of its input to the separate output (its one-rank path), a read and a write each.
      if (ds_stage3 || (fsdp && sh.grads == 1)) kernel(2.0 * lay_bytes);
    };
    auto reduce_scatter = [&](double rs_bytes, int calls) {
      chain(g.add_collective(role, a_stream, shard_reduce, Purpose::kGradReduce, a_group, core::Bytes(rs_bytes), unit,
                             micro, static_cast<std::uint32_t>(calls)));
    };
    if (recast) kernel(elements * (gb + wire_gb));
    if (hooked && !qgz && shard_reduce == CollectiveOp::kAllReduce) {
      kernel(2.0 * wire);
    } else if (hooked && !qgz) {
      laid_out(wire, tensors);
    }
    if (sh.grads > 1) {
      if (qgz) {
        // qgZ as DeepSpeed runs it (all_to_all_quant_reduce, deepspeed@v0.10.0 .. v0.14.4 runtime/comm/
        // coalesced_collectives.py), tensor by tensor: a matrix is quantised to INT4 and all-to-all'd hop by hop, its
        // payload and its scales in two calls per hop; a vector (a bias, a norm's scale), or a matrix whose size
        // does not divide by twice the world, goes through reduce_scatter_coalesced alone, over the whole group.
        const int matrices = tensors - fill.unquantised;
        const double matrix_elements = elements - fill.unquantised_bytes / gb;
        if (matrices > 0) {
          kernel(matrix_elements * gb + quantized_bytes(matrix_elements, 4.0, quant.block));
          double e = matrix_elements;
          for (std::size_t h = 0; h < hops.size(); ++h) {
            chain(g.add_collective(role, reduce_stream, CollectiveOp::kAllToAll, Purpose::kGradReduce, hops[h].group,
                                   core::Bytes(quantized_bytes(e, 4.0, quant.block)), unit, micro,
                                   static_cast<std::uint32_t>(2 * matrices)));
            e /= hops[h].size;
            const bool last_hop = h + 1 == hops.size();
            // Dequantise what arrived, reduce in fp32, requantise for the next hop (or write the fp16 shard).
            kernel(quantized_bytes(e * hops[h].size, 4.0, quant.block) + e * 4.0 +
                   (last_hop ? e * gb : quantized_bytes(e, 4.0, quant.block)));
          }
        }
        if (fill.unquantised > 0) {
          laid_out(fill.unquantised_bytes * wire_gb / gb, fill.unquantised);
          reduce_scatter(fill.unquantised_bytes * wire_gb / gb, fill.unquantised);
        }
      } else {
        reduce_scatter(wire, 1);
      }
    }
    // Whole gradients all-reduced bucket by bucket with the optimizer states sharded narrower than the group (InternEvo's
    // zero1 n < dp, reduce_scatter off): one all-reduce of the bucket over every data-parallel rank, each keeping
    // the slice it updates (utils.py reduce_tensor over ParallelMode.DATA), not a reduction inside the owners and
    // then across their replicas.
    const bool flat_all_reduce = shard_reduce == CollectiveOp::kAllReduce && sh.grads == 1 && b_size > 1 && c_size > 1;
    if (boundary && flat_all_reduce) {
      chain(g.add_collective(role, reduce_stream, CollectiveOp::kAllReduce, Purpose::kGradReduce, dp_group,
                             core::Bytes(wire), unit, micro));
    }
    if (boundary && b_size > 1 && !flat_all_reduce) {
      chain(g.add_collective(role, reduce_stream, shard_reduce, Purpose::kGradReduce, b_group,
                             core::Bytes(wire / sh.grads), unit, micro));
    }
    if (boundary && c_size > 1 && !flat_all_reduce) {
      // DeepSpeed's MiCS all-reduces the bucket's gradient partitions across the replicas with all_reduce_coalesced
      // (deepspeed@v0.14.0 runtime/zero/mics.py allreduce_mics_shard_grads), which PyTorch's ProcessGroupNCCL runs
      // as one ncclAllReduce per tensor inside a group: each pays the library's latency. Elsewhere one buffer.
      const int calls = mics && plan.framework == core::Framework::kDeepSpeed ? std::max(1, tensors) : 1;
      chain(g.add_collective(role, reduce_stream, CollectiveOp::kAllReduce, Purpose::kGradReduce, c_group,
                             core::Bytes(wire / sh.optimizer), unit, micro, static_cast<std::uint32_t>(calls)));
    }
    if (recast) kernel(elements / sh.grads * (wire_gb + gb));
    if (plan.offload.optimizer) {
      // ZeRO-Offload: this rank's reduced share of the bucket goes to the host, where CPU Adam will read it.
      const double share = elements / (boundary ? sh.optimizer : sh.grads) * plan.offload.ratio;
      auto copy = [&](Stream s, double b) {
        chain(g.add_copy(role, s, Purpose::kOffload, Phase::kBackward, core::Bytes(b), unit, micro));
      };
      if (ds_stage3) {
        // DeepSpeed 0.14 ZeRO-3 (stage3.py:1418-1467 partition_grads): the reduced shard into its pinned host
        // buffer and back to the device (for the norm), every micro-batch; at the accumulation boundary a copy_
        // into the fp32 host gradients, across devices and dtypes: sent to a pageable temporary, staged and
        // converted on the host, which waits for it (a blocking copy) before it runs the backward on.
        copy(Stream::kDeviceToHost, share * gb);
        copy(Stream::kHostToDevice, share * gb);
        if (boundary && plan.offload.optimizer_nvme) {
          // ZeRO-Infinity: the gradients cast to fp32 on the device, sent to the swapper's pinned buffers and
          // written to the sub-group's swap file (partition_grads -> optimizer_swapper.swap_out_gradients), the
          // host waiting for the write.
          kernel(share * (gb + 4.0));
          copy(Stream::kDeviceToHost, share * 4.0);
          chain(g.add_host_work(role, Purpose::kOffload, Phase::kBackward,
                                core::Seconds(share * 4.0 / nvme_share(cluster).write), unit, micro));
        } else if (boundary) {
          copy(Stream::kDeviceToHost, share * gb);
          const double fresh = bytes > 0.0 ? share * fill.fresh_bytes / bytes : 0.0;
          chain(g.add_host_work(
              role, Purpose::kOffload, Phase::kBackward,
              core::Seconds(pageable_download_s(cluster.host, cluster.devices_per_node, share, gb, fresh)), unit,
              micro));
        }
      } else if (boundary) {
        // ZeRO-1/2 at the accumulation boundary, parameter by parameter (deepspeed@v0.14.0 stage_1_and_2.py
        // copy_grads_in_partition): the gradient's norm in fp64 (set_norm_for_param_grad_in_gpu: read, write and
        // read 8 bytes), an inf/nan check whose result the host reads (update_overflow_tracker_for_param_grad,
        // _has_inf_or_nan: a cast, isnan, isinf, or, a cast, max), the cast to fp32, and a non-blocking copy into
        // the pinned fp32 buffer (async_inplace_copy_grad_to_fp32_buffer_from_gpu), all on the stream that reduced
        // the bucket, the compute stream unless overlap_comm (reduce_ipg_grads): the copies hold the backward up.
        kernel(share * ((gb + 16.0) + (gb + 26.0) + (gb + 4.0)));
        copy(reduce_stream, share * 4.0);
      } else {
        // Between boundaries (async_accumulate_grad_in_cpu_via_gpu): converted to fp32, a pinned copy.
        copy(Stream::kDeviceToHost, share * 4.0);
      }
    }
    if (first) {
      reduce_ends.push_back(producer);
      return producer;  // nothing to communicate (a single rank)
    }
    g.add_mem(last, true, MemKind::kGradBuffer, core::Bytes(-bytes));
    reduce_ends.push_back(last);
    return last;
  };
  GradBuckets buckets(bucket_bytes, gradient_bucket_rule(plan), overlap, emit_reduction);
  // Each unit's gradients, tensor by tensor, as its backward hands them over; those whose rank partition is a fresh
  // host temporary when staged to the host (DeepSpeed ZeRO-3's blocking copy of each partition, in emit_reduction)
  // count as such, and under qgZ those it reduces without quantising them.
  const UnitTensorFills fills_of(
      costs, gb,
      TensorFillRules{.fresh_min_elements =
                          ds_stage3 && plan.offload.optimizer ? core::kMallocMmapThresholdMaxBytes / gb : 0.0,
                      .shards = sh.grads,
                      .all_to_all_divisor = qgz ? 2.0 * n * tp : 0.0});

  std::vector<TaskId> fwd_compute(static_cast<std::size_t>(units));
  std::vector<TaskId> bwd_compute(static_cast<std::size_t>(units));
  std::vector<std::optional<TaskId>> fwd_host(static_cast<std::size_t>(units));
  std::vector<std::optional<TaskId>> bwd_host(static_cast<std::size_t>(units));
  auto add_tp = [&](std::int32_t unit, std::int32_t micro, int count) {
    add_tensor_parallel(g, role, tp_group, costs, plan, unit, micro, count);
  };

  // The fetch side of that bound: a unit's hooks wait for the fetch three before its first, walking back through
  // the units this pass ran before it (`later` = -1 in backward); a unit's fetches end together here, so the wait
  // is on the whole unit that holds that fetch.
  const bool ds_fetch_sync = ds_stage3 && hooked && gather;
  std::vector<std::optional<TaskId>> fwd_ready(static_cast<std::size_t>(units)), bwd_ready(static_cast<std::size_t>(units));
  auto fetch_sync = [&](std::optional<TaskId> h, const std::vector<std::optional<TaskId>>& ready, int u, int later) {
    if (!ds_fetch_sync || !h) return;
    std::size_t back = 0;
    for (int v = u - later; v >= 0 && v < units; v -= later) {
      back += static_cast<std::size_t>(gathers(static_cast<std::size_t>(v), later > 0 ? 0 : 1));
      if (back > kDeepSpeedInFlight) {
        if (const auto r = ready[static_cast<std::size_t>(v)]) g.add_dep(*h, *r);
        return;
      }
    }
  };

  // DeepSpeed ZeRO-3 on one partition with its parameters on the host: a fetch copies them in on the all-gather
  // stream (NoGatherHandle: ds_tensor.to(device, non_blocking=True)) and its wait synchronises that stream
  // (current_stream().synchronize(), run inside stream(__allgather_stream): deepspeed@v0.14.4
  // runtime/zero/partition_parameters.py:44-61, partitioned_param_coordinator.py:296-311): copies and hooks take
  // turns, submodule by submodule. (On several ranks the wait is NCCL's, on the GPU; without offload the copy
  // moves nothing.) Here unit by unit: each copy is issued when the host is done with the unit before, and the
  // unit's hooks wait for it.
  const bool ds_copy_sync = ds_stage3 && hooked && !gather && plan.offload.params;
  auto copy_sync = [&](std::optional<TaskId> h, const std::vector<std::optional<TaskId>>& ready, int u) {
    if (!ds_copy_sync || !h) return;
    if (const auto r = ready[static_cast<std::size_t>(u)]) g.add_dep(*h, *r);
  };

  // DeepSpeed ZeRO-3 ends each backward by reducing the last bucket and waiting for its reduction stream
  // (deepspeed@v0.14.4 runtime/zero/stage3.py:1082-1088, independent_gradient_partition_epilogue): the host issues
  // the next micro-batch's first fetches only once the last reduction is done.
  const bool epilogue_sync = ds_stage3 && hooked;
  for (int mb = 0; mb < micros; ++mb) {
    for (int u = 0; u < units; ++u) {
      const UnitCost& c = costs.units[static_cast<std::size_t>(u)];
      TaskId ready = 0;
      // hpZ: a parameter's secondary copy, made inside the node when the first micro-batch released it, serves every
      // gather until the step drops it (deepspeed@v0.14.0 partition_parameters.py all_gather_coalesced: "use
      // appropriate all gather process group", ds_secondary_tensor is not None; stage3.py _post_step:
      // invalidate_secondary_tensor), so the later micro-batches' forwards gather inside the node as the backward does
      // (quantised under qwZ, as every fetch is).
      const bool from_secondary = sh.secondary > 0 && mb > 0;
      auto fetch_unit = [&](std::optional<TaskId> issued_by) {
        ready = gather_params(c.params, gathers(static_cast<std::size_t>(u), 0), from_secondary ? h_group : p_group,
                              from_secondary ? sh.secondary : sh.params, quant.weights, Purpose::kParamGatherFwd, u, mb,
                              u - ahead - 1, fwd_compute, issued_by);
        fwd_ready[static_cast<std::size_t>(u)] = ready;
      };
      // Copies and hooks taking turns: the copy once the host is done with the unit before, the hooks after it.
      if (ds_copy_sync) fetch_unit(u > 0 ? fwd_host[static_cast<std::size_t>(u - 1)] : std::nullopt);
      const auto h = fwd_host[static_cast<std::size_t>(u)] = host_work(c, Phase::kForward, u, mb);
      copy_sync(h, fwd_ready, u);
      if (epilogue_sync && u == 0 && mb > 0 && h && !reduce_ends.empty()) g.add_dep(*h, reduce_ends.back());
      fetch_sync(h, fwd_ready, u, 1);
      if (hooked && !ds_copy_sync) fetch_unit(fwd_host[static_cast<std::size_t>(std::max(0, u - ahead))]);
      const TaskId f = g.add_compute(role, Phase::kForward, u, mb, c.fwd_flops, c.fwd_mem, c.fwd_time);
      if (h) g.add_dep(f, *h);
      if (mb == 0 && synced[static_cast<std::size_t>(u)]) g.add_dep(f, *synced[static_cast<std::size_t>(u)]);
      if (hooked) {
        g.add_dep(f, ready);
        // What the forward keeps gathered for the backward stays counted until the backward has run.
        if (holds) {
          g.add_mem(f, true, MemKind::kGatheredParams,
                    core::Bytes(-c.params * pb * regathered(static_cast<std::size_t>(u))));
        }
      }
      g.add_mem(f, false, u == units - 1 ? MemKind::kLogits : MemKind::kActivations, c.act_saved);
      add_forward_transient(g, f, c);
      fwd_compute[static_cast<std::size_t>(u)] = f;
      add_tp(u, mb, c.tp_allreduces);
    }

    // With optimizer offload even a single rank's gradients leave by bucket: to the host, for CPU Adam; FSDP on
    // one rank still lays each unit's gradients out for its reduce-scatter.
    const bool reduce_now = !bf16_optimizer && (n > 1 || plan.offload.optimizer || (fsdp && hooked)) &&
                            (sh.grads > 1 || mb == micros - 1 || fsdp || (ds_stage3 && plan.offload.optimizer));
    // Whether the backward's hooks reduce the buckets as they fill (plan.overlap_sync_grad), or the step after it.
    const bool hooks_reduce = reduce_now && plan.overlap_sync_grad;
    // Unit u's gradients into the buckets, ready when `producer` ends; the pass's last unit flushes the last bucket.
    auto reduce_unit = [&](TaskId producer, int u) {
      buckets.add(producer, fills_of(static_cast<std::size_t>(u)), u, mb, u == 0);
      if (buckets.flushed() && emitted_from < g.size()) g.mark_epilogue(role, mb, emitted_from);
    };
    // The backward's gathers in the order the host issues them: the hooks of unit v fetch the units down to
    // v - ahead (before v's backward is launched and its gradients are reduced), each once the compute `ahead`
    // units before it has freed its place (the live-parameter bound).
    int next_gather = units - 1;
    std::fill(bwd_ready.begin(), bwd_ready.end(), std::nullopt);
    auto issue_backward_gathers = [&](int v) {
      if (!hooked) return;
      for (; next_gather >= std::max(0, v - ahead); --next_gather) {
        const int w = next_gather;
        const double again = regathered(static_cast<std::size_t>(w));
        if (again <= 0.0) continue;
        const int wait = w + ahead + 1 < units ? w + ahead + 1 : -1;
        // Copies and hooks taking turns (ds_copy_sync): issued once the host is done with the unit after.
        const int by = w + ahead + (ds_copy_sync ? 1 : 0);
        std::optional<TaskId> issued_by;
        if (by < units) {
          issued_by = bwd_host[static_cast<std::size_t>(by)];
        } else if (!ds_copy_sync) {
          issued_by = bwd_host.back();
        }
        // hpZ: the backward gather reads the secondary copy inside the node; otherwise it repeats the forward's
        // gather. Quantised when qwZ is on either way: DeepSpeed's coordinator passes zero_quantized_weights for every
        // fetch, and all_gather_coalesced quantises the secondary copy as it does the primary (deepspeed@v0.14.0
        // partitioned_param_coordinator.py __all_gather_params; partition_parameters.py all_gather_coalesced).
        const double elements = costs.units[static_cast<std::size_t>(w)].params * again;
        const int collectives = gathers(static_cast<std::size_t>(w), 1);
        const bool secondary = sh.secondary > 0;
        bwd_ready[static_cast<std::size_t>(w)] =
            gather_params(elements, collectives, secondary ? h_group : p_group, secondary ? sh.secondary : sh.params,
                          quant.weights, Purpose::kParamGatherBwd, w, mb, wait, bwd_compute, issued_by);
      }
    };
    for (int u = units - 1; u >= 0; --u) {
      const UnitCost& c = costs.units[static_cast<std::size_t>(u)];
      if (ds_copy_sync) issue_backward_gathers(u);  // the copies first, the hooks once this unit's has arrived
      const auto h = bwd_host[static_cast<std::size_t>(u)] = host_work(c, Phase::kBackward, u, mb);
      copy_sync(h, bwd_ready, u);
      fetch_sync(h, bwd_ready, u, -1);
      if (!ds_copy_sync) issue_backward_gathers(u);
      const std::optional<TaskId> ready = bwd_ready[static_cast<std::size_t>(u)];
      TaskId wait_on = 0;
      const bool must_wait = hooks_reduce && buckets.must_wait(wait_on);
      BackwardWaits waits;
      waits.add(h);
      waits.add(ready);
      if (must_wait) waits.add(wait_on);
      const TaskId b = add_unit_backward(g, role, tp_group, costs, plan, u, mb, waits.span());
      if (ready && c.recomputes()) g.add_dep(b, *ready);  // the backward reads the gathered parameters too
      if (hooked && holds) g.add_mem(b, true, MemKind::kGatheredParams, core::Bytes(-c.params * pb));
      release_unit_activations(g, costs, u, b);
      bwd_compute[static_cast<std::size_t>(u)] = b;
      add_tp(u, mb, c.tp_allreduces);
      if (hooks_reduce) reduce_unit(b, u);
    }
    if (reduce_now && !hooks_reduce) {
      // No reduction hook (plan.overlap_sync_grad off): the step reduces the buckets one after another once the pass
      // is over, the same buckets filled in the backward's order.
      for (int u = units - 1; u >= 0; --u) reduce_unit(bwd_compute[0], u);
    }
    if (bf16_optimizer) {
      // update_hp_grads: every gradient cast and added into its fp32 accumulator, on the compute stream.
      const TaskId acc = g.add_compute(role, Phase::kBackward, 0, mb, core::Flops(0.0),
                                       core::Bytes(costs.params_per_rank * kBf16AccumulateBytes));
      g.add_dep(acc, bwd_compute[0]);
      bwd_compute[0] = acc;
    }
  }
  // The BF16_Optimizer's fp32 gradients all-reduced after the last backward, MEMORY_OPT_ALLREDUCE_SIZE elements at
  // a time, each call on the compute stream after the one before (buffered_allreduce_fallback), in bf16 on the wire.
  const std::vector<TaskId> late_reductions =
      bf16_optimizer && n > 1
          ? add_fallback_all_reduce(g, role, dp_group, costs.params_per_rank, gb, wire_gb, bwd_compute[0], micros - 1)
          : std::vector<TaskId>{};

  // ---------------- step ----------------
  StepLowering step;
  step.role = role;
  step.reductions = bf16_optimizer ? late_reductions : buckets.reductions();
  step.backward_end = bwd_compute[0];  // unit 0 is the last backward of the last micro-batch
  if (sh.optimizer > 1) step.norm_group = dp_group;
  const double shard = costs.params_per_rank / sh.optimizer;
  const double on_device = shard * (plan.offload.optimizer ? 1.0 - plan.offload.ratio : 1.0);
  price_optimizer_step(cluster, model, plan, on_device, step);
  if (bf16_optimizer) step.optimizer_bytes += bf16_optimizer_step_bytes(costs.params_per_rank, shard, pb);
  if (plan.offload.optimizer) {
    step.delayed = plan.offload.delayed_update;
    // CPU Adam, after DeepSpeed scales the fp32 host gradients in place (stage3.py:2108-2117
    // unscale_and_clip_grads, stage_1_and_2.py the same: a read and a write of 4 bytes each).
    step.host_optimizer_bytes = optimizer_step_bytes(model, shard * plan.offload.ratio).value() +
                                8.0 * shard * plan.offload.ratio;
    if (plan.offload.optimizer_nvme) {
      const NvmeSwap swap = nvme_optimizer_swap(cluster, plan, shard * plan.offload.ratio,
                                                model.optimizer_bytes_per_param(), step.host_optimizer_bytes);
      step.swap_in_s = swap.in_s;
      step.swap_out_s = swap.out_s;
    }
    if (plan.offload.params_nvme) {
      // The updated 16-bit partition back to its swap file (stage3.py _partitioned_params_swap_out).
      step.swap_out_s += costs.params_per_rank / sh.params * pb / nvme_share(cluster).write;
    }
    if (plan.offload.params) {
      // The 16-bit partition lives on the host: the fp32 master is copied into it there (a read and a write).
      step.host_optimizer_bytes += shard * (4.0 + pb);
    } else if (ds_stage3) {
      step.upload_bytes = shard * plan.offload.ratio * pb;
      // One copy_ per sub-group (stage3.py _reassign_or_swap_out_partitioned_parameters: the flat fp32 partition
      // of the sub-group into its flat 16-bit one): a temporary of kMallocMmapThresholdMaxBytes or more is fresh.
      const double elements = shard * plan.offload.ratio;
      const double groups = std::max(1.0, std::ceil(elements / plan.offload.sub_group));
      const double fresh = elements / groups * pb >= core::kMallocMmapThresholdMaxBytes ? elements : 0.0;
      step.upload_host_s = pageable_upload_s(cluster.host, cluster.devices_per_node, elements, pb, fresh);
    } else {
      // ZeRO-1/2 (stage_1_and_2.py step(), DeepSpeed 0.14.1 on, PR #5301): the pinned fp32 partition sent as is,
      // then cast into the 16-bit parameters on the device.
      step.upload_bytes = shard * plan.offload.ratio * 4.0;
      step.upload_device_bytes = shard * plan.offload.ratio * (4.0 + pb);
    }
  }
  if (fetch && gather && ds_stage3 && fetch->persistent_tensors > 0) {
    step.persistent_group = p_group;
    step.persistent_gathers = fetch->persistent_tensors;
    step.persistent_bytes = fetch->persistent_elements * pb;
    step.persistent_stream = p_stream;
  }
  if (u_size > 1 && !sync_in_forward) {
    step.gather_group = u_group;
    step.gather_bytes = costs.params_per_rank / sh.params * pb;
    step.gather_piece = plan.allgather_bucket;
    if (broadcasts) step.gather_broadcasts = static_cast<std::uint32_t>(u_size);
    step.gather_stream = gather_stream;
  }
  lower_optimizer_step(g, step);
}

}  // namespace shardsim::strategies
