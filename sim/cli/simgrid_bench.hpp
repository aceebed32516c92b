#pragma once
// `shardsim bench --simgrid`: the SimGrid engine's scale curve — one iteration of GPT-20B ZeRO-3 on Frontier,
// link by link, from 8 GCDs up — with wall time, peak memory of the simulation and flows simulated.
#include <ostream>

namespace shardsim::cli {

/** @brief Prints one line per job size up to `max_gcds` GCDs. */
void run_simgrid_benchmarks(std::ostream& out, int max_gcds);

}  // namespace shardsim::cli
