#include "strategies/lowering_common.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/core/dtype.hpp"
#include "strategies/memory_model.hpp"
#include "topology/placement.hpp"

namespace shardsim::strategies {

GatherChain add_module_gathers(graph::TaskGraph& g, std::uint16_t role, graph::Stream stream, graph::Purpose purpose,
                               std::uint16_t group, double payload, int fetches, std::int32_t unit, std::int32_t micro,
                               std::span<const graph::TaskId> after) {
  GatherChain c;
  const int n = fetches > 0 ? fetches : 1;
  for (int k = 0; k < n; ++k) {
    const graph::TaskId t = g.add_collective(role, stream, graph::CollectiveOp::kAllGather, purpose, group,
                                             core::Bytes(payload / n), unit, micro);
    if (k == 0) {
      for (graph::TaskId a : after) g.add_dep(t, a);
      c.first = t;
    }
    c.last = t;
  }
  return c;
}

bool deepspeed_bf16_optimizer(const core::ModelSpec& model, const core::PlanSpec& plan) {
  return plan.grad_accum_dtype == core::Dtype::kFp32 && plan.framework == core::Framework::kDeepSpeed &&
         plan.zero_stage == 0 && plan.is_plain_zero() && plan.hierarchy_levels == 0 &&
         model.param_dtype == core::Dtype::kBf16;
}

core::Bytes bf16_optimizer_step_bytes(double params, double shard, double param_bytes) {
  return core::Bytes(params * (4.0 + 8.0 + 4.0) + shard * (4.0 + param_bytes));
}

core::PartitionSpec lowered_shards(const core::ModelSpec& model, const core::PlanSpec& plan) {
  core::PartitionSpec sh = plan.shards();
  if (deepspeed_bf16_optimizer(model, plan)) sh.optimizer = std::max(1, plan.dp);
  return sh;
}

std::vector<graph::TaskId> add_fallback_all_reduce(graph::TaskGraph& g, std::uint16_t role, std::uint16_t group,
                                                   double elements, double accum_bytes, double wire_bytes,
                                                   graph::TaskId after, std::int32_t micro) {
  using graph::Purpose;
  using graph::Stream;
  std::vector<graph::TaskId> out;
  for (double done = 0.0; done < elements; done += kDeepSpeedAllReduceBucketElements) {
    const double piece = std::min(kDeepSpeedAllReduceBucketElements, elements - done);
    // flatten (torch.cat: read and write the accumulator) and cast down to the communication dtype
    const graph::TaskId down = g.add_kernel(role, Stream::kCompute, Purpose::kGradReduce, -1, micro,
                                            core::Bytes(piece * (3.0 * accum_bytes + wire_bytes)));
    g.add_dep(down, out.empty() ? after : out.back());
    const graph::TaskId r = g.add_collective(role, Stream::kCompute, graph::CollectiveOp::kAllReduce,
                                             Purpose::kGradReduce, group, core::Bytes(piece * wire_bytes), -1, micro);
    g.add_dep(r, down);
    // averaged in place (mul_), cast back into the flat buffer (copy_), unflattened into the gradients (copy_)
    const graph::TaskId back = g.add_kernel(role, Stream::kCompute, Purpose::kGradReduce, -1, micro,
                                            core::Bytes(piece * (3.0 * wire_bytes + 3.0 * accum_bytes)));
    g.add_dep(back, r);
    out.push_back(back);
  }
  return out;
}

double gradient_bytes(const core::ModelSpec& model, const core::PlanSpec& plan) {
  if (plan.framework == core::Framework::kMegatron && model.param_dtype == core::Dtype::kBf16) return 4.0;
  if (deepspeed_bf16_optimizer(model, plan)) return 4.0;
  return core::dtype_bytes(model.grad_dtype);
}

double gradient_wire_bytes(const core::ModelSpec& model, const core::PlanSpec& plan) {
  if (plan.framework != core::Framework::kDeepSpeed) return gradient_bytes(model, plan);
  return core::dtype_bytes(plan.grad_comm_dtype.value_or(model.grad_dtype));
}

double gradient_memory_bytes(const core::ModelSpec& model, const core::PlanSpec& plan) {
  const double gb = gradient_bytes(model, plan);
  return deepspeed_bf16_optimizer(model, plan) ? gb + core::dtype_bytes(model.grad_dtype) : gb;
}

double gradient_bucket_bytes(const core::PlanSpec& plan, double grad_bytes, bool first_stage) {
  switch (plan.framework) {
    case core::Framework::kMegatron:
      if (!plan.overlaps_comm() || !first_stage) return std::numeric_limits<double>::infinity();
      return std::max(40e6, 1e6 * plan.dp) * grad_bytes;
    case core::Framework::kFsdp:
      if (assembles_units(plan)) return 0.0;  // FULL_SHARD and HYBRID_SHARD, on one rank too
      break;
    case core::Framework::kDeepSpeed: break;
  }
  return reduces_in_ddp_buckets(plan, plan.shards()) ? plan.ddp_bucket.value() : plan.reduce_bucket.value();
}

bool reduces_in_ddp_buckets(const core::PlanSpec& plan, const core::PartitionSpec& sh) {
  // DeepSpeed's ZeRO optimizers fill reduce_bucket_size buckets whatever the data-parallel degree, one rank
  // included (deepspeed@v0.14.0 stage_1_and_2.py reduce_independent_p_g_buckets_and_remove_grads, stage3.py
  // __add_grad_to_ipg_bucket); an unpartitioned plan reduces as DDP does.
  const bool zero_optimizer = plan.framework == core::Framework::kDeepSpeed && plan.zero_stage >= 1;
  return sh.grads == 1 && sh.optimizer == 1 && !zero_optimizer;
}

BucketRule gradient_bucket_rule(const core::PlanSpec& plan) {
  return plan.framework == core::Framework::kDeepSpeed && !reduces_in_ddp_buckets(plan, plan.shards())
             ? BucketRule::kReduceBeforeOverflow
             : BucketRule::kCloseWhenFull;
}

std::vector<BucketFill> backward_tensor_fills(const ModelCosts& costs, std::size_t u, double grad_bytes,
                                              const TensorFillRules& rules) {
  const std::vector<ModuleParams>& modules = costs.modules_of(u);
  std::vector<BucketFill> out;
  out.reserve(modules.size() * 2);
  for (auto m = modules.rbegin(); m != modules.rend(); ++m) {
    for (int i = m->count - 1; i >= 0; --i) {
      const double elements = m->tensors[static_cast<std::size_t>(i)];
      const double bytes = elements * grad_bytes;
      const bool fresh = rules.fresh_min_elements > 0.0 && elements / rules.shards >= rules.fresh_min_elements;
      const bool vector = m->norm || i == 1;
      const bool unquantised = rules.all_to_all_divisor > 0.0 &&
                               (vector || std::fmod(elements, rules.all_to_all_divisor) != 0.0);
      out.push_back(BucketFill{bytes, 1, fresh ? bytes : 0.0, unquantised ? 1 : 0, unquantised ? bytes : 0.0});
    }
  }
  return out;
}

UnitTensorFills::UnitTensorFills(const ModelCosts& costs, double grad_bytes, const TensorFillRules& rules)
    : costs_(costs) {
  for (std::size_t u = 0; u < costs.units.size(); ++u) {
    std::vector<BucketFill>& kind = kinds_[costs.module_kind(u)];
    if (kind.empty()) kind = backward_tensor_fills(costs, u, grad_bytes, rules);
  }
}

std::span<const BucketFill> UnitTensorFills::operator()(std::size_t u) const {
  return kinds_[costs_.module_kind(u)];
}

BlockHostTimes block_host_times(const core::HostSpec& host, const core::PlanSpec& plan) {
  if (plan.fused_model_code()) return {host.megatron_block_forward, host.megatron_block_backward};
  return {host.block_forward, host.block_backward};
}

double host_block_time(const core::HostSpec& host, const UnitCost& c, graph::Phase phase, const core::PlanSpec& plan) {
  if (!c.block) return 0.0;
  const BlockHostTimes t = block_host_times(host, plan);
  if (phase == graph::Phase::kForward) return t.forward.value();
  return t.backward.value() + (c.recomputes() && core::reruns_block_forward(plan.recompute) ? t.forward.value() : 0.0);
}

void apply_compression(graph::TaskGraph& g, const core::PlanSpec& plan) {
  auto cost = [](const core::CompressionSpec& c) {
    graph::CodecCost k;
    if (!c.on()) return k;
    k.ratio = c.ratio;
    k.compress_s_per_byte = 1.0 / c.compress.value();
    k.decompress_s_per_byte = 1.0 / c.decompress.value();
    return k;
  };
  auto set = [&](graph::Purpose p, const core::CompressionSpec& c) { g.codecs[static_cast<std::size_t>(p)] = cost(c); };
  const auto& c = plan.compression;
  set(graph::Purpose::kGradReduce, c.gradients);
  set(graph::Purpose::kParamGatherFwd, c.parameters);
  set(graph::Purpose::kParamGatherBwd, c.parameters);
  set(graph::Purpose::kParamUpdateGather, c.parameters);
  set(graph::Purpose::kTensorParallel, c.tensor);
  set(graph::Purpose::kPipeline, c.pipeline);
}

namespace {

// The host's staging of `bytes` of pageable memory at its one-process `rate` when the node's devices stage at once.
double staging_s(const core::HostSpec& host, int devices_per_node, double bytes, core::BytesPerSec rate) {
  return rate.value() > 0.0 ? bytes / rate.value() * host.staging_slowdown(devices_per_node) : 0.0;
}

}  // namespace

double pageable_upload_s(const core::HostSpec& host, int devices_per_node, double elements, double to_bytes,
                         double fresh_elements) {
  const double share = host.memory_share(devices_per_node);
  const double convert = share > 0.0 ? elements * (4.0 + to_bytes) / share : 0.0;
  // The conversion's threads write the temporary first: its fresh pages fault on the threads that can fault at once.
  const double faults = fresh_elements * to_bytes / core::kHostPageBytes * host.page_fault.value() /
                        host.faulting_threads(devices_per_node);
  return convert + faults + staging_s(host, devices_per_node, elements * to_bytes, host.pageable_h2d);
}

double pageable_download_s(const core::HostSpec& host, int devices_per_node, double elements, double from_bytes,
                           double fresh_elements) {
  const double share = host.memory_share(devices_per_node);
  const double convert = share > 0.0 ? elements * (from_bytes + 4.0) / share : 0.0;
  const double faults = fresh_elements * from_bytes / core::kHostPageBytes * host.page_fault.value();
  return convert + faults + staging_s(host, devices_per_node, elements * from_bytes, host.pageable_d2h);
}

NvmeRates nvme_share(const core::ClusterSpec& cluster) {
  const double n = std::max(1, cluster.devices_per_node);
  return NvmeRates{cluster.host.nvme_read.value() / n, cluster.host.nvme_write.value() / n};
}

NvmeSwap nvme_optimizer_swap(const core::ClusterSpec& cluster, const core::PlanSpec& plan, double elements,
                             double optimizer_k, double adam_bytes) {
  const NvmeRates rates = nvme_share(cluster);
  if (!(elements > 0.0) || !(rates.read > 0.0) || !(rates.write > 0.0)) return {};
  const double groups = std::ceil(elements / plan.offload.sub_group);
  const double e = elements / groups;
  const double r = e * (optimizer_k + 4.0) / rates.read;
  const double w = e * optimizer_k / rates.write;
  const double share = cluster.host.memory_share(cluster.devices_per_node);
  const double a = share > 0.0 ? adam_bytes / groups / share : 0.0;
  if (!plan.offload.pipeline) return NvmeSwap{groups * r, groups * w};
  // Pipelined: the first read and the last write stand alone; between them each step takes the longest of the
  // three, CPU Adam's own time being the step's task.
  return NvmeSwap{r + (groups - 1.0) * (std::max({r, a, w}) - a), w};
}

void price_optimizer_step(const core::ClusterSpec& cluster, const core::ModelSpec& model, const core::PlanSpec& plan,
                          double params, StepLowering& step) {
  step.optimizer_bytes = optimizer_step_bytes(model, params);
  if (plan.framework != core::Framework::kDeepSpeed || plan.zero_stage < 1) return;
  step.optimizer_bytes += deepspeed_step_bytes(model, params);
  // Each pass streams a flat partition (one tensor per parameter group), as a device-to-device copy does.
  const double rate = cluster.device.hbm_bandwidth.value() * cluster.device.stream_efficiency_in_use();
  step.optimizer_time = core::Seconds(step.optimizer_bytes.value() / rate);
  step.host_time = cluster.host.zero_step;
}

void lower_optimizer_step(graph::TaskGraph& g, const StepLowering& step) {
  using graph::Purpose;
  using graph::TaskId;
  std::optional<TaskId> norm;
  if (step.norm_group) {
    norm = g.add_collective(step.role, graph::Stream::kCompute, graph::CollectiveOp::kAllReduce, Purpose::kGradNorm,
                            *step.norm_group, core::Bytes(4.0), -1, -1);
    for (TaskId r : step.reductions) g.add_dep(*norm, r);
  }
  if (step.model_parallel_group) {
    // Every stage waits here for every other: the global norm needs all their gradients.
    const TaskId global = g.add_collective(step.role, graph::Stream::kCompute, graph::CollectiveOp::kAllReduce,
                                           Purpose::kGradNorm, *step.model_parallel_group, core::Bytes(4.0), -1, -1);
    if (norm) {
      g.add_dep(global, *norm);
    } else {
      for (TaskId r : step.reductions) g.add_dep(global, r);
    }
    for (TaskId e : step.stage_ends) g.add_dep(global, e);
    norm = global;
  }
  auto after_reductions = [&](TaskId t) {
    if (norm) {
      g.add_dep(t, *norm);
    } else {
      for (TaskId r : step.reductions) g.add_dep(t, r);
    }
  };
  std::optional<TaskId> host;
  if (step.host_time.value() > 0.0) {
    host = g.add_host_work(step.role, Purpose::kFramework, graph::Phase::kOptimizer, step.host_time, -1, -1);
    after_reductions(*host);
    if (step.backward_end) g.add_dep(*host, *step.backward_end);
  }
  const TaskId opt = g.add_compute(step.role, graph::Phase::kOptimizer, -1, -1, core::Flops(0.0), step.optimizer_bytes,
                                   step.optimizer_time);
  after_reductions(opt);
  if (host) g.add_dep(opt, *host);
  std::optional<TaskId> upload;
  if (step.host_optimizer_bytes > 0.0) {
    // ZeRO-Offload: CPU Adam on the host's share, then the updated fp16 parameters back over the host link.
    // DeepSpeed runs CPU Adam inside step(), after backward() has returned (no delayed update by default); the
    // GPU's share of a partial offload (Twin-Flow) runs beside it. ZeRO-Infinity reads the sub-groups from NVMe
    // first.
    auto after_backward = [&](TaskId t) {
      if (step.delayed) return;
      after_reductions(t);
      if (step.backward_end) g.add_dep(t, *step.backward_end);
    };
    // (The delayed update's step runs on a thread of its own, beside the framework's.)
    const graph::Stream thread = step.delayed ? graph::Stream::kHostStep : graph::Stream::kHostCpu;
    std::optional<TaskId> swap_in;
    if (step.swap_in_s > 0.0) {
      swap_in = g.add_host_work(step.role, Purpose::kOffload, graph::Phase::kOptimizer, core::Seconds(step.swap_in_s),
                                -1, -1, thread);
      after_backward(*swap_in);
    }
    const TaskId cpu =
        g.add_host_compute(step.role, thread, Purpose::kOffload, core::Bytes(step.host_optimizer_bytes));
    if (swap_in) {
      g.add_dep(cpu, *swap_in);
    } else {
      after_backward(cpu);
    }
    // The 16-bit parameters are written from the fp32 ones: by a copy_ across devices and dtypes, converted on the
    // host into a pageable buffer and staged, then sent (DeepSpeed 0.14 stage3.py:2001
    // _reassign_or_swap_out_partitioned_parameters; ZeRO-1/2 too before 0.14.1), or the fp32 values sent from
    // pinned memory and cast on the device (ZeRO-1/2 from DeepSpeed 0.14.1, PR #5301: upload_device_bytes).
    TaskId before = cpu;
    if (step.upload_host_s > 0.0) {
      before = g.add_host_work(step.role, Purpose::kOffload, graph::Phase::kOptimizer, core::Seconds(step.upload_host_s),
                               -1, -1, thread);
      g.add_dep(before, cpu);
    }
    if (step.swap_out_s > 0.0) {
      // ... and go back to NVMe once updated (and their 16-bit values written where the parameters live).
      const TaskId out = g.add_host_work(step.role, Purpose::kOffload, graph::Phase::kOptimizer,
                                         core::Seconds(step.swap_out_s), -1, -1, thread);
      g.add_dep(out, before);
    }
    // (With the parameters offloaded too they are written in host memory, part of the host's work: no upload.)
    if (step.upload_bytes > 0.0) {
      upload = g.add_copy(step.role, graph::Stream::kHostToDevice, Purpose::kOffload, graph::Phase::kOptimizer,
                          core::Bytes(step.upload_bytes), -1, -1);
      g.add_dep(*upload, before);
      if (step.upload_device_bytes > 0.0) {
        const TaskId cast = g.add_kernel(step.role, graph::Stream::kCompute, Purpose::kOffload, -1, -1,
                                         core::Bytes(step.upload_device_bytes));
        g.add_dep(cast, *upload);
        upload = cast;
      }
    }
  }
  // DeepSpeed ZeRO-3's persistent parameters, each gathered on its own once the step has updated their partitions
  // (their all-gathers launched one after another, then waited on by the compute stream: the next forward).
  // (One task for all of them: graph::Task::calls.)
  if (step.persistent_group && step.persistent_gathers > 0) {
    const TaskId ag = g.add_collective(step.role, step.persistent_stream, graph::CollectiveOp::kAllGather,
                                       Purpose::kParamUpdateGather, *step.persistent_group,
                                       core::Bytes(step.persistent_bytes), -1, -1,
                                       static_cast<std::uint32_t>(step.persistent_gathers));
    g.add_dep(ag, opt);
    if (upload) g.add_dep(ag, *upload);
  }
  if (!step.gather_group) return;
  if (step.gather_broadcasts > 0) {
    // Each owner's updated shard broadcast in place into the parameters (no gather buffer).
    const TaskId bc = g.add_collective(step.role, step.gather_stream, graph::CollectiveOp::kBroadcast,
                                       Purpose::kParamUpdateGather, *step.gather_group, core::Bytes(step.gather_bytes),
                                       -1, -1, step.gather_broadcasts);
    g.add_dep(bc, opt);
    if (upload) g.add_dep(bc, *upload);
    return;
  }
  double remaining = step.gather_bytes;
  while (remaining > 0.0) {
    const double m = remaining > step.gather_piece.value() ? step.gather_piece.value() : remaining;
    const TaskId ag = g.add_collective(step.role, step.gather_stream, graph::CollectiveOp::kAllGather,
                                       Purpose::kParamUpdateGather, *step.gather_group, core::Bytes(m), -1, -1);
    g.add_dep(ag, opt);
    if (upload) g.add_dep(ag, *upload);
    g.add_mem(ag, false, graph::MemKind::kGatherBuffer, core::Bytes(m));
    g.add_mem(ag, true, graph::MemKind::kGatherBuffer, core::Bytes(-m));
    remaining -= m;
  }
}

bool quantizes_gradients(const core::ClusterSpec& cluster, const core::PlanSpec& plan) {
  return plan.quantization.gradients && plan.dp * plan.tp > cluster.devices_per_node;
}

std::vector<int> qgz_hop_sizes(const core::ClusterSpec& cluster, const core::QuantizationSpec& quant, int ranks, int tp) {
  const graph::GroupShape shape = topology::strided_group_shape(cluster, ranks, tp);
  std::vector<int> sizes;
  int covered = 1;
  for (const int l : quant.gradient_hops) {
    const int inside = shape.within(l);
    if (inside <= covered) continue;
    sizes.push_back(inside / covered);
    covered = inside;
  }
  if (covered < ranks) sizes.push_back(ranks / covered);
  return sizes;
}

}  // namespace shardsim::strategies
