#include "strategies/zero_strategy.hpp"

#include <vector>

#include "sim/core/dtype.hpp"
#include "sim/core/errors.hpp"
#include "strategies/grad_buckets.hpp"
#include "strategies/lowering_common.hpp"
#include "strategies/partitioned_strategy.hpp"
#include "strategies/pipeline_strategy.hpp"
#include "strategies/memory_model.hpp"
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
  if (plan.is_plain_zero()) return std::make_unique<ZeroStrategy>(plan.zero_stage);
  return std::make_unique<PartitionedStrategy>();
}

void ZeroStrategy::lower(const LoweringInput& in, graph::TaskGraph& g) const {
  const auto& model = in.model;
  const auto& plan = in.plan;
  const auto& costs = in.costs;
  SHARDSIM_ASSERT(plan.dp >= 1 && plan.pp == 1, "ZeroStrategy lowers dp x tp plans only");
  g.clear();
  g.compute_dtype = model.param_dtype;
  apply_compression(g, plan);
  const std::uint16_t role = g.add_role("rank");
  const std::uint16_t dp_group =
      g.add_group({"dp", topology::strided_group_shape(in.cluster, plan.dp, plan.tp)});
  const std::uint16_t tp_group =
      plan.tp > 1 ? g.add_group({"tp", topology::strided_group_shape(in.cluster, plan.tp, 1)}) : dp_group;

  const double pb = core::dtype_bytes(model.param_dtype);
  const double gb = core::dtype_bytes(model.grad_dtype);
  const ModelStates states = model_state_bytes(costs.params_per_rank, plan.dp, stage_, pb, gb,
                                               model.optimizer_bytes_per_param());
  g.set_baseline(role, states.total() + plan.workspace.value() + in.cluster.device.runtime_reserved.value());

  const bool overlap = plan.overlap_comm;
  const Stream gather_stream = overlap ? Stream::kParamGather : Stream::kCompute;
  const Stream reduce_stream = overlap ? Stream::kGradReduce : Stream::kCompute;
  const int units = static_cast<int>(costs.units.size());
  const int micros = plan.grad_accumulation();
  const bool stage3 = stage_ == 3;
  const int live = stage3 ? zero3_live_units(costs, model, plan) : 0;
  const int ahead = live - 1;  // units gathered ahead of the one computing

  const CollectiveOp reduce_op = stage_ == 0 ? CollectiveOp::kAllReduce : CollectiveOp::kReduceScatter;
  const double bucket_bytes = stage_ == 0 ? plan.ddp_bucket.value() : plan.reduce_bucket.value();
  auto emit_reduction = [&](double bytes, TaskId producer, int unit, int micro) {
    const TaskId r = g.add_collective(role, reduce_stream, reduce_op, Purpose::kGradReduce, dp_group,
                                      core::Bytes(bytes), unit, micro);
    g.add_dep(r, producer);
    g.add_mem(r, false, MemKind::kGradBuffer, core::Bytes(bytes));
    g.add_mem(r, true, MemKind::kGradBuffer, core::Bytes(-bytes));
    return r;
  };
  GradBuckets bucketer(bucket_bytes, overlap, emit_reduction);

  std::vector<TaskId> fwd_compute(static_cast<std::size_t>(units));
  std::vector<TaskId> bwd_compute(static_cast<std::size_t>(units));
  const bool single_rank = plan.dp == 1;

  auto add_tp = [&](std::int32_t unit, std::int32_t micro, int count) {
    add_tensor_parallel(g, role, tp_group, costs, plan, unit, micro, count);
  };

  for (int mb = 0; mb < micros; ++mb) {
    // ---------------- forward ----------------
    for (int u = 0; u < units; ++u) {
      const UnitCost& c = costs.units[static_cast<std::size_t>(u)];
      const double gathered = c.params * pb;
      TaskId ag = 0;
      const bool gather = stage3 && !single_rank;
      if (gather) {
        const auto after = u - ahead - 1 >= 0 ? std::optional<TaskId>(fwd_compute[static_cast<std::size_t>(u - ahead - 1)])
                                              : std::nullopt;
        const GatherChain chain = add_module_gathers(g, role, gather_stream, Purpose::kParamGatherFwd, dp_group,
                                                     gathered, c.modules, u, mb, after);
        ag = chain.last;
        g.add_mem(chain.first, false, MemKind::kGatheredParams, core::Bytes(gathered));
      }
      const TaskId f = g.add_compute(role, Phase::kForward, u, mb, c.fwd_flops, c.fwd_mem, c.fwd_time);
      if (gather) {
        g.add_dep(f, ag);
        g.add_mem(f, true, MemKind::kGatheredParams, core::Bytes(-gathered));
      }
      g.add_mem(f, false, u == units - 1 ? MemKind::kLogits : MemKind::kActivations, c.act_saved);
      fwd_compute[static_cast<std::size_t>(u)] = f;
      add_tp(u, mb, c.tp_allreduces);
    }

    // ---------------- backward ----------------
    const bool reduce_this_micro = !single_rank && (stage_ >= 2 || mb == micros - 1);
    for (int u = units - 1; u >= 0; --u) {
      const UnitCost& c = costs.units[static_cast<std::size_t>(u)];
      const double gathered = c.params * pb;
      TaskId ag = 0;
      const bool gather = stage3 && !single_rank;
      if (gather) {
        const auto after = u + ahead + 1 < units
                               ? std::optional<TaskId>(bwd_compute[static_cast<std::size_t>(u + ahead + 1)])
                               : std::nullopt;
        const GatherChain chain = add_module_gathers(g, role, gather_stream, Purpose::kParamGatherBwd, dp_group,
                                                     gathered, c.modules, u, mb, after);
        ag = chain.last;
        g.add_mem(chain.first, false, MemKind::kGatheredParams, core::Bytes(gathered));
      }
      bool have_first = false;
      if (c.recompute_flops.value() > 0.0 || c.recompute_mem.value() > 0.0) {
        const TaskId r =
            g.add_compute(role, Phase::kRecompute, u, mb, c.recompute_flops, c.recompute_mem, c.recompute_time);
        if (gather) g.add_dep(r, ag);
        TaskId wait_on = 0;
        if (reduce_this_micro && bucketer.must_wait(wait_on)) g.add_dep(r, wait_on);
        g.add_mem(r, false, MemKind::kActivations, c.act_transient);
        have_first = true;
        // Full recomputation repeats the forward's tensor-parallel all-reduces.
        if (plan.recompute == core::Recompute::kFull) add_tp(u, mb, c.tp_allreduces);
      }
      const TaskId b = g.add_compute(role, Phase::kBackward, u, mb, c.bwd_flops, c.bwd_mem, c.bwd_time);
      if (gather) g.add_dep(b, ag);
      TaskId wait_on = 0;
      if (!have_first && reduce_this_micro && bucketer.must_wait(wait_on)) g.add_dep(b, wait_on);
      if (gather) g.add_mem(b, true, MemKind::kGatheredParams, core::Bytes(-gathered));
      g.add_mem(b, true, u == units - 1 ? MemKind::kLogits : MemKind::kActivations, core::Bytes(-c.act_saved.value()));
      if (have_first) g.add_mem(b, true, MemKind::kActivations, core::Bytes(-c.act_transient.value()));
      bwd_compute[static_cast<std::size_t>(u)] = b;
      add_tp(u, mb, c.tp_allreduces);
      if (reduce_this_micro) bucketer.add(b, c.params * gb, u, mb, u == 0);
    }
  }

  // ---------------- step ----------------
  StepLowering step;
  step.role = role;
  step.reductions = bucketer.reductions();
  // Gradients are partitioned from stage 1 on: the global norm for clipping needs one scalar all-reduce.
  if (stage_ >= 1 && !single_rank) step.norm_group = dp_group;
  step.optimizer_bytes =
      optimizer_step_bytes(model, stage_ >= 1 ? costs.params_per_rank / plan.dp : costs.params_per_rank);
  if ((stage_ == 1 || stage_ == 2) && !single_rank) {
    step.gather_group = dp_group;
    step.gather_bytes = costs.params_per_rank * pb;
    step.gather_piece = plan.allgather_bucket;
    step.gather_stream = gather_stream;
  }
  lower_optimizer_step(g, step);
}

}  // namespace shardsim::strategies
