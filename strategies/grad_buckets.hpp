#pragma once
// Gradient buckets as DeepSpeed and PyTorch DDP fill them: backward appends each unit's gradients; a full
// bucket (or the last unit) is handed to `emit`, which lowers its reduction and returns the task whose end
// frees the bucket. With double buffering (overlap_comm) a third bucket cannot start filling before the
// first has drained, so backward stalls when the network falls behind.
#include <vector>

#include "sim/graph/task_graph.hpp"

namespace shardsim::strategies {

/// What a bucket holds: its gradients' bytes, the parameter tensors they belong to, and of the bytes those in
/// tensors large enough that the host stages each in fresh memory (core::kMallocMmapThresholdMaxBytes).
struct BucketFill {
  double bytes = 0.0;
  int tensors = 0;
  double fresh_bytes = 0.0;
  BucketFill& operator+=(const BucketFill& o) {
    bytes += o.bytes;
    tensors += o.tensors;
    fresh_bytes += o.fresh_bytes;
    return *this;
  }
};

template <class Emit>  // graph::TaskId emit(const BucketFill& fill, graph::TaskId producer, int unit, int micro)
class GradBuckets {
 public:
  GradBuckets(double bucket_bytes, bool double_buffered, Emit emit)
      : bucket_(bucket_bytes), double_buffered_(double_buffered), emit_(std::move(emit)) {}

  /** @brief The reduction the next gradient producer must wait for before it may start a new bucket. */
  [[nodiscard]] bool must_wait(graph::TaskId& on) const {
    if (fill_.bytes > 0.0) return false;
    const std::size_t lag = double_buffered_ ? 2 : 1;
    if (done_.size() < lag) return false;
    on = done_[done_.size() - lag];
    return true;
  }

  /** @brief Adds the gradients `fill` produced by `producer`; emits when full or when `flush`. */
  void add(graph::TaskId producer, const BucketFill& fill, int unit, int micro, bool flush) {
    fill_ += fill;
    producer_ = producer;
    if (fill_.bytes >= bucket_ || flush) {
      done_.push_back(emit_(fill_, producer_, unit, micro));
      fill_ = BucketFill{};
    }
  }

  /** @brief The last task of every reduction emitted so far, in order. */
  [[nodiscard]] const std::vector<graph::TaskId>& reductions() const { return done_; }

 private:
  double bucket_;
  bool double_buffered_;
  Emit emit_;
  BucketFill fill_;
  graph::TaskId producer_ = 0;
  std::vector<graph::TaskId> done_;
};

}  // namespace shardsim::strategies
