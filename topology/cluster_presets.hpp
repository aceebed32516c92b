#pragma once
// Built-in machines (Frontier, Lassen, DGX-H100, DGX-A100, AMSP's A800 testbed, Polaris, DGX-2) as ClusterSpecs for the
// analytical engine. Every number cites its source in cluster_presets.cpp (labels as in the project's hardware
// reference: F1/F2/F3 for Frontier, S1/S2/S3 for Lassen/Summit, NVIDIA datasheets for DGX; A1/A2/D1/P1 for the
// A100 family, X1/V1 for the DGX-2, listed there) or is marked [guess] / [unverified]: those are parameters to calibrate.
#include <string>
#include <vector>

#include "sim/core/cluster_spec.hpp"

namespace shardsim::topology {

/** @brief Names of the built-in clusters in display order. */
std::vector<std::string> cluster_preset_names();
/** @brief A built-in cluster with `nodes` = 1; nullptr if unknown. */
const core::ClusterSpec* find_cluster_preset(const std::string& name);
/** @brief The built-in cluster whose device a GPU reporting `device_name` is (the name the CUDA / HIP runtime
 *  gives: "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB", ...); nullptr when none is (another variant, with
 *  other clocks or memory, is not the same device). */
const core::ClusterSpec* find_preset_for_device(const std::string& device_name);

}  // namespace shardsim::topology
