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
// (up to kFusedValues per thread, in groups of 4 adjacent values read as one 16-byte load and written as one
// 4-byte INT8 or 2-byte INT4 store, so that a warp's accesses are contiguous), reduces the block's absmax,
// computes the scale with the CPU reference's function and writes the packed values. Used when the block size is
// a multiple of 4 and the buffers are aligned for those accesses, and the block fits in registers; reading the
// input once, in wide accesses, is what lets quantisation approach the device copy's bandwidth.
// 512 threads of 16 values each (an 8192-value block per CTA), held to 64 registers so that two CTAs share an
// SM: with 32 values per thread the kernel took 146 registers, one CTA per SM, and reached 29% of the DRAM
// bandwidth (Nsight Compute on an H100). Offsets inside a block are 32-bit.
constexpr int kFusedThreads = 512;
constexpr int kFusedValues = 16;
constexpr int kFusedGroups = kFusedValues / 4;
constexpr std::uint64_t kFusedMaxBlock = static_cast<std::uint64_t>(kFusedThreads) * kFusedValues;

__global__ void __launch_bounds__(kFusedThreads, 2)
    quantize_fused(const float* in, std::uint64_t n, std::uint64_t block, float qmax, int bits, float* scales,
                   std::uint8_t* out) {
  __shared__ float warp_amax[kFusedThreads / kWarpSize];
  __shared__ int warp_finite[kFusedThreads / kWarpSize];
  __shared__ float block_scale_value;
  const std::uint64_t blocks = (n + block - 1) / block;
  const int lane = static_cast<int>(threadIdx.x % kWarpSize);
  const int warp = static_cast<int>(threadIdx.x / kWarpSize);
  for (std::uint64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const std::uint64_t lo = b * block;
    const unsigned len = static_cast<unsigned>(n - lo < block ? n - lo : block);
    const float* src = in + lo;
    float v[kFusedValues];
    float amax = 0.0f;
    int finite = 1;
#pragma unroll
    for (int j = 0; j < kFusedGroups; ++j) {
      const unsigned q = 4 * (threadIdx.x + kFusedThreads * j);
      if (q + 4 <= len) {
        const float4 f = *reinterpret_cast<const float4*>(src + q);  // lo + q: a multiple of 4 values
        v[4 * j] = f.x;
        v[4 * j + 1] = f.y;
        v[4 * j + 2] = f.z;
        v[4 * j + 3] = f.w;
      } else {
#pragma unroll
        for (int h = 0; h < 4; ++h) v[4 * j + h] = q + h < len ? src[q + h] : 0.0f;
      }
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        finite &= isfinite(v[4 * j + h]) ? 1 : 0;
        amax = fmaxf(amax, fabsf(v[4 * j + h]));
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
    std::uint8_t* dst = bits == 8 ? out + lo : out + lo / 2;
#pragma unroll
    for (int j = 0; j < kFusedGroups; ++j) {
      const unsigned q = 4 * (threadIdx.x + kFusedThreads * j);
      if (q >= len) break;
      int r[4];
#pragma unroll
      for (int h = 0; h < 4; ++h) r[h] = q + h < len ? quantize_one(v[4 * j + h], scale, qmax) : 0;
      if (bits == 8) {
        if (q + 4 <= len) {
          *reinterpret_cast<std::uint32_t*>(dst + q) =
              (static_cast<std::uint32_t>(r[0]) & 0xFFu) | ((static_cast<std::uint32_t>(r[1]) & 0xFFu) << 8) |
              ((static_cast<std::uint32_t>(r[2]) & 0xFFu) << 16) | ((static_cast<std::uint32_t>(r[3]) & 0xFFu) << 24);
        } else {
          for (unsigned h = 0; h < 4 && q + h < len; ++h) dst[q + h] = static_cast<std::uint8_t>(static_cast<std::int8_t>(r[h]));
        }
      } else {
        const unsigned b0 = (r[0] & 0x0F) | ((r[1] & 0x0F) << 4);
        const unsigned b1 = (r[2] & 0x0F) | ((r[3] & 0x0F) << 4);
        if (q + 4 <= len) {
          *reinterpret_cast<std::uint16_t*>(dst + q / 2) = static_cast<std::uint16_t>(b0 | (b1 << 8));
        } else {
          dst[q / 2] = static_cast<std::uint8_t>(b0);
          if (q + 2 < len) dst[q / 2 + 1] = static_cast<std::uint8_t>(b1);
        }
      }
    }
    __syncthreads();  // the shared scale is rewritten for the next block
  }
}

__device__ float dequantize_one(int q, float scale) { return static_cast<float>(q) * scale; }

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
    out[i] = dequantize_one(q, scales[i / block]);
  }
}

// Four values per thread when every group of four shares a scale (block a multiple of 4) and the buffers are
// aligned: one 4-byte (INT8) or 2-byte (INT4) load, one 16-byte store. The same arithmetic as unpack.
__global__ void unpack4(const std::uint8_t* in, std::uint64_t n, std::uint64_t block, const float* scales, int bits,
                        float* out) {
  const std::uint64_t groups = (n + 3) / 4;
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t g = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < groups; g += stride) {
    const std::uint64_t i = 4 * g;
    if (i + 4 > n) {
      for (std::uint64_t k = i; k < n; ++k) {
        const int nibble = bits == 8 ? 0 : ((k % 2 == 0) ? (in[k / 2] & 0x0F) : (in[k / 2] >> 4));
        const int q = bits == 8 ? static_cast<std::int8_t>(in[k]) : (nibble >= 8 ? nibble - 16 : nibble);
        out[k] = dequantize_one(q, scales[k / block]);
      }
      continue;
    }
    int q[4];
    if (bits == 8) {
      const std::uint32_t w = *reinterpret_cast<const std::uint32_t*>(in + i);
#pragma unroll
      for (int h = 0; h < 4; ++h) q[h] = static_cast<std::int8_t>(static_cast<std::uint8_t>(w >> (8 * h)));
    } else {
      const unsigned w = *reinterpret_cast<const std::uint16_t*>(in + i / 2);
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        const int nibble = static_cast<int>((w >> (4 * h)) & 0x0Fu);
        q[h] = nibble >= 8 ? nibble - 16 : nibble;
      }
    }
    const float scale = scales[i / block];
    *reinterpret_cast<float4*>(out + i) =
        make_float4(dequantize_one(q[0], scale), dequantize_one(q[1], scale), dequantize_one(q[2], scale),
                    dequantize_one(q[3], scale));
  }
}

bool aligned(const void* p, std::uintptr_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

}  // namespace

void quantize_device_ptrs(const float* in, std::uint64_t n, std::size_t block, QuantBits bits, std::uint8_t* packed,
                          float* scales) {
  const std::size_t blocks = scale_count(n, block);
  if (n == 0) return;
  const float qmax = bits == QuantBits::kInt8 ? 127.0f : 7.0f;
  const bool wide = block % 4 == 0 && aligned(in, 16) && aligned(packed, bits == QuantBits::kInt8 ? 4 : 2);
  if (wide && block >= 2 * kFusedThreads && block <= kFusedMaxBlock) {
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
  if (block % 4 == 0 && aligned(out, 16) && aligned(packed, bits == QuantBits::kInt8 ? 4 : 2)) {
    unpack4<<<grid_for((n + 3) / 4), kThreads>>>(packed, n, block, scales, static_cast<int>(bits), out);
  } else {
    unpack<<<grid_for(n), kThreads>>>(packed, n, block, scales, static_cast<int>(bits), out);
  }
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
