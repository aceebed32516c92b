#include "sim/cli/simgrid_bench.hpp"

#include <fmt/format.h>

#include "sim/scenario/evaluate.hpp"
#include "sim/scenario/scenario.hpp"

namespace shardsim::cli {

void run_simgrid_benchmarks(std::ostream& out, int max_gcds) {
  out << "simgrid engine scale curve: gpt-20b-frontier, ZeRO-3, micro-batch 1, 4 micro-batches, recompute full, "
         "Frontier link by link\n";
  out << fmt::format("  {:>6} {:>6} {:>7} {:>10} {:>9} {:>10} {:>12} {:>10} {:>9}\n", "GCDs", "nodes", "tasks",
                     "wall s", "peak MB", "flows", "iteration", "analytic", "diff");
  for (int nodes : {1, 2, 4, 8, 16, 32, 48, 64, 128, 256, 384, 512, 768, 1024, 2048, 4096, 9408}) {
    if (nodes * 8 > max_gcds) break;
    const std::string yaml = fmt::format(R"(
name: bench-simgrid-{0}
model: gpt-20b-frontier
cluster: {{preset: frontier, nodes: {0}}}
plan: {{zero_stage: 3, micro_batch: 1, global_batch: {1}, recompute: full}}
)",
                                         nodes, nodes * 8 * 4);
    scenario::Scenario s = scenario::parse_scenarios(yaml, "<bench>").front();
    const auto analytical = scenario::evaluate(s);
    s.engine = engine::EngineKind::kSimGrid;
    engine::EngineOptions opts;
    opts.keep_timings = false;
    const auto ev = scenario::evaluate(s, opts);
    const double ts = ev.run.iteration_time.value();
    const double ta = analytical.run.iteration_time.value();
    out << fmt::format("  {:>6} {:>6} {:>7} {:>10.2f} {:>9.0f} {:>10} {:>10.3f} s {:>8.3f} s {:>+8.2f}%\n", nodes * 8,
                       nodes, ev.tasks, ev.run.network.wall_s, ev.run.network.peak_rss_mb, ev.run.network.flows, ts, ta,
                       100.0 * (ts - ta) / ta);
    out.flush();
  }
  out << "  targets: 384 GCDs <= 2 s wall, the full Frontier (9,408 nodes, 75,264 GCDs) <= 5 min wall (2-core machine)\n";
}

}  // namespace shardsim::cli
