#pragma once
// Calibration: from measurements taken on real hardware (`shardsim-validate bench` writes them as YAML) to the
// model parameters the simulator uses, and back. Copies and memory-bound kernels are fitted as
// latency + bytes / bandwidth; GEMMs as an efficiency that saturates with size,
// efficiency(F) = e_max * F / (F + F_half) for F FLOPs. Both fits are linear least squares (Eigen), weighted so
// that every measurement counts by its relative error, not its absolute size.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/cluster_spec.hpp"
#include "sim/core/units.hpp"

namespace shardsim::validate {

struct DeviceInfo {
  std::string name;
  std::string driver;
  std::string backend;  ///< cuda, hip or cpu
  std::string date;     ///< ISO date of the measurement
};

struct Measurement {
  std::string kind;  ///< copy, kernel or gemm
  std::string name;  ///< d2d, h2d_pinned, quantize_int8, bf16 ...
  double bytes = 0.0;
  double flops = 0.0;  ///< gemm: 2 m n k
  double seconds = 0.0;
  int m = 0, n = 0, k = 0;  ///< gemm: the shape (C[m x n] = A[m x k] B[k x n])
};

struct Results {
  DeviceInfo device;
  std::optional<core::FlopPerSec> peak;  ///< the device's dense peak for the GEMMs' dtype
  std::vector<Measurement> measurements;
};

struct LinearFit {
  core::Seconds latency;
  core::BytesPerSec bandwidth;
  int points = 0;
  double max_relative_error = 0.0;
  /** @brief Predicted time for `bytes`. */
  [[nodiscard]] core::Seconds predict(double bytes) const { return latency + core::Bytes(bytes) / bandwidth; }
};

struct GemmFit {
  double max_efficiency = 0.0;
  double half_flops = 0.0;  ///< FLOPs at which half of max_efficiency is reached
  int points = 0;
  double max_relative_error = 0.0;
  [[nodiscard]] double efficiency(double flops) const { return max_efficiency * flops / (flops + half_flops); }
};

struct Calibration {
  DeviceInfo device;
  std::map<std::string, LinearFit> copies;   ///< by copy path
  std::map<std::string, LinearFit> kernels;  ///< by kernel name
  std::optional<GemmFit> gemm;
  std::optional<core::FlopPerSec> peak;
};

/** @brief Least-squares latency + bytes/bandwidth through (bytes, seconds) points. Precondition: >= 2 points
 *  with distinct sizes. */
LinearFit fit_latency_bandwidth(const std::vector<std::pair<double, double>>& bytes_seconds);
/** @brief Least-squares saturating efficiency through (flops, efficiency) points. Precondition: >= 2 points. */
GemmFit fit_gemm(const std::vector<std::pair<double, double>>& flops_efficiency);

/** @brief Fits every copy path, kernel and the GEMM curve found in `r`. Throws core::ConfigError naming what
 *  lacks the measurements a fit needs. */
Calibration calibrate(const Results& r, const std::string& file);

/** @brief Strict YAML readers/writers (units on every dimensioned value). */
Results parse_results(const std::string& text, const std::string& file);
std::string write_calibration(const Calibration& c);
Calibration parse_calibration(const std::string& text, const std::string& file);

/** @brief What the simulator takes from a calibration: GEMM efficiency (e_max), memory-bound efficiency (device
 *  copy bandwidth / HBM bandwidth), the host link (pinned host-to-device copies). */
void apply_calibration(const Calibration& c, core::ClusterSpec& cluster);

/** @brief Measured next to predicted for every measurement, with the relative error. */
std::string render_comparison(const Results& r, const Calibration& c);

}  // namespace shardsim::validate
