#pragma once
// The measurement harness behind `shardsim-validate bench`: times the kernels, memory copies and GEMMs on
// whatever backend is present and writes them in the results format `shardsim calibrate` fits. This build
// measures the GPU where one is present (device copies pinned and pageable, the GPU kernels, cuBLAS GEMMs of a
// transformer's shapes; see gpu_bench.hpp), else the CPU reference backend.
#include <functional>
#include <string>
#include <vector>

#include "validate/bench_cases.hpp"
#include "validate/calibration.hpp"

namespace shardsim::validate {

struct HarnessOptions {
  double min_bytes = 4096;              ///< smallest size (4 KiB)
  double max_bytes = 64.0 * 1024 * 1024;  ///< largest size
  double seconds_per_point = 0.02;      ///< repeat a measurement at least this long, then take the median
  double gemm_seconds = 0.01;           ///< the same for each GEMM (there are over a thousand)
  bool cpu_only = false;                ///< measure the CPU reference backend even where a GPU is present
  bool gemms = true;                    ///< false: no GEMM sweep (to profile the kernels alone)
};

/** @brief The GEMMs the compute model times for the built-in models at micro-batch 1, 2, 4, 8 and tensor
 *  parallelism 1, 2, 4, 8: each linear layer's forward, data-gradient and weight-gradient GEMM (see
 *  strategies::linear_layers), one case per distinct shape and layout, in a fixed order. */
std::vector<GemmCase> transformer_gemms();
/** @brief The causal attention of the same models and plans, one case per distinct shape. */
std::vector<AttentionCase> transformer_attention();
/** @brief The cases as the PyTorch baselines read them: one per line, `gemm NAME M N K TA TB` or
 *  `attention BATCH HEADS SEQ HEAD_DIM`. */
std::string write_cases(const std::vector<GemmCase>& gemms, const std::vector<AttentionCase>& attention);

/** @brief Whether this build can measure a GPU and one is present. */
bool gpu_present();

/** @brief Runs every measurement; `progress` receives one line per measurement. */
Results run_harness(const HarnessOptions& options, const std::function<void(const std::string&)>& progress);

/** @brief The speed checks, printed after a run: for sizes >= 64 MiB, the quantise and dequantise kernels'
 *  bandwidth (bytes read + written) as a fraction of the device copy's (target: >= 80%), and each kernel or
 *  GEMM against its PyTorch baseline ("torch_" + name, same size or shape) where one was measured. */
std::string speed_summary(const Results& r);

/** @brief Results as YAML (parse_results reads it back). */
std::string write_results(const Results& r);

}  // namespace shardsim::validate
