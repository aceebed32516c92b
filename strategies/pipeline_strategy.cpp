#include "strategies/pipeline_strategy.hpp"

#include <fmt/format.h>

#include <optional>
#include <vector>

#include "sim/core/dtype.hpp"
#include "sim/core/errors.hpp"
#include "strategies/grad_buckets.hpp"
#include "strategies/lowering_common.hpp"
#include "strategies/memory_model.hpp"
#include "strategies/pipeline_layout.hpp"
#include "topology/placement.hpp"

namespace shardsim::strategies {

using graph::CollectiveOp;
using graph::MemKind;
using graph::Phase;
using graph::Purpose;
using graph::Stream;
using graph::TaskId;

void PipelineStrategy::lower(const LoweringInput& in, graph::TaskGraph& g) const {
  const auto& model = in.model;
  const auto& plan = in.plan;
  const auto& costs = in.costs;
  const auto& cluster = in.cluster;
  const core::PartitionSpec sh = lowered_shards(model, plan);
  SHARDSIM_ASSERT(sh.params == 1 && sh.grads == 1, "pipelines run with DDP or ZeRO-1 only");
  // DeepSpeed's BF16_Optimizer (bf16 without ZeRO): fp32 accumulation after each backward pass, the fp32 gradients
  // all-reduced once the stage's schedule is done (pipe/engine.py _exec_reduce_grads -> _bf16_reduce_grads).
  const bool bf16_optimizer = deepspeed_bf16_optimizer(model, plan);
  const PipelineLayout layout(static_cast<int>(costs.units.size()), plan);
  const int p = layout.stages();
  const int chunks = layout.chunks();
  const int m = plan.grad_accumulation();
  const int dp = plan.dp;

  g.clear();
  g.compute_dtype = model.param_dtype;
  g.launch_blocking = plan.launch_blocking;
  apply_compression(g, plan);
  for (int s = 0; s < p; ++s) g.add_role(fmt::format("stage {}", s));
  const std::uint16_t dp_group = g.add_group({"dp", topology::strided_group_shape(cluster, dp, plan.tp)});
  const std::uint16_t tp_group =
      plan.tp > 1 ? g.add_group({"tp", topology::strided_group_shape(cluster, plan.tp, 1)}) : dp_group;
  // Neighbouring stages are dp x tp ranks apart (pipeline outermost).
  const std::uint16_t p2p_group = g.add_group({"pp", topology::strided_group_shape(cluster, 2, dp * plan.tp)});
  // One rank of each stage: the group the gradient norm is reduced over across stages.
  const std::uint16_t stages_group = g.add_group({"stages", topology::strided_group_shape(cluster, p, dp * plan.tp)});

  const double pb = core::dtype_bytes(model.param_dtype);
  const double gb = gradient_bytes(model, plan);
  const double k = model.optimizer_bytes_per_param();
  std::vector<double> stage_params(static_cast<std::size_t>(p), 0.0);
  for (int s = 0; s < p; ++s) {
    for (int u : layout.stage_units(s)) stage_params[static_cast<std::size_t>(s)] += costs.units[static_cast<std::size_t>(u)].params;
    const ModelStates st =
        sharded_state_bytes(stage_params[static_cast<std::size_t>(s)], sh, pb, gradient_memory_bytes(model, plan), k);
    g.set_baseline(static_cast<std::uint16_t>(s),
                   {.params = st.params,
                    .grads = st.grads,
                    .optimizer = st.optimizer,
                    .reserved = plan.workspace.value() + cluster.device.runtime_reserved.value()});
  }

  const bool overlap = plan.overlaps_comm();
  const Stream reduce_stream = overlap ? Stream::kGradReduce : Stream::kCompute;
  const Stream p2p_stream = overlap ? Stream::kPipeline : Stream::kCompute;
  const CollectiveOp reduce_op = sh.optimizer > 1 ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce;

  const core::Bytes boundary_bytes = core::Bytes(costs.tp_allreduce_bytes.value() / plan.tp);

  std::uint16_t role = 0;  // the stage being lowered; the bucket emitter reads it
  const double wire_gb = gradient_wire_bytes(model, plan);
  auto emit_reduction = [&](const BucketFill& fill, TaskId producer, int unit, int micro) {
    const double bytes = fill.bytes;
    // On the wire in DeepSpeed's communication dtype: where that is not the gradients' own, the bucket is cast to
    // it before and back after.
    const double elements = bytes / gb;
    const bool recast = wire_gb != gb;
    TaskId before = producer;
    if (recast) {
      before = g.add_kernel(role, reduce_stream, Purpose::kGradReduce, unit, micro,
                            core::Bytes(elements * (gb + wire_gb)));
      g.add_dep(before, producer);
    }
    const TaskId r = g.add_collective(role, reduce_stream, reduce_op, Purpose::kGradReduce, dp_group,
                                      core::Bytes(elements * wire_gb), unit, micro);
    g.add_dep(r, before);
    g.add_mem(r, false, MemKind::kGradBuffer, core::Bytes(bytes));
    g.add_mem(r, true, MemKind::kGradBuffer, core::Bytes(-bytes));
    if (!recast) return r;
    const TaskId back = g.add_kernel(role, reduce_stream, Purpose::kGradReduce, unit, micro,
                                     core::Bytes(elements * (wire_gb + gb)));
    g.add_dep(back, r);
    return back;
  };
  using Buckets = GradBuckets<decltype(emit_reduction)>;
  std::vector<Buckets> buckets;
  for (int s = 0; s < p; ++s) {
    buckets.emplace_back(gradient_bucket_bytes(plan, gb, s == 0), gradient_bucket_rule(plan), overlap, emit_reduction);
  }
  // Each unit's gradients, tensor by tensor, as its backward hands them over.
  const UnitTensorFills fills_of(costs, gb);

  auto add_tp = [&](std::int32_t unit, std::int32_t micro, int count) {
    add_tensor_parallel(g, role, tp_group, costs, plan, unit, micro, count);
  };
  const std::size_t cm = static_cast<std::size_t>(chunks) * static_cast<std::size_t>(m);
  std::vector<std::optional<TaskId>> fwd_done(cm), bwd_done(cm);
  auto at = [&](int chunk, int micro) { return static_cast<std::size_t>(chunk) * static_cast<std::size_t>(m) + micro; };

  // Each stage's framework thread runs its blocks eagerly, in the schedule's order; compute waits for it where
  // the GPU work is shorter.
  auto host_work = [&](const UnitCost& c, Phase phase, int unit, int micro) -> std::optional<TaskId> {
    const double t = host_block_time(cluster.host, c, phase, plan);
    if (t <= 0.0) return std::nullopt;
    return g.add_host_work(role, Purpose::kFramework, phase, core::Seconds(t), unit, micro);
  };
  // Megatron-LM's point-to-point exchange waits for its requests and then for the whole device
  // (NVIDIA/Megatron-LM@core_v0.9.0 megatron/core/pipeline_parallel/p2p_communication.py:381-389: req.wait(),
  // then torch.cuda.synchronize() under batch_p2p_comm and batch_p2p_sync, both on by default): a stage's thread
  // runs on only once the activation or gradient has arrived and its GPU has drained, so it cannot run ahead
  // of the schedule. Without the synchronisation (plan.p2p_sync false: Megatron-Core's overlapped exchanges) the
  // GPU waits for the exchange and the thread runs on.
  const bool p2p_syncs = plan.framework == core::Framework::kMegatron && plan.p2p_sync;
  std::vector<std::optional<TaskId>> last_gpu(static_cast<std::size_t>(p));
  auto host_sync = [&](TaskId recv, Phase phase, int unit, int micro) {
    if (!p2p_syncs) return;
    const TaskId w = g.add_host_work(role, Purpose::kFramework, phase, core::Seconds(0.0), unit, micro);
    g.add_dep(w, recv);
    if (const auto& before = last_gpu[role]; before) g.add_dep(w, *before);
  };

  // Without sequence parallelism a boundary tensor crosses stages as this rank's 1/tp of it, and the receiver gathers
  // the whole over its tensor-parallel group on the compute stream before it uses it: Megatron's scatter-gather
  // exchange (deepspeedai/Megatron-DeepSpeed@4efb479d megatron/p2p_communication.py:113-122, gather_split_1d_tensor)
  // and DeepSpeed's partitioned pipe tensors (deepspeed@v0.14.0 runtime/pipe/engine.py:663-670 and 770-777,
  // PartitionedTensor.full()). DeepSpeed also gathers a stage's own partitioned output again before its backward
  // (engine.py:755-762). With sequence parallelism the tensor is already split by sequence and used as it is.
  const bool gathers_boundary = plan.tp > 1 && !plan.sequence_parallel;
  auto gathered = [&](TaskId after, int unit, int micro) {
    const TaskId full = g.add_collective(role, Stream::kCompute, CollectiveOp::kAllGather, Purpose::kPipeline, tp_group,
                                         costs.tp_allreduce_bytes, unit, micro);
    g.add_dep(full, after);
    return full;
  };

  auto lower_forward = [&](const PipelineOp& op) {
    std::optional<TaskId> recv;
    if (op.chunk > 0) {
      recv = g.add_collective(role, p2p_stream, CollectiveOp::kSendRecv, Purpose::kPipeline, p2p_group, boundary_bytes,
                              layout.units(op.chunk).front(), op.micro);
      g.add_dep(*recv, *fwd_done[at(op.chunk - 1, op.micro)]);
      host_sync(*recv, Phase::kForward, layout.units(op.chunk).front(), op.micro);
      if (gathers_boundary) recv = gathered(*recv, layout.units(op.chunk).front(), op.micro);
    }
    TaskId last = 0;
    bool first = true;
    for (int u : layout.units(op.chunk)) {
      const UnitCost& c = costs.units[static_cast<std::size_t>(u)];
      const auto h = host_work(c, Phase::kForward, u, op.micro);
      last = g.add_compute(role, Phase::kForward, u, op.micro, c.fwd_flops, c.fwd_mem, c.fwd_time);
      if (h) g.add_dep(last, *h);
      if (first && recv) g.add_dep(last, *recv);
      first = false;
      g.add_mem(last, false, u == static_cast<int>(costs.units.size()) - 1 ? MemKind::kLogits : MemKind::kActivations,
                c.act_saved);
      add_forward_transient(g, last, c);
      add_tp(u, op.micro, c.tp_allreduces);
    }
    fwd_done[at(op.chunk, op.micro)] = last;
    last_gpu[role] = last;
  };

  auto lower_backward = [&](const PipelineOp& op) {
    std::optional<TaskId> recv;
    if (op.chunk < chunks - 1) {
      recv = g.add_collective(role, p2p_stream, CollectiveOp::kSendRecv, Purpose::kPipeline, p2p_group, boundary_bytes,
                              layout.units(op.chunk).back(), op.micro);
      g.add_dep(*recv, *bwd_done[at(op.chunk + 1, op.micro)]);
      host_sync(*recv, Phase::kBackward, layout.units(op.chunk).back(), op.micro);
      if (gathers_boundary) {
        if (plan.framework == core::Framework::kDeepSpeed && last_gpu[role]) {
          // DeepSpeed's own output, on the compute stream after what ran before, the received gradient's after it.
          const TaskId own = gathered(*last_gpu[role], layout.units(op.chunk).back(), op.micro);
          g.add_dep(own, *recv);
          recv = own;
        }
        recv = gathered(*recv, layout.units(op.chunk).back(), op.micro);
      }
    }
    const bool reduce = dp > 1 && op.micro == m - 1 && !bf16_optimizer;
    auto& bk = buckets[role];
    const auto& units = layout.units(op.chunk);
    TaskId last = 0;
    bool first = true;
    for (auto it = units.rbegin(); it != units.rend(); ++it) {
      const int u = *it;
      const UnitCost& c = costs.units[static_cast<std::size_t>(u)];
      const auto h = host_work(c, Phase::kBackward, u, op.micro);
      TaskId wait_on = 0;
      const bool must_wait = reduce && bk.must_wait(wait_on);
      BackwardWaits waits;
      waits.add(h);
      if (first) waits.add(recv);
      if (must_wait) waits.add(wait_on);
      const TaskId b = add_unit_backward(g, role, tp_group, costs, plan, u, op.micro, waits.span());
      first = false;
      release_unit_activations(g, costs, u, b);
      add_tp(u, op.micro, c.tp_allreduces);
      last = b;
      if (reduce) bk.add(b, fills_of(static_cast<std::size_t>(u)), u, op.micro, it + 1 == units.rend());
    }
    if (bf16_optimizer) {
      // update_hp_grads after the backward pass, before its gradient goes to the previous stage.
      double params = 0.0;
      for (int u : units) params += costs.units[static_cast<std::size_t>(u)].params;
      const TaskId acc = g.add_compute(role, Phase::kBackward, units.front(), op.micro, core::Flops(0.0),
                                       core::Bytes(params * kBf16AccumulateBytes));
      g.add_dep(acc, last);
      last = acc;
    }
    bwd_done[at(op.chunk, op.micro)] = last;
    last_gpu[role] = last;
  };
  // The BF16_Optimizer's all-reduce of one stage's fp32 gradients (bf16 on the wire), in MEMORY_OPT_ALLREDUCE_SIZE
  // buckets one after another on the compute stream, after the stage's last pass (buffered_allreduce_fallback).
  std::vector<std::vector<TaskId>> late_reductions(static_cast<std::size_t>(p));
  auto reduce_after_flush = [&](int s) {
    const auto& after = last_gpu[static_cast<std::size_t>(s)];
    if (!bf16_optimizer || dp <= 1 || !after) return;
    late_reductions[static_cast<std::size_t>(s)] = add_fallback_all_reduce(
        g, static_cast<std::uint16_t>(s), dp_group, stage_params[static_cast<std::size_t>(s)], gb, wire_gb, *after,
        m - 1);
  };

  // DeepSpeed's pipeline engine and Megatron-LM take the gradient norm over the whole model (for clipping and the
  // overflow check: deepspeed@v0.14.0 runtime/utils.py get_global_norm_of_tensors / clip_grad_norm_ over
  // mpu.get_model_parallel_group(); Megatron-LM core/optimizer/clip_grads.py over the model-parallel group): no
  // stage steps before every stage's gradients are reduced, so the stage that finishes its backward first waits.
  std::vector<TaskId> stage_ends;
  auto lower_step = [&]() {
    StepLowering step;
    step.role = role;
    step.reductions = bf16_optimizer ? late_reductions[role] : buckets[role].reductions();
    step.model_parallel_group = stages_group;
    step.stage_ends = stage_ends;
    const double params = stage_params[role];
    if (sh.optimizer > 1) {
      step.norm_group = dp_group;
      step.gather_group = dp_group;
      step.gather_bytes = params * pb;
      step.gather_piece = plan.allgather_bucket;
      step.gather_stream = overlap ? Stream::kParamGather : Stream::kCompute;
    }
    price_optimizer_step(cluster, model, plan, params / sh.optimizer, step);
    if (bf16_optimizer) step.optimizer_bytes += bf16_optimizer_step_bytes(params, params / sh.optimizer, pb);
    lower_optimizer_step(g, step);
  };

  // Insert every stage's passes in a global order that respects the cross-stage dependencies, each stage in
  // its own schedule order (its compute stream runs them in that order).
  std::vector<std::vector<PipelineOp>> schedules;
  for (int s = 0; s < p; ++s) schedules.push_back(layout.schedule(s));
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<bool> stepped(static_cast<std::size_t>(p), false);
  for (int remaining = p; remaining > 0;) {
    bool progressed = false;
    for (int s = 0; s < p; ++s) {
      role = static_cast<std::uint16_t>(s);
      auto& ops = schedules[static_cast<std::size_t>(s)];
      auto& i = next[static_cast<std::size_t>(s)];
      while (i < ops.size()) {
        const PipelineOp& op = ops[i];
        const bool ready = op.forward ? (op.chunk == 0 || fwd_done[at(op.chunk - 1, op.micro)].has_value())
                                      : (op.chunk == chunks - 1 || bwd_done[at(op.chunk + 1, op.micro)].has_value());
        if (!ready) break;
        if (op.forward) {
          lower_forward(op);
        } else {
          lower_backward(op);
        }
        ++i;
        progressed = true;
      }
      if (i == ops.size() && !stepped[static_cast<std::size_t>(s)]) {
        stepped[static_cast<std::size_t>(s)] = true;
        --remaining;
        progressed = true;
      }
    }
    SHARDSIM_ASSERT(progressed, "pipeline schedule deadlocked");
  }
  for (int s = 0; s < p; ++s) reduce_after_flush(s);
  // Every stage's passes are in: its gradients' last reduction, or its last backward, ends its part.
  for (int s = 0; s < p; ++s) {
    const auto& reductions = bf16_optimizer ? late_reductions[static_cast<std::size_t>(s)]
                                            : buckets[static_cast<std::size_t>(s)].reductions();
    if (!reductions.empty()) {
      stage_ends.insert(stage_ends.end(), reductions.begin(), reductions.end());
    } else if (const auto& last = last_gpu[static_cast<std::size_t>(s)]; last) {
      stage_ends.push_back(*last);
    }
  }
  for (int s = 0; s < p; ++s) {
    role = static_cast<std::uint16_t>(s);
    lower_step();
  }
}

}  // namespace shardsim::strategies
