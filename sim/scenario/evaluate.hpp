#pragma once
// evaluate(): the whole flow for one scenario — costs, memory verdict, lowering by the plan's strategy, the
// engine run — and the headline figures derived from them (iteration time, tokens/s, TFLOPS per GPU).
//
// FLOP convention: "model TFLOPS" counts 3x the forward FLOPs of Narayanan et al. 2021 (arXiv 2104.04473,
// Sec. 5.1: 2 FLOPs per multiply-add, attention scores included, logits included), without recomputation;
// "hardware TFLOPS" adds the FLOPs that recomputation repeats. Both are per GPU per second of iteration.
#include <optional>
#include <string>

#include "sim/engine/analytical_engine.hpp"
#include "sim/engine/run_result.hpp"
#include "sim/graph/task_graph.hpp"
#include "sim/scenario/scenario.hpp"
#include "strategies/memory_model.hpp"
#include "strategies/model_costs.hpp"

namespace shardsim::scenario {

struct Evaluation {
  std::string strategy;
  strategies::ModelCosts costs;
  strategies::MemoryBreakdown memory;
  graph::TaskGraph graph;  ///< the lowered iteration (for traces)
  engine::RunResult run;
  int grad_accumulation = 1;
  double tokens_per_iteration = 0.0;
  double tokens_per_s = 0.0;
  double samples_per_s = 0.0;
  double model_tflops_per_gpu = 0.0;
  double hardware_tflops_per_gpu = 0.0;
  double mfu = 0.0;  ///< model FLOPs / (peak x time)
  std::size_t tasks = 0;
};

/** @brief Evaluates `s` end to end. Precondition: `s` came from load_scenarios/parse_scenarios. */
Evaluation evaluate(const Scenario& s, const engine::EngineOptions& options = {});

/** @brief Re-usable evaluator for tight loops (benchmarks, search): keeps its graph and buffers. */
class Evaluator {
 public:
  /** @brief Iteration time of `s` (lowering + engine; no per-role breakdown, memory timeline or per-task
   *  timings). */
  core::Seconds iteration_time(const Scenario& s);
  /** @brief The same, with the model's costs for `s.plan` already computed (strategies::compute_model_costs). */
  core::Seconds iteration_time(const Scenario& s, const strategies::ModelCosts& costs);

 private:
  graph::TaskGraph graph_;
  engine::RunResult result_;
  std::optional<engine::AnalyticalEngine> engine_;  ///< kept, with its buffers, across calls
};

}  // namespace shardsim::scenario
