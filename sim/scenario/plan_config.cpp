#include "sim/scenario/plan_config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <utility>

#include "sim/scenario/cluster_config.hpp"
#include "strategies/lowering_common.hpp"

namespace shardsim::scenario {
namespace {

using core::ConfigError;

// An offload map's device: cpu, nvme (ZeRO-Infinity's swap files) or none. Pinned or not, the copies run at the
// host link's rate here.
std::string offload_device(const ConfigNode& o) {
  const std::string device = o.get("device").as_choice({"cpu", "none", "nvme"});
  (void)o.find("pin_memory");
  if (auto v = o.find("nvme_path")) (void)v->as_string();  // where the swap files go: no bearing on the time
  return device;
}

}  // namespace

core::PlanSpec parse_plan(const ConfigNode& n, PlanDeferred& later) {
  n.expect_map({"dp", "tp", "pp", "micro_batch", "global_batch", "recompute", "recompute_every", "zero_stage", "reduce_bucket",
                "allgather_bucket", "prefetch_bucket", "max_live_parameters", "max_reuse_distance", "persistence_threshold",
                "model_persistence_threshold", "ddp_bucket",
                "overlap_comm",
                "use_multi_rank_bucket_allreduce", "reduce_scatter",
                "flash_attention", "attention_kernel", "launch_blocking", "overlap_sync_param", "overlap_sync_grad", "param_sync", "p2p_sync", "tp_comm_overlap", "grad_accum_dtype", "grad_comm_dtype", "collective_algorithm", "workspace",
                "partition", "mics_shard_size",
                "zero_hpz_partition_size", "zero_quantized_weights", "zero_quantized_gradients",
                "quantization_block", "qgz_hops", "hierarchy", "virtual_stages", "sequence_parallel",
                "compression", "offload_optimizer", "offload_param", "sub_group_size", "delayed_update", "framework",
                "model_code", "cross_entropy", "shared_dp_group", "float8"});
  core::PlanSpec p;
  if (auto v = n.find("dp")) p.dp = v->as_positive_int();
  if (auto v = n.find("tp")) p.tp = v->as_positive_int();
  if (auto v = n.find("pp")) p.pp = v->as_positive_int();
  if (auto v = n.find("micro_batch")) p.micro_batch = v->as_positive_int();
  if (auto v = n.find("virtual_stages")) p.virtual_stages = v->as_positive_int();
  if (auto v = n.find("sequence_parallel")) p.sequence_parallel = v->as_bool();
  if (auto v = n.find("global_batch")) p.global_batch = v->as_positive_int();
  if (auto v = n.find("recompute")) {
    p.recompute = named<core::Recompute>(*v, core::kRecomputeNames);
  }
  if (auto v = n.find("recompute_every")) {
    p.recompute_every = static_cast<int>(v->as_int(1, core::kMaxLayers));
    if (p.recompute == core::Recompute::kNone && p.recompute_every > 1) {
      v->fail("recompute_every chooses the blocks a recomputation applies to: set plan.recompute too");
    }
  }
  if (auto v = n.find("zero_stage")) p.zero_stage = static_cast<int>(v->as_int(0, 3));
  if (auto v = n.find("reduce_bucket")) p.reduce_bucket = v->as_bytes();
  if (auto v = n.find("allgather_bucket")) p.allgather_bucket = v->as_bytes();
  if (auto v = n.find("prefetch_bucket")) p.prefetch_bucket = v->as_bytes(true);  // 0: no prefetch
  if (auto v = n.find("max_live_parameters")) p.max_live_parameters = v->as_bytes();
  if (auto v = n.find("max_reuse_distance")) p.max_reuse_distance = v->as_bytes(true);
  if (auto v = n.find("persistence_threshold")) p.persistence_threshold = v->as_bytes(true);
  if (auto v = n.find("model_persistence_threshold")) p.model_persistence_threshold = v->as_bytes(true);
  if (auto v = n.find("ddp_bucket")) p.ddp_bucket = v->as_bytes();
  if (auto v = n.find("overlap_comm")) p.overlap_comm = v->as_bool();
  if (auto v = n.find("use_multi_rank_bucket_allreduce")) p.bucket_all_reduce = v->as_bool();
  if (auto v = n.find("reduce_scatter")) {
    p.reduce_scatter = v->as_bool();
    later.reduce_scatter = v;
  }
  if (auto v = n.find("flash_attention")) p.flash_attention = v->as_bool();
  if (auto v = n.find("attention_kernel")) {
    p.attention_kernel = named<core::AttentionKernel>(*v, core::kAttentionKernelNames);
    if (!p.flash_attention) v->fail("attention_kernel chooses FlashAttention's kernels: set plan.flash_attention: true too");
  }
  if (auto v = n.find("launch_blocking")) p.launch_blocking = v->as_bool();
  if (auto v = n.find("overlap_sync_param")) {
    p.overlap_sync_param = v->as_bool();
    later.overlap_sync_param = v;
  }
  if (auto v = n.find("overlap_sync_grad")) {
    p.overlap_sync_grad = v->as_bool();
    later.overlap_sync_grad = v;
  }
  if (auto v = n.find("param_sync")) {
    p.param_sync = named<core::ParamSync>(*v, core::kParamSyncNames);
    later.param_sync = v;
  }
  if (auto v = n.find("tp_comm_overlap")) {
    p.tp_comm_overlap = v->as_bool();
    later.tp_comm_overlap = v;
  }
  if (auto v = n.find("p2p_sync")) {
    p.p2p_sync = v->as_bool();
    later.p2p_sync = v;
  }
  if (auto v = n.find("grad_accum_dtype")) {
    p.grad_accum_dtype = *core::parse_dtype(v->as_choice({"fp32", "bf16", "fp16"}));
    later.grad_accum_dtype = v;
  }
  if (auto v = n.find("grad_comm_dtype")) {
    p.grad_comm_dtype = *core::parse_dtype(v->as_choice({"fp32", "bf16", "fp16"}));
    later.grad_comm_dtype = v;
  }
  if (auto v = n.find("framework")) {
    p.framework = *core::parse_framework(v->as_choice({"deepspeed", "fsdp", "megatron"}));
  }
  if (auto v = n.find("model_code")) {
    p.model_code = named<core::ModelCode>(*v, core::kModelCodeNames);
  }
  if (auto v = n.find("cross_entropy")) {
    p.cross_entropy = named<core::CrossEntropy>(*v, core::kCrossEntropyNames);
  }
  if (auto v = n.find("shared_dp_group")) p.shared_dp_group = v->as_bool();
  if (auto v = n.find("float8")) {
    v->expect_map({"recipe", "fsdp_all_gather"});
    p.float8.recipe = named<core::Float8Recipe>(v->get("recipe"), core::kFloat8RecipeNames);
    p.float8.linear = true;
    if (auto a = v->find("fsdp_all_gather")) p.float8.all_gather = a->as_bool();
    later.float8 = v;
  }
  if (auto v = n.find("collective_algorithm")) {
    p.algorithm = *core::parse_algorithm(v->as_choice({"auto", "ring", "tree", "hierarchical", "best"}));
  }
  if (auto v = n.find("workspace")) p.workspace = v->as_bytes(true);
  if (auto part = n.find("partition")) {
    part->expect_map({"params", "grads", "optimizer"});
    later.params = part->find("params");
    later.grads = part->find("grads");
    later.optimizer = part->find("optimizer");
  }
  later.mics = n.find("mics_shard_size");
  later.secondary = n.find("zero_hpz_partition_size");
  later.hops = n.find("qgz_hops");
  later.qwz = n.find("zero_quantized_weights");
  later.qgz = n.find("zero_quantized_gradients");
  later.hierarchy = n.find("hierarchy");
  later.compression = n.find("compression");
  if (auto o = n.find("offload_optimizer")) {
    o->expect_map({"device", "ratio", "pin_memory", "nvme_path", "buffer_count", "pipeline_read", "pipeline_write"});
    const std::string device = offload_device(*o);
    p.offload.optimizer = device != "none";
    p.offload.optimizer_nvme = device == "nvme";
    if (auto r = o->find("ratio")) p.offload.ratio = r->as_fraction();
    if (auto v = o->find("buffer_count")) p.offload.buffer_count = static_cast<int>(v->as_int(1, 1024));
    for (const char* key : {"pipeline_read", "pipeline_write"}) {
      if (auto v = o->find(key)) p.offload.pipeline = p.offload.pipeline || v->as_bool();
    }
    later.offload = o;
  }
  if (auto o = n.find("offload_param")) {
    o->expect_map({"device", "pin_memory", "nvme_path", "buffer_count", "buffer_size"});
    const std::string device = offload_device(*o);
    p.offload.params = device != "none";
    p.offload.params_nvme = device == "nvme";
    if (auto v = o->find("buffer_count")) p.offload.param_buffer_count = static_cast<int>(v->as_int(1, 1024));
    if (auto v = o->find("buffer_size")) {
      p.offload.param_buffer_size = static_cast<double>(v->as_int(1, std::numeric_limits<long long>::max()));
    }
    later.offload_param = o;
  }
  if (auto v = n.find("delayed_update")) {
    p.offload.delayed_update = v->as_bool();
    later.delayed_update = v;
  }
  if (auto v = n.find("sub_group_size")) {
    p.offload.sub_group = static_cast<double>(v->as_int(1, std::numeric_limits<long long>::max()));
    later.sub_group = v;
  }
  if (auto v = n.find("quantization_block")) p.quantization.block = v->as_positive_int();
  return p;
}

namespace {

// A shard factor: a rank count, "all" (every data-parallel rank) or a network level's name (the data-parallel
// ranks inside one domain of that level). Must divide dp.
int resolve_shard(const ConfigNode& at, const core::ClusterSpec& c, const core::PlanSpec& p) {
  int v = 0;
  const std::string s = at.as_string();
  if (s == "all") {
    v = p.dp;
  } else if (!s.empty() && std::isdigit(static_cast<unsigned char>(s[0]))) {
    v = at.as_positive_int();
  } else {
    const int l = find_level(at, c, s);
    const int ranks = c.domain_ranks(l);
    if (ranks % p.tp != 0 && p.tp % ranks != 0) {
      at.fail(fmt::format("level '{}' holds {} ranks, which does not fit tp = {}", s, ranks, p.tp));
    }
    v = std::max(1, std::min(p.dp, ranks / p.tp));
  }
  if (p.dp % v != 0) at.fail(fmt::format("shard factor {} does not divide dp = {}", v, p.dp));
  return v;
}

void resolve_partition(Scenario& s, const ConfigNode& plan_at, const PlanDeferred& later) {
  auto& p = s.plan;
  auto& part = p.partition;
  const int n = p.dp;
  part.params = p.zero_stage >= 3 ? n : 1;
  part.grads = p.zero_stage >= 2 ? n : 1;
  part.optimizer = p.zero_stage >= 1 ? n : 1;
  if (later.mics) {
    if (later.params || later.grads || later.optimizer) later.mics->fail("give either mics_shard_size or partition, not both");
    // MiCS is DeepSpeed's ZeRO-3 over sub-groups (its MiCS_Optimizer derives from stage 3's; DeepSpeed reads
    // mics_shard_size with stage 3 only), and FSDP's HYBRID_SHARD is FULL_SHARD within the group.
    if (auto z = plan_at.find("zero_stage"); z && p.zero_stage != 3) {
      z->fail(fmt::format("mics_shard_size shards every state within its group as ZeRO-3 does: zero_stage must be 3 "
                          "or left out, got {}", p.zero_stage));
    }
    p.zero_stage = 3;
    const int g = resolve_shard(*later.mics, s.cluster, p);
    part = core::PartitionSpec{g, g, g, 0};
  }
  if (later.params) part.params = resolve_shard(*later.params, s.cluster, p);
  if (later.grads) part.grads = resolve_shard(*later.grads, s.cluster, p);
  if (later.optimizer) part.optimizer = resolve_shard(*later.optimizer, s.cluster, p);
  if (part.optimizer % part.grads != 0) {
    (later.optimizer ? *later.optimizer : plan_at)
        .fail(fmt::format("optimizer states must be sharded at least as finely as gradients: optimizer = {} is not a "
                          "multiple of grads = {}", part.optimizer, part.grads));
  }
  auto& q = p.quantization;
  std::optional<ConfigNode> secondary = later.secondary;
  std::optional<ConfigNode> hops = later.hops;
  if (later.hierarchy) {
    // The multi-level hierarchical partitioning (Xu et al., arXiv 2501.04266, read generally): every state
    // fully sharded; an INT8 forward gather; the fp16 secondary parameter copy on the innermost level (the
    // fastest that can hold it: GCD pair on Frontier); INT4 gradients reduced level by level through all levels.
    const ConfigNode& h = *later.hierarchy;
    h.expect_map({"levels", "secondary_params"});
    if (later.mics || later.params || later.grads || later.optimizer) {
      h.fail("hierarchy fixes the partition (all states over all ranks); remove partition / mics_shard_size");
    }
    part = core::PartitionSpec{n, n, n, 0};
    q.weights = true;
    q.gradients = true;
    if (auto lv = h.find("levels")) {
      hops = lv;
    } else {
      // Default: every level of the machine.
      YAML::Node all(YAML::NodeType::Sequence);
      for (const auto& l : s.cluster.levels) all.push_back(l.name);
      hops = ConfigNode(all, std::make_shared<const std::string>(h.file()), h.path() + ".levels", h.location());
    }
    if (auto sp = h.find("secondary_params")) {
      if (secondary) sp->fail("give either hierarchy.secondary_params or zero_hpz_partition_size, not both");
      secondary = sp;
    } else if (!secondary) {
      secondary = hops->items().front();
    }
    p.hierarchy_levels = static_cast<int>(hops->items().size());
  }
  if (later.qwz) q.weights = later.qwz->as_bool();
  if (later.qgz) q.gradients = later.qgz->as_bool();
  if (secondary) {
    const int h = resolve_shard(*secondary, s.cluster, p);
    if (part.params <= 1) secondary->fail("hpZ needs partitioned parameters (zero_stage 3 or partition.params > 1)");
    if (part.params % h != 0) {
      secondary->fail(fmt::format("the secondary partition ({} ranks) must divide the parameter partition ({})", h,
                                  part.params));
    }
    part.secondary = h < part.params ? h : 0;  // a secondary group as large as the primary changes nothing
  }
  if (q.weights && part.params <= 1) {
    (later.qwz ? *later.qwz : plan_at).fail("qwZ needs partitioned parameters (zero_stage 3 or partition.params > 1)");
  }
  if (q.gradients && part.grads <= 1) {
    (later.qgz ? *later.qgz : plan_at).fail("qgZ needs partitioned gradients (zero_stage >= 2 or partition.grads > 1)");
  }
  q.gradient_hops.clear();
  if (hops) {
    int prev = -1;
    for (const ConfigNode& h : hops->items()) {
      const int l = find_level(h, s.cluster, h.as_string());
      if (l <= prev) h.fail("hops must be listed innermost level first, each once");
      q.gradient_hops.push_back(l);
      prev = l;
    }
    if (q.gradient_hops.empty()) hops->fail("expected at least one level");
  } else {
    // ZeRO++'s two hops: inside the node, then across nodes.
    q.gradient_hops = {s.cluster.node_level(), static_cast<int>(s.cluster.levels.size()) - 1};
    if (q.gradient_hops[0] == q.gradient_hops[1]) q.gradient_hops.pop_back();
  }
}

// Compression of one class of messages. ZFP's ratio follows from its fixed rate (element bits / rate); MPC's
// is a property of the data (measured by the kernels' benchmark; default [guess]). Codec speeds are shardsim's
// kernels as measured on the device, or on an H100 and scaled (core::codec_rates); compress_throughput and
// decompress_throughput override them.
core::CompressionSpec resolve_codec(const ConfigNode& n, const core::ClusterSpec& c, core::Dtype data) {
  n.expect_map({"codec", "rate", "ratio", "compress_throughput", "decompress_throughput"});
  core::CompressionSpec spec;
  const std::string codec = n.get("codec").as_choice({"zfp", "mpc", "none"});
  if (codec == "none") {
    for (const char* k : {"rate", "ratio", "compress_throughput", "decompress_throughput"}) {
      if (n.has(k)) n.get(k).fail("has no meaning with codec: none");
    }
    return spec;
  }
  const core::CodecRates rates = core::codec_rates(c.device);
  const int bits = static_cast<int>(core::dtype_bytes(data) * 8);
  if (codec == "zfp") {
    spec.codec = core::Codec::kZfp;
    if (n.has("ratio")) n.get("ratio").fail("ZFP's ratio follows from its rate; give rate");
    const ConfigNode rate = n.get("rate");
    spec.zfp_rate = static_cast<int>(rate.as_int(1, 32));
    if (spec.zfp_rate >= bits) {
      rate.fail(fmt::format("rate {} bits per value does not compress {}-bit {} data", spec.zfp_rate, bits,
                            core::dtype_name(data)));
    }
    spec.ratio = static_cast<double>(bits) / spec.zfp_rate;
    spec.compress = rates.zfp_compress;
    spec.decompress = rates.zfp_decompress;
  } else {
    spec.codec = core::Codec::kMpc;
    if (n.has("rate")) n.get("rate").fail("MPC is lossless and has no rate; give ratio");
    spec.ratio = 1.15;
    if (auto r = n.find("ratio")) {
      spec.ratio = r->as_double();
      if (spec.ratio < 1.0) r->fail(fmt::format("expected a ratio >= 1, got {}", spec.ratio));
    }
    spec.compress = rates.mpc_compress;
    spec.decompress = rates.mpc_decompress;
  }
  if (auto v = n.find("compress_throughput")) spec.compress = v->as_bandwidth();
  if (auto v = n.find("decompress_throughput")) spec.decompress = v->as_bandwidth();
  return spec;
}

void resolve_compression(Scenario& s, const PlanDeferred& later) {
  if (!later.compression) return;
  const ConfigNode& n = *later.compression;
  n.expect_map({"gradients", "parameters", "tensor", "pipeline"});
  auto& c = s.plan.compression;
  const auto& m = s.model;
  if (auto v = n.find("gradients")) {
    c.gradients = resolve_codec(*v, s.cluster, m.grad_dtype);
    if (c.gradients.on() && s.plan.quantization.gradients) v->fail("gradients are already quantised by qgZ");
  }
  if (auto v = n.find("parameters")) {
    c.parameters = resolve_codec(*v, s.cluster, m.param_dtype);
    if (c.parameters.on() && s.plan.quantization.weights) v->fail("parameters are already quantised by qwZ");
  }
  if (auto v = n.find("tensor")) c.tensor = resolve_codec(*v, s.cluster, m.param_dtype);
  if (auto v = n.find("pipeline")) c.pipeline = resolve_codec(*v, s.cluster, m.param_dtype);
}

// Cross-section checks; `plan_at` locates plan errors.
}  // namespace

void resolve_plan(Scenario& s, const ConfigNode& root, const PlanDeferred& later) {
  const ConfigNode plan_at = root.get("plan");
  auto at = [&](const char* key) { return plan_at.has(key) ? plan_at.get(key) : plan_at; };
  auto& p = s.plan;
  const int devices = s.cluster.total_devices();
  if (p.dp == 0) {
    if (devices % (p.tp * p.pp) != 0) {
      at(plan_at.has("tp") || !plan_at.has("pp") ? "tp" : "pp")
          .fail(fmt::format("tp x pp = {} does not divide the cluster's {} devices", p.tp * p.pp, devices));
    }
    p.dp = devices / (p.tp * p.pp);
  }
  if (static_cast<long long>(p.dp) * p.tp * p.pp != devices) {
    at("dp").fail(fmt::format("dp x tp x pp = {} x {} x {} = {}, but the cluster has {} devices ({} nodes x {})", p.dp,
                              p.tp, p.pp, static_cast<long long>(p.dp) * p.tp * p.pp, devices, s.cluster.nodes,
                              s.cluster.devices_per_node));
  }
  const auto& m = s.model;
  if (m.heads % p.tp != 0) at("tp").fail(fmt::format("model heads = {} is not divisible by tp = {}", m.heads, p.tp));
  // Each tensor-parallel rank holds whole key/value groups (Megatron-LM core/transformer/attention.py:
  // num_query_groups / tp, divided exactly).
  if (m.kv_heads % p.tp != 0) {
    at("tp").fail(fmt::format("model kv_heads = {} is not divisible by tp = {} (each tensor-parallel rank holds whole "
                              "key/value groups)", m.kv_heads, p.tp));
  }
  if (m.ffn_hidden % p.tp != 0) {
    at("tp").fail(fmt::format("model ffn_hidden = {} is not divisible by tp = {}", m.ffn_hidden, p.tp));
  }
  // 1F1B stages may differ by a layer (DeepSpeed's uniform partition); interleaved chunks must be equal.
  if (p.virtual_stages > 1 && m.layers % (p.pp * p.virtual_stages) != 0) {
    at("virtual_stages").fail(fmt::format("model layers = {} is not divisible by pp x virtual_stages = {} x {} "
                                          "(interleaved chunks hold equal layers)", m.layers, p.pp, p.virtual_stages));
  }
  if (m.layers < p.pp) at("pp").fail(fmt::format("at least one layer per stage (model layers = {}, pp = {})", m.layers, p.pp));
  if (p.virtual_stages > 1 && p.pp == 1) at("virtual_stages").fail("virtual_stages needs pipeline parallelism (pp > 1)");
  const long long per_step = static_cast<long long>(p.micro_batch) * p.dp;
  if (p.global_batch == 0) p.global_batch = static_cast<int>(per_step);
  if (p.global_batch % per_step != 0) {
    at("global_batch").fail(fmt::format("global_batch = {} is not a multiple of micro_batch x dp = {} x {} = {}",
                                        p.global_batch, p.micro_batch, p.dp, per_step));
  }
  // Budget: one iteration is lowered micro-batch by micro-batch, unit by unit (about kTasksPerUnit tasks each);
  // refuse before building a graph that would not fit in memory or time.
  if (const double tasks = static_cast<double>(p.grad_accumulation()) * (m.layers + 2.0) * core::kTasksPerUnit;
      tasks > core::kMaxTasks) {
    at("global_batch").fail(fmt::format(
        "this plan lowers to about {:.3g} tasks ({} micro-batches per iteration x {} layers x ~{}), over the limit of "
        "{:.3g}: fewer micro-batches per iteration (global_batch / (micro_batch x dp)) or layers",
        tasks, p.grad_accumulation(), m.layers, core::kTasksPerUnit, core::kMaxTasks));
  }
  if (p.virtual_stages > 1 && p.grad_accumulation() % p.pp != 0) {
    at("virtual_stages").fail(fmt::format("the interleaved schedule needs micro-batches ({}) divisible by pp = {}",
                                          p.grad_accumulation(), p.pp));
  }
  resolve_partition(s, plan_at, later);
  resolve_compression(s, later);
  if (later.reduce_scatter && !p.reduce_scatter) {
    // What the key changes is DeepSpeed's ZeRO optimizers' bucket reduction; where it would change nothing, say so.
    if (p.framework != core::Framework::kDeepSpeed) {
      later.reduce_scatter->fail(fmt::format("reduce_scatter is DeepSpeed's ZeRO optimizers' key: framework {} has none",
                                             core::framework_name(p.framework)));
    }
    if (p.zero_stage == 0 && p.is_plain_zero()) {
      later.reduce_scatter->fail("reduce_scatter changes DeepSpeed's ZeRO optimizers (zero_stage 1-3): zero_stage 0 "
                                 "has none");
    }
    if (p.pp > 1) {
      later.reduce_scatter->fail("reduce_scatter: false (buckets all-reduced) is not modelled with pipeline "
                                 "parallelism: the pipeline's ZeRO-1 reduce-scatters here");
    }
    if (p.quantization.gradients) {
      later.reduce_scatter->fail("reduce_scatter: false makes DeepSpeed all-reduce ZeRO-3's gradient buckets, which "
                                 "bypasses qgZ's quantised reduction (zero_quantized_gradients)");
    }
    if (!p.reduces_buckets_by_all_reduce()) {
      later.reduce_scatter->fail("reduce_scatter changes DeepSpeed's ZeRO-1/2/3 optimizers and a partition with whole "
                                 "parameters and gradients and sharded optimizer states (P1/G1/OSn): this plan's (" +
                                 std::to_string(p.shards().params) + "/" + std::to_string(p.shards().grads) + "/" +
                                 std::to_string(p.shards().optimizer) + ") is reduced otherwise");
    }
  }
  if (later.overlap_sync_param && p.overlap_sync_param) {
    // The key moves the sync of updated parameters into the next forward: a plan without that sync would not change.
    const core::PartitionSpec sh = p.shards();
    if (sh.params >= sh.optimizer) {
      later.overlap_sync_param->fail(fmt::format(
          "overlap_sync_param overlaps the sync of updated parameters with the next forward: this plan has none (its "
          "parameters are sharded {} ways, its optimizer states {}: nothing to gather after the step)",
          sh.params, sh.optimizer));
    }
    if (p.pp > 1) {
      later.overlap_sync_param->fail("overlap_sync_param is not modelled with pipeline parallelism");
    }
  }
  if (later.overlap_sync_grad && !p.overlap_sync_grad) {
    // The key moves the gradient reductions after the pass: a plan that reduces none, or a pipeline's, would not change.
    if (p.pp > 1) later.overlap_sync_grad->fail("overlap_sync_grad is not modelled with pipeline parallelism");
    if (p.framework != core::Framework::kDeepSpeed) {
      later.overlap_sync_grad->fail(fmt::format(
          "overlap_sync_grad is InternEvo's hybrid ZeRO optimizer's (modelled on framework deepspeed's ZeRO "
          "lowering); framework {} reduces its gradients its own way",
          core::framework_name(p.framework)));
    }
  }
  if (later.param_sync && p.param_sync == core::ParamSync::kBroadcast) {
    const core::PartitionSpec sh = p.shards();
    if (sh.params >= sh.optimizer) {
      later.param_sync->fail(fmt::format(
          "param_sync chooses how the updated parameters are synced after the step: this plan has no such sync (its "
          "parameters are sharded {} ways, its optimizer states {})", sh.params, sh.optimizer));
    }
    if (p.pp > 1) later.param_sync->fail("param_sync: broadcast is not modelled with pipeline parallelism");
  }
  if (later.tp_comm_overlap && p.tp_comm_overlap && (p.tp < 2 || !p.sequence_parallel)) {
    later.tp_comm_overlap->fail(fmt::format(
        "tp_comm_overlap overlaps the sequence-parallel exchanges with the GEMMs: it needs tp > 1 and "
        "sequence_parallel: true (this plan: tp {}, sequence_parallel {})", p.tp, p.sequence_parallel));
  }
  if (later.p2p_sync && p.framework != core::Framework::kMegatron) {
    later.p2p_sync->fail(fmt::format("p2p_sync is how Megatron's pipeline exchanges wait (framework megatron); framework "
                                     "{} runs its own", core::framework_name(p.framework)));
  }
  if (later.grad_accum_dtype && p.grad_accum_dtype == core::Dtype::kFp32 &&
      !strategies::deepspeed_bf16_optimizer(s.model, p)) {
    later.grad_accum_dtype->fail(
        "fp32 accumulation is modelled as DeepSpeed's BF16_Optimizer: framework deepspeed, zero_stage 0 without "
        "another partition, offload or quantisation, and a bf16 model");
  }
  if (later.grad_comm_dtype && p.framework != core::Framework::kDeepSpeed) {
    later.grad_comm_dtype->fail(fmt::format("grad_comm_dtype is DeepSpeed's communication_data_type (framework "
                                            "deepspeed); framework {} reduces in its own dtype",
                                            core::framework_name(p.framework)));
  }
  if (p.offload.optimizer) {
    const ConfigNode& o = *later.offload;
    // One data-parallel rank is ZeRO-Offload's own case (a large model on one GPU): it needs ZeRO, not sharding.
    if (p.shards().optimizer <= 1 && (p.zero_stage == 0 || p.dp > 1)) {
      o.fail("ZeRO-Offload needs sharded optimizer states (zero_stage >= 1)");
    }
    if (p.pp > 1) o.fail("optimizer offload with pipeline parallelism is not modelled");
    if (s.cluster.host.link_bandwidth.value() <= 0.0 || s.cluster.host.memory_bandwidth.value() <= 0.0 ||
        s.cluster.host.memory.value() <= 0.0) {
      o.fail(fmt::format("cluster '{}' describes no host (memory, memory_bandwidth, link_bandwidth)", s.cluster.name));
    }
    if (p.offload.optimizer_nvme && p.zero_stage != 3) {
      o.get("device").fail("NVMe offload of the optimizer needs zero_stage 3 (DeepSpeed swaps ZeRO-3's sub-groups)");
    }
  }
  if ((p.offload.optimizer_nvme || p.offload.params_nvme) && !s.cluster.host.has_nvme()) {
    const ConfigNode& o = p.offload.optimizer_nvme ? *later.offload : *later.offload_param;
    o.get("device").fail(fmt::format(
        "a cluster whose host has NVMe: cluster '{}' describes none (cluster.host.nvme_read, nvme_write, and "
        "nvme_capacity: the node's drives as a file system's asynchronous I/O reaches them)",
        s.cluster.name));
  }
  if (p.offload.delayed_update && !p.offload.optimizer) {
    later.delayed_update->fail("the delayed update is ZeRO-Offload's: it needs the optimizer offloaded (offload_optimizer)");
  }
  // The swappers' settings only act on what goes to NVMe.
  for (const auto& [node, nvme] : {std::pair{&later.offload, p.offload.optimizer_nvme},
                                   std::pair{&later.offload_param, p.offload.params_nvme}}) {
    if (!*node || nvme) continue;
    for (const char* key : {"buffer_count", "buffer_size", "pipeline_read", "pipeline_write"}) {
      if (auto v = (*node)->find(key)) v->fail(fmt::format("{} sets DeepSpeed's NVMe swapper: it needs device: nvme", key));
    }
  }
  if (later.sub_group && !p.offload.optimizer_nvme) {
    later.sub_group->fail("sub_group_size sets the sub-groups NVMe offload swaps (offload_optimizer: {device: nvme})");
  }
  if (p.offload.params) {
    const ConfigNode& o = *later.offload_param;
    // DeepSpeed offloads parameters only where ZeRO-3 partitions them (offload_param is a stage 3 option).
    if (p.zero_stage != 3) o.fail("parameter offload needs zero_stage 3 (DeepSpeed offloads ZeRO-3's partitions)");
    if (!p.offload.optimizer || p.offload.ratio < 1.0) {
      o.fail("parameter offload is modelled with the whole optimizer offloaded too (offload_optimizer: {device: cpu} "
             "or nvme)");
    }
    if (p.quantization.weights || p.quantization.gradients || p.shards().secondary > 0) {
      o.fail("parameter offload with ZeRO++ (qwZ, qgZ, hpZ) is not modelled");
    }
  }
  if (const auto why = p.framework_refusal()) at("framework").fail(*why);
  if (p.float8.linear) {
    if (!s.cluster.device.peak_for(core::Dtype::kFp8)) {
      later.float8->fail(fmt::format("float8 linears need a device with an fp8 peak; device '{}' has none "
                                     "(cluster.device.peak.fp8)",
                                     s.cluster.device.name));
    }
    if (p.float8.all_gather && p.float8.recipe != core::Float8Recipe::kTensorwise) {
      later.float8->get("fsdp_all_gather").fail("fp8 weight gathers are torchao's: they need recipe tensorwise");
    }
    if (p.float8.all_gather && p.framework != core::Framework::kFsdp) {
      later.float8->get("fsdp_all_gather").fail("fp8 weight gathers are FSDP2's (torchao's float8 all-gather): they need framework fsdp");
    }
  }
  if (p.pp > 1 && (p.zero_stage > 1 || !p.is_plain_zero())) {
    at(p.zero_stage > 1 ? "zero_stage" : "pp")
        .fail("pipeline parallelism runs with DDP or ZeRO-1 only (as in DeepSpeed's pipeline engine and Megatron's "
              "distributed optimizer)");
  }
  if (!s.cluster.device.peak_for(m.param_dtype)) {
    const ConfigNode model_at = root.get("model");
    model_at.fail(fmt::format("the model computes in {} but device '{}' has no {} peak (set model.dtypes.params)",
                              core::dtype_name(m.param_dtype), s.cluster.device.name, core::dtype_name(m.param_dtype)));
  }
}

}  // namespace shardsim::scenario
