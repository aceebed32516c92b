#pragma once
// The flat-partition layout, shared by the CPU and GPU backends (plain C++17): a list of tensors laid end to
// end in one buffer, padded so that it splits into `world` equal shards of a multiple of `alignment` elements.
#include <cstddef>
#include <vector>

#include "kernels/kernel_error.hpp"

namespace shardsim::kernels {

/** @brief Where each tensor sits in the flat buffer and how the buffer is cut; built by flat_layout. */
struct FlatLayout {
  std::vector<std::size_t> offsets;  ///< start of each tensor in the flat buffer
  std::size_t total = 0;             ///< elements of all tensors
  std::size_t padded = 0;            ///< flat buffer size, a multiple of world x alignment
  std::size_t shard = 0;             ///< padded / world
  std::size_t world = 0;
};

/** @brief Layout for tensors of `sizes` elements over `world` ranks. Throws KernelError for world or
 *  alignment 0. */
inline FlatLayout flat_layout(const std::vector<std::size_t>& sizes, std::size_t world, std::size_t alignment) {
  if (world == 0) throw KernelError("world size must be positive");
  if (alignment == 0) throw KernelError("alignment must be positive");
  FlatLayout l;
  l.world = world;
  for (std::size_t s : sizes) {
    l.offsets.push_back(l.total);
    l.total += s;
  }
  const std::size_t unit = world * alignment;
  l.padded = (l.total + unit - 1) / unit * unit;
  l.shard = l.padded / world;
  return l;
}

}  // namespace shardsim::kernels
