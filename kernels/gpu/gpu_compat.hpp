#pragma once
// One source for both vendors: `gpu*` names map to the HIP or CUDA runtime, and the warp (NVIDIA, 32 lanes) or
// wavefront (AMD, 64 lanes) width is a constant, never a literal. Include only from .cu sources.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define gpuError_t hipError_t
#define gpuSuccess hipSuccess
#define gpuGetErrorString hipGetErrorString
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMemcpy hipMemcpy
#define gpuMemset hipMemset
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuMallocHost hipHostMalloc
#define gpuFreeHost hipHostFree
#define gpuEvent_t hipEvent_t
#define gpuEventCreate hipEventCreate
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuDeviceProp_t hipDeviceProp_t
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuDriverGetVersion hipDriverGetVersion
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuGetLastError hipGetLastError
#define gpuStream_t hipStream_t
#define GPU_SHFL_XOR(v, m) __shfl_xor(v, m)
inline constexpr int kWarpSize = 64;
#else
#include <cuda_runtime.h>
#define gpuError_t cudaError_t
#define gpuSuccess cudaSuccess
#define gpuGetErrorString cudaGetErrorString
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMemcpy cudaMemcpy
#define gpuMemset cudaMemset
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuMallocHost cudaMallocHost
#define gpuFreeHost cudaFreeHost
#define gpuEvent_t cudaEvent_t
#define gpuEventCreate cudaEventCreate
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuDeviceProp_t cudaDeviceProp
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDriverGetVersion cudaDriverGetVersion
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuGetLastError cudaGetLastError
#define gpuStream_t cudaStream_t
#define GPU_SHFL_XOR(v, m) __shfl_xor_sync(0xffffffffu, v, m)
inline constexpr int kWarpSize = 32;
#endif

namespace shardsim::kernels::gpu {

/** @brief Throws std::runtime_error with file:line when a runtime call fails. */
inline void check(gpuError_t e, const char* what, const char* file, int line) {
  if (e != gpuSuccess) {
    throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what + ": " + gpuGetErrorString(e));
  }
}

}  // namespace shardsim::kernels::gpu

#define SHARDSIM_GPU_CHECK(call) ::shardsim::kernels::gpu::check((call), #call, __FILE__, __LINE__)

namespace shardsim::kernels::gpu {

/** @brief Device memory for `count` values of T, freed on scope exit. */
template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  explicit DeviceBuffer(std::size_t count) {
    if (count > 0) SHARDSIM_GPU_CHECK(gpuMalloc(reinterpret_cast<void**>(&ptr), count * sizeof(T)));
  }
  ~DeviceBuffer() {
    if (ptr) (void)gpuFree(ptr);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};

inline constexpr int kThreads = 256;
/** @brief Blocks of kThreads for `work` items (grid-stride loops cover the rest). */
inline int grid_for(std::uint64_t work) {
  const std::uint64_t g = (work + kThreads - 1) / kThreads;
  return static_cast<int>(g < 65535 ? (g > 0 ? g : 1) : 65535);
}

}  // namespace shardsim::kernels::gpu
