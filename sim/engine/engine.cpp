#include "sim/engine/engine.hpp"

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

}  // namespace shardsim::engine
