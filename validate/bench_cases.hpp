#pragma once
// The GEMM and attention cases that `shardsim-validate bench` measures, shared by the harness (C++20), the GPU
// benchmark (one C++17 source for CUDA and HIP) and the PyTorch baselines (handed over as a text file).
#include <string>

namespace shardsim::validate {

/** @brief Row-major C[m x n] = A[m x k] B[k x n], with A stored as k x m when `a_transposed` and B stored as
 *  n x k when `b_transposed`, as a framework's linear layer stores its operands: forward X W^T (B transposed),
 *  data gradient dY W (neither), weight gradient X^T dY (A transposed). */
struct GemmCase {
  std::string name;  ///< bf16_<pass>_<layer>: the first model layer that has the shape
  int m = 0, n = 0, k = 0;
  bool a_transposed = false, b_transposed = false;
};

/** @brief Causal self-attention of `batch` x `heads` heads over `seq` tokens of `head_dim`. */
struct AttentionCase {
  int batch = 0, heads = 0, seq = 0, head_dim = 0;
};

}  // namespace shardsim::validate
