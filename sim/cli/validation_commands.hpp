#pragma once
// `shardsim validate` and `shardsim calibrate` (see validation_commands.cpp).
#include <string>
#include <vector>

namespace shardsim::cli {

/** @brief `shardsim validate [SET...] [options]`; returns the exit code. Throws UsageError / ConfigError. */
int cmd_validate(const std::vector<std::string>& args);
/** @brief `shardsim calibrate ...`; returns the exit code. Throws UsageError / ConfigError. */
int cmd_calibrate(const std::vector<std::string>& args);

}  // namespace shardsim::cli
