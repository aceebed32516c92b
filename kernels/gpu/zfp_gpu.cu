// ZFP fixed-rate on the GPU, one source for CUDA and HIP: a thread codes one block with the CPU backend's own
// code (kernels/zfp_block.hpp) and ORs its bits into the stream with 32-bit atomics (neighbouring blocks may
// share a word); decoding needs no atomics. Grid-stride loops with 64-bit indices.
#include "kernels/gpu/zfp_gpu.hpp"

#include <cmath>

#include "kernels/gpu/gpu_compat.hpp"
#include "kernels/zfp_block.hpp"

namespace shardsim::kernels::gpu {
namespace {

__global__ void zfp_encode(const float* in, std::uint64_t n, unsigned block_bits, unsigned int* words) {
  const std::uint64_t blocks = (n + 3) / 4;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t b = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks; b += stride) {
    const std::uint64_t lo = 4 * b;
    const unsigned have = n - lo < 4 ? static_cast<unsigned>(n - lo) : 4u;
    float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (unsigned i = 0; i < have; ++i) v[i] = in[lo + i];
    zfp::pad_block(v, have);
    zfp::BlockBits bits;
    zfp::encode_block(v, block_bits, bits);
    // Bit `at` of the byte stream (LSB first) is bit at % 32 of little-endian word at / 32.
    const std::uint64_t offset = b * block_bits;
    unsigned int mask = 0;
    std::uint64_t word = offset / 32;
    for (unsigned i = 0; i < bits.size; ++i) {
      const std::uint64_t at = offset + i;
      if (at / 32 != word) {
        if (mask) atomicOr(&words[word], mask);
        mask = 0;
        word = at / 32;
      }
      if (bits.bit(i)) mask |= 1u << (at % 32);
    }
    if (mask) atomicOr(&words[word], mask);
  }
}

__global__ void zfp_decode(const std::uint8_t* stream, std::uint64_t n, unsigned block_bits, float* out) {
  const std::uint64_t blocks = (n + 3) / 4;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t b = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < blocks; b += stride) {
    zfp::BlockBits bits;
    bits.load(stream, b * block_bits, block_bits);
    float v[4];
    zfp::decode_block(bits, block_bits, v);
    const std::uint64_t lo = 4 * b;
    const unsigned have = n - lo < 4 ? static_cast<unsigned>(n - lo) : 4u;
    for (unsigned i = 0; i < have; ++i) out[lo + i] = v[i];
  }
}

std::size_t word_bytes(std::size_t bytes) { return (bytes + 3) / 4 * 4; }

}  // namespace

void zfp_compress_device_ptrs(const float* in, std::uint64_t n, double rate, std::uint8_t* stream) {
  const unsigned block_bits = zfp::bits_per_block(rate);
  const std::size_t bytes = word_bytes(zfp::compressed_bytes(n, rate));
  if (bytes > 0) SHARDSIM_GPU_CHECK(gpuMemset(stream, 0, bytes));
  if (n == 0) return;
  zfp_encode<<<grid_for((n + 3) / 4), kThreads>>>(in, n, block_bits, reinterpret_cast<unsigned int*>(stream));
  SHARDSIM_GPU_CHECK(gpuGetLastError());
}

void zfp_decompress_device_ptrs(const std::uint8_t* stream, std::uint64_t n, double rate, float* out) {
  const unsigned block_bits = zfp::bits_per_block(rate);
  if (n == 0) return;
  zfp_decode<<<grid_for((n + 3) / 4), kThreads>>>(stream, n, block_bits, out);
  SHARDSIM_GPU_CHECK(gpuGetLastError());
}

std::vector<std::uint8_t> zfp_compress_on_device(const std::vector<float>& in, double rate) {
  const std::size_t bytes = zfp::compressed_bytes(in.size(), rate);  // validates the rate
  for (float v : in) {
    if (!std::isfinite(v)) throw KernelError("ZFP cannot represent NaN or infinity");
  }
  std::vector<std::uint8_t> out(bytes, 0);
  if (in.empty()) return out;
  DeviceBuffer<float> d_in(in.size());
  DeviceBuffer<std::uint8_t> d_out(word_bytes(bytes));
  SHARDSIM_GPU_CHECK(gpuMemcpy(d_in.ptr, in.data(), in.size() * sizeof(float), gpuMemcpyHostToDevice));
  zfp_compress_device_ptrs(d_in.ptr, in.size(), rate, d_out.ptr);
  SHARDSIM_GPU_CHECK(gpuMemcpy(out.data(), d_out.ptr, bytes, gpuMemcpyDeviceToHost));
  return out;
}

void zfp_decompress_on_device(const std::vector<std::uint8_t>& stream, double rate, std::vector<float>& out) {
  const std::size_t bytes = zfp::compressed_bytes(out.size(), rate);
  if (stream.size() < bytes) throw KernelError("ZFP stream too short");
  if (out.empty()) return;
  DeviceBuffer<std::uint8_t> d_in(word_bytes(bytes));
  DeviceBuffer<float> d_out(out.size());
  SHARDSIM_GPU_CHECK(gpuMemcpy(d_in.ptr, stream.data(), bytes, gpuMemcpyHostToDevice));
  zfp_decompress_device_ptrs(d_in.ptr, out.size(), rate, d_out.ptr);
  SHARDSIM_GPU_CHECK(gpuMemcpy(out.data(), d_out.ptr, out.size() * sizeof(float), gpuMemcpyDeviceToHost));
}

}  // namespace shardsim::kernels::gpu
