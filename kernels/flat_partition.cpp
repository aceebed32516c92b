#include "kernels/flat_partition.hpp"

#include <algorithm>

#include "kernels/kernel_error.hpp"

namespace shardsim::kernels {
namespace {

// Every tensor span must have the size the layout was built for: a longer one would overrun its neighbour's
// place in the flat buffer, a shorter one would leave stale elements.
void require_sizes(const FlatLayout& layout, std::size_t count, auto size_of) {
  if (count != layout.offsets.size()) throw KernelError("tensor count does not match the layout");
  for (std::size_t t = 0; t < count; ++t) {
    const std::size_t end = t + 1 < count ? layout.offsets[t + 1] : layout.total;
    if (size_of(t) != end - layout.offsets[t]) throw KernelError("a tensor's size does not match the layout");
  }
}

}  // namespace

void flatten_shard(std::span<const std::span<const float>> tensors, const FlatLayout& layout, std::size_t rank,
                   std::span<float> shard) {
  if (rank >= layout.world) throw KernelError("rank outside the world");
  require_sizes(layout, tensors.size(), [&](std::size_t t) { return tensors[t].size(); });
  if (shard.size() < layout.shard) throw KernelError("shard output too small");
  const std::size_t lo = rank * layout.shard;
  const std::size_t hi = lo + layout.shard;
  std::fill(shard.begin(), shard.begin() + static_cast<std::ptrdiff_t>(layout.shard), 0.0F);
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    const std::size_t a = std::max(lo, layout.offsets[t]);
    const std::size_t b = std::min(hi, layout.offsets[t] + tensors[t].size());
    for (std::size_t i = a; i < b; ++i) shard[i - lo] = tensors[t][i - layout.offsets[t]];
  }
}

void gather_shards(std::span<const std::span<const float>> shards, const FlatLayout& layout,
                   std::span<const std::span<float>> tensors) {
  if (shards.size() != layout.world) throw KernelError("one shard per rank is needed");
  require_sizes(layout, tensors.size(), [&](std::size_t t) { return tensors[t].size(); });
  for (const auto& s : shards) {
    if (s.size() < layout.shard) throw KernelError("shard input too small");
  }
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    for (std::size_t i = 0; i < tensors[t].size(); ++i) {
      const std::size_t flat = layout.offsets[t] + i;
      tensors[t][i] = shards[flat / layout.shard][flat % layout.shard];
    }
  }
}

void secondary_shard(std::span<const std::span<const float>> shards, const FlatLayout& layout, std::size_t group,
                     std::size_t local_rank, std::span<float> out) {
  if (group == 0 || layout.world % group != 0) throw KernelError("the secondary group must divide the world");
  if (local_rank >= group) throw KernelError("local rank outside the group");
  if (shards.size() != layout.world) throw KernelError("one shard per rank is needed");
  for (const auto& s : shards) {
    if (s.size() < layout.shard) throw KernelError("shard input too small");
  }
  const std::size_t size = layout.padded / group;
  if (out.size() < size) throw KernelError("secondary output too small");
  const std::size_t lo = local_rank * size;
  for (std::size_t i = 0; i < size; ++i) {
    const std::size_t flat = lo + i;
    out[i] = shards[flat / layout.shard][flat % layout.shard];
  }
}

}  // namespace shardsim::kernels
