#pragma once
// GPU backend of kernels/mpc_codec.hpp (plain C++17 interface): the same stream and values as the CPU reference.
// Compression: a thread per 32-value chunk (delta, fold, transpose, bitmap), a scan of the chunks' sizes, then
// each chunk writes its bitmap and nonzero words at its offset. Decompression: the chunk offsets from the
// bitmaps (one pass), a thread per chunk restores the deltas, and a scan per stride class adds them up (wrapping
// 32-bit addition, as the CPU's running sum does).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardsim::kernels::gpu {

/** @brief Compresses `in` on the device. Throws KernelError for stride 0. */
std::vector<std::uint32_t> mpc_compress_on_device(const std::vector<float>& in, std::size_t stride = 1);
/** @brief Restores out.size() values on the device. Throws KernelError for a truncated stream or stride 0. */
void mpc_decompress_on_device(const std::vector<std::uint32_t>& stream, std::size_t stride, std::vector<float>& out);

/** @brief Device-resident variants for timing (no host copies; no synchronisation, except the first call at a
 *  larger size, which grows the scans' internal scratch). Scratch: `words` holds mpc_words_scratch(n) values,
 *  `ends` and `starts` one value per 32-value chunk, `deltas` mpc_deltas_scratch(n, stride); `out` of compression
 *  holds mpc_words_scratch(n) values (the stream's length stays on the device, in ends[chunks - 1]).
 *  Decompression sets *bad to 1 for a stream that ends early and never clears it: the caller zeroes it first.
 *  One caller at a time (the internal scratch is shared). */
std::uint64_t mpc_words_scratch(std::uint64_t n);
std::uint64_t mpc_deltas_scratch(std::uint64_t n, std::size_t stride);
void mpc_compress_device_ptrs(const float* in, std::uint64_t n, std::size_t stride, std::uint32_t* words,
                              std::uint64_t* ends, std::uint32_t* out);
void mpc_decompress_device_ptrs(const std::uint32_t* stream, std::uint64_t size, std::uint64_t n, std::size_t stride,
                                std::uint64_t* starts, std::uint32_t* deltas, int* bad, float* out);

}  // namespace shardsim::kernels::gpu
