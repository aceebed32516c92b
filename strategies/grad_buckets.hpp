#pragma once
// Gradient buckets as DeepSpeed, PyTorch DDP and Megatron-LM fill them: the backward hands each parameter tensor's
// gradient over as autograd produces it, and a bucket is closed at a tensor's edge by the framework's rule
// (BucketRule); a closed bucket is handed to `emit`, which lowers its reduction and returns the task whose end
// frees the bucket. A unit's tensors all become ready when its backward task ends (the task graph runs a unit's
// backward as one task), so the buckets closed inside one unit all wait for that task. With double buffering
// (overlap_comm) a third bucket cannot start filling before the first has drained, so backward stalls when the
// network falls behind.
#include <cstdint>
#include <span>
#include <vector>

#include "sim/graph/task_graph.hpp"

namespace shardsim::strategies {

/// What a bucket holds: its gradients' bytes, the parameter tensors they belong to, and of the bytes those in
/// tensors large enough that the host stages each in fresh memory (core::kMallocMmapThresholdMaxBytes).
struct BucketFill {
  double bytes = 0.0;
  int tensors = 0;
  double fresh_bytes = 0.0;
  /// of the tensors, those DeepSpeed's qgZ reduces one by one with a plain reduce-scatter instead of its quantised
  /// all-to-alls (a vector, or a matrix whose size does not divide by twice the world), and their bytes
  int unquantised = 0;
  double unquantised_bytes = 0.0;
  BucketFill& operator+=(const BucketFill& o) {
    bytes += o.bytes;
    tensors += o.tensors;
    fresh_bytes += o.fresh_bytes;
    unquantised += o.unquantised;
    unquantised_bytes += o.unquantised_bytes;
    return *this;
  }
};

/// Where a framework closes a bucket of `size` bytes, one parameter tensor at a time.
enum class BucketRule : std::uint8_t {
  /// Add the tensor, then reduce the bucket once it holds `size` or more: PyTorch DDP (a tensor larger than the
  /// cap closes the bucket it lands in; torch/csrc/distributed/c10d/reducer.cpp compute_bucket_assignment_by_size)
  /// and Megatron-LM's buffer (core_v0.9.0 megatron/core/distributed/param_and_grad_buffer.py: a new bucket once
  /// the current one reaches bucket_size).
  kCloseWhenFull,
  /// Reduce the bucket before a tensor that would take it past `size` (DeepSpeed's ZeRO optimizers:
  /// deepspeed@v0.14.0 runtime/zero/stage_1_and_2.py:926 and @v0.14.4 runtime/zero/stage3.py:1221,
  /// reduce_independent_p_g_buckets_and_remove_grads): a tensor larger than the bucket goes alone, and the small
  /// tensors between two large ones (a bias, a norm) go in a bucket of their own.
  kReduceBeforeOverflow,
};

template <class Emit>  // graph::TaskId emit(const BucketFill& fill, graph::TaskId producer, int unit, int micro)
class GradBuckets {
 public:
  /// `bucket_bytes` 0: one reduction per unit (FSDP's per wrapped block); infinite: one at the end.
  GradBuckets(double bucket_bytes, BucketRule rule, bool double_buffered, Emit emit)
      : bucket_(bucket_bytes), rule_(rule), double_buffered_(double_buffered), emit_(std::move(emit)) {}

  /** @brief The reduction the next gradient producer must wait for before it may start a new bucket. */
  [[nodiscard]] bool must_wait(graph::TaskId& on) const {
    if (fill_.bytes > 0.0) return false;
    const std::size_t lag = double_buffered_ ? 2 : 1;
    if (done_.size() < lag) return false;
    on = done_[done_.size() - lag];
    return true;
  }

  /** @brief Adds the gradients of one unit's parameter `tensors` (in the order the backward produces them), all
   *  ready when `producer` ends; reduces the buckets the rule closes, and the last one when `flush`. */
  void add(graph::TaskId producer, std::span<const BucketFill> tensors, int unit, int micro, bool flush) {
    producer_ = producer;
    flushed_ = false;
    const bool by_tensor = bucket_ > 0.0;
    for (const BucketFill& t : tensors) {
      if (by_tensor && rule_ == BucketRule::kReduceBeforeOverflow && fill_.bytes > 0.0 &&
          fill_.bytes + t.bytes > bucket_) {
        close(unit, micro);
      }
      fill_ += t;
      if (by_tensor && rule_ == BucketRule::kCloseWhenFull && fill_.bytes >= bucket_) close(unit, micro);
    }
    if ((!by_tensor || flush) && fill_.tensors > 0) {
      flushed_ = flush && by_tensor;
      close(unit, micro);
    }
  }

  /** @brief Whether the last add() ended by reducing a partial bucket because the pass was over (`flush`): the
   *  reduction DeepSpeed's ZeRO optimizers issue in their epilogue, after the backward pass. */
  [[nodiscard]] bool flushed() const { return flushed_; }

  /** @brief The last task of every reduction emitted so far, in order. */
  [[nodiscard]] const std::vector<graph::TaskId>& reductions() const { return done_; }

 private:
  void close(int unit, int micro) {
    done_.push_back(emit_(fill_, producer_, unit, micro));
    fill_ = BucketFill{};
  }

  double bucket_;
  BucketRule rule_;
  bool double_buffered_;
  Emit emit_;
  BucketFill fill_;
  graph::TaskId producer_ = 0;
  bool flushed_ = false;
  std::vector<graph::TaskId> done_;
};

}  // namespace shardsim::strategies
