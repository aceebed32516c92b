// Block quantisation on the GPU, one source for CUDA and HIP. The common case (INT8 or an even block, of 512 to
// 8192 values) is one fused pass (quantize_fused). Otherwise two kernels keep INT4 packing race-free for any
// block size: one warp/wavefront per block finds its scale; then one thread per output byte quantises and
// packs with the scales. Grid-stride loops with 64-bit indices.
#include "kernels/gpu/block_quant_gpu.hpp"

#include <cmath>

#include "kernels/gpu/gpu_compat.hpp"

namespace shardsim::kernels::gpu {
namespace {

// Across a warp/wavefront: the largest magnitude, and whether every value was finite (in every lane).
__device__ void warp_reduce(float& amax, int& finite) {
  for (int off = kWarpSize / 2; off > 0; off /= 2) {
    amax = fmaxf(amax, GPU_SHFL_XOR(amax, off));
    finite &= GPU_SHFL_XOR(finite, off);
  }
}

__global__ void block_scales(const float* in, std::uint64_t n, std::uint64_t block, float qmax, float* scales) {
  const std::uint64_t blocks = (n + block - 1) / block;
  const std::uint64_t warps_per_grid = static_cast<std::uint64_t>(gridDim.x) * blockDim.x / kWarpSize;
  const std::uint64_t warp = (static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize;
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
  for (std::uint64_t b = warp; b < blocks; b += warps_per_grid) {
    const std::uint64_t lo = b * block;
    const std::uint64_t hi = lo + block < n ? lo + block : n;
    float amax = 0.0f;
    int finite = 1;
    for (std::uint64_t i = lo + lane; i < hi; i += kWarpSize) {
      const float v = in[i];
      finite &= isfinite(v) ? 1 : 0;
      amax = fmaxf(amax, fabsf(v));
    }
    warp_reduce(amax, finite);
    if (lane == 0) {
      scales[b] = block_scale(amax, finite != 0, qmax);  // the CPU reference's function: the same bits
    }
  }
}

__device__ int quantize_one(float x, float scale, float qmax) {
  if (!(scale > 0.0f)) return 0;  // zero or NaN scale
  const float r = roundf(x / scale);
  return static_cast<int>(fminf(fmaxf(r, -qmax), qmax));
}

__global__ void pack(const float* in, std::uint64_t n, std::uint64_t block, const float* scales, float qmax, int bits,
                     std::uint8_t* out) {
  const std::uint64_t bytes = bits == 8 ? n : (n + 1) / 2;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t j = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < bytes; j += stride) {
    if (bits == 8) {
      out[j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(quantize_one(in[j], scales[j / block], qmax)));
    } else {
      const std::uint64_t i = 2 * j;
      const int lo = quantize_one(in[i], scales[i / block], qmax);
      const int hi = i + 1 < n ? quantize_one(in[i + 1], scales[(i + 1) / block], qmax) : 0;
      out[j] = static_cast<std::uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
    }
  }
}

// One pass over the input: a CTA of kFusedThreads per quantisation block keeps the block's values in registers
// (up to kFusedValues per thread, in adjacent pairs so that INT4 bytes are packed by one thread), reduces the
// block's absmax, computes the scale with the CPU reference's function and writes the packed values. Used when
// every packed byte lies inside one block (INT8, or an even block size) and the block fits in registers; reading
// the input once is what lets quantisation approach the device copy's bandwidth.
constexpr int kFusedThreads = 256;
constexpr int kFusedValues = 32;
constexpr std::uint64_t kFusedMaxBlock = static_cast<std::uint64_t>(kFusedThreads) * kFusedValues;

__global__ void quantize_fused(const float* in, std::uint64_t n, std::uint64_t block, float qmax, int bits,
                               float* scales, std::uint8_t* out) {
  __shared__ float warp_amax[kFusedThreads / kWarpSize];
  __shared__ int warp_finite[kFusedThreads / kWarpSize];
  __shared__ float block_scale_value;
  const std::uint64_t blocks = (n + block - 1) / block;
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
  const int warp = static_cast<int>(threadIdx.x / kWarpSize);
  for (std::uint64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const std::uint64_t lo = b * block;
    const std::uint64_t len = n - lo < block ? n - lo : block;
    float v[kFusedValues];
    float amax = 0.0f;
    int finite = 1;
    for (int j = 0; j < kFusedValues / 2; ++j) {
      const std::uint64_t p = 2 * (threadIdx.x + static_cast<std::uint64_t>(kFusedThreads) * j);
      for (int h = 0; h < 2; ++h) {
        const std::uint64_t idx = p + h;
        const float x = idx < len ? in[lo + idx] : 0.0f;
        v[2 * j + h] = x;
        finite &= isfinite(x) ? 1 : 0;
        amax = fmaxf(amax, fabsf(x));
      }
    }
    warp_reduce(amax, finite);
    if (lane == 0) {
      warp_amax[warp] = amax;
      warp_finite[warp] = finite;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      float m = 0.0f;
      int f = 1;
      for (int w = 0; w < kFusedThreads / kWarpSize; ++w) {
        m = fmaxf(m, warp_amax[w]);
        f &= warp_finite[w];
      }
      block_scale_value = block_scale(m, f != 0, qmax);  // the CPU reference's function: the same bits
      scales[b] = block_scale_value;
    }
    __syncthreads();
    const float scale = block_scale_value;
    for (int j = 0; j < kFusedValues / 2; ++j) {
      const std::uint64_t p = 2 * (threadIdx.x + static_cast<std::uint64_t>(kFusedThreads) * j);
      if (p >= len) break;
      const int q0 = quantize_one(v[2 * j], scale, qmax);
      const int q1 = p + 1 < len ? quantize_one(v[2 * j + 1], scale, qmax) : 0;
      if (bits == 8) {
        out[lo + p] = static_cast<std::uint8_t>(static_cast<std::int8_t>(q0));
        if (p + 1 < len) out[lo + p + 1] = static_cast<std::uint8_t>(static_cast<std::int8_t>(q1));
      } else {
        out[(lo + p) / 2] = static_cast<std::uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
      }
    }
    __syncthreads();  // the shared scale is rewritten for the next block
  }
}

__global__ void unpack(const std::uint8_t* in, std::uint64_t n, std::uint64_t block, const float* scales, int bits,
                       float* out) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int q = 0;
    if (bits == 8) {
      q = static_cast<std::int8_t>(in[i]);
    } else {
      const int nibble = (i % 2 == 0) ? (in[i / 2] & 0x0F) : (in[i / 2] >> 4);
      q = nibble >= 8 ? nibble - 16 : nibble;
    }
    out[i] = static_cast<float>(q) * scales[i / block];
  }
}

}  // namespace

void quantize_device_ptrs(const float* in, std::uint64_t n, std::size_t block, QuantBits bits, std::uint8_t* packed,
                          float* scales) {
  const std::size_t blocks = scale_count(n, block);
  if (n == 0) return;
  const float qmax = bits == QuantBits::kInt8 ? 127.0f : 7.0f;
  if ((bits == QuantBits::kInt8 || block % 2 == 0) && block >= 2 * kFusedThreads && block <= kFusedMaxBlock) {
    const std::uint64_t grid = blocks < 65535 ? blocks : 65535;
    quantize_fused<<<static_cast<unsigned>(grid), kFusedThreads>>>(in, n, block, qmax, static_cast<int>(bits), scales,
                                                                   packed);
    SHARDSIM_GPU_CHECK(gpuGetLastError());
    return;
  }
  block_scales<<<grid_for(blocks * kWarpSize), kThreads>>>(in, n, block, qmax, scales);
  SHARDSIM_GPU_CHECK(gpuGetLastError());
  pack<<<grid_for(packed_bytes(n, bits)), kThreads>>>(in, n, block, scales, qmax, static_cast<int>(bits), packed);
  SHARDSIM_GPU_CHECK(gpuGetLastError());
}

void dequantize_device_ptrs(const std::uint8_t* packed, const float* scales, std::uint64_t n, std::size_t block,
                            QuantBits bits, float* out) {
  (void)scale_count(n, block);  // validates block
  if (n == 0) return;
  unpack<<<grid_for(n), kThreads>>>(packed, n, block, scales, static_cast<int>(bits), out);
  SHARDSIM_GPU_CHECK(gpuGetLastError());
}

bool device_available() {
  int count = 0;
  return gpuGetDeviceCount(&count) == gpuSuccess && count > 0;
}

void quantize_on_device(const std::vector<float>& in, std::size_t block, QuantBits bits,
                        std::vector<std::uint8_t>& packed, std::vector<float>& scales) {
  const std::size_t n = in.size();
  const std::size_t blocks = scale_count(n, block);  // validates block
  packed.assign(packed_bytes(n, bits), 0);
  scales.assign(blocks, 0.0f);
  if (n == 0) return;
  DeviceBuffer<float> d_in(n), d_scales(blocks);
  DeviceBuffer<std::uint8_t> d_out(packed.size());
  SHARDSIM_GPU_CHECK(gpuMemcpy(d_in.ptr, in.data(), n * sizeof(float), gpuMemcpyHostToDevice));
  quantize_device_ptrs(d_in.ptr, n, block, bits, d_out.ptr, d_scales.ptr);
  SHARDSIM_GPU_CHECK(gpuMemcpy(packed.data(), d_out.ptr, packed.size(), gpuMemcpyDeviceToHost));
  SHARDSIM_GPU_CHECK(gpuMemcpy(scales.data(), d_scales.ptr, blocks * sizeof(float), gpuMemcpyDeviceToHost));
}

void dequantize_on_device(const std::vector<std::uint8_t>& packed, const std::vector<float>& scales, std::size_t block,
                          QuantBits bits, std::vector<float>& out) {
  const std::size_t n = out.size();
  if (packed.size() < packed_bytes(n, bits) || scales.size() < scale_count(n, block)) {
    throw KernelError("packed or scale input too small");
  }
  if (n == 0) return;
  DeviceBuffer<std::uint8_t> d_in(packed.size());
  DeviceBuffer<float> d_scales(scales.size()), d_out(n);
  SHARDSIM_GPU_CHECK(gpuMemcpy(d_in.ptr, packed.data(), packed.size(), gpuMemcpyHostToDevice));
  SHARDSIM_GPU_CHECK(gpuMemcpy(d_scales.ptr, scales.data(), scales.size() * sizeof(float), gpuMemcpyHostToDevice));
  dequantize_device_ptrs(d_in.ptr, d_scales.ptr, n, block, bits, d_out.ptr);
  SHARDSIM_GPU_CHECK(gpuMemcpy(out.data(), d_out.ptr, n * sizeof(float), gpuMemcpyDeviceToHost));
}

}  // namespace shardsim::kernels::gpu
