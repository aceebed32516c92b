// GPU-vs-CPU parity of block quantisation: the device must produce the CPU reference's bytes. Skips when no GPU
// is present.
#include "kernels/gpu/block_quant_gpu.hpp"

#include "kernels/block_quant.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <random>

namespace shardsim::kernels {
namespace {

TEST(BlockQuantGpu, SameBytesAsTheCpuReference) {
  if (!gpu::device_available()) GTEST_SKIP() << "no GPU device";
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0F, 3.0F);
  for (QuantBits bits : {QuantBits::kInt8, QuantBits::kInt4}) {
    for (std::size_t block : {1u, 4u, 63u, 600u, 1024u, 2048u, 4100u, 8192u, 8194u}) {
      for (std::size_t n : {0u, 1u, 2u, 6u, 1000u, 8192u * 5 + 3}) {
        std::vector<float> x(n);
        for (auto& v : x) v = d(rng);
        if (n > 10) {
          x[5] = 0.0F;
          x[7] = std::numeric_limits<float>::denorm_min();
        }
        std::vector<std::uint8_t> cpu_packed(packed_bytes(n, bits));
        std::vector<float> cpu_scales(scale_count(n, block));
        quantize(x, block, bits, cpu_packed, cpu_scales);
        std::vector<std::uint8_t> gpu_packed;
        std::vector<float> gpu_scales;
        gpu::quantize_on_device(x, block, bits, gpu_packed, gpu_scales);
        EXPECT_EQ(gpu_packed, cpu_packed) << "bits " << static_cast<int>(bits) << " block " << block << " n " << n;
        EXPECT_EQ(gpu_scales, cpu_scales);
        std::vector<float> cpu_out(n), gpu_out(n);
        dequantize(cpu_packed, cpu_scales, block, bits, cpu_out);
        gpu::dequantize_on_device(cpu_packed, cpu_scales, block, bits, gpu_out);
        EXPECT_EQ(gpu_out, cpu_out);
      }
    }
  }
}

}  // namespace
}  // namespace shardsim::kernels
