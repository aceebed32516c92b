#include "sim/cli/bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "sim/engine/analytical_engine.hpp"
#include "sim/scenario/evaluate.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/search/plan_search.hpp"
#include "strategies/strategy.hpp"

namespace shardsim::cli {
namespace {

using Clock = std::chrono::steady_clock;

// The benchmark plan: GPT-20B (Frontier paper shape), ZeRO-3, 48 Frontier nodes = 384 GCDs.
scenario::Scenario bench_scenario() {
  const std::string yaml = R"(
name: bench-frontier-gpt20b-zero3-384
model: gpt-20b-frontier
cluster: {preset: frontier, nodes: 48}
plan: {zero_stage: 3, micro_batch: 1, global_batch: 1536, recompute: full}
)";
  return scenario::parse_scenarios(yaml, "<bench>").front();
}

template <class F>
std::pair<long, double> timed(double seconds, F&& f) {
  long n = 0;
  const auto start = Clock::now();
  double elapsed = 0.0;
  do {
    for (int k = 0; k < 64; ++k) f();
    n += 64;
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < seconds);
  return {n, elapsed};
}

}  // namespace

void run_benchmarks(std::ostream& out, double seconds) {
  const scenario::Scenario s = bench_scenario();
  out << fmt::format("benchmark: {} ({} GCDs, {} micro-batches per iteration), one thread\n", s.name,
                     s.cluster.total_devices(), s.plan.grad_accumulation());

  scenario::Evaluator evaluator;
  double sink = 0.0;
  auto [n1, t1] = timed(seconds, [&] { sink += evaluator.iteration_time(s).value(); });
  // The search's evaluation: the iteration time only (no per-role breakdown, timings or memory timeline).
  out << fmt::format("  {:<56}{:>8.0f} evaluations/s ({:.1f} us each)\n", "full evaluation (costs + lowering + engine):",
                     n1 / t1, 1e6 * t1 / n1);

  const auto costs = strategies::compute_model_costs(s.model, s.plan, &s.cluster.device);
  graph::TaskGraph g;
  strategies::make_strategy(s.plan)->lower(strategies::LoweringInput{s.model, s.cluster, s.plan, costs}, g);
  engine::AnalyticalEngine eng(s.cluster, s.plan.algorithm);
  engine::RunResult r;
  engine::EngineOptions opts;
  opts.keep_timings = false;
  opts.memory_timeline = false;
  opts.breakdown = false;
  auto [n2, t2] = timed(seconds, [&] {
    eng.run(g, opts, r);
    sink += r.iteration_time.value();
  });
  out << fmt::format("  {:<56}{:>8.0f} runs/s        ({:.1f} us each)\n",
                     fmt::format("engine only ({} tasks):", g.size()), n2 / t2, 1e6 * t2 / n2);
  opts.memory_timeline = true;
  opts.keep_timings = true;
  opts.breakdown = true;
  auto [n3, t3] = timed(seconds, [&] {
    eng.run(g, opts, r);
    sink += r.iteration_time.value();
  });
  out << fmt::format("  {:<56}{:>8.0f} runs/s        ({:.1f} us each)\n",
                     "engine with breakdown, timings + memory timeline:", n3 / t3, 1e6 * t3 / n3);
  out << fmt::format("  target: >= 20000 full evaluations/s on one core; predicted iteration {:.3f} s\n",
                     sink > 0 ? r.iteration_time.value() : 0.0);

  // Plan search on 1,024 GCDs (LLaMA-2-13B, 128 Frontier nodes), one thread and all threads.
  const std::string yaml = R"(
name: bench-search-llama13b-1024
model: llama2-13b
cluster: {preset: frontier, nodes: 128}
plan: {global_batch: 1024, flash_attention: true}
)";
  const scenario::Scenario sb = scenario::parse_scenarios(yaml, "<bench>").front();
  // One search takes a fifth of a second: repeated for the figure's time (three times at least), the median rate
  // and the range, so that a scheduler's hiccup in one run does not make the figure.
  const auto space = search::default_space(sb);
  for (int threads : {1, 0}) {
    std::vector<double> rates;
    double plans = 0.0;
    std::size_t feasible = 0;
    const auto start = Clock::now();
    do {
      const auto res = search::search(sb, space, 10, threads);
      plans = static_cast<double>(res.feasible + res.infeasible);
      feasible = res.feasible;
      rates.push_back(plans / res.wall_s);
    } while (rates.size() < 3 || std::chrono::duration<double>(Clock::now() - start).count() < seconds);
    std::sort(rates.begin(), rates.end());
    const double median = rates[rates.size() / 2];
    out << fmt::format("  plan search, {} on {} GCDs, {}: {:.0f} plans ({} fit) in {:.2f} s = {:.0f} plans/s "
                       "(the median of {} searches; {:.0f}-{:.0f})\n",
                       sb.model.name, sb.cluster.total_devices(), threads == 1 ? "1 thread" : "all cores", plans,
                       feasible, plans / median, median, rates.size(), rates.front(), rates.back());
  }
}

}  // namespace shardsim::cli
