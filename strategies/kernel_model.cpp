#include "strategies/kernel_model.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/core/errors.hpp"
#include "strategies/model_costs.hpp"

namespace shardsim::strategies {
namespace {

// [guess] Output tile of a large GEMM: cuBLAS / CUTLASS and rocBLAS pick 128 x 128 (or 256 x 128) tiles for the
// shapes of LLM training; one tile per SM / CU at a time.
constexpr double kTile = 128.0;

double tiles(double m, double n, double batch) { return std::ceil(m / kTile) * std::ceil(n / kTile) * batch; }

// A block's dimensions on one tensor-parallel rank: the degree, the micro-batch's tokens, hidden, MLP and KV widths.
struct BlockDims {
  double t, tokens, h, f, kv;
};
BlockDims block_dims(const core::ModelSpec& m, const core::PlanSpec& plan) {
  return {static_cast<double>(plan.tp), static_cast<double>(plan.micro_batch) * m.seq_len, static_cast<double>(m.hidden),
          static_cast<double>(m.ffn_hidden), static_cast<double>(m.kv_heads) * m.head_dim()};
}

}  // namespace

KernelModel::KernelModel(const core::DeviceSpec& device, core::Dtype dtype, core::AttentionKernel attention) {
  const auto peak = device.peak_for(dtype);
  SHARDSIM_ASSERT(peak.has_value(), "device has no peak for the compute dtype");
  flop_rate_ = peak->value() * device.gemm_efficiency;
  narrow_rate_ = peak->value() * device.gemm_efficiency_narrow_in_use();
  odd_rate_ = peak->value() * device.gemm_efficiency_odd_in_use();
  const core::AttentionRates att = device.attention_rates(attention);
  attention_rate_ = peak->value() * att.forward;
  attention_backward_rate_ = peak->value() * att.backward;
  byte_rate_ = device.hbm_bandwidth.value() * device.memory_efficiency;
  stream_rate_ = device.hbm_bandwidth.value() * device.stream_efficiency_in_use();
  overhead_ = device.kernel_overhead.value();
  units_ = device.compute_units;
  attention_slots_ = att.slots;
  attention_block_cost_ = att.block_cost;
  attention_backward_block_cost_ = att.backward_block_cost;
  elem_bytes_ = core::dtype_bytes(dtype);
}

double KernelModel::wave_efficiency(double t) const {
  if (units_ <= 0 || t <= 0.0) return 1.0;
  const double waves = std::ceil(t / units_);
  return t / (waves * units_);
}

namespace {
// The widest load, in bytes up to 16, that every row of a GEMM's operands allows: the largest power of two dividing
// each dimension's bytes.
double operand_alignment(const GemmShape& g, double elem_bytes) {
  double align = 16.0;
  for (const double d : {g.m, g.n, g.k}) {
    const double bytes = std::round(d) * elem_bytes;
    while (align > 1.0 && std::fmod(bytes, align) != 0.0) align /= 2.0;
  }
  return align;
}
}  // namespace

core::Seconds KernelModel::gemm(const GemmShape& g) const {
  const double flops = 2.0 * g.m * g.n * g.k * g.batch;
  const double align = operand_alignment(g, elem_bytes_);
  const double rate = align >= 16.0 ? flop_rate_ : align >= 4.0 ? narrow_rate_ : odd_rate_;
  const double compute = flops / (rate * wave_efficiency(tiles(g.m, g.n, g.batch)));
  const double traffic = elem_bytes_ * (g.m * g.k + g.k * g.n + g.m * g.n) * g.batch / byte_rate_;
  return core::Seconds(std::max({compute, traffic, overhead_}));
}

GemmShape data_gradient(const GemmShape& g) { return {g.m, g.k, g.n, g.batch}; }
GemmShape weight_gradient(const GemmShape& g) { return {g.k, g.n, g.m, g.batch}; }

std::vector<LinearLayer> linear_layers(const core::ModelSpec& m, const core::PlanSpec& plan) {
  const auto [t, tokens, h, f, kv] = block_dims(m, plan);
  const bool swiglu = m.mlp == core::MlpKind::kSwiglu;
  return {{"qkv", {tokens, (h + 2.0 * kv) / t, h}},
          {"attn_out", {tokens, h, h / t}},
          {"mlp_up", {tokens, (swiglu ? 2.0 : 1.0) * f / t, h}},
          {"mlp_down", {tokens, h, f / t}},
          {"logits", {tokens, static_cast<double>(m.vocab) / t, h}}};
}

TensorLayout tensor_layout(const core::ModelSpec& m, const core::PlanSpec& plan) {
  if (plan.megatron_model_code()) return {true, true};
  return {m.fused_qkv, m.fused_gate_up};
}

std::vector<LinearLayer> block_linears(const core::ModelSpec& m, const core::PlanSpec& plan) {
  const auto [t, tokens, h, f, kv] = block_dims(m, plan);
  const TensorLayout layout = tensor_layout(m, plan);
  const bool swiglu = m.mlp == core::MlpKind::kSwiglu;
  std::vector<LinearLayer> out;
  if (layout.fused_qkv) {
    out.push_back({"qkv", {tokens, (h + 2.0 * kv) / t, h}});
  } else {
    out.push_back({"q", {tokens, h / t, h}});
    out.push_back({"k", {tokens, kv / t, h}});
    out.push_back({"v", {tokens, kv / t, h}});
  }
  out.push_back({"attn_out", {tokens, h, h / t}});
  if (swiglu && !layout.fused_gate_up) {
    out.push_back({"mlp_gate", {tokens, f / t, h}});
    out.push_back({"mlp_up", {tokens, f / t, h}});
  } else {
    out.push_back({"mlp_up", {tokens, (swiglu ? 2.0 : 1.0) * f / t, h}});
  }
  out.push_back({"mlp_down", {tokens, h, f / t}});
  return out;
}

std::vector<GemmShape> block_matmul_sequence(const core::ModelSpec& m, const core::PlanSpec& plan) {
  std::vector<GemmShape> out;
  for (const LinearLayer& l : block_linears(m, plan)) out.push_back(l.fwd);
  return out;
}

Float8Casts float8_casts(const core::ModelSpec& m, const core::PlanSpec& plan) {
  Float8Casts c;
  if (!plan.float8.linear) return c;
  const double e = core::dtype_bytes(m.param_dtype);
  const double weight_cast = plan.float8.all_gather ? 0.0 : 2.0 * e + 1.0;  // max-abs read, then read + fp8 write
  const int weight_kernels = plan.float8.all_gather ? 0 : 2;
  const std::vector<LinearLayer> linears = block_linears(m, plan);
  if (plan.float8.recipe == core::Float8Recipe::kDelayed) {
    // Transformer Engine: each te.Linear casts its input and its weight forward, its output gradient backward, each
    // in one cast-transpose kernel (16-bit read, both fp8 layouts written).
    for (const auto& [name, g] : linears) {
      c.forward_bytes += (e + 2.0) * (g.m * g.k + g.n * g.k);
      c.forward_kernels += 2;
      c.backward_bytes += (e + 2.0) * g.m * g.n;
      c.backward_kernels += 1;
    }
    return c;
  }
  if (!plan.fused_model_code()) {
    for (const auto& [name, g] : linears) {
      const double input = g.m * g.k, output = g.m * g.n, weight = g.n * g.k;
      c.forward_bytes += (2.0 * e + 1.0) * input + weight_cast * weight;
      c.forward_kernels += 2 + weight_kernels;
      c.backward_bytes += (2.0 * e + 1.0) * output + 2.0 * (weight + output + input);
      c.backward_kernels += 5;
    }
    return c;
  }
  // Compiled: one cast of each distinct input (k and v take q's input, SwiGLU's up the gate's), both layouts
  // written.
  for (std::size_t i = 0; i < linears.size(); ++i) {
    const GemmShape& g = linears[i].fwd;
    const std::string_view name = linears[i].name;
    const bool after_gate = i > 0 && std::string_view(linears[i - 1].name) == "mlp_gate";
    const bool shares_input = name == "k" || name == "v" || (name == "mlp_up" && after_gate);
    if (!shares_input) {
      c.forward_bytes += (e + 2.0) * g.m * g.k;
      c.forward_kernels += 1;
    }
    c.forward_bytes += weight_cast * g.n * g.k;
    c.forward_kernels += weight_kernels;
    c.backward_bytes += (e + 2.0) * g.m * g.n + 2.0 * g.n * g.k;
    c.backward_kernels += 2;
  }
  return c;
}

core::Seconds KernelModel::gemm_backward(const GemmShape& g) const {
  return gemm(data_gradient(g)) + gemm(weight_gradient(g));
}

double attention_schedule(long long heads, int rows, double block_cost, int slots, bool heavy_first) {
  if (heads <= 0 || rows <= 0 || slots <= 0) return 0.0;
  struct Key {
    long long heads;
    int rows, slots;
    double cost;
    bool heavy_first;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      std::size_t h = std::hash<long long>()(k.heads);
      h = h * 1000003u ^ std::hash<int>()(k.rows);
      h = h * 1000003u ^ std::hash<int>()(k.slots);
      h = h * 1000003u ^ std::hash<double>()(k.cost);
      return h * 2u + (k.heavy_first ? 1u : 0u);
    }
  };
  thread_local std::unordered_map<Key, double, KeyHash> memo;
  const Key key{heads, rows, slots, block_cost, heavy_first};
  if (const auto it = memo.find(key); it != memo.end()) return it->second;

  constexpr long long kMaxBlocks = 65536;
  const long long simulated = std::min(heads, std::max<long long>(1, kMaxBlocks / rows));
  // A min-heap of the slots' finish times; each block goes to the slot that frees first.
  std::vector<double> slot(static_cast<std::size_t>(slots), 0.0);
  const auto later = std::greater<double>();
  for (long long h = 0; h < simulated; ++h) {
    for (int i = 0; i < rows; ++i) {
      const double work = (heavy_first ? rows - i : i + 1) + block_cost;
      std::pop_heap(slot.begin(), slot.end(), later);
      slot.back() += work;
      std::push_heap(slot.begin(), slot.end(), later);
    }
  }
  double makespan = *std::max_element(slot.begin(), slot.end());
  const double per_head = 0.5 * rows * (rows + 1.0) + rows * block_cost;
  makespan += static_cast<double>(heads - simulated) * per_head / slots;
  if (memo.size() >= 1u << 16) memo.clear();
  memo.emplace(key, makespan);
  return makespan;
}

core::Seconds KernelModel::flash_attention(double batch_heads, double seq, double head_dim, bool backward) const {
  const double rate = backward ? attention_backward_rate_ : attention_rate_;
  if (attention_slots_ > 0 && units_ > 0) {
    const int slots = units_ * attention_slots_;
    const int rows = static_cast<int>(std::ceil(seq / kTile));
    const double tile_flops = 4.0 * kTile * kTile * head_dim * (backward ? 2.5 : 1.0);
    const double span = attention_schedule(std::max(1LL, std::llround(batch_heads)), rows,
                                           backward ? attention_backward_block_cost_ : attention_block_cost_, slots,
                                           backward);
    // Each slot runs at its share of the device's attention rate.
    return core::Seconds(std::max(span * tile_flops / (rate / slots), overhead_));
  }
  const double flops = 2.0 * batch_heads * seq * seq * head_dim * (backward ? 2.5 : 1.0);
  double t = flops / rate;
  if (units_ > 0) {
    const double rows = std::ceil(seq / kTile);
    const double longest_block = flops / batch_heads * 2.0 / (rows + 1.0);
    t = std::max(t, longest_block / (rate / units_));
  }
  return core::Seconds(std::max(t, overhead_));
}

core::Seconds KernelModel::passes(double bytes, int kernels, double rate) const {
  if (kernels <= 0) return core::Seconds(0.0);
  return core::Seconds(kernels * std::max(bytes / kernels / rate, overhead_));
}

core::Seconds KernelModel::memory(double bytes, int kernels) const { return passes(bytes, kernels, byte_rate_); }

core::Seconds KernelModel::stream(double bytes, int kernels) const { return passes(bytes, kernels, stream_rate_); }

RecomputedWork recomputed_work(const core::ModelSpec& m, const core::PlanSpec& plan) {
  RecomputedWork w;
  switch (plan.recompute) {
    case core::Recompute::kNone: break;
    case core::Recompute::kSelective: w.attention = !plan.flash_attention; break;
    case core::Recompute::kSelectiveOp: {
      const std::vector<GemmShape> seq = block_matmul_sequence(m, plan);
      for (std::size_t i = 0; i < seq.size(); ++i) {
        if (!op_policy_saves(i)) w.matmuls.push_back(seq[i]);
      }
      w.elementwise = true;
      w.attention = !plan.flash_attention;
      break;
    }
    case core::Recompute::kFull: w.forward = true; break;
  }
  return w;
}

LayerTimes time_layers(const core::ModelSpec& m, const core::PlanSpec& plan, const core::DeviceSpec& device) {
  const KernelModel km(device, m.param_dtype, plan.attention_kernel);
  const double t = plan.tp;
  const double b = plan.micro_batch;
  const double s = m.seq_len;
  const double h = m.hidden;
  const double a = m.heads;
  const double d = m.head_dim();
  const double tokens = b * s;
  const double e = core::dtype_bytes(m.param_dtype);
  const double heads = b * a / t;  // attention heads of this rank, over the micro-batch
  const BlockTraffic traffic = block_traffic(m, plan);

  // ---- block: its linear layers as the model code launches them (column-parallel QKV or q, k and v, MLP-up or
  // SwiGLU's gate and up; row-parallel output and MLP-down: block_matmul_sequence), in fp8 with float8 linears
  // (their casts are memory-bound work, below) ----
  const GemmShape logits = linear_layers(m, plan).back().fwd;
  std::optional<KernelModel> km8;
  if (plan.float8.linear) km8.emplace(device, core::Dtype::kFp8);
  const KernelModel& lin = km8 ? *km8 : km;
  core::Seconds lin_fwd, lin_bwd;
  for (const GemmShape& g : block_matmul_sequence(m, plan)) {
    lin_fwd += lin.gemm(g);
    lin_bwd += lin.gemm_backward(g);
  }
  const Float8Casts casts = float8_casts(m, plan);
  const core::Seconds cast_fwd = km.stream(casts.forward_bytes, casts.forward_kernels);
  const core::Seconds cast_bwd = km.stream(casts.backward_bytes, casts.backward_kernels);
  // ---- attention ----
  core::Seconds att_fwd, att_bwd;
  if (plan.flash_attention) {
    // FlashAttention: scores and context fused, only the causal half of the score matrix computed; the backward
    // recomputes the scores (5 matrix products against the forward's 2).
    att_fwd = km.flash_attention(heads, s, d, false);
    att_bwd = km.flash_attention(heads, s, d, true);
  } else {
    // Batched GEMMs for scores (s x s over d) and context (s x d over s), scale/mask/softmax and dropout kernels
    // over the b x a x s x s scores (read and write, 16-bit), and their backward.
    const GemmShape scores{s, s, d, heads}, context{s, d, s, heads};
    att_fwd = km.gemm(scores) + km.gemm(context) + km.memory(traffic.scores, 2);
    att_bwd = km.gemm_backward(scores) + km.gemm_backward(context) + km.memory(2.0 * traffic.scores, 2);
  }
  // ---- memory-bound kernels: norms, residual adds, the activation, QKV bias / rotary (block_traffic) ----
  const int fused = traffic.elementwise_kernels;
  const int eager = traffic.stream_kernels;
  const core::Seconds mem_fwd = km.memory(traffic.elementwise, fused) + km.stream(traffic.streams, eager);
  const core::Seconds mem_bwd = km.memory(2.0 * traffic.elementwise, 2 * fused) + km.stream(2.0 * traffic.streams, 2 * eager);

  LayerTimes out;
  out.block.fwd = lin_fwd + att_fwd + mem_fwd + cast_fwd;
  out.block.bwd = lin_bwd + att_bwd + mem_bwd + cast_bwd;
  const RecomputedWork again = recomputed_work(m, plan);
  if (again.forward) {
    out.block.recompute = out.block.fwd;
  } else {
    for (const auto& g : again.matmuls) out.block.recompute += lin.gemm(g);
    const core::Seconds att = again.attention ? att_fwd : core::Seconds(0.0);
    out.block.recompute += again.elementwise ? mem_fwd + cast_fwd + att : att;
  }
  // ---- embedding: lookup (+ learned positions) forward, scatter-add of its gradient backward ----
  const int emb_kernels = m.position == core::PositionKind::kLearned ? 2 : 1;
  out.embedding.fwd = km.memory(2.0 * tokens * h * e, emb_kernels);
  out.embedding.bwd = km.memory(2.0 * tokens * h * e, emb_kernels);
  // ---- head: final norm, the vocabulary-parallel logits GEMM, fp32 cross-entropy ----
  const double v = tokens * m.vocab / t;
  // The cross-entropy's passes (six forward, four backward) and the final norm: one fused kernel each way, or
  // under eager model code an RMSNorm's single operations as in each block (block_traffic: (28 + 4e) bytes per
  // element in 8 kernels, twice that backward).
  const bool eager_norm = !plan.fused_model_code() && m.norm == core::NormKind::kRmsNorm;
  const core::Seconds norm_fwd = eager_norm ? km.stream(tokens * h * (28.0 + 4.0 * e), 8) : core::Seconds(0.0);
  const double fused_norm = eager_norm ? 0.0 : 2.0 * tokens * h * e;
  out.head.fwd = km.gemm(logits) + km.memory(v * cross_entropy_bytes_fwd(e) + fused_norm, eager_norm ? 6 : 7) + norm_fwd;
  out.head.bwd = km.gemm_backward(logits) + km.memory(v * cross_entropy_bytes_bwd(e) + fused_norm, eager_norm ? 4 : 5) +
                 2.0 * norm_fwd;
  return out;
}

}  // namespace shardsim::strategies
