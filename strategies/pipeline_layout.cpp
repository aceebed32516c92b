#include "strategies/pipeline_layout.hpp"

#include <algorithm>

#include "sim/core/errors.hpp"

namespace shardsim::strategies {

PipelineLayout::PipelineLayout(int units, const core::PlanSpec& plan)
    : stages_(plan.pp), virtual_(plan.virtual_stages), micros_(plan.grad_accumulation()) {
  const int blocks = units - 2;
  const int n = stages_ * virtual_;
  SHARDSIM_ASSERT(blocks >= n && (virtual_ == 1 || blocks % n == 0), "blocks do not split over the pipeline chunks");
  // DeepSpeed's uniform partition (runtime/utils.py partition_uniform): every chunk gets blocks / n, the first
  // blocks % n one more (BLOOM's 70 layers on 12 stages: 6 on ten stages, 5 on the last two).
  const int per = blocks / n;
  const int extra = blocks % n;
  units_.resize(static_cast<std::size_t>(n));
  int next = 1;
  for (int c = 0; c < n; ++c) {
    auto& u = units_[static_cast<std::size_t>(c)];
    if (c == 0) u.push_back(0);  // embedding
    for (int b = 0; b < per + (c < extra ? 1 : 0); ++b) u.push_back(next++);
    if (c == n - 1) u.push_back(units - 1);  // head
  }
}

std::vector<int> PipelineLayout::stage_units(int stage) const {
  std::vector<int> out;
  for (int c = stage; c < chunks(); c += stages_) {
    const auto& u = units(c);
    out.insert(out.end(), u.begin(), u.end());
  }
  return out;
}

std::vector<PipelineOp> PipelineLayout::schedule(int stage) const {
  const int p = stages_;
  const int v = virtual_;
  const int m = micros_;
  std::vector<PipelineOp> ops;
  if (v == 1) {
    // 1F1B: p - s - 1 warm-up forwards, then alternate, then drain the backwards.
    const int warm = std::min(p - stage - 1, m);
    int f = 0;
    int b = 0;
    for (; f < warm; ++f) ops.push_back({true, stage, f});
    while (f < m) {
      ops.push_back({true, stage, f++});
      ops.push_back({false, stage, b++});
    }
    while (b < m) ops.push_back({false, stage, b++});
    return ops;
  }
  // Interleaved 1F1B (Megatron-LM): forward k runs local chunk (k / p) % v of micro-batch
  // (k / (p v)) p + k % p; backward k runs the chunks in reverse.
  const int total = m * v;
  auto forward_of = [&](int k) {
    const int local = (k / p) % v;
    return PipelineOp{true, local * p + stage, (k / (p * v)) * p + k % p};
  };
  auto backward_of = [&](int k) {
    const int local = v - 1 - (k / p) % v;
    return PipelineOp{false, local * p + stage, (k / (p * v)) * p + k % p};
  };
  const int warm = std::min(total, (p - stage - 1) * 2 + (v - 1) * p);
  int f = 0;
  int b = 0;
  for (; f < warm; ++f) ops.push_back(forward_of(f));
  while (f < total) {
    ops.push_back(forward_of(f++));
    ops.push_back(backward_of(b++));
  }
  while (b < total) ops.push_back(backward_of(b++));
  return ops;
}

int PipelineLayout::max_in_flight(int stage) const {
  int live = 0;
  int most = 0;
  for (const auto& op : schedule(stage)) {
    live += op.forward ? 1 : -1;
    most = std::max(most, live);
  }
  return most;
}

}  // namespace shardsim::strategies
