// The kernel-level compute model: a large GEMM runs at the device's ceiling, a GEMM whose tiles leave the last
// wave mostly empty runs proportionally slower, small kernels are launch-bound, memory-bound kernels move their
// bytes at the achieved HBM bandwidth, and a layer's time therefore grows less than linearly with micro-batch
// (fixed costs amortise) and tensor parallelism buys less than its degree.
#include "strategies/kernel_model.hpp"

#include <gtest/gtest.h>

#include "strategies/model_costs.hpp"
#include "topology/cluster_presets.hpp"

namespace shardsim::strategies {
namespace {

core::DeviceSpec device(int units, double overhead_us) {
  core::DeviceSpec d;
  d.peak[static_cast<int>(core::Dtype::kBf16)] = core::FlopPerSec(100e12);
  d.hbm_bandwidth = core::BytesPerSec(1e12);
  d.gemm_efficiency = 0.5;
  d.memory_efficiency = 0.8;
  d.compute_units = units;
  d.kernel_overhead = core::Seconds(overhead_us * 1e-6);
  return d;
}

TEST(KernelModel, LargeGemmRunsAtTheCeiling) {
  const KernelModel km(device(100, 5), core::Dtype::kBf16);
  // 8192 x 12800 output = 64 x 100 tiles: 64 full waves of 100 units.
  const GemmShape g{8192, 12800, 8192};
  EXPECT_NEAR(km.gemm(g).value(), 2.0 * 8192 * 12800 * 8192 / (100e12 * 0.5), 1e-12);
}

TEST(KernelModel, FlashAttentionRunsAtItsOwnEfficiencyAndFewHeadsWaitOnTheLongestRow) {
  core::DeviceSpec d = device(100, 1);
  d.attention_efficiency = 0.25;
  d.attention_backward_efficiency = 0.2;
  const KernelModel km(d, core::Dtype::kBf16);
  // 512 heads of 2048 x 128: the causal half of 4 b h s^2 d FLOPs, every unit busy, at 0.25 of the peak.
  const double fwd = 2.0 * 512 * 2048.0 * 2048.0 * 128;
  EXPECT_NEAR(km.flash_attention(512, 2048, 128, false).value(), fwd / (100e12 * 0.25), 1e-12);
  EXPECT_NEAR(km.flash_attention(512, 2048, 128, true).value(), 2.5 * fwd / (100e12 * 0.2), 1e-12);
  // 4 heads: 16 row blocks each; the last does 16 of the head's 136 block pairs, on one of the 100 units.
  const double head = 2.0 * 2048.0 * 2048.0 * 128;
  EXPECT_NEAR(km.flash_attention(4, 2048, 128, false).value(), head * 2.0 / 17.0 / (100e12 * 0.25 / 100), 1e-12);
  // Without a unit count the work is spread evenly; an unset efficiency is the GEMM ceiling.
  core::DeviceSpec plain = device(0, 1);
  const KernelModel flat(plain, core::Dtype::kBf16);
  EXPECT_NEAR(flat.flash_attention(4, 2048, 128, false).value(), 4 * head / (100e12 * 0.5), 1e-12);
}

// A device whose FlashAttention-2 kernels are timed by their schedule: two blocks per unit, 2 tiles of fixed cost.
core::DeviceSpec scheduled_device(double forward, double backward) {
  core::DeviceSpec d = device(100, 1);
  d.attention_efficiency = forward;
  d.attention_backward_efficiency = backward;
  d.attention_slots = 2;
  d.attention_block_cost = 2.0;
  return d;
}

// cuDNN's attention runs FlashAttention-2's schedule at the device's cuDNN speed-up, direction by direction; a device
// without one lends it FlashAttention-2's rates unchanged and says so. Sources follow the same rule.
TEST(KernelModel, CudnnAttentionIsFlashAttention2sScheduleAtItsSpeedup) {
  core::DeviceSpec d = scheduled_device(0.4, 0.3);
  d.efficiency_source = "device fit";
  const core::AttentionRates lent = d.attention_rates(core::AttentionKernel::kCudnn);
  EXPECT_TRUE(lent.guessed);
  EXPECT_NE(std::string(lent.borrowed).find("cuDNN"), std::string::npos);
  EXPECT_EQ(d.attention_source(core::AttentionKernel::kCudnn), "device fit");
  const KernelModel flash2(d, core::Dtype::kBf16), borrowed(d, core::Dtype::kBf16, core::AttentionKernel::kCudnn);
  EXPECT_EQ(flash2.flash_attention(64, 4096, 128, false).value(), borrowed.flash_attention(64, 4096, 128, false).value());
  d.cudnn_attention_speedup = 1.6;
  d.cudnn_attention_backward_speedup = 1.5;
  d.cudnn_attention_source = "paper";
  const core::AttentionRates own = d.attention_rates(core::AttentionKernel::kCudnn);
  EXPECT_FALSE(own.guessed);
  EXPECT_EQ(own.slots, 2);
  EXPECT_DOUBLE_EQ(own.forward, 0.4 * 1.6);
  EXPECT_DOUBLE_EQ(own.backward, 0.3 * 1.5);
  EXPECT_EQ(d.attention_source(core::AttentionKernel::kCudnn), "paper");
  const KernelModel cudnn(d, core::Dtype::kBf16, core::AttentionKernel::kCudnn);
  for (const bool backward : {false, true}) {
    EXPECT_NEAR(flash2.flash_attention(64, 4096, 128, backward).value() /
                    cudnn.flash_attention(64, 4096, 128, backward).value(),
                backward ? 1.5 : 1.6, 1e-9);
  }
}

// FlashAttention's first release runs FlashAttention-2's schedule at half its rates both ways (FlashAttention-2 is
// "around 2x faster", arXiv 2307.08691), with FlashAttention-2's source and guess status: twice the time.
TEST(KernelModel, FlashAttention1IsFlashAttention2AtHalfItsRates) {
  core::DeviceSpec d = scheduled_device(0.4, 0.3);
  d.efficiency_source = "device fit";
  const core::AttentionRates one = d.attention_rates(core::AttentionKernel::kFlash1);
  EXPECT_FALSE(one.guessed);
  EXPECT_EQ(one.slots, 2);
  EXPECT_DOUBLE_EQ(one.forward, 0.2);
  EXPECT_DOUBLE_EQ(one.backward, 0.15);
  EXPECT_EQ(d.attention_source(core::AttentionKernel::kFlash1), "device fit");
  const KernelModel flash2(d, core::Dtype::kBf16), flash1(d, core::Dtype::kBf16, core::AttentionKernel::kFlash1);
  for (const bool backward : {false, true}) {
    EXPECT_NEAR(flash1.flash_attention(64, 4096, 128, backward).value() /
                    flash2.flash_attention(64, 4096, 128, backward).value(),
                2.0, 1e-9);
  }
}

// The Triton port of FlashAttention runs at its own rates on the same device, by the flat model even where
// FlashAttention-2 is timed by its schedule; a device that has no Triton rates lends it FlashAttention-2's, and says so.
TEST(KernelModel, TritonAttentionRunsAtItsOwnRatesOrBorrowsFlashAttention2s) {
  core::DeviceSpec d = scheduled_device(0.4, 0.4);
  const core::AttentionRates none = d.attention_rates(core::AttentionKernel::kTriton);
  EXPECT_TRUE(none.guessed);
  EXPECT_EQ(none.slots, 2);
  EXPECT_FALSE(d.attention_rates(core::AttentionKernel::kFlash2).guessed);
  const KernelModel flash2(d, core::Dtype::kBf16), borrowed(d, core::Dtype::kBf16, core::AttentionKernel::kTriton);
  EXPECT_EQ(flash2.flash_attention(512, 4096, 128, true).value(), borrowed.flash_attention(512, 4096, 128, true).value());
  d.triton_attention_efficiency = 0.2;
  d.triton_attention_backward_efficiency = 0.1;
  const core::AttentionRates own = d.attention_rates(core::AttentionKernel::kTriton);
  EXPECT_FALSE(own.guessed);
  EXPECT_EQ(own.slots, 0);
  const KernelModel triton(d, core::Dtype::kBf16, core::AttentionKernel::kTriton);
  const double fwd = 2.0 * 512 * 4096.0 * 4096.0 * 128;
  EXPECT_NEAR(triton.flash_attention(512, 4096, 128, false).value(), fwd / (100e12 * 0.2), 1e-12);
  EXPECT_NEAR(triton.flash_attention(512, 4096, 128, true).value(), 2.5 * fwd / (100e12 * 0.1), 1e-12);
  // One direction given: the other borrows FlashAttention-2's ceiling and the rates count as guessed.
  d.triton_attention_backward_efficiency = 0.0;
  EXPECT_TRUE(d.attention_rates(core::AttentionKernel::kTriton).guessed);
  EXPECT_EQ(d.attention_rates(core::AttentionKernel::kTriton).backward, 0.4);
  // A device with the Triton port's rates only (the A100, fitted on llm-foundry's runs) lends them to
  // FlashAttention-2, flat, and says so; with neither, the GEMM ceiling.
  core::DeviceSpec t = device(100, 1);
  t.triton_attention_efficiency = 0.3;
  t.triton_attention_backward_efficiency = 0.2;
  const core::AttentionRates lent = t.attention_rates(core::AttentionKernel::kFlash2);
  EXPECT_TRUE(lent.guessed);
  EXPECT_EQ(lent.forward, 0.3);
  EXPECT_EQ(lent.backward, 0.2);
  EXPECT_EQ(lent.slots, 0);
  EXPECT_NE(std::string(lent.borrowed).find("Triton"), std::string::npos);
  EXPECT_EQ(device(100, 1).attention_rates(core::AttentionKernel::kTriton).forward, 0.5);
  EXPECT_EQ(std::string(device(100, 1).attention_rates(core::AttentionKernel::kFlash2).borrowed), "the GEMM ceiling");
  // The rates name their source: the family's own, the lender's where borrowed, else the device's.
  t.efficiency_source = "device fit";
  t.triton_attention_source = "triton fit";
  EXPECT_EQ(t.attention_source(core::AttentionKernel::kFlash2), "triton fit");
  EXPECT_EQ(t.attention_source(core::AttentionKernel::kTriton), "triton fit");
  d.efficiency_source = "device fit";
  d.triton_attention_source = "triton fit";
  d.triton_attention_efficiency = 0.0;
  EXPECT_EQ(d.attention_source(core::AttentionKernel::kTriton), "device fit");
  EXPECT_EQ(d.attention_source(core::AttentionKernel::kFlash2), "device fit");
  core::DeviceSpec bare = device(100, 1);
  bare.efficiency_source = "device fit";
  EXPECT_EQ(bare.attention_source(core::AttentionKernel::kTriton), "device fit");
  // A plan's kernel reaches the layer times: the H100's Triton kernels are slower than its FlashAttention-2.
  const core::DeviceSpec& h100 = topology::find_cluster_preset("dgx-h100")->device;
  core::ModelSpec m = *core::find_model_preset("llama3-8b");
  m.seq_len = 16384;
  core::PlanSpec p;
  p.flash_attention = true;
  const double fa2 = time_layers(m, p, h100).block.bwd.value();
  p.attention_kernel = core::AttentionKernel::kTriton;
  EXPECT_GT(time_layers(m, p, h100).block.bwd.value(), 1.3 * fa2);
}

// FlashAttention by its schedule: blocks of 128 rows, block i of a head working on i + 1 tiles plus its fixed cost,
// dealt in launch order to the slot that frees first.
TEST(KernelModel, FlashAttentionScheduleDealsItsBlocksToTheSlotThatFreesFirst) {
  // One head of 4 blocks (1, 2, 3, 4 tiles) on 2 slots: 1 and 2 start; 3 goes where 1 ended (1 + 3 = 4), 4 where 2
  // ended (2 + 4 = 6). With a fixed cost of 1 each: 2, 3; 2 + 4 = 6; 3 + 5 = 8.
  EXPECT_DOUBLE_EQ(attention_schedule(1, 4, 0.0, 2, false), 6.0);
  EXPECT_DOUBLE_EQ(attention_schedule(1, 4, 1.0, 2, false), 8.0);
  // The backward's column blocks come heaviest first: 4, 3 start; 2 after 3 (5), 1 after 4 (5).
  EXPECT_DOUBLE_EQ(attention_schedule(1, 4, 0.0, 2, true), 5.0);
  // Past 65,536 blocks the heads beyond add their work spread evenly: 100,000 heads of 1 block on 10 slots, the
  // first 65,536 dealt (6,554 on the fullest slot), the other 34,464 a tenth each.
  EXPECT_NEAR(attention_schedule(100000, 1, 0.0, 10, false), 6554.0 + 3446.4, 1e-9);

  core::DeviceSpec d = device(100, 0);
  d.attention_efficiency = 0.4;
  d.attention_backward_efficiency = 0.4;
  d.attention_slots = 2;
  d.attention_block_cost = 2.0;
  d.attention_backward_block_cost = 6.0;
  const KernelModel km(d, core::Dtype::kBf16);
  const double tile = 4.0 * 128 * 128 * 128;  // the two products of one 128 x 128 tile, head dim 128
  // 4 heads of 16 blocks on 200 slots: each block has its slot, the longest (16 tiles + 2) sets the time, each slot
  // running at a two-hundredth of 0.4 of the peak.
  EXPECT_NEAR(km.flash_attention(4, 2048, 128, false).value(), 18.0 * tile / (100e12 * 0.4 / 200), 1e-12);
  // The fraction of the ceiling reached rises with the heads (fewer idle slots) and with the sequence (the fixed
  // cost amortised over longer rows), as FlashAttention's does on an H100 (validate/results/).
  auto efficiency = [&](double heads, double seq, bool backward) {
    const double flops = 2.0 * heads * seq * seq * 128 * (backward ? 2.5 : 1.0);
    return flops / km.flash_attention(heads, seq, 128, backward).value() / 100e12;
  };
  EXPECT_LT(efficiency(8, 2048, false), efficiency(64, 2048, false));
  EXPECT_LT(efficiency(64, 2048, false), efficiency(512, 2048, false));
  EXPECT_LT(efficiency(512, 2048, false), efficiency(512, 4096, false));
  EXPECT_LT(efficiency(512, 2048, true), efficiency(512, 2048, false));  // the backward's larger fixed cost
  EXPECT_LT(efficiency(512, 16384, false), 0.4);
  EXPECT_GT(efficiency(512, 16384, false), 0.38);
}

// A GEMM runs at the ceiling its operands' narrowest row alignment allows: 16 bytes (8 bf16 elements) the device's
// ceiling; 4 or 8 bytes the narrow one; 2 bytes (an odd bf16 dimension) the odd one; unmeasured: the ceiling.
TEST(KernelModel, GemmsWithMisalignedDimensionsRunAtTheirAlignmentsCeiling) {
  core::DeviceSpec d = device(100, 0);
  const KernelModel plain(d, core::Dtype::kBf16);
  d.gemm_efficiency_narrow = 0.25;
  d.gemm_efficiency_odd = 0.125;
  const KernelModel km(d, core::Dtype::kBf16);
  const double aligned = km.gemm({8192, 12800, 8192}).value();
  EXPECT_DOUBLE_EQ(aligned, plain.gemm({8192, 12800, 8192}).value());
  const double k = 8192 - 4;  // 2 x 4094 bytes: 8-byte rows
  EXPECT_NEAR(km.gemm({8192, 12800, k}).value(), 2.0 * 8192 * 12800 * k / (100e12 * 0.25), 1e-12);
  const double odd = 8191;  // 2-byte rows
  EXPECT_NEAR(km.gemm({8192, 12800, odd}).value(), 2.0 * 8192 * 12800 * odd / (100e12 * 0.125), 1e-12);
  // fp32 operands: 4 bytes an element, an odd dimension gives 4-byte rows.
  d.peak[static_cast<int>(core::Dtype::kFp32)] = core::FlopPerSec(100e12);
  const KernelModel fp32(d, core::Dtype::kFp32);
  EXPECT_NEAR(fp32.gemm({8192, 12800, odd}).value(), 2.0 * 8192 * 12800 * odd / (100e12 * 0.25), 1e-12);
  EXPECT_DOUBLE_EQ(plain.gemm({8192, 12800, odd}).value() * 8192 / odd, plain.gemm({8192, 12800, 8192}).value());
}

TEST(KernelModel, TheLastWaveOfTilesCosts) {
  const KernelModel km(device(100, 0), core::Dtype::kBf16);
  EXPECT_DOUBLE_EQ(km.wave_efficiency(100), 1.0);
  EXPECT_DOUBLE_EQ(km.wave_efficiency(101), 101.0 / 200.0);
  // 128 x 12928: 101 tiles, two waves for the work of 1.01: about twice the time per FLOP of 100 tiles.
  const double t100 = km.gemm({128 * 10, 128 * 10, 65536}).value();
  const double t101 = km.gemm({128, 128 * 101, 65536}).value();
  EXPECT_NEAR(t101 / t100, 2.0, 1e-9);
  const KernelModel unknown(device(0, 0), core::Dtype::kBf16);
  EXPECT_DOUBLE_EQ(unknown.wave_efficiency(101), 1.0);  // no compute units given: no quantisation
}

TEST(KernelModel, SmallKernelsAreLaunchBoundAndSkinnyGemmsMemoryBound) {
  const KernelModel km(device(100, 10), core::Dtype::kBf16);
  EXPECT_DOUBLE_EQ(km.gemm({64, 64, 64}).value(), 10e-6);
  EXPECT_DOUBLE_EQ(km.memory(1e3, 4).value(), 40e-6);
  EXPECT_NEAR(km.memory(8e9, 4).value(), 8e9 / 0.8e12, 1e-12);
  // A GEMV-like product reads its whole matrix: bandwidth, not FLOPs, sets its time.
  const GemmShape gemv{1, 65536, 65536};
  EXPECT_NEAR(km.gemm(gemv).value(), 2.0 * (65536.0 + 65536.0 * 65536.0 + 65536.0) / 0.8e12, 1e-9);
}

TEST(KernelModel, BackwardIsTheDataAndWeightGradientGemms) {
  const KernelModel km(device(100, 0), core::Dtype::kBf16);
  const GemmShape g{4096, 12800, 1280};
  EXPECT_DOUBLE_EQ(km.gemm_backward(g).value(),
                   km.gemm({4096, 1280, 12800}).value() + km.gemm({1280, 12800, 4096}).value());
}

TEST(KernelModel, LayersAmortiseFixedCostsOverTheMicroBatchAndTensorParallelismBuysLessThanItsDegree) {
  const core::DeviceSpec a100 = topology::find_cluster_preset("dgx-a100")->device;
  core::ModelSpec m = *core::find_model_preset("gpt3-175b");
  m.hidden = 1024;
  m.heads = 16;
  m.kv_heads = 16;
  m.ffn_hidden = 4096;
  m.seq_len = 1024;
  core::PlanSpec p;
  p.micro_batch = 1;
  const double one = time_layers(m, p, a100).block.fwd.value();
  p.micro_batch = 8;
  const double eight = time_layers(m, p, a100).block.fwd.value();
  EXPECT_LT(eight, 8.0 * one);
  EXPECT_GT(eight, 2.0 * one);
  p.tp = 8;
  EXPECT_GT(time_layers(m, p, a100).block.fwd.value(), eight / 8.0);
  // Full recomputation repeats the forward; FlashAttention's causal kernels beat the unfused path.
  p.recompute = core::Recompute::kFull;
  const auto full = time_layers(m, p, a100);
  EXPECT_DOUBLE_EQ(full.block.recompute.value(), full.block.fwd.value());
  p.flash_attention = true;
  EXPECT_LT(time_layers(m, p, a100).block.fwd.value(), full.block.fwd.value());
}

// Eager elementwise operations stream at their own share of HBM, each no faster than a launch.
TEST(KernelModel, EagerStreamsRunAtTheStreamingEfficiency) {
  core::DeviceSpec d = device(100, 5);
  const KernelModel plain(d, core::Dtype::kBf16);
  EXPECT_NEAR(plain.stream(8e9, 4).value(), 8e9 / (1e12 * 0.8), 1e-12);  // unset: the memory efficiency
  d.stream_efficiency = 0.9;
  const KernelModel km(d, core::Dtype::kBf16);
  EXPECT_NEAR(km.stream(9e9, 4).value(), 9e9 / (1e12 * 0.9), 1e-12);
  EXPECT_NEAR(km.stream(1e3, 4).value(), 4 * 5e-6, 1e-15);
  EXPECT_EQ(km.stream(1e9, 0).value(), 0.0);
}

// Megatron's fused kernels against eager PyTorch's single operations for a LLaMA block (RMSNorm, rotary, SwiGLU):
// per token 16h + 3f elements in six kernels against 2(28 + 4e)h + 10e(h + kv) + 5e f + 8e h bytes in 31.
TEST(KernelModel, EagerLlamaBlocksMoveTheirSingleOperationsBytes) {
  core::ModelSpec m;
  m.layers = 1;
  m.hidden = 4096;
  m.heads = 32;
  m.kv_heads = 8;
  m.ffn_hidden = 11008;
  m.vocab = 32000;
  m.seq_len = 2048;
  m.mlp = core::MlpKind::kSwiglu;
  m.norm = core::NormKind::kRmsNorm;
  m.position = core::PositionKind::kRotary;
  core::PlanSpec plan;
  plan.micro_batch = 1;
  plan.model_code = core::ModelCode::kMegatron;
  const double tokens = 2048, h = 4096, f = 11008, kv = 8 * 128, e = 2;
  const BlockTraffic fused = block_traffic(m, plan);
  EXPECT_DOUBLE_EQ(fused.elementwise, tokens * (16 * h + 3 * f) * e);
  EXPECT_EQ(fused.elementwise_kernels, 6);
  EXPECT_EQ(fused.stream_kernels, 0);
  plan.model_code = core::ModelCode::kHuggingFace;
  const BlockTraffic eager = block_traffic(m, plan);
  EXPECT_EQ(eager.elementwise_kernels, 0);
  EXPECT_EQ(eager.stream_kernels, 31);
  EXPECT_DOUBLE_EQ(eager.streams, tokens * (2 * (28 + 4 * e) * h + 10 * e * (h + kv) + 5 * e * f + 8 * e * h));
  // Tensor parallelism splits the work on heads and MLP columns; the norms and residual adds on every token's hidden
  // vector stay each rank's whole unless sequence parallelism splits the tokens.
  plan.tp = 2;
  const double whole = tokens * (2 * (28 + 4 * e) * h + 6 * e * h);
  EXPECT_DOUBLE_EQ(block_traffic(m, plan).streams, whole + (eager.streams - whole) / 2);
  plan.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(block_traffic(m, plan).streams, eager.streams / 2);
  plan.sequence_parallel = false;
  plan.model_code = core::ModelCode::kMegatron;
  EXPECT_DOUBLE_EQ(block_traffic(m, plan).elementwise, tokens * (10 * h + (6 * h + 3 * f) / 2) * e);
  plan.model_code = core::ModelCode::kHuggingFace;
  // The eager block is slower on the same device: more bytes and 31 launches.
  core::DeviceSpec d = device(132, 5);
  d.stream_efficiency = 0.84;
  plan.tp = 1;
  const double eager_fwd = time_layers(m, plan, d).block.fwd.value();
  plan.model_code = core::ModelCode::kMegatron;
  EXPECT_GT(eager_fwd, time_layers(m, plan, d).block.fwd.value());
}

// Fused model code other than Megatron's (torch.compile, llm-foundry) moves the fused kernels' bytes and pays
// Megatron's host time per block, but keeps its framework's own process groups.
TEST(KernelModel, FusedModelCodeRunsFusedKernelsWithoutMegatronsGroups) {
  const core::ModelSpec m = *core::find_model_preset("llama3-8b");
  core::PlanSpec plan;
  plan.framework = core::Framework::kDeepSpeed;
  plan.model_code = core::ModelCode::kMegatron;
  const BlockTraffic megatron = block_traffic(m, plan);
  plan.model_code = core::ModelCode::kFused;
  const BlockTraffic fused = block_traffic(m, plan);
  EXPECT_DOUBLE_EQ(fused.elementwise, megatron.elementwise);
  EXPECT_EQ(fused.elementwise_kernels, megatron.elementwise_kernels);
  EXPECT_EQ(fused.stream_kernels, 0);
  EXPECT_TRUE(plan.fused_model_code());
  EXPECT_FALSE(plan.megatron_model_code());
  EXPECT_FALSE(plan.shares_dp_group());  // DeepSpeed without Megatron's unit: gathers and reductions apart
  EXPECT_EQ(plan.loss_kernel(), core::CrossEntropy::kTorch);
  plan.model_code = core::ModelCode::kHuggingFace;
  EXPECT_FALSE(plan.fused_model_code());
}

// torchtitan's op-level policy: each second matmul of a block (k, o and SwiGLU's up in a LLaMA block) and every
// elementwise operation run again in the backward; the other matmuls' outputs, the attention's output and its
// log-sum-exp, and the block input stay saved.
TEST(KernelModel, OpLevelRecomputationRedoesEachSecondMatmulAndTheElementwiseWork) {
  const core::ModelSpec m = *core::find_model_preset("llama3-8b");
  core::PlanSpec plan;
  plan.micro_batch = 2;
  plan.flash_attention = true;
  plan.model_code = core::ModelCode::kFused;
  plan.recompute = core::Recompute::kSelectiveOp;
  const double tokens = 2.0 * 8192, h = 4096, kv = 1024, f = 14336, a = 32, e = 2;
  const std::vector<GemmShape> seq = block_matmul_sequence(m, plan);
  ASSERT_EQ(seq.size(), 7u);  // q, k, v, o, gate, up, down
  EXPECT_DOUBLE_EQ(seq[1].n, kv);
  EXPECT_DOUBLE_EQ(seq[5].n, f);
  const ModelCosts c = compute_model_costs(m, plan);
  const UnitCost& blk = c.units[1];
  EXPECT_DOUBLE_EQ(blk.recompute_flops.value(), 2.0 * tokens * h * (kv + h + f));
  EXPECT_DOUBLE_EQ(blk.act_saved.value(), tokens * e * (h + h + kv + f + h) + tokens * (h * e + a * 4.0));
  EXPECT_DOUBLE_EQ(blk.recompute_mem.value(), blk.fwd_mem.value());
  // Timed: more than the memory-bound passes, less than the whole forward.
  const core::DeviceSpec h100 = topology::find_cluster_preset("dgx-h100")->device;
  const LayerTimes t = time_layers(m, plan, h100);
  const KernelModel km(h100, core::Dtype::kBf16);
  EXPECT_NEAR(t.block.recompute.value(),
              km.gemm(seq[1]).value() + km.gemm(seq[3]).value() + km.gemm(seq[5]).value() +
                  km.memory(block_traffic(m, plan).elementwise, block_traffic(m, plan).elementwise_kernels).value(),
              1e-12);
  EXPECT_LT(t.block.recompute.value(), t.block.fwd.value());
  EXPECT_TRUE(core::reruns_block_forward(plan.recompute));
  EXPECT_FALSE(core::reruns_block_forward(core::Recompute::kSelective));
}

// What each recomputation policy runs again, one description for the flat-rate costs and the kernel timing: the
// whole forward (full); the unfused attention alone (selective: nothing with FlashAttention); each second matmul,
// the memory-bound work and, without FlashAttention, the attention (op-level).
TEST(KernelModel, EachRecomputationPolicyNamesWhatItRunsAgain) {
  const core::ModelSpec m = *core::find_model_preset("llama3-8b");
  core::PlanSpec plan;
  plan.micro_batch = 1;
  auto again = [&](core::Recompute r, bool flash) {
    plan.recompute = r;
    plan.flash_attention = flash;
    return recomputed_work(m, plan);
  };
  const RecomputedWork none = again(core::Recompute::kNone, true);
  EXPECT_FALSE(none.forward || none.attention || none.elementwise || !none.matmuls.empty());
  EXPECT_TRUE(again(core::Recompute::kFull, true).forward);
  EXPECT_FALSE(again(core::Recompute::kSelective, true).attention);
  const RecomputedWork sel = again(core::Recompute::kSelective, false);
  EXPECT_TRUE(sel.attention && !sel.elementwise && sel.matmuls.empty() && !sel.forward);
  const RecomputedWork op = again(core::Recompute::kSelectiveOp, false);
  const std::vector<GemmShape> seq = block_matmul_sequence(m, plan);
  ASSERT_EQ(op.matmuls.size(), 3u);  // k, o and up of q, k, v, o, gate, up, down
  EXPECT_DOUBLE_EQ(op.matmuls[0].n, seq[1].n);
  EXPECT_DOUBLE_EQ(op.matmuls[2].n, seq[5].n);
  EXPECT_TRUE(op.elementwise && op.attention && !op.forward);
  // The costs count the scores' FLOPs the timing runs as the unfused attention.
  const double matmul_flops = 2.0 * (op.matmuls[0].m * op.matmuls[0].n * op.matmuls[0].k +
                                     op.matmuls[1].m * op.matmuls[1].n * op.matmuls[1].k +
                                     op.matmuls[2].m * op.matmuls[2].n * op.matmuls[2].k);
  EXPECT_NEAR(compute_model_costs(m, plan).units[1].recompute_flops.value(),
              matmul_flops + m.attention_score_flops(8192.0).value(), 1e-6 * matmul_flops);
}

// The loss's cross-entropy: PyTorch's holds an fp32 copy of the logits beside its fp32 log-softmax while the head's
// forward runs; a fused kernel keeps the 16-bit logits only; Megatron's works in place on its fp32 copy.
TEST(KernelModel, TheLossKeepsWhatItsCrossEntropyKeeps) {
  const core::ModelSpec m = *core::find_model_preset("llama3-8b");
  core::PlanSpec plan;
  plan.micro_batch = 1;
  const double logits = 8192.0 * 128256, tokens_h = 8192.0 * 4096;
  auto head = [&](std::optional<core::CrossEntropy> ce) {
    plan.cross_entropy = ce;
    return compute_model_costs(m, plan).units.back();
  };
  const UnitCost torch = head(std::nullopt);  // Hugging Face's model code: PyTorch's cross-entropy
  EXPECT_DOUBLE_EQ(torch.act_saved.value(), 2.0 * tokens_h + logits * 6.0);
  EXPECT_DOUBLE_EQ(torch.fwd_transient.value(), logits * 4.0);
  const UnitCost fused = head(core::CrossEntropy::kFused);
  EXPECT_DOUBLE_EQ(fused.act_saved.value(), 2.0 * tokens_h + logits * 2.0);
  EXPECT_EQ(fused.fwd_transient.value(), 0.0);
  plan.model_code = core::ModelCode::kMegatron;
  const UnitCost megatron = head(std::nullopt);
  EXPECT_DOUBLE_EQ(megatron.act_saved.value(), torch.act_saved.value());
  EXPECT_EQ(megatron.fwd_transient.value(), 0.0);
}

// Float8 linears: the block's GEMMs at the fp8 rate, plus torchao's casts as streaming passes: eager, every
// linear's input, weight and output gradient read for the max-abs and cast, the backward's operands copied into the
// GEMMs' layouts; compiled, each distinct input cast once with the max-abs fused upstream, both layouts written.
TEST(KernelModel, Float8LinearsRunTheirGemmsInFp8AndPayForTheirCasts) {
  core::ModelSpec m = *core::find_model_preset("llama3-8b");
  core::PlanSpec plan;
  plan.micro_batch = 1;
  plan.flash_attention = true;
  EXPECT_EQ(float8_casts(m, plan).forward_bytes, 0.0);
  plan.float8.linear = true;
  const double t = 8192, h = 4096, kv = 1024, f = 14336;
  const double inputs = t * (h + h + h + h + h + h + f);  // q k v o gate up down
  const double outputs = t * (h + kv + kv + h + f + f + h);
  const double weights = h * (h + kv + kv + h + f + f + f);
  const Float8Casts eager = float8_casts(m, plan);
  EXPECT_DOUBLE_EQ(eager.forward_bytes, 5.0 * (inputs + weights));
  EXPECT_EQ(eager.forward_kernels, 7 * 4);
  EXPECT_DOUBLE_EQ(eager.backward_bytes, 5.0 * outputs + 2.0 * (weights + outputs + inputs));
  plan.model_code = core::ModelCode::kFused;
  const Float8Casts compiled = float8_casts(m, plan);
  EXPECT_DOUBLE_EQ(compiled.forward_bytes, 4.0 * t * (h + h + h + f) + 5.0 * weights);  // four distinct inputs
  EXPECT_EQ(compiled.forward_kernels, 4 + 7 * 2);
  EXPECT_DOUBLE_EQ(compiled.backward_bytes, 4.0 * outputs + 2.0 * weights);
  plan.float8.all_gather = true;  // the weights arrive cast
  EXPECT_DOUBLE_EQ(float8_casts(m, plan).forward_bytes, 4.0 * t * (h + h + h + f));
  // Transformer Engine's delayed scaling: one cast-transpose per linear input and weight forward, per output
  // gradient backward, whatever the model code.
  plan.float8.all_gather = false;
  plan.float8.recipe = core::Float8Recipe::kDelayed;
  const Float8Casts te = float8_casts(m, plan);
  EXPECT_DOUBLE_EQ(te.forward_bytes, 4.0 * (inputs + weights));
  EXPECT_EQ(te.forward_kernels, 7 * 2);
  EXPECT_DOUBLE_EQ(te.backward_bytes, 4.0 * outputs);
  EXPECT_EQ(te.backward_kernels, 7);
  plan.float8.recipe = core::Float8Recipe::kTensorwise;
  // The block's GEMMs run at the fp8 rate: on the H100 the float8 block is faster than the bf16 one despite its
  // casts; without an fp8 peak there is nothing to run them on (the scenario refuses such a plan).
  const core::DeviceSpec h100 = topology::find_cluster_preset("dgx-h100")->device;
  core::PlanSpec bf16 = plan;
  bf16.float8 = {};
  const LayerTimes t8 = time_layers(m, plan, h100);
  const LayerTimes t16 = time_layers(m, bf16, h100);
  EXPECT_LT(t8.block.fwd.value(), 0.8 * t16.block.fwd.value());
  EXPECT_LT(t8.block.bwd.value(), 0.8 * t16.block.bwd.value());
  EXPECT_DOUBLE_EQ(t8.head.fwd.value(), t16.head.fwd.value());  // the output layer stays in bf16
}

TEST(KernelModel, CostsCarryTheTimesOnlyWhenADeviceIsGiven) {
  const core::ModelSpec m = *core::find_model_preset("llama2-7b");
  core::PlanSpec p;
  const auto untimed = compute_model_costs(m, p);
  EXPECT_LT(untimed.units[1].fwd_time.value(), 0.0);
  const core::DeviceSpec h100 = topology::find_cluster_preset("dgx-h100")->device;
  const auto timed = compute_model_costs(m, p, &h100);
  EXPECT_GT(timed.units[1].fwd_time.value(), 0.0);
  EXPECT_GT(timed.units[1].bwd_time.value(), timed.units[1].fwd_time.value());
  EXPECT_DOUBLE_EQ(timed.units[1].fwd_flops.value(), untimed.units[1].fwd_flops.value());  // FLOP counts unchanged
}

}  // namespace
}  // namespace shardsim::strategies
