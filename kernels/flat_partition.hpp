#pragma once
// ZeRO's flat partitioning (the data side of what strategies/ costs): a list of tensors is laid end to end in
// one buffer, padded so that it splits into `world` equal shards of a multiple of `alignment` elements; rank r
// owns shard r. gather_shards is the receive side of the parameter all-gather; secondary_shard builds ZeRO++'s
// hpZ copy, the gathered buffer re-split over a group of `group` ranks (one node). CPU reference backend.
#include <cstddef>
#include <span>
#include <vector>

#include "kernels/flat_layout.hpp"

namespace shardsim::kernels {

/** @brief Rank `rank`'s shard of the flattened tensors (padding as zeros). Each tensor span must have the size
 *  the layout was built for, and `shard` at least layout.shard elements; otherwise KernelError. */
void flatten_shard(std::span<const std::span<const float>> tensors, const FlatLayout& layout, std::size_t rank,
                   std::span<float> shard);

/** @brief Reassembles the tensors (sized as for flatten_shard) from all `world` shards (shard r from rank r). */
void gather_shards(std::span<const std::span<const float>> shards, const FlatLayout& layout,
                   std::span<const std::span<float>> tensors);

/** @brief The hpZ secondary shard of `local_rank` in a group of `group` ranks, cut from the gathered flat
 *  buffer rebuilt from the primary `shards`; `out` holds layout.padded / group elements. Throws KernelError
 *  unless group divides the world. */
void secondary_shard(std::span<const std::span<const float>> shards, const FlatLayout& layout, std::size_t group,
                     std::size_t local_rank, std::span<float> out);

}  // namespace shardsim::kernels
