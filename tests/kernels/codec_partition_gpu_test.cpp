// GPU-vs-CPU parity of the ZFP and MPC codecs and the flat-partition kernels: the device must produce the CPU reference's
// streams (and so libzfp's, which the CPU backend is tested against) and values. Skips when no GPU is present.
#include "kernels/gpu/block_quant_gpu.hpp"
#include "kernels/gpu/mpc_gpu.hpp"
#include "kernels/gpu/partition_gpu.hpp"
#include "kernels/gpu/zfp_gpu.hpp"

#include "kernels/flat_partition.hpp"
#include "kernels/kernel_error.hpp"
#include "kernels/mpc_codec.hpp"
#include "kernels/zfp_codec.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace shardsim::kernels {
namespace {

TEST(ZfpGpu, SameStreamAndValuesAsTheCpuReference) {
  if (!gpu::device_available()) GTEST_SKIP() << "no GPU device";
  std::mt19937 rng(11);
  std::normal_distribution<float> d(0.0F, 2.0F);
  for (double rate : {1.0, 2.5, 4.0, 8.0, 16.0, 32.0}) {
    for (std::size_t n : {0u, 1u, 3u, 4u, 5u, 1000u, 4099u, (1u << 20) + 1}) {
      std::vector<float> x(n);
      for (auto& v : x) v = d(rng);
      if (n > 16) {
        x[4] = x[5] = x[6] = x[7] = 0.0F;                   // an all-zero block
        x[9] = std::numeric_limits<float>::denorm_min();  // a subnormal
        x[13] = -std::numeric_limits<float>::max();
      }
      const auto cpu = zfp_compress(x, rate);
      const auto gpu_stream = gpu::zfp_compress_on_device(x, rate);
      ASSERT_EQ(gpu_stream, cpu) << "rate " << rate << " n " << n;
      std::vector<float> cpu_out(n), gpu_out(n);
      zfp_decompress(cpu, rate, cpu_out);
      gpu::zfp_decompress_on_device(cpu, rate, gpu_out);
      EXPECT_EQ(gpu_out, cpu_out) << "rate " << rate << " n " << n;
    }
  }
}

TEST(ZfpGpu, RefusesWhatTheCpuRefuses) {
  if (!gpu::device_available()) GTEST_SKIP() << "no GPU device";
  EXPECT_THROW(gpu::zfp_compress_on_device({1.0F, NAN}, 8.0), KernelError);
  EXPECT_THROW(gpu::zfp_compress_on_device({1.0F}, 0.0), KernelError);
  std::vector<float> out(100);
  EXPECT_THROW(gpu::zfp_decompress_on_device(std::vector<std::uint8_t>(3), 8.0, out), KernelError);
}

TEST(PartitionGpu, SameShardsAsTheCpuReference) {
  if (!gpu::device_available()) GTEST_SKIP() << "no GPU device";
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> d(-1.0F, 1.0F);
  const std::vector<std::size_t> sizes = {7, 0, 4096, 1, 100003, 33};
  std::vector<std::vector<float>> tensors;
  for (std::size_t s : sizes) {
    tensors.emplace_back(s);
    for (auto& v : tensors.back()) v = d(rng);
  }
  for (std::size_t world : {1u, 3u, 8u, 16u}) {
    for (std::size_t alignment : {1u, 64u}) {
      const FlatLayout layout = flat_layout(sizes, world, alignment);
      std::vector<std::span<const float>> views(tensors.begin(), tensors.end());
      std::vector<float> gathered;
      for (std::size_t r = 0; r < world; ++r) {
        std::vector<float> cpu(layout.shard);
        flatten_shard(views, layout, r, cpu);
        EXPECT_EQ(gpu::flatten_shard_on_device(tensors, world, alignment, r), cpu) << world << " " << r;
        gathered.insert(gathered.end(), cpu.begin(), cpu.end());
      }
      EXPECT_EQ(gpu::gather_shards_on_device(gathered, sizes, world, alignment), tensors);
      for (std::size_t group : {std::size_t{1}, world}) {
        std::vector<std::span<const float>> shards;
        for (std::size_t r = 0; r < world; ++r) shards.emplace_back(gathered.data() + r * layout.shard, layout.shard);
        std::vector<float> cpu(layout.padded / group);
        secondary_shard(shards, layout, group, group - 1, cpu);
        EXPECT_EQ(gpu::secondary_shard_on_device(gathered, sizes, world, alignment, group, group - 1), cpu);
      }
    }
  }
}

TEST(MpcGpu, SameStreamAndValuesAsTheCpuReference) {
  if (!gpu::device_available()) GTEST_SKIP() << "no GPU device";
  std::mt19937 rng(17);
  std::uniform_int_distribution<std::uint32_t> bits;
  std::normal_distribution<float> d(0.0F, 1.0F);
  for (std::size_t stride : {1u, 2u, 3u, 7u}) {
    for (std::size_t n : {0u, 1u, 31u, 32u, 33u, 1000u, 100003u, (1u << 22) + 5}) {
      for (int kind = 0; kind < 2; ++kind) {  // smooth data, then any bit pattern (NaN payloads included)
        std::vector<float> x(n);
        for (std::size_t i = 0; i < n; ++i) {
          if (kind == 0) {
            x[i] = std::sin(0.01F * static_cast<float>(i)) + 0.001F * d(rng);
          } else {
            const std::uint32_t u = bits(rng);
            std::memcpy(&x[i], &u, sizeof u);
          }
        }
        const auto cpu = mpc_compress(x, stride);
        const auto gpu_stream = gpu::mpc_compress_on_device(x, stride);
        ASSERT_EQ(gpu_stream, cpu) << "stride " << stride << " n " << n << " kind " << kind;
        std::vector<float> back(n);
        gpu::mpc_decompress_on_device(cpu, stride, back);
        EXPECT_EQ(std::memcmp(back.data(), x.data(), n * sizeof(float)), 0) << "stride " << stride << " n " << n;
      }
    }
  }
}

TEST(MpcGpu, RefusesWhatTheCpuRefuses) {
  if (!gpu::device_available()) GTEST_SKIP() << "no GPU device";
  std::vector<float> out(100);
  EXPECT_THROW(gpu::mpc_decompress_on_device({}, 1, out), KernelError);
  EXPECT_THROW(gpu::mpc_decompress_on_device({0xffffffffu, 1u}, 1, out), KernelError);
  EXPECT_THROW(gpu::mpc_compress_on_device({1.0F}, 0), KernelError);
  // Streams cut short, across several of the GPU's walking segments: refused by both backends.
  std::vector<float> x((1u << 21) + 7);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.01F * static_cast<float>(i)) * static_cast<float>(i % 97);
  const auto stream = mpc_compress(x);
  std::vector<float> back(x.size());
  for (std::size_t keep : {stream.size() - 1, stream.size() / 2, std::size_t{1}}) {
    const std::vector<std::uint32_t> cut(stream.begin(), stream.begin() + static_cast<std::ptrdiff_t>(keep));
    EXPECT_THROW(mpc_decompress(cut, 1, back), KernelError) << keep;
    EXPECT_THROW(gpu::mpc_decompress_on_device(cut, 1, back), KernelError) << keep;
  }
  gpu::mpc_decompress_on_device(stream, 1, back);
  EXPECT_EQ(std::memcmp(back.data(), x.data(), x.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace shardsim::kernels
