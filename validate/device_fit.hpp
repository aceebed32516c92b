#pragma once
// Fitting the compute model (strategies/kernel_model.hpp) to a device's measurements (`shardsim-validate bench`
// results): the same kernel timing that predicts a training step predicts every measured GEMM, attention and
// memory-bound operation, and bounded least squares on log(predicted / measured) (run_fit.hpp) fits the
// device's parameters to them, each from the measurements it governs:
//   device.memory_efficiency              the memory-bound operations of a transformer step (PyTorch)
//   device.stream_efficiency              device-to-device copies of 64 MiB and more (one read and one write
//                                         stream: what each eager elementwise operation moves)
//   device.gemm_efficiency                the GEMM sweep (cuBLAS / hipBLAS), shapes whose dimensions are all
//                                         multiples of 8 (16 bytes of bf16: what tensor-core loads need)
//   device.gemm_efficiency_narrow         the sweep's GEMMs with a dimension of 2 or 4 x k bf16 elements, not 8 x k
//   device.gemm_efficiency_odd            and with an odd dimension (GPT-2's vocabulary, unpadded)
//   device.attention_efficiency           causal FlashAttention forward (PyTorch's flash backend)
//   device.attention_backward_efficiency  the same, backward
//   device.attention_block_cost,          on a device timed by FlashAttention's schedule (attention_slots): each
//   device.attention_backward_block_cost  direction's fixed cost per block, fitted with its efficiency
//   device.kernel_overhead                taken, not fitted: the time of one eager PyTorch operation on a tiny
//                                         tensor, the floor under every kernel an eager framework launches
// Measurements of the same operations through another path (PyTorch's GEMMs) are held out and
// reported as a check.
#include <optional>
#include <string>
#include <vector>

#include "sim/core/cluster_spec.hpp"
#include "validate/calibration.hpp"
#include "validate/run_fit.hpp"

namespace shardsim::validate {

struct DeviceFitGroup {
  std::string what;  ///< "GEMMs (cuBLAS)", ...
  bool fitted = false;  ///< false: held out (a check)
  ErrorStats before, after;
};

struct DeviceFit {
  std::string preset;             ///< the built-in cluster whose device was measured
  core::DeviceSpec before, after;  ///< the preset's device, and with the fitted values
  std::map<std::string, FittedParameter> parameters;
  std::vector<DeviceFitGroup> groups;
};

/** @brief Fits the device parameters above to `r` (those whose measurements `r` has). Throws core::ConfigError
 *  (naming `file`) when the measured device is none of the built-in ones (its peak and compute units are needed). */
DeviceFit fit_device(const Results& r, const std::string& file);

/** @brief The fitted values with their uncertainty, and each group's error before (the preset's values) and after. */
std::string render_device_fit(const DeviceFit& f);

}  // namespace shardsim::validate
