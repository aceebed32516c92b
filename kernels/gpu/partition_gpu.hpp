#pragma once
// GPU backend of kernels/flat_partition.hpp (plain C++17 interface, host vectors in and out). The layout is
// passed as the tensors' sizes plus world and alignment, and built by the CPU backend's flat_layout
// (kernels/flat_layout.hpp). Same values as the CPU reference.
#include <cstddef>
#include <vector>

namespace shardsim::kernels::gpu {

/** @brief Rank `rank`'s shard of the tensors laid end to end and padded to world x alignment (padding zero):
 *  each tensor is its own device allocation, as parameters are; one thread per shard element finds its tensor. */
std::vector<float> flatten_shard_on_device(const std::vector<std::vector<float>>& tensors, std::size_t world,
                                           std::size_t alignment, std::size_t rank);
/** @brief The all-gather receive side: `gathered` holds every rank's shard back to back (world x shard
 *  elements); returns the tensors of `sizes` scattered back into their own allocations. */
std::vector<std::vector<float>> gather_shards_on_device(const std::vector<float>& gathered,
                                                        const std::vector<std::size_t>& sizes, std::size_t world,
                                                        std::size_t alignment);
/** @brief ZeRO++ hpZ: `local_rank`'s secondary shard (padded / group elements) of the gathered flat buffer. */
std::vector<float> secondary_shard_on_device(const std::vector<float>& gathered, const std::vector<std::size_t>& sizes,
                                             std::size_t world, std::size_t alignment, std::size_t group,
                                             std::size_t local_rank);

}  // namespace shardsim::kernels::gpu
