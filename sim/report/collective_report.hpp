#pragma once
// The collectives of one iteration call by call: for each rank role, every kind of collective the plan issues
// (its purpose, operation and process group) with how many calls it makes, their sizes, what the cluster's
// collective library runs for them (algorithm and protocol, as its tuning model picks them), what one call
// costs and how much of that is latency (the part that does not shrink with bytes), and the time the engine's
// run gave them. It answers "why is this plan's communication slow": few large calls at the links' rate, or
// many small ones paying a ring's steps each. Deterministic, like the rest of the report.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine/collective_library.hpp"
#include "sim/graph/task_graph.hpp"
#include "sim/scenario/evaluate.hpp"
#include "sim/scenario/scenario.hpp"

namespace shardsim::report {

/** @brief One kind of collective of a rank role: the calls that share purpose, operation, group and the library's
 *  choice of algorithm and protocol. Times per iteration, in seconds; bytes as the collective's payload M
 *  (collective_cost.hpp: the all-reduce buffer, the all-gather output, the reduce-scatter input). */
struct CollectiveRow {
  graph::Purpose purpose = graph::Purpose::kCompute;
  graph::CollectiveOp op = graph::CollectiveOp::kAllReduce;
  std::string group;  ///< the process group's name ("dp", "tp", "P"...)
  int ranks = 1;
  int nodes = 1;  ///< nodes the group spans
  core::CollectiveAlgorithm algorithm = core::CollectiveAlgorithm::kRing;
  std::optional<engine::Protocol> protocol;  ///< the library's protocol (none under alpha-beta)
  std::uint64_t calls = 0;
  double bytes = 0.0;  ///< all calls' payload
  double min_call_bytes = 0.0;
  double max_call_bytes = 0.0;
  double priced_s = 0.0;   ///< the calls' time as the library model prices them, each alone on the links
  double latency_s = 0.0;  ///< the part of priced_s that does not scale with bytes
  double paced_s = 0.0;    ///< the part of priced_s set by a paced ring's floor (0: not paced)
  double busy_s = 0.0;     ///< the calls' time in the engine's run (the SimGrid engine's includes shared links)
  /// of busy_s, what no compute of the role hid and no earlier communication or host work had claimed: the calls'
  /// part of "where the time goes"'s exposed communication
  double exposed_s = 0.0;
};

/** @brief The collectives of rank role `role` in `ev`, the most busy first. */
std::vector<CollectiveRow> collective_rows(const scenario::Scenario& s, const scenario::Evaluation& ev,
                                           std::uint16_t role);

/** @brief The terminal section: each shown role's rows (the first and last role of a pipeline, as "where the time
 *  goes" shows them). Empty when the plan issues no collective. */
std::string render_collectives(const scenario::Scenario& s, const scenario::Evaluation& ev);

/** @brief Every role's rows as JSON (seconds, bytes). */
nlohmann::ordered_json collectives_json(const scenario::Scenario& s, const scenario::Evaluation& ev);

}  // namespace shardsim::report
