#include "tests/fuzz/fuzz_entries.hpp"

#include "sim/core/errors.hpp"
#include "sim/scenario/deepspeed_config.hpp"
#include "sim/scenario/evaluate.hpp"
#include "sim/scenario/hf_config.hpp"
#include "sim/scenario/npy_file.hpp"
#include "sim/scenario/scenario.hpp"
#include "validate/calibration.hpp"
#include "validate/collective_runs.hpp"
#include "validate/validation_set.hpp"

namespace shardsim::fuzz {
namespace {

// Bad input is expected: it must say so with a ConfigError.
template <class F>
void expecting_config_errors(F&& f) {
  try {
    f();
  } catch (const core::ConfigError&) {
  }
}

constexpr const char* kScenario = "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 2}\nplan: {zero_stage: 3}\n";

}  // namespace

void scenario_yaml(const std::string& text) {
  expecting_config_errors([&] {
    auto scenarios = scenario::parse_scenarios(text, "fuzz.yaml");
    // As `shardsim run` does, the first variant (sweeps stop there: their size is the sweep's budget's business), on
    // the analytical engine: the SimGrid engine's simulation contexts switch stacks, which the fuzzer's sanitizers
    // cannot follow.
    if (!scenarios.empty()) {
      scenarios.front().engine = engine::EngineKind::kAnalytical;
      (void)scenario::evaluate(scenarios.front());
    }
  });
}

void deepspeed_config(const std::string& text) {
  expecting_config_errors([&] {
    const auto ds = scenario::parse_deepspeed_config(text, "ds_config.json");
    (void)scenario::parse_scenarios(kScenario, "s.yaml", ds.overrides);
  });
}

void hf_config(const std::string& text) {
  expecting_config_errors([&] { (void)scenario::parse_hf_config(text, "config.json"); });
}

void calibration(const std::string& text) {
  expecting_config_errors([&] { (void)validate::parse_calibration(text, "cal.yaml"); });
  expecting_config_errors([&] { (void)validate::parse_results(text, "results.yaml"); });
}

void validation_set(const std::string& text) {
  expecting_config_errors([&] { (void)validate::parse_validation_set(text, "set.yaml"); });
}

void nccl_tests(const std::string& text) {
  expecting_config_errors([&] { (void)validate::parse_collective_samples(text, "nccl.txt", graph::CollectiveOp::kAllGather, 16); });
  expecting_config_errors([&] { (void)validate::parse_collective_samples(text, "nccl.txt", graph::CollectiveOp::kAllReduce, 0); });
}

void npy_sample(const std::string& bytes) {
  expecting_config_errors([&] { (void)scenario::parse_npy_values(bytes, "sample.npy"); });
}

const std::vector<Target>& targets() {
  static const std::vector<Target> kTargets = {
      {"scenario", scenario_yaml, {"scenarios", "tests/fuzz/regressions/scenario"}},
      {"deepspeed", deepspeed_config, {"tests/data", "tests/fuzz/regressions/deepspeed"}},
      {"hf_config", hf_config, {"tests/data", "tests/fuzz/regressions/hf_config"}},
      {"calibration", calibration, {"validate/results", "tests/fuzz/regressions/calibration"}},
      {"validation_set", validation_set, {"validate/data", "tests/fuzz/regressions/validation_set"}},
      {"nccl_tests", nccl_tests, {"validate/data/collectives", "tests/fuzz/regressions/nccl_tests"}},
      {"npy", npy_sample, {"tests/fuzz/regressions/npy"}},
  };
  return kTargets;
}

const Target* find_target(std::string_view name) {
  for (const auto& t : targets()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace shardsim::fuzz
