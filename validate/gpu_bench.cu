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

// The GEMMs of one transformer layer for hidden size h over t tokens (C[out x t] = W[out x in] X[in x t]):
// QKV, attention output, MLP up, MLP down; plus square sizes for the efficiency curve.
void run_gemms(double budget, const std::function<void(const Sample&)>& record) {
  struct Shape {
    const char* what;
    int m, n, k;
  };
  std::vector<Shape> shapes;
  for (int d : {1024, 2048, 4096, 8192}) shapes.push_back({"square", d, d, d});
  for (int h : {5120, 6144}) {  // LLaMA-2-13B, GPT-NeoX-20B
    const int t = 4096;          // micro-batch 2 x sequence 2048
    shapes.push_back({"qkv", 3 * h, t, h});
    shapes.push_back({"attn_out", h, t, h});
    shapes.push_back({"mlp_up", 4 * h, t, h});
    shapes.push_back({"mlp_down", h, t, 4 * h});
  }
  cublasHandle_t handle;
  check_blas(cublasCreate(&handle), "create");
  for (const Shape& s : shapes) {
    DeviceBuffer<std::uint16_t> a(static_cast<std::size_t>(s.m) * s.k), b(static_cast<std::size_t>(s.k) * s.n),
        c(static_cast<std::size_t>(s.m) * s.n);
    SHARDSIM_GPU_CHECK(gpuMemset(a.ptr, 0x3c, static_cast<std::size_t>(s.m) * s.k * 2));  // small finite bf16
    SHARDSIM_GPU_CHECK(gpuMemset(b.ptr, 0x3c, static_cast<std::size_t>(s.k) * s.n * 2));
    const float alpha = 1.0f, beta = 0.0f;
    const double t = time_median(budget, [&] {
      check_blas(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, s.m, s.n, s.k, &alpha, a.ptr, CUDA_R_16BF, s.m, b.ptr,
                              CUDA_R_16BF, s.k, &beta, c.ptr, CUDA_R_16BF, s.m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "GemmEx");
    });
    record(Sample{"gemm", std::string("bf16_") + s.what, 0.0, s.m, s.n, s.k, t});
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

void run(double min_bytes, double max_bytes, double budget, const std::function<void(const Sample&)>& record) {
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
    fill<<<kernels::gpu::grid_for(n), kernels::gpu::kThreads>>>(x.ptr, n);  // the copies above overwrote it
    SHARDSIM_GPU_CHECK(gpuGetLastError());
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
#if !defined(__HIPCC__)
  run_gemms(budget, record);
#endif
}

}  // namespace shardsim::validate::gpu
