#pragma once
// The GPU half of `shardsim-validate bench` (plain C++17 interface; the implementation is one source for CUDA
// and HIP): device-to-device, host-to-device and device-to-host copies (pinned and pageable), the kernels of
// kernels/gpu/ on device-resident buffers, and vendor-BLAS GEMMs (cuBLAS; the HIP build has no BLAS in Debian,
// so it measures no GEMMs) for a transformer's own matrix shapes. Times come from device events, each point the
// median of repetitions lasting at least the given budget.
#include <functional>
#include <string>
#include <vector>

#include "validate/bench_cases.hpp"

namespace shardsim::validate::gpu {

struct Sample {
  std::string kind;  ///< copy, kernel, gemm or overhead
  std::string name;
  double bytes = 0.0;  ///< input bytes (copies: bytes copied)
  int m = 0, n = 0, k = 0;
  double seconds = 0.0;
};

struct DeviceDescription {
  std::string name;
  std::string driver;
  std::string backend;  ///< cuda or hip
};

/** @brief True when this build has a GPU backend and a device is present. */
bool available();
/** @brief The device and driver measured. Precondition: available(). */
DeviceDescription describe();
/** @brief Runs every measurement: copies and kernels from `min_bytes` to `max_bytes` (x4 steps), the time of
 *  an empty kernel launched back to back, then `gemms` (vendor BLAS, bf16 in, fp32 accumulate) for at least
 *  `gemm_seconds` each; calls `record` for each. */
void run(double min_bytes, double max_bytes, double seconds_per_point, const std::vector<GemmCase>& gemms,
         double gemm_seconds, const std::function<void(const Sample&)>& record);

}  // namespace shardsim::validate::gpu
