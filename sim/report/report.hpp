#pragma once
// Reports of an evaluation: a readable terminal table and a JSON document for machines. Both are pure
// functions of their inputs with fixed-precision numbers, so the same scenario gives byte-identical output.
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/report/output_files.hpp"

#include "sim/scenario/evaluate.hpp"
#include "sim/scenario/scenario.hpp"

namespace shardsim::report {

/** @brief The full terminal report of one scenario. */
std::string render_table(const scenario::Scenario& s, const scenario::Evaluation& ev);
/** @brief One line per sweep variant: the variant, verdict, time and throughput side by side. */
std::string render_sweep(const std::vector<scenario::Scenario>& s, const std::vector<scenario::Evaluation>& ev);
/** @brief The JSON document of one scenario (numbers in base units: seconds, bytes). */
nlohmann::ordered_json to_json(const scenario::Scenario& s, const scenario::Evaluation& ev);
/** @brief Where each rank role's time went and what it sent per network level (the `roles` array of to_json). */
nlohmann::ordered_json roles_json(const scenario::Scenario& s, const scenario::Evaluation& ev);

}  // namespace shardsim::report
