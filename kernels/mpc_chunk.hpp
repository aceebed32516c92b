#pragma once
// The MPC chunk transform shared by the CPU and GPU backends (plain C++17, host and device): sign folding of
// deltas and the 32 x 32 bit transposition of a chunk. See mpc_codec.hpp for the format.
#include <cstdint>

#include "kernels/quant_format.hpp"  // SHARDSIM_HOST_DEVICE

namespace shardsim::kernels::mpc {

inline constexpr unsigned kChunk = 32;

// Sign folding: 0, -1, 1, -2, ... -> 0, 1, 2, 3, ... so that small deltas of either sign start with zeros.
SHARDSIM_HOST_DEVICE inline std::uint32_t fold(std::uint32_t d) { return (d << 1) ^ (0u - (d >> 31)); }
SHARDSIM_HOST_DEVICE inline std::uint32_t unfold(std::uint32_t f) { return (f >> 1) ^ (0u - (f & 1u)); }

/** @brief Transposes a 32 x 32 bit matrix in place: afterwards bit i of word j is bit j of word i before (its
 *  own inverse). */
SHARDSIM_HOST_DEVICE inline void transpose(std::uint32_t m[kChunk]) {
  std::uint32_t t[kChunk];
  for (unsigned j = 0; j < kChunk; ++j) t[j] = 0;
  for (unsigned i = 0; i < kChunk; ++i) {
    for (unsigned j = 0; j < kChunk; ++j) t[j] |= ((m[i] >> j) & 1u) << i;
  }
  for (unsigned j = 0; j < kChunk; ++j) m[j] = t[j];
}

/** @brief Bitmap of a transposed chunk's nonzero words (bit j set when word j is nonzero). */
SHARDSIM_HOST_DEVICE inline std::uint32_t nonzero_bitmap(const std::uint32_t m[kChunk]) {
  std::uint32_t bitmap = 0;
  for (unsigned j = 0; j < kChunk; ++j) bitmap |= (m[j] != 0 ? 1u : 0u) << j;
  return bitmap;
}

}  // namespace shardsim::kernels::mpc
