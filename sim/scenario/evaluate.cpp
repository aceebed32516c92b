#include "sim/scenario/evaluate.hpp"

#include "strategies/partitioned_strategy.hpp"
#include "strategies/strategy.hpp"

namespace shardsim::scenario {

Evaluation evaluate(const Scenario& s, const engine::EngineOptions& options) {
  Evaluation ev;
  ev.costs = strategies::compute_model_costs(s.model, s.plan, &s.cluster.device);
  ev.memory = strategies::estimate_memory(s.model, s.cluster, s.plan, ev.costs);
  const auto strategy = strategies::make_strategy(s.plan);
  ev.strategy = strategies::describe_partition(s.model, s.plan);
  strategy->lower(strategies::LoweringInput{s.model, s.cluster, s.plan, ev.costs}, ev.graph);
  ev.tasks = ev.graph.size();
  engine::create_engine(s.engine, s.cluster, s.plan.algorithm, options)->run(ev.graph, options, ev.run);

  const double t = ev.run.iteration_time.value();
  ev.grad_accumulation = s.plan.grad_accumulation();
  ev.tokens_per_iteration = static_cast<double>(s.plan.global_batch) * s.model.seq_len;
  ev.tokens_per_s = ev.tokens_per_iteration / t;
  ev.samples_per_s = s.plan.global_batch / t;
  // Whole-job FLOPs over all GPUs: right for any mix of data, tensor and pipeline parallelism.
  const double gpus = s.cluster.total_devices();
  const double model_flops = s.model.model_flops_per_step(ev.tokens_per_iteration).value();
  const double recompute_factor = ev.costs.hardware_flops_per_micro / ev.costs.model_flops_per_micro;
  ev.model_tflops_per_gpu = model_flops / gpus / t / 1e12;
  ev.hardware_tflops_per_gpu = ev.model_tflops_per_gpu * recompute_factor;
  ev.mfu = ev.model_tflops_per_gpu * 1e12 / s.cluster.device.peak_for(s.model.param_dtype)->value();
  return ev;
}

core::Seconds Evaluator::iteration_time(const Scenario& s) {
  return iteration_time(s, strategies::compute_model_costs(s.model, s.plan, &s.cluster.device));
}

core::Seconds Evaluator::iteration_time(const Scenario& s, const strategies::ModelCosts& costs) {
  const auto strategy = strategies::make_strategy(s.plan);
  strategy->lower(strategies::LoweringInput{s.model, s.cluster, s.plan, costs}, graph_);
  if (engine_) {
    engine_->rebind(s.cluster, s.plan.algorithm);
  } else {
    engine_.emplace(s.cluster, s.plan.algorithm);
  }
  engine::EngineOptions opts;
  opts.keep_timings = false;
  opts.memory_timeline = false;
  opts.breakdown = false;
  engine_->run(graph_, opts, result_);
  return result_.iteration_time;
}

}  // namespace shardsim::scenario
