#pragma once
// GPU backend of kernels/zfp_codec.hpp: one thread per block of 4 values running the shared block codec
// (kernels/zfp_block.hpp), each block ORed into its fixed place in the stream. Same stream, bit for bit, as the
// CPU backend (and so as libzfp's fixed-rate stream). Plain C++17 interface.
#include <cstdint>
#include <vector>

namespace shardsim::kernels::gpu {

/** @brief Compresses `in` at `rate` bits per value on the device. Throws KernelError for NaN or infinity or a
 *  rate outside (0, 32]. */
std::vector<std::uint8_t> zfp_compress_on_device(const std::vector<float>& in, double rate);
/** @brief Decompresses out.size() values on the device. Throws KernelError for a stream that is too short. */
void zfp_decompress_on_device(const std::vector<std::uint8_t>& stream, double rate, std::vector<float>& out);

/** @brief Device-resident variants for timing (no host copies): `in`, `stream` and `out` are device pointers;
 *  `stream` must hold compressed_bytes rounded up to 4 bytes. Asynchronous on the default stream. */
void zfp_compress_device_ptrs(const float* in, std::uint64_t n, double rate, std::uint8_t* stream);
void zfp_decompress_device_ptrs(const std::uint8_t* stream, std::uint64_t n, double rate, float* out);

}  // namespace shardsim::kernels::gpu
