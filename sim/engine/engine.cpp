#include "sim/engine/engine.hpp"

#include <algorithm>

#include "sim/engine/analytical_engine.hpp"
#include "sim/engine/simgrid_engine.hpp"

namespace shardsim::engine {

std::string_view engine_name(EngineKind k) { return k == EngineKind::kSimGrid ? "simgrid" : "analytical"; }

std::optional<EngineKind> parse_engine_kind(std::string_view name) {
  if (name == "analytical") return EngineKind::kAnalytical;
  if (name == "simgrid") return EngineKind::kSimGrid;
  return std::nullopt;
}

std::unique_ptr<Engine> create_engine(EngineKind kind, const core::ClusterSpec& cluster,
                                      core::CollectiveAlgorithm algorithm, const EngineOptions& options) {
  if (kind == EngineKind::kSimGrid) {
    SimGridOptions sg;
    sg.topology = options.topology;
    return std::make_unique<SimGridEngine>(cluster, algorithm, sg);
  }
  return std::make_unique<AnalyticalEngine>(cluster, algorithm);
}

std::optional<double> host_returns_s(const graph::TaskGraph& g, const RunResult& r, std::uint16_t role) {
  const auto& tasks = g.tasks();
  if (r.timings.size() != tasks.size()) return std::nullopt;
  std::optional<double> end;
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    if (tasks[t].role != role || tasks[t].stream != graph::Stream::kHostCpu) continue;
    end = std::max(end.value_or(0.0), r.timings[t].end_s);
  }
  return end;
}

}  // namespace shardsim::engine
