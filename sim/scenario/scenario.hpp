#pragma once
// Scenario: one question for shardsim — a model, a cluster and a plan (plus the engine to ask) — read from a
// strictly validated YAML file. Each section may name a built-in preset, a preset with overrides, or spell
// everything out; the model may also come from a Hugging Face config.json. Cross-checks (degrees multiply to
// the device count, heads divisible by TP, batch divisible by micro-batch x DP, the device supports the
// model's dtype) run here, so later stages only see valid input.
//
// A `sweep:` section lists key paths and values ("plan.zero_stage: [0, 1, 2, 3]"); the scenario then stands for
// the cartesian product of those variants, each validated like a file of its own.
#include <string>
#include <vector>

#include "sim/core/cluster_spec.hpp"
#include "sim/core/model_spec.hpp"
#include "sim/core/plan_spec.hpp"
#include "sim/engine/engine.hpp"
#include "sim/scenario/config_node.hpp"
#include "sim/scenario/deepspeed_config.hpp"

namespace shardsim::scenario {

/** @brief The `search:` section: which values `shardsim search` tries (empty = its defaults). */
struct SearchSettings {
  std::vector<int> tp;
  std::vector<int> pp;
  std::vector<int> micro_batch;
  std::vector<core::Recompute> recompute;
  std::vector<std::string> shard_factors;  ///< "1", "all", a network level's name, or a rank count
  bool zero_plus_plus = true;
  bool offload = false;  ///< also try offloading the optimizer to the CPU
  int top = 10;
};

struct Scenario {
  std::string name;
  std::string description;
  std::string file;
  engine::EngineKind engine = engine::EngineKind::kAnalytical;
  std::string variant;  ///< for sweep variants: "plan.zero_stage=3, cluster.nodes=16"; empty otherwise
  core::ModelSpec model;
  core::ClusterSpec cluster;
  core::PlanSpec plan;
  SearchSettings search;
  bool has_search = false;  ///< the file has a search: section
};

/** @brief A model as the `model:` section of a scenario spells it out in full (parses back to the same spec). */
std::string model_to_yaml(const core::ModelSpec& m);
/** @brief A cluster as the `cluster:` section spells it out in full (parses back to the same spec). */
std::string cluster_to_yaml(const core::ClusterSpec& c);

/** @brief Reads `path`; returns one scenario, or one per sweep variant. `plan_overrides` (e.g. from a DeepSpeed
 *  config) replace plan keys before validation; an error in one of them names its own source. Throws
 *  core::ConfigError. */
std::vector<Scenario> load_scenarios(const std::string& path, const std::vector<PlanOverride>& plan_overrides = {});
/** @brief One scenario: `base` (a scenario map without sweep: or search:) with `changes` applied in order, each a
 *  dotted key path (plan.zero_stage) taking its value or a section (plan) merging its map, as a sweep's axes do.
 *  Errors name the file and line of the value at fault. `label`, when given, receives the changes as a sweep
 *  variant's label. Throws core::ConfigError. */
Scenario parse_variant(const ConfigNode& base, const std::vector<std::pair<std::string, ConfigNode>>& changes,
                       std::string* label = nullptr);
/** @brief Parses YAML `text`; `file` names it in messages, relative paths resolve against its directory. */
std::vector<Scenario> parse_scenarios(const std::string& text, const std::string& file,
                                      const std::vector<PlanOverride>& plan_overrides = {});

}  // namespace shardsim::scenario
