#pragma once
// The SimGrid engine's extra report: the platform it simulated, how its iteration time compares with the
// analytical engine's on the same graph, the busiest links (the bottleneck first) with the bytes they moved,
// and what the simulation cost. Printed only for runs on the SimGrid engine; deterministic apart from the
// cost line (wall time and memory), which render_network leaves out unless asked.
#include <string>
#include <vector>

#include "sim/scenario/evaluate.hpp"
#include "sim/scenario/scenario.hpp"

namespace shardsim::report {

/** @brief The network section of a SimGrid run; `analytical` is the same scenario on the analytical engine.
 *  `with_cost` adds the simulation's wall time and peak memory (not byte-identical between runs). */
std::string render_network(const scenario::Scenario& s, const scenario::Evaluation& simgrid,
                           const scenario::Evaluation& analytical, bool with_cost);

/** @brief For a sweep on the SimGrid engine: each variant's time next to the analytical engine's (`analytical`,
 *  same order), the difference, and the link that bounds its collectives most. */
std::string render_network_sweep(const std::vector<scenario::Scenario>& scenarios,
                                 const std::vector<scenario::Evaluation>& simgrid,
                                 const std::vector<scenario::Evaluation>& analytical);

}  // namespace shardsim::report
