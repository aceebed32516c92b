#include "strategies/model_costs.hpp"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

#include "sim/core/dtype.hpp"
#include "strategies/kernel_model.hpp"

namespace shardsim::strategies {

// Megatron's vocabulary-parallel cross-entropy (megatron/core/tensor_parallel/cross_entropy.py) in fp32, pass by
// pass over the logits: forward casts the 16-bit logits up (read e, write 4), takes the row max (read 4),
// subtracts it (read 4, write 4), exponentiates (read 4, write 4), sums (read 4) and divides into the saved
// softmax (read 4, write 4); backward subtracts the one-hot target and scales by the incoming gradient (read 4,
// write 4, twice) and casts back (read 4, write e).
double cross_entropy_bytes_fwd(double e) { return e + 4.0 + 4.0 + 8.0 + 8.0 + 4.0 + 8.0; }
double cross_entropy_bytes_bwd(double e) { return 8.0 + 8.0 + 4.0 + e; }

// Memory-bound traffic: element reads+writes of the non-GEMM operations, per token, in units of hidden.
// Fused model code (Megatron-LM's fused kernels) [guess]: norms 2x2, two bias-dropout-residual 2x3, QKV
// bias/rotary 6, MLP activation 2 (GeLU) or 3 (SwiGLU) x ffn, in six kernels. Standard attention adds ~4.5 passes
// over the a*s scores per token (scale/mask/softmax, dropout).
// Eager PyTorch model code (Hugging Face's LlamaDecoderLayer, transformers 4.4x-5.x modeling_llama.py; torchtitan's
// llama with norm_type rmsnorm and compile off) runs RMSNorm, rotary positions and SwiGLU as single operations:
//   RMSNorm: x.to(fp32), pow(2), mean(-1), * rsqrt(var + eps), .to(bf16), weight * -> 28 + 4e bytes per element in
//            6 full-size kernels and 2 per-row ones (the add and rsqrt of the variance);
//   rotary (apply_rotary_pos_emb with rotate_half): q * cos, neg of a half, cat, * sin, + -> 10e bytes per element
//            of q and of k, 5 kernels each;
//   SwiGLU: act_fn(gate) * up -> silu 2e and multiply 3e per ffn element, 2 kernels;
//   the two residual adds 3e each, and the attention output's transpose(1, 2).contiguous() 2e (1 kernel).
// A LayerNorm (F.layer_norm) and GeLU stay one fused kernel each there. The profiler counts 43 kernels per
// LLaMA layer forward where these and the 7 GEMMs and flash attention make 39 (validate/torch_step.py).
BlockTraffic block_traffic(const core::ModelSpec& m, const core::PlanSpec& plan) {
  const double tokens = static_cast<double>(plan.micro_batch) * m.seq_len;
  const double e = core::dtype_bytes(m.param_dtype);
  const double h = m.hidden;
  const double f = m.ffn_hidden;
  const double kv = static_cast<double>(m.kv_heads) * m.head_dim();
  const bool swiglu = m.mlp == core::MlpKind::kSwiglu;
  // Per tensor-parallel rank: work on the heads or the MLP's columns is split over tp; work on the full hidden
  // vector of every token (norms, residual adds, Megatron's bias-dropout-add) is each rank's whole, unless sequence
  // parallelism splits the tokens (Korthikanti et al. 2022, Sec. 4.2.2).
  const double split = tokens / plan.tp;
  const double whole = plan.sequence_parallel ? split : tokens;
  BlockTraffic bt;
  bt.scores = plan.flash_attention ? 0.0 : 4.5 * tokens * m.heads * m.seq_len / plan.tp * e;
  if (plan.fused_model_code()) {
    // norms 2 x 2h and the two bias-dropout-adds 2 x 3h on the hidden vector; QKV bias / rotary 6h and the MLP's
    // activation on the heads and columns
    bt.elementwise = (whole * 10.0 * h + split * (6.0 * h + (swiglu ? 3.0 : 2.0) * f)) * e;
    bt.elementwise_kernels = 6;
    return bt;
  }
  // Fused kernels that remain: LayerNorms, GeLU, QKV bias / learned or ALiBi positions.
  double fused_whole = 0.0, fused_split = 0.0;
  int fused_kernels = 0;
  if (m.norm == core::NormKind::kLayerNorm) {
    fused_whole += 4.0 * h;
    fused_kernels += 2;
  }
  if (!swiglu) {
    fused_split += 2.0 * f;
    fused_kernels += 1;
  }
  if (m.position != core::PositionKind::kRotary) {
    fused_split += 6.0 * h;
    fused_kernels += 1;
  }
  bt.elementwise = (whole * fused_whole + split * fused_split) * e;
  bt.elementwise_kernels = fused_kernels;
  // Eager single operations.
  double streams_whole = 6.0 * h * e;  // two residual adds
  double streams_split = 2.0 * h * e;  // the attention output's copy
  int stream_kernels = 3;
  if (m.norm == core::NormKind::kRmsNorm) {
    streams_whole += 2.0 * h * (28.0 + 4.0 * e);
    stream_kernels += 16;
  }
  if (m.position == core::PositionKind::kRotary) {
    streams_split += 10.0 * e * (h + kv);
    stream_kernels += 10;
  }
  if (swiglu) {
    streams_split += 5.0 * e * f;
    stream_kernels += 2;
  }
  bt.streams = whole * streams_whole + split * streams_split;
  bt.stream_kernels = stream_kernels;
  return bt;
}

namespace {

// The coordinator's run depends on the submodules and the plan's four bounds only: a search evaluates many plans
// that share them, one after another on each thread, so the last run is kept.
FetchPlan cached_fetch_plan(const ModelCosts& c, std::span<const std::vector<ModuleParams>* const> modules,
                            const core::PlanSpec& plan, double param_bytes, double largest) {
  struct Key {
    std::size_t units = 0;
    std::vector<ModuleParams> embedding, block, head;
    std::array<double, 7> bounds{};
    bool operator==(const Key&) const = default;
  };
  thread_local std::optional<std::pair<Key, FetchPlan>> last;
  Key key{c.units.size(), c.embedding_modules, c.block_modules, c.head_modules,
          {plan.prefetch_bucket.value(), plan.max_live_parameters.value(), plan.max_reuse_distance.value(),
           plan.persistence_threshold.value(),
           plan.model_persistence_threshold ? plan.model_persistence_threshold->value() : -1.0, param_bytes, largest}};
  if (!last || !(last->first == key)) {
    last.emplace(std::move(key), deepspeed_fetch_plan(modules, plan, param_bytes, largest));
  }
  return last->second;
}

}  // namespace

ModelCosts compute_model_costs(const core::ModelSpec& m, const core::PlanSpec& plan, const core::DeviceSpec* device) {
  ModelCosts out;
  const double t = plan.tp;
  const double b = plan.micro_batch;
  const double s = m.seq_len;
  const double h = m.hidden;
  const double f = m.ffn_hidden;
  const double a = m.heads;
  const double tokens = b * s;
  const double e = core::dtype_bytes(m.param_dtype);  // activation element size (16-bit: 2)
  const double kv = static_cast<double>(m.kv_heads) * m.head_dim();
  const bool swiglu = m.mlp == core::MlpKind::kSwiglu;

  // ---- one transformer block ----
  UnitCost blk;
  blk.block = true;
  // GEMM weights split over TP; biases and norms counted as replicated (a slight over-count for the
  // column-parallel biases, under 0.01% of a block).
  const double sharded = m.matmul_params_per_layer();
  blk.params = sharded / t + (m.params_per_layer() - sharded);
  const core::Flops fwd = m.layer_forward_flops(tokens) / t;
  const core::Flops scores = m.attention_score_flops(tokens) / t;
  blk.fwd_flops = fwd;
  blk.bwd_flops = 2.0 * fwd;

  const BlockTraffic traffic = block_traffic(m, plan);
  const double elementwise = traffic.elementwise + traffic.streams;
  const double score_traffic = traffic.scores;
  const Float8Casts casts = float8_casts(m, plan);
  blk.fwd_mem = core::Bytes(elementwise + score_traffic + casts.forward_bytes);
  blk.bwd_mem = core::Bytes(2.0 * (elementwise + score_traffic) + casts.backward_bytes);
  if (plan.float8.all_gather) blk.float8_elements = sharded / t;

  // Activations (Korthikanti et al. 2022, generalised): replicated 10 sbh (LN inputs/outputs, 2 dropout
  // masks); sharded: Q, K, V and the attention context (2sbh + 2 x 2sb*kv + 2sbh in 16-bit), the MLP
  // intermediates (GeLU: 2 x 2sbf = 16sbh at f = 4h; SwiGLU: 3 x 2sbf); scores 5as^2b unless flash/selective.
  // Without dropout (m.dropout false) neither the two masks nor the probabilities' mask are kept.
  const double masks = m.dropout ? 1.0 : 0.0;
  const double replicated = tokens * h * (4.0 * e + 2.0 * masks);  // 10 sbh at e = 2
  const double attn_sharded = tokens * (2.0 * h + 2.0 * kv) * e;  // 8 sbh for MHA at e = 2
  const double mlp_sharded = tokens * f * (swiglu ? 3.0 : 2.0) * e;
  const double score_bytes = (2.0 * e + masks) * tokens * a * s;  // 5as^2b at e = 2 (scores, softmax, mask)
  // Sequence parallelism splits the replicated part along the sequence too (Korthikanti et al. 2022, Sec. 4.2.2:
  // sbh(34/t + 5as/(ht))).
  double full_block = (plan.sequence_parallel ? replicated / t : replicated) + (attn_sharded + mlp_sharded) / t;
  // Transformer Engine's linears keep their inputs for the weight gradient as the FP8 cast they multiplied, a byte
  // each (te.Linear saves inputmat / inputmat_t in FP8 when fp8 and the wgrad's precision is not overridden:
  // NVIDIA/TransformerEngine@0004dbd0 transformer_engine/pytorch/module/linear.py, _Linear.forward): the two norms'
  // outputs (the QKV and first MLP linears' inputs), the attention context (the projection's) and the MLP's
  // activation output (the second linear's). torchao's Float8Linear keeps its high-precision inputs.
  if (plan.float8.linear && plan.float8.recipe == core::Float8Recipe::kDelayed && e > 1.0) {
    const double norm_outputs = 2.0 * tokens * h / (plan.sequence_parallel ? t : 1.0);
    full_block -= (e - 1.0) * (norm_outputs + tokens * (h + f) / t);
  }
  // everything a block's forward leaves: what it keeps without recomputation, and what a full recomputation rebuilds
  const double all_activations = full_block + (plan.flash_attention ? 0.0 : score_bytes / t);
  switch (plan.recompute) {
    case core::Recompute::kNone:
      blk.act_saved = core::Bytes(all_activations);
      break;
    case core::Recompute::kSelective:
      blk.act_saved = core::Bytes(full_block);
      if (!plan.flash_attention) blk.act_transient = core::Bytes(score_bytes / t);
      break;
    case core::Recompute::kSelectiveOp: {
      // Saved: the block's input, the outputs of the matmuls the policy keeps, the attention's output with its
      // fp32 log-sum-exp per head and token (flash) or nothing of it (torch's math attention, recomputed).
      // Recomputed in the backward (recomputed_work): the other matmuls and every elementwise operation, whose
      // outputs are transient.
      const std::vector<GemmShape> seq = block_matmul_sequence(m, plan);
      double saved = tokens * h * e / (plan.sequence_parallel ? t : 1.0);
      for (std::size_t i = 0; i < seq.size(); ++i) {
        if (op_policy_saves(i)) saved += seq[i].m * seq[i].n * e;
      }
      if (plan.flash_attention) saved += tokens * (h * e + a * 4.0) / t;
      blk.act_saved = core::Bytes(saved);
      blk.act_transient = core::Bytes(all_activations);
      break;
    }
    case core::Recompute::kFull:
      blk.act_saved = core::Bytes(tokens * h * e / (plan.sequence_parallel ? t : 1.0));  // the block input (2sbh)
      blk.act_transient = core::Bytes(all_activations);
      break;
  }
  // The work the backward runs again, as the kernel timing counts it (recomputed_work).
  const RecomputedWork again = recomputed_work(m, plan);
  if (again.forward) {
    blk.recompute_flops = fwd;
    blk.recompute_mem = blk.fwd_mem;
  } else {
    double flops = 0.0;
    for (const auto& g : again.matmuls) flops += 2.0 * g.m * g.n * g.k;
    const double att_traffic = again.attention ? score_traffic : 0.0;
    blk.recompute_flops = core::Flops(flops) + (again.attention ? scores : core::Flops(0.0));
    blk.recompute_mem = core::Bytes(again.elementwise ? elementwise + casts.forward_bytes + att_traffic : att_traffic);
  }
  blk.tp_allreduces = plan.tp > 1 ? 2 : 0;
  // The block's linears as its model code holds them (block_linears: QKV or q, k and v; the output projection;
  // SwiGLU's gate and up apart or as one, or a GeLU MLP's up; the down projection) and two norms.
  const std::vector<LinearLayer> linears = block_linears(m, plan);
  const auto attn_out = std::find_if(linears.begin(), linears.end(),
                                     [](const LinearLayer& l) { return std::string_view(l.name) == "attn_out"; });
  const auto attention_inputs = static_cast<int>(attn_out - linears.begin());  // the QKV's linears
  blk.modules = static_cast<int>(linears.size()) + 2;
  const int norm_tensors = m.norm == core::NormKind::kLayerNorm ? 2 : 1;
  blk.tensors = static_cast<int>(linears.size()) * (m.linear_bias ? 2 : 1) + 2 * norm_tensors +
                (!m.linear_bias && m.qkv_bias ? attention_inputs : 0);
  // The weights per tensor-parallel rank that DeepSpeed's persistence threshold compares (norms: h elements): a
  // module above it is gathered, the others stay gathered on every rank.
  const double persist = plan.persistence_threshold.value() / core::dtype_bytes(m.param_dtype);
  auto gathered = [&](double weight) { return weight > persist ? 1 : 0; };
  const int norms_gathered = 2 * gathered(h);
  blk.gathered_modules = norms_gathered;
  for (const LinearLayer& l : linears) blk.gathered_modules += gathered(l.fwd.n * l.fwd.k);

  // ---- embedding: vocabulary-parallel lookup; negligible FLOPs ----
  UnitCost emb;
  emb.params = m.embedding_params() / t;
  emb.fwd_mem = core::Bytes(2.0 * tokens * h * e);
  emb.bwd_mem = core::Bytes(2.0 * tokens * h * e);
  emb.tp_allreduces = plan.tp > 1 ? 1 : 0;
  emb.modules = m.position == core::PositionKind::kLearned ? 2 : 1;
  emb.tensors = emb.modules;
  emb.gathered_modules = gathered(m.vocab * h / t) + (emb.modules == 2 ? gathered(s * h) : 0);

  // ---- head: final norm, output projection (vocabulary-parallel), cross-entropy in fp32 ----
  UnitCost head;
  const double norm_params = m.norm == core::NormKind::kLayerNorm ? 2.0 * h : h;
  head.params = norm_params + (m.head_params() - norm_params) / t;
  head.fwd_flops = m.head_forward_flops(tokens) / t;
  head.bwd_flops = 2.0 * head.fwd_flops;
  const double logits = tokens * m.vocab / t;
  head.fwd_mem = core::Bytes(logits * (e + cross_entropy_bytes_fwd(e)));  // write the logits, then the loss
  head.bwd_mem = core::Bytes(logits * cross_entropy_bytes_bwd(e));
  // Saved: final-norm input (e*sbh) and the logits, with their fp32 softmax for the loss gradient where the
  // cross-entropy keeps one. PyTorch's F.cross_entropy on logits.float() (torchtitan's loss, Hugging Face's
  // LlamaForCausalLM) also holds the fp32 copy while log_softmax writes its fp32 output beside it; Megatron's
  // vocab-parallel cross-entropy works in place on its fp32 copy (megatron/core/tensor_parallel/cross_entropy.py),
  // which is the saved softmax; a fused kernel (flash-attn's) keeps the 16-bit logits and a log-sum-exp per row.
  const core::CrossEntropy loss = plan.loss_kernel();
  head.act_saved = core::Bytes(tokens * h * e + logits * (e + (loss == core::CrossEntropy::kFused ? 0.0 : 4.0)));
  if (loss == core::CrossEntropy::kTorch) head.fwd_transient = core::Bytes(logits * 4.0);
  head.modules = m.tied_embeddings ? 1 : 2;  // final norm (+ the output projection unless tied)
  head.tensors = norm_tensors + (m.tied_embeddings ? 0 : 1);
  head.gathered_modules = norms_gathered / 2 + (m.tied_embeddings ? 0 : gathered(m.vocab * h / t));

  if (device) {
    const LayerTimes times = time_layers(m, plan, *device);
    auto set = [](UnitCost& u, const UnitTimes& times_of) {
      u.fwd_time = times_of.fwd;
      u.bwd_time = times_of.bwd;
      u.recompute_time = times_of.recompute;
    };
    set(emb, times.embedding);
    set(blk, times.block);
    set(head, times.head);
  }
  // The submodules as the forward meets them: the input norm, the QKV's linears and the output projection, the
  // post-attention norm, the MLP's linears (block_linears), each linear with its bias where the model has one (the
  // QKV's alone where only they have one, as Qwen2's). A linear's bias is its forward's output width on this rank:
  // split over TP for column-parallel ones, whole for the row-parallel output and down projections.
  auto linear = [&](const LinearLayer& l, bool with_bias) {
    const double bias = with_bias ? l.fwd.n : 0.0;
    return ModuleParams{{l.fwd.n * l.fwd.k, bias}, bias > 0.0 ? 2 : 1};
  };
  const ModuleParams norm{{h, h}, norm_tensors, true};
  out.block_modules.push_back(norm);
  for (int i = 0; i < static_cast<int>(linears.size()); ++i) {
    out.block_modules.push_back(linear(linears[static_cast<std::size_t>(i)], m.linear_bias || (m.qkv_bias && i < attention_inputs)));
    if (i == attention_inputs) out.block_modules.push_back(norm);  // after the output projection
  }
  out.embedding_modules.push_back(ModuleParams{{m.vocab * h / t, 0.0}, 1});
  if (m.position == core::PositionKind::kLearned) out.embedding_modules.push_back(ModuleParams{{s * h, 0.0}, 1});
  out.head_modules.push_back(norm);
  if (!m.tied_embeddings) out.head_modules.push_back(ModuleParams{{m.vocab * h / t, 0.0}, 1});

  out.units.reserve(static_cast<std::size_t>(m.layers) + 2);
  out.units.push_back(emb);
  // Blocks the recomputation skips (recompute_every) keep everything, as without it.
  UnitCost kept = blk;
  kept.act_saved = core::Bytes(all_activations);
  kept.act_transient = core::Bytes(0.0);
  kept.recompute_flops = core::Flops(0.0);
  kept.recompute_mem = core::Bytes(0.0);
  kept.recompute_time = core::Seconds(0.0);
  for (int i = 0; i < m.layers; ++i) out.units.push_back(plan.recomputes_block(i) ? blk : kept);
  out.units.push_back(head);
  for (const auto& u : out.units) {
    out.params_per_rank += u.params;
    out.model_flops_per_micro += u.fwd_flops + u.bwd_flops;
    out.hardware_flops_per_micro += u.fwd_flops + u.bwd_flops + u.recompute_flops;
  }
  out.tp_allreduce_bytes = core::Bytes(tokens * h * e);
  if (plan.framework == core::Framework::kDeepSpeed && assembles_units(plan)) {
    std::vector<const std::vector<ModuleParams>*> modules(out.units.size());
    double largest = 0.0;
    for (std::size_t u = 0; u < out.units.size(); ++u) {
      modules[u] = &out.modules_of(u);
      largest = std::max(largest, out.units[u].params);
    }
    out.fetch = cached_fetch_plan(out, modules, plan, e, largest);
  }
  return out;
}

bool assembles_units(const core::PlanSpec& plan) {
  // FSDP's FULL_SHARD and DeepSpeed's ZeRO-3 (DeepSpeedZeroOptimizer_Stage3 and its fetch coordinator) wrap and
  // hook their units whatever the world size, one rank included.
  const bool stage3 = plan.zero_stage == 3 && plan.framework != core::Framework::kMegatron;
  return plan.shards().params > 1 || stage3;
}

bool assembles_into_new_memory(const core::PlanSpec& plan) {
  return plan.shards().params > 1 || plan.framework == core::Framework::kFsdp;
}

bool holds_fetched_params(const core::PlanSpec& plan) {
  return assembles_into_new_memory(plan) || plan.offload.params;
}

core::Bytes deepspeed_step_bytes(const core::ModelSpec& m, double params) {
  const double g = core::dtype_bytes(m.grad_dtype);
  constexpr double kMaster = 4.0;  // the fp32 partition DeepSpeed's ZeRO optimizers step
  const double norm = g + 2.0 * 8.0;
  const double flatten = 2.0 * g;
  const double cast = g == kMaster ? 0.0 : g + kMaster;
  const double unscale = 2.0 * kMaster;
  const double wider_reads = (kMaster - g) + kMaster;  // the optimizer's gradient, the bit16 copy's source
  return core::Bytes(params * (norm + flatten + cast + unscale + wider_reads));
}

core::Bytes optimizer_step_bytes(const core::ModelSpec& m, double params) {
  const double k = m.optimizer_bytes_per_param();
  return core::Bytes(params * (2.0 * k + core::dtype_bytes(m.grad_dtype) + core::dtype_bytes(m.param_dtype)));
}

}  // namespace shardsim::strategies
