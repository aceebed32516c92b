#pragma once
// Calibration: from measurements taken on real hardware (`shardsim-validate bench` writes them as YAML) to the
// model parameters the simulator uses, and back. Copies and memory-bound kernels are fitted as
// latency + bytes / bandwidth; GEMMs as an efficiency that saturates with size,
// efficiency(F) = e_max * F / (F + F_half) for F FLOPs. Both fits are linear least squares (Eigen), weighted so
// that every measurement counts by its relative error, not its absolute size.
// A calibration may also carry model parameters fitted to whole measured runs (`shardsim calibrate --runs`),
// by their names in model_parameters.hpp, in its `parameters:` section.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/cluster_spec.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/units.hpp"
#include "sim/scenario/scenario.hpp"

namespace shardsim::validate {

struct DeviceInfo {
  std::string name;
  std::string driver;
  std::string backend;  ///< cuda, hip or cpu
  std::string date;     ///< ISO date of the measurement
};

struct Measurement {
  /// copy (bytes: bytes copied), kernel (bytes: input bytes), gemm (m, n, k), attention (batch, heads, seq,
  /// head_dim: causal, fused), memory (a memory-bound operation; bytes: bytes read + written) or overhead (the
  /// time one kernel or framework operation costs when its work is negligible)
  std::string kind;
  std::string name;  ///< d2d, h2d_pinned, quantize_int8, bf16_fwd_qkv, torch_flash_fwd ...
  double bytes = 0.0;
  double flops = 0.0;  ///< gemm: 2 m n k (attention: its FLOPs are the kernel model's, strategies::KernelModel)
  double seconds = 0.0;
  int m = 0, n = 0, k = 0;  ///< gemm: the shape (C[m x n] = A[m x k] B[k x n])
  int batch = 0, heads = 0, seq = 0, head_dim = 0;  ///< attention
};

struct Results {
  DeviceInfo device;
  std::optional<core::FlopPerSec> peak;  ///< the device's dense peak for the GEMMs' dtype
  std::vector<Measurement> measurements;
  std::vector<std::string> errors;  ///< measurements that failed part-way (the run's file keeps them as comments)
  /// what else identifies the run (driver version, PyTorch and CUDA versions, kernel), in file order
  std::vector<std::pair<std::string, std::string>> environment;
};

struct LinearFit {
  core::Seconds latency;
  core::BytesPerSec bandwidth;
  int points = 0;
  double max_relative_error = 0.0;
  /** @brief Predicted time for `bytes`. */
  [[nodiscard]] core::Seconds predict(double bytes) const { return latency + core::Bytes(bytes) / bandwidth; }
};


/** @brief A model parameter's value fitted to measured runs. */
struct FittedParameter {
  double value = 0.0;               ///< in the parameter's base unit: fraction, s, B/s or B
  std::optional<double> std_error;  ///< 1 sigma, same unit; not finite: not identifiable from the runs
  core::SourceLocation where;       ///< where a parsed file gives it, for the errors apply_parameters finds
};

/** @brief A machine a calibration's parameters were fitted on: its cluster's and its device's names. */
struct FittedMachine {
  std::string cluster;
  std::string device;
  auto operator<=>(const FittedMachine&) const = default;
};

struct Calibration {
  DeviceInfo device;  ///< empty backend: no device was benchmarked (a calibration from runs only)
  /// the machines of the runs the parameters were fitted to (`fitted_on:`; empty: unstated, applied anywhere)
  std::vector<FittedMachine> fitted_on;
  core::SourceLocation fitted_on_at;  ///< where a parsed file gives fitted_on
  std::map<std::string, LinearFit> copies;   ///< by copy path
  std::map<std::string, LinearFit> kernels;  ///< by kernel name
  std::optional<core::FlopPerSec> peak;
  std::map<std::string, FittedParameter> parameters;  ///< by model parameter name (model_parameters.hpp)
  std::string file;  ///< where it was read from (errors name it)
};

/** @brief Least-squares latency + bytes/bandwidth through (bytes, seconds) points. Precondition: >= 2 points
 *  with distinct sizes. */
LinearFit fit_latency_bandwidth(const std::vector<std::pair<double, double>>& bytes_seconds);

struct DeviceFit;
/** @brief Fits every copy path and kernel found in `r` (latency + bytes / bandwidth) and, where `r` measured a
 *  built-in GPU, the compute model's device parameters (device_fit.hpp; into `parameters`, and into `*fit` when
 *  given). Throws core::ConfigError naming what lacks the measurements a fit needs. */
Calibration calibrate(const Results& r, const std::string& file, DeviceFit* fit = nullptr);

/** @brief Strict YAML readers/writers (units on every dimensioned value). parse_calibration checks each
 *  parameter's name and unit against every machine; whether the scenario's machine has it, and in range, is
 *  apply_parameters' check. */
Results parse_results(const std::string& text, const std::string& file);
std::string write_calibration(const Calibration& c);
Calibration parse_calibration(const std::string& text, const std::string& file);

/** @brief What the simulator takes from a calibration's copy fits: the host link (pinned host-to-device copies).
 *  Throws core::ConfigError when the calibration measured a GPU that is not `cluster`'s device: another device's
 *  numbers would be applied as this one's. */
void apply_calibration(const Calibration& c, core::ClusterSpec& cluster);
/** @brief Why `c` does not belong to `cluster`, or nullopt when it does: measured on another GPU (its device:
 *  line), or a device parameter (device.*) fitted on other devices than `cluster`'s, or a machine parameter (host,
 *  network, collectives) fitted on other clusters. A calibration that states neither applies anywhere. */
std::optional<std::string> fitted_elsewhere(const Calibration& c, const core::ClusterSpec& cluster);
/** @brief Sets `c`'s fitted parameters in `s`; call it after apply_calibration, so that fits to whole runs win.
 *  Throws core::ConfigError at the parameter's line when `s` has no such parameter or the value is outside its
 *  range for `s`, and at fitted_on when they were fitted on another machine (fitted_elsewhere); then nothing is
 *  set. */
void apply_parameters(const Calibration& c, scenario::Scenario& s);

/** @brief Reads and parses a calibration file. */
Calibration load_calibration(const std::string& path);
/** @brief Everything a calibration changes in a scenario: apply_calibration on its cluster, then apply_parameters. */
void apply_to_scenario(const Calibration& c, scenario::Scenario& s);

/** @brief Measured next to predicted for every measurement, with the relative error. */
std::string render_comparison(const Results& r, const Calibration& c);

}  // namespace shardsim::validate
