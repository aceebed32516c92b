#pragma once
// The `cluster:` section of a scenario: a preset, a user's machine, or a preset changed key by key (device, host,
// network levels, the node's link graph, the collective library), with file:line:column errors.

#include <string>

#include "sim/core/cluster_spec.hpp"
#include "sim/scenario/config_node.hpp"

namespace shardsim::scenario {

/** @brief The cluster a scenario's `cluster:` node describes (a preset name, a preset with changes, or a machine of
 *  the user's own). Throws core::ConfigError naming the file, line, column and key of what is wrong. */
core::ClusterSpec parse_cluster(const ConfigNode& n);

/** @brief The index of `c`'s network level called `name`; an error at `at` listing the levels otherwise. */
int find_level(const ConfigNode& at, const core::ClusterSpec& c, const std::string& name);

}  // namespace shardsim::scenario
