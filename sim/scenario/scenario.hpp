#pragma once
// Scenario: one question for shardsim — a model, a cluster and a plan (plus the engine to ask) — read from a
// strictly validated YAML file. Each section may name a built-in preset, a preset with overrides, or spell
// everything out; the model may also come from a Hugging Face config.json. Cross-checks (degrees multiply to
// the device count, heads divisible by TP, batch divisible by micro-batch x DP, the device supports the
// model's dtype) run here, so later stages only see valid input.
//
// A `sweep:` section lists key paths and values ("plan.zero_stage: [0, 1, 2, 3]"); the scenario then stands for
// the cartesian product of those variants, each validated like a file of its own.
#include <optional>
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
  /// memory a plan must leave free on each device to count as fitting: the memory model is an estimate, and a
  /// plan at the out-of-memory cliff is not one to run (search.memory_margin, --memory-margin)
  core::Bytes memory_margin{kDefaultMemoryMargin};
  static constexpr double kDefaultMemoryMargin = 2.0 * core::kGiB;
  /// plans of the same shard layout, parallelism, micro-batch and recomputation that differ only in ZeRO++
  /// switches or offload and run within this fraction of the fastest of them are listed as one (search.group_within)
  double group_within = kDefaultGroupWithin;
  static constexpr double kDefaultGroupWithin = 0.01;
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
/** @brief A resolved plan as the `plan:` section spells it (on `cluster`, whose level names it may use): every
 *  setting explicit, so that it parses back to the same plan on that cluster. */
std::string plan_to_yaml(const core::PlanSpec& p, const core::ClusterSpec& cluster);
/** @brief The scenario file `path` with its plan replaced by `plan` and its name by `name`, as YAML text that runs
 *  as is from `out_dir` (a Hugging Face config's relative path made absolute; any sweep: section dropped). Throws
 *  core::ConfigError for a file that does not read. */
std::string scenario_with_plan(const std::string& path, const core::PlanSpec& plan, const core::ClusterSpec& cluster,
                               const std::string& name);

/** @brief load_scenarios with the plan from a DeepSpeed config: its overrides, its "auto" values filled in from the
 *  scenario as the Hugging Face Trainer fills them, then its gradient accumulation and precision checked against
 *  each scenario (a conflict is a core::ConfigError naming the DeepSpeed key). */
std::vector<Scenario> load_scenarios_with_deepspeed(const std::string& path, const DeepSpeedPlan& ds);

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
/** @brief The scenario parse_variant(base, changes) reads, as the YAML text of a scenario file named `name` that runs
 *  as is from anywhere (files the base names relative to its own, a Hugging Face config or a machine file, made
 *  absolute). Throws core::ConfigError for a change parse_variant would refuse. */
std::string variant_yaml(const ConfigNode& base, const std::vector<std::pair<std::string, ConfigNode>>& changes,
                         const std::string& name);
/// The most points a sweep may have (the product of its axes' lengths): checked before any point is made.
inline constexpr double kMaxSweepPoints = 1e6;

/** @brief One point of a sweep: its scenario, or why it is not one (a value out of range, a plan the model
 *  refuses), with the file and line of the value at fault. */
struct SweepPoint {
  std::size_t index = 0;
  std::string variant;  ///< the axes' values at this point ("" without a sweep:)
  std::optional<Scenario> scenario;
  std::string error;  ///< set when `scenario` is not
};

/** @brief A scenario file's points, made one at a time (the cartesian product of its sweep: axes, first key
 *  outermost; a `zip:` map of keys is one axis whose lists advance together; `exclude:` / `include:` lists of
 *  {key: value} maps drop the points that match one / keep only those; one point without sweep:). The file's own
 *  structure is checked when the plan is made (throws core::ConfigError); a point's values when the point is. */
class SweepPlan {
 public:
  /** @brief `text`, when given, is the file's text that `root` was parsed from: each point is made from it again,
   *  so that its errors name the line of the value at fault (a copy of the parsed tree loses the lines). */
  SweepPlan(const ConfigNode& root, const std::string& file, std::optional<std::string> text = std::nullopt);
  [[nodiscard]] std::size_t size() const;
  /** @brief Point `index` (< size()); throws core::ConfigError when its values do not make a scenario. */
  [[nodiscard]] SweepPoint point(std::size_t index) const;
  /** @brief The same, with the error in the point instead of thrown. */
  [[nodiscard]] SweepPoint try_point(std::size_t index) const;

 private:
  /// one axis of the product: one key, or a zip: of keys whose lists (of equal length) advance together
  struct Axis {
    std::vector<std::string> keys;
    std::vector<std::vector<ConfigNode>> values;  ///< per key
  };
  [[nodiscard]] YAML::Node fresh_copy() const;
  [[nodiscard]] std::size_t full_size() const;
  [[nodiscard]] std::vector<std::size_t> digits(std::size_t full_index) const;
  std::string apply_point(YAML::Node& copy, std::size_t index) const;
  ConfigNode root_;
  std::string file_;
  std::optional<std::string> text_;
  std::vector<Axis> axes_;
  std::optional<std::vector<std::size_t>> kept_;  ///< with include/exclude: the points kept, by full index
};
/** @brief The points of the scenario file at `path`. Throws core::ConfigError. */
SweepPlan load_sweep(const std::string& path);

/** @brief Parses YAML `text`; `file` names it in messages, relative paths resolve against its directory. */
std::vector<Scenario> parse_scenarios(const std::string& text, const std::string& file,
                                      const std::vector<PlanOverride>& plan_overrides = {});

}  // namespace shardsim::scenario
