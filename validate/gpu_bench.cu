// GPU measurements of `shardsim-validate bench`, one source for CUDA and HIP (see gpu_bench.hpp).
#include "validate/gpu_bench.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/gpu/block_quant_gpu.hpp"
#include "kernels/gpu/gpu_compat.hpp"
#include "kernels/gpu/mpc_gpu.hpp"
#include "kernels/gpu/zfp_gpu.hpp"
#include "kernels/zfp_block.hpp"

#if !defined(__HIPCC__)
#include <cublas_v2.h>
#endif

namespace shardsim::validate::gpu {
namespace {

using kernels::gpu::DeviceBuffer;

// Median of event-timed repetitions of `f` lasting at least `budget` seconds (at least 3, after one warm-up).
template <class F>
double time_median(double budget, F&& f) {
  gpuEvent_t a, b;
  SHARDSIM_GPU_CHECK(gpuEventCreate(&a));
  SHARDSIM_GPU_CHECK(gpuEventCreate(&b));
  f();
  SHARDSIM_GPU_CHECK(gpuDeviceSynchronize());
  std::vector<double> samples;
  double total = 0.0;
  while (samples.size() < 3 || total < budget) {
    SHARDSIM_GPU_CHECK(gpuEventRecord(a, 0));
    f();
    SHARDSIM_GPU_CHECK(gpuEventRecord(b, 0));
    SHARDSIM_GPU_CHECK(gpuEventSynchronize(b));
    float ms = 0.0f;
    SHARDSIM_GPU_CHECK(gpuEventElapsedTime(&ms, a, b));
    samples.push_back(ms * 1e-3);
    total += ms * 1e-3;
    if (samples.size() > 10000) break;
  }
  (void)gpuEventDestroy(a);
  (void)gpuEventDestroy(b);
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(samples.size() / 2), samples.end());
  return samples[samples.size() / 2];
}

__global__ void empty_kernel() {}

__global__ void fill(float* x, std::uint64_t n) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    x[i] = sinf(0.001f * static_cast<float>(i % 1000003)) * 3.0f;
  }
}

struct HostPinned {
  void* ptr = nullptr;
  explicit HostPinned(std::size_t bytes) { SHARDSIM_GPU_CHECK(gpuMallocHost(&ptr, bytes)); }
  ~HostPinned() { (void)gpuFreeHost(ptr); }
  HostPinned(const HostPinned&) = delete;
  HostPinned& operator=(const HostPinned&) = delete;
};

#if !defined(__HIPCC__)
void check_blas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string("cuBLAS: ") + what + " failed");
}

// Pseudo-random bf16 values in [-1, 1) (a hash of the index: the same on every run). Operands with few
// distinct bits (constants, smooth ramps) draw less power and run several percent faster than training's do.
__global__ void fill_bf16(std::uint16_t* x, std::uint64_t n) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    std::uint32_t h = static_cast<std::uint32_t>(i) ^ static_cast<std::uint32_t>(i >> 32) * 0x9e3779b9u;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    const float v = static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
    x[i] = static_cast<std::uint16_t>(__float_as_uint(v) >> 16);
  }
}

// Each case on operands laid out as a framework's linear layer keeps them (see GemmCase), through cublasGemmEx
// (column-major: row-major C = A B is column-major C^T = B^T A^T).
void run_gemms(const std::vector<GemmCase>& cases, double budget, const std::function<void(const Sample&)>& record) {
  if (cases.empty()) return;
  std::size_t most_a = 0, most_b = 0, most_c = 0;
  for (const GemmCase& g : cases) {
    most_a = std::max(most_a, static_cast<std::size_t>(g.m) * g.k);
    most_b = std::max(most_b, static_cast<std::size_t>(g.k) * g.n);
    most_c = std::max(most_c, static_cast<std::size_t>(g.m) * g.n);
  }
  DeviceBuffer<std::uint16_t> a(most_a), b(most_b), c(most_c);
  fill_bf16<<<kernels::gpu::grid_for(most_a), kernels::gpu::kThreads>>>(a.ptr, most_a);
  fill_bf16<<<kernels::gpu::grid_for(most_b), kernels::gpu::kThreads>>>(b.ptr, most_b);
  SHARDSIM_GPU_CHECK(gpuGetLastError());
  cublasHandle_t handle;
  check_blas(cublasCreate(&handle), "create");
  for (const GemmCase& g : cases) {
    const float alpha = 1.0f, beta = 0.0f;
    // Column-major operands: B^T is n x k (ld n) unless B is stored n x k (then op T, ld k); A^T is k x m (ld k)
    // unless A is stored k x m (then op T, ld m).
    const cublasOperation_t op_b = g.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_a = g.a_transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int ld_b = g.b_transposed ? g.k : g.n;
    const int ld_a = g.a_transposed ? g.m : g.k;
    const double t = time_median(budget, [&] {
      check_blas(cublasGemmEx(handle, op_b, op_a, g.n, g.m, g.k, &alpha, b.ptr, CUDA_R_16BF, ld_b, a.ptr, CUDA_R_16BF,
                              ld_a, &beta, c.ptr, CUDA_R_16BF, g.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "GemmEx");
    });
    record(Sample{"gemm", g.name, 0.0, g.m, g.n, g.k, t});
  }
  (void)cublasDestroy(handle);
}
#endif

}  // namespace

bool available() { return kernels::gpu::device_available(); }

DeviceDescription describe() {
  gpuDeviceProp_t p;
  SHARDSIM_GPU_CHECK(gpuGetDeviceProperties(&p, 0));
  int driver = 0;
  SHARDSIM_GPU_CHECK(gpuDriverGetVersion(&driver));
#if defined(__HIPCC__)
  return DeviceDescription{p.name, "HIP driver " + std::to_string(driver), "hip"};
#else
  return DeviceDescription{p.name, "CUDA driver " + std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10),
                           "cuda"};
#endif
}

void run(double min_bytes, double max_bytes, double budget, const std::vector<GemmCase>& gemms, double gemm_seconds,
         const std::function<void(const Sample&)>& record) {
  // GEMMs first, and the library's kernels last: a kernel that faults leaves the context unusable, and what
  // was recorded before it is kept by the caller.
#if !defined(__HIPCC__)
  run_gemms(gemms, gemm_seconds, record);
#else
  (void)gemms;
  (void)gemm_seconds;
#endif
  // Back-to-back launches of an empty kernel: the device-side cost of a kernel, below any host dispatch.
  constexpr int kLaunches = 1000;
  const double launches = time_median(budget, [&] {
    for (int i = 0; i < kLaunches; ++i) empty_kernel<<<1, 32>>>();
  });
  SHARDSIM_GPU_CHECK(gpuGetLastError());
  record(Sample{"overhead", "empty_kernel", 0.0, 0, 0, 0, launches / kLaunches});
  const auto max_n = static_cast<std::size_t>(max_bytes) / sizeof(float);
  DeviceBuffer<float> x(max_n), y(max_n);
  fill<<<kernels::gpu::grid_for(max_n), kernels::gpu::kThreads>>>(x.ptr, max_n);
  SHARDSIM_GPU_CHECK(gpuGetLastError());
  DeviceBuffer<std::uint8_t> packed(max_n + 4), stream(kernels::zfp::compressed_bytes(max_n, 8.0) + 8);
  const std::size_t block = 8192;
  DeviceBuffer<float> scales(max_n / block + 1);
  DeviceBuffer<std::uint32_t> mpc_words(kernels::gpu::mpc_words_scratch(max_n)),
      mpc_out(kernels::gpu::mpc_words_scratch(max_n)), mpc_deltas(kernels::gpu::mpc_deltas_scratch(max_n, 1));
  DeviceBuffer<std::uint64_t> mpc_ends(max_n / 32 + 1);
  DeviceBuffer<int> mpc_bad(1);
  HostPinned pinned(max_n * sizeof(float));
  std::memset(pinned.ptr, 0, max_n * sizeof(float));
  std::vector<float> pageable(max_n, 1.0f);
  for (double bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const auto n = static_cast<std::size_t>(bytes) / sizeof(float);
    const std::size_t nb = n * sizeof(float);
    auto copy = [&](const char* name, void* dst, const void* src, auto kind) {
      record(Sample{"copy", name, static_cast<double>(nb), 0, 0, 0,
                    time_median(budget, [&] { SHARDSIM_GPU_CHECK(gpuMemcpy(dst, src, nb, kind)); })});
    };
    copy("d2d", y.ptr, x.ptr, gpuMemcpyDeviceToDevice);
    copy("h2d_pinned", x.ptr, pinned.ptr, gpuMemcpyHostToDevice);
    copy("d2h_pinned", pinned.ptr, x.ptr, gpuMemcpyDeviceToHost);
    copy("h2d_pageable", y.ptr, pageable.data(), gpuMemcpyHostToDevice);
    copy("d2h_pageable", pageable.data(), x.ptr, gpuMemcpyDeviceToHost);
  }
  fill<<<kernels::gpu::grid_for(max_n), kernels::gpu::kThreads>>>(x.ptr, max_n);  // the copies overwrote it
  SHARDSIM_GPU_CHECK(gpuGetLastError());
  for (double bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const auto n = static_cast<std::size_t>(bytes) / sizeof(float);
    const std::size_t nb = n * sizeof(float);
    for (auto bits : {kernels::QuantBits::kInt8, kernels::QuantBits::kInt4}) {
      const std::string tag = bits == kernels::QuantBits::kInt8 ? "int8" : "int4";
      record(Sample{"kernel", "quantize_" + tag, static_cast<double>(nb), 0, 0, 0, time_median(budget, [&] {
                      kernels::gpu::quantize_device_ptrs(x.ptr, n, block, bits, packed.ptr, scales.ptr);
                    })});
      record(Sample{"kernel", "dequantize_" + tag, static_cast<double>(nb), 0, 0, 0, time_median(budget, [&] {
                      kernels::gpu::dequantize_device_ptrs(packed.ptr, scales.ptr, n, block, bits, y.ptr);
                    })});
    }
    record(Sample{"kernel", "zfp_rate8", static_cast<double>(nb), 0, 0, 0,
                  time_median(budget, [&] { kernels::gpu::zfp_compress_device_ptrs(x.ptr, n, 8.0, stream.ptr); })});
    record(Sample{"kernel", "zfp_decompress_rate8", static_cast<double>(nb), 0, 0, 0,
                  time_median(budget, [&] { kernels::gpu::zfp_decompress_device_ptrs(stream.ptr, n, 8.0, y.ptr); })});
    record(Sample{"kernel", "mpc", static_cast<double>(nb), 0, 0, 0, time_median(budget, [&] {
                    kernels::gpu::mpc_compress_device_ptrs(x.ptr, n, 1, mpc_words.ptr, mpc_ends.ptr, mpc_out.ptr);
                  })});
    std::uint64_t mpc_size = 0;
    SHARDSIM_GPU_CHECK(gpuMemcpy(&mpc_size, mpc_ends.ptr + ((n + 31) / 32 - 1), sizeof mpc_size,
                                 gpuMemcpyDeviceToHost));
    record(Sample{"kernel", "mpc_decompress", static_cast<double>(nb), 0, 0, 0, time_median(budget, [&] {
                    kernels::gpu::mpc_decompress_device_ptrs(mpc_out.ptr, mpc_size, n, 1, mpc_ends.ptr, mpc_deltas.ptr,
                                                             mpc_bad.ptr, y.ptr);
                  })});
  }
}

}  // namespace shardsim::validate::gpu
