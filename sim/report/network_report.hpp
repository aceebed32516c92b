#pragma once
// The SimGrid engine's extra report: the platform it simulated, how its iteration time compares with the
// analytical engine's on the same graph, the links that bound its collectives and the busiest links with the
// bytes they moved, and why the engines differ. Printed only for runs on the SimGrid engine; deterministic
// (the simulation's wall time and memory go to stderr, from the CLI).
#include <string>
#include <vector>

#include "sim/scenario/evaluate.hpp"
#include "sim/scenario/scenario.hpp"

namespace shardsim::report {

/** @brief The network section of a SimGrid run; `analytical` is the same scenario on the analytical engine. */
std::string render_network(const scenario::Evaluation& simgrid, const scenario::Evaluation& analytical);

/** @brief For a sweep on the SimGrid engine: each variant's time next to the analytical engine's (`analytical`,
 *  same order), the difference, and the link that bounds its collectives most. */
std::string render_network_sweep(const std::vector<scenario::Scenario>& scenarios,
                                 const std::vector<scenario::Evaluation>& simgrid,
                                 const std::vector<scenario::Evaluation>& analytical);

}  // namespace shardsim::report
