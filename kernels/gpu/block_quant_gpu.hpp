#pragma once
// GPU backend of kernels/block_quant.hpp, behind a plain C++ interface (host vectors in and out, so callers and
// tests need no GPU headers). Same bytes as the CPU reference. Available only in builds with a GPU compiler;
// device_available() says whether a device is present at run time.
#include <cstdint>
#include <vector>

#include "kernels/quant_format.hpp"

namespace shardsim::kernels::gpu {

/** @brief True when a GPU of this build's vendor is present. */
bool device_available();
/** @brief Copies `in` to the device, quantises there, and copies packed values and scales back. */
void quantize_on_device(const std::vector<float>& in, std::size_t block, QuantBits bits,
                        std::vector<std::uint8_t>& packed, std::vector<float>& scales);
/** @brief The inverse, on the device; decodes out.size() values. */
void dequantize_on_device(const std::vector<std::uint8_t>& packed, const std::vector<float>& scales, std::size_t block,
                          QuantBits bits, std::vector<float>& out);

/** @brief Device-resident variants for timing (no host copies, no synchronisation): `in`, `packed`, `scales` and
 *  `out` are device pointers sized as for the host variants. */
void quantize_device_ptrs(const float* in, std::uint64_t n, std::size_t block, QuantBits bits, std::uint8_t* packed,
                          float* scales);
void dequantize_device_ptrs(const std::uint8_t* packed, const float* scales, std::uint64_t n, std::size_t block,
                            QuantBits bits, float* out);

}  // namespace shardsim::kernels::gpu
