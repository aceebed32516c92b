#pragma once
// The registry of the model's uncertain parameters: every number of a scenario's machine and plan that is a
// guess or a datasheet figure real runs may not reach, named once ("device.gemm_efficiency",
// "network.infiniband.bandwidth"), with its source, its unit and a plausible range. `shardsim calibrate --runs`
// fits them to measured iteration times by bounded least squares (least_squares.hpp), and the calibration file
// stores the fitted values under these names (calibration.hpp). A new knob of the model is one row in
// model_parameters.cpp.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"

namespace shardsim::validate {

struct ModelParameter {
  std::string name;    ///< "device.gemm_efficiency", "network.<level>.latency", ...
  std::string unit;    ///< "" for fractions, "x" for factors, "tiles" or "processes" for counts, "s", "B/s" or "B" (base units)
  std::string source;  ///< citation or "[guess]", from the spec the value came from
  double lower = 0.0;  ///< plausible range, absolute for this scenario's machine, always holding the current value
  double upper = 0.0;
  bool affects_time = true;  ///< false: memory only, so fitting iteration times cannot determine it
  std::function<double(const scenario::Scenario&)> get;
  std::function<void(scenario::Scenario&, double)> set;
};

/** @brief The parameters of `s`'s machine and plan that a calibration may fit, in a fixed order; ranges given
 *  relative to a value (bandwidths) are relative to the value in `s`, so call it on the uncalibrated scenario. */
std::vector<ModelParameter> model_parameters(const scenario::Scenario& s);
/** @brief One by name; nullopt if `s` has no such parameter. */
std::optional<ModelParameter> find_model_parameter(const scenario::Scenario& s, const std::string& name);

/** @brief Every parameter name some machine may have, "<level>" standing for a network level's name. */
std::vector<std::string> model_parameter_patterns();
/** @brief The unit of `name` on any machine that has it (any level name fits "<level>"); nullopt if none can. */
std::optional<std::string> model_parameter_unit(const std::string& name);
/** @brief `value` as a calibration file spells it in `unit`: "0.55", "12.5GB/s", "3us", "1GiB". */
std::string format_parameter_value(double value, const std::string& unit, int digits = 10);

}  // namespace shardsim::validate
