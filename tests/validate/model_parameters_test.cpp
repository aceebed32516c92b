#include "validate/model_parameters.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <set>

#include "sim/core/errors.hpp"
#include "sim/scenario/evaluate.hpp"
#include "topology/cluster_presets.hpp"
#include "validate/calibration.hpp"

namespace shardsim::validate {
namespace {

scenario::Scenario frontier() {
  return scenario::parse_scenarios("model: gpt-20b-frontier\ncluster: {preset: frontier, nodes: 4}\n"
                                   "plan: {zero_stage: 3, micro_batch: 1, global_batch: 64, recompute: full}\n",
                                   "f.yaml")
      .at(0);
}

// ZeRO-3 on DGX H100 nodes; `hooks` false: no framework host time, so that the network sets the pace.
scenario::Scenario dgx(int nodes = 2, bool hooks = true) {
  return scenario::parse_scenarios("model: llama2-7b\ncluster: {preset: dgx-h100, nodes: " + std::to_string(nodes) +
                                       (hooks ? "" : ", host: {fetch_hook: 0us, tensor_hook: 0us, module_hook: 0us, block_forward: 0us, block_backward: 0us}") +
                                       "}\nplan: {zero_stage: 3, micro_batch: 1, global_batch: 64, overlap_comm: false}\n",
                                   "d.yaml")
      .at(0);
}

const ModelParameter& named(const std::vector<ModelParameter>& ps, const std::string& name) {
  const auto it = std::find_if(ps.begin(), ps.end(), [&](const auto& p) { return p.name == name; });
  if (it == ps.end()) throw std::runtime_error("no parameter " + name);
  return *it;
}

double iteration_time(const scenario::Scenario& s) { return scenario::evaluate(s).run.iteration_time.value(); }

TEST(ModelParameters, FrontierNamesEveryLevelWithItsSource) {
  const auto s = frontier();
  const auto ps = model_parameters(s);
  std::vector<std::string> names;
  for (const auto& p : ps) names.push_back(p.name);
  const std::vector<std::string> expected = {
      "device.gemm_efficiency",   "device.gemm_efficiency_narrow", "device.gemm_efficiency_odd", "device.memory_efficiency", "device.stream_efficiency", "device.attention_efficiency", "device.attention_backward_efficiency", "device.triton_attention_efficiency", "device.triton_attention_backward_efficiency", "device.cudnn_attention_speedup",
      "device.cudnn_attention_backward_speedup", "device.attention_block_cost", "device.attention_backward_block_cost", "device.comm_compute_slowdown", "device.kernel_overhead", "host.fetch_hook", "host.tensor_hook", "host.module_hook", "host.zero_step", "host.block_forward", "host.block_backward", "host.megatron_block_forward", "host.megatron_block_backward", "host.rank_slice", "host.gather_split", "host.memory_efficiency", "host.pageable_d2h", "host.pageable_h2d", "host.page_fault", "host.staging_processes", "host.link_bandwidth",
      "network.gcd-pair.bandwidth", "network.node.bandwidth",   "network.slingshot.bandwidth",
      "network.gcd-pair.latency", "network.node.latency",     "network.slingshot.latency",
      "collectives.latency_scale", "collectives.net_latency_scale", "collectives.net_step.LL",
      "collectives.net_step.LL128", "collectives.net_step.Simple", "collectives.tree_step.LL",
      "collectives.tree_step.LL128", "collectives.tree_step.Simple", "collectives.tree_cross_group_share",
      "device.runtime_reserved",  "plan.workspace"};
  EXPECT_EQ(names, expected);
  // RCCL prices Frontier's collectives: its latency scales are parameters; under alpha-beta (Lassen) they are not.
  EXPECT_EQ(named(ps, "collectives.latency_scale").source, s.cluster.library.source);
  scenario::Scenario lassen = s;
  lassen.cluster = *topology::find_cluster_preset("lassen");
  EXPECT_FALSE(find_model_parameter(lassen, "collectives.latency_scale").has_value());

  const ModelParameter& nic = named(ps, "network.slingshot.bandwidth");
  EXPECT_EQ(nic.unit, "B/s");
  EXPECT_EQ(nic.source,
            "F1, F2 (25 GB/s NIC per 2 GCDs); 24.7 GB/s through libfabric as fitted on LUMI-G's RCCL; latency [guess]");
  EXPECT_DOUBLE_EQ(nic.lower, 2.472132199e9);  // 0.1x .. 1x of the preset's 24.7 GB/s
  EXPECT_DOUBLE_EQ(nic.upper, 24.72132199e9);
  const ModelParameter& lat = named(ps, "network.slingshot.latency");
  EXPECT_EQ(lat.unit, "s");
  EXPECT_EQ(lat.source, "[guess]");
  EXPECT_DOUBLE_EQ(lat.lower, 0.5e-6);
  EXPECT_DOUBLE_EQ(lat.upper, 100e-6);
  // Frontier's GEMM ceiling is a fit to runs on LUMI-G, its memory and attention efficiencies published measurements:
  // the source says so.
  EXPECT_EQ(named(ps, "device.gemm_efficiency").source.rfind("GEMM ceiling fitted on lumi-megatron", 0), 0u);
  EXPECT_EQ(named(ps, "device.gemm_efficiency").unit, "");
  EXPECT_DOUBLE_EQ(named(ps, "host.link_bandwidth").upper, 36e9);
  EXPECT_FALSE(named(ps, "plan.workspace").affects_time);
  EXPECT_FALSE(named(ps, "device.runtime_reserved").affects_time);
  EXPECT_TRUE(named(ps, "network.node.latency").affects_time);
  // The DGX preset's efficiencies were measured, and its device source says so.
  EXPECT_EQ(named(model_parameters(dgx()), "device.gemm_efficiency").source,
            "calibrated on an H100 SXM: validate/results/NVIDIA-H100-80GB-HBM3-2026-11-23.yaml");
}

TEST(ModelParameters, NamesAreUniqueAndStable) {
  for (const auto& s : {frontier(), dgx()}) {
    const auto a = model_parameters(s), b = model_parameters(s);
    std::set<std::string> unique;
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].name, b[i].name);
      EXPECT_TRUE(unique.insert(a[i].name).second) << a[i].name;
    }
  }
}

TEST(ModelParameters, GetReturnsWhatSetWrote) {
  for (auto s : {frontier(), dgx()}) {
    for (const auto& p : model_parameters(s)) {
      EXPECT_LT(p.lower, p.upper) << p.name;
      const double current = p.get(s);
      EXPECT_GE(current, p.lower) << p.name;
      EXPECT_LE(current, p.upper) << p.name;
      const double v = p.lower + 0.37 * (p.upper - p.lower);
      p.set(s, v);
      EXPECT_EQ(p.get(s), v) << p.name;
    }
  }
}

TEST(ModelParameters, SettingThemMovesTheSimulationTheRightWay) {
  const auto base = dgx(4, false);
  const double t0 = iteration_time(base);
  const auto ps = model_parameters(base);
  auto with = [&](const std::string& name, double factor) {
    auto s = base;
    const auto& p = named(ps, name);
    p.set(s, p.get(s) * factor);
    return s;
  };
  EXPECT_GT(iteration_time(with("device.gemm_efficiency", 0.7)), 1.1 * t0);  // slower GEMMs: a longer iteration
  EXPECT_LT(iteration_time(with("device.gemm_efficiency", 1.1)), t0);
  EXPECT_GT(iteration_time(with("device.memory_efficiency", 0.5)), t0);
  EXPECT_GT(iteration_time(with("network.infiniband.bandwidth", 0.3)), 1.1 * t0);  // ZeRO-3 with no overlap
  // The links' own latencies price collectives where no library table does (the `best` what-if, alpha-beta).
  auto best = base;
  best.plan.algorithm = core::CollectiveAlgorithm::kBest;
  auto slow_links = best;
  const auto& lat = named(ps, "network.infiniband.latency");
  lat.set(slow_links, 20.0 * lat.get(best));
  EXPECT_GT(iteration_time(slow_links), iteration_time(best));
  // Memory-only parameters leave the time alone and move the memory.
  const auto more_workspace = with("plan.workspace", 2.0);
  EXPECT_EQ(iteration_time(more_workspace), t0);
  EXPECT_DOUBLE_EQ(scenario::evaluate(more_workspace).memory.total.value() - scenario::evaluate(base).memory.total.value(),
                   base.plan.workspace.value());
  EXPECT_EQ(iteration_time(with("device.runtime_reserved", 3.0)), t0);
  // Framework hooks: once they take longer than the GPU work they precede, the host sets the pace.
  const auto hooked = dgx(4);
  auto p = named(model_parameters(hooked), "host.module_hook");
  auto slow = hooked;
  p.set(slow, 8.0 * p.get(hooked));
  EXPECT_GT(iteration_time(slow), 1.5 * iteration_time(hooked));
}

TEST(ModelParameters, RangesHoldTheSpecsOwnValueAndMissingPartsHaveNoParameter) {
  const auto s = scenario::parse_scenarios(R"(model: llama2-7b
cluster:
  name: mine
  nodes: 2
  devices_per_node: 4
  device: {name: acc, peak: {bf16: 100TFLOP/s}, hbm: 40GiB, hbm_bandwidth: 1.5TB/s, gemm_efficiency: 0.98}
  network:
    - {name: node, ranks: 4, bandwidth: 100GB/s, latency: 0.2us}
    - {name: net, ranks: all, bandwidth: 25GB/s, latency: 5us}
plan: {zero_stage: 2}
)",
                                           "mine.yaml")
                     .at(0);
  const auto ps = model_parameters(s);
  EXPECT_DOUBLE_EQ(named(ps, "device.gemm_efficiency").upper, 0.98);   // a measured value beyond the usual range
  EXPECT_DOUBLE_EQ(named(ps, "network.node.latency").lower, 0.2e-6);
  EXPECT_EQ(named(ps, "network.net.bandwidth").source, "mine.yaml");  // a user's level cites its file
  EXPECT_FALSE(find_model_parameter(s, "host.link_bandwidth").has_value());  // this cluster describes no host
  EXPECT_TRUE(find_model_parameter(s, "network.net.latency").has_value());
  EXPECT_FALSE(find_model_parameter(s, "network.slingshot.latency").has_value());
}

TEST(ModelParameters, UnitsAndSpellingsForAnyMachine) {
  EXPECT_EQ(model_parameter_unit("device.gemm_efficiency"), "");
  EXPECT_EQ(model_parameter_unit("network.any-level.latency"), "s");
  EXPECT_EQ(model_parameter_unit("network.rack.bandwidth"), "B/s");
  EXPECT_EQ(model_parameter_unit("plan.workspace"), "B");
  EXPECT_FALSE(model_parameter_unit("network..latency").has_value());
  EXPECT_FALSE(model_parameter_unit("network.rack.jitter").has_value());
  EXPECT_FALSE(model_parameter_unit("device.gemm").has_value());
  EXPECT_EQ(format_parameter_value(0.55, ""), "0.55");
  EXPECT_EQ(format_parameter_value(12.5e9, "B/s"), "12.5GB/s");
  EXPECT_EQ(format_parameter_value(3e-6, "s"), "3us");
  EXPECT_EQ(format_parameter_value(core::kGiB, "B"), "1GiB");
  EXPECT_EQ(format_parameter_value(1.62, "processes"), "1.62");
  // Every parameter of a machine prints in its unit (what `shardsim calibrate --parameters` lists).
  const auto s = dgx();
  for (const auto& p : model_parameters(s)) EXPECT_FALSE(format_parameter_value(p.get(s), p.unit).empty()) << p.name;
}

// ---------------------------------------------------------------- the calibration file's parameters: section

void expect_config_error(const std::function<void()>& f, int line, const std::string& key, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "expected a ConfigError mentioning: " << fragment;
  } catch (const core::ConfigError& e) {
    EXPECT_EQ(e.where().file, "cal.yaml") << e.what();
    EXPECT_EQ(e.where().line, line) << e.what();
    EXPECT_EQ(e.key_path(), key) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(CalibrationParameters, RoundTripAndApply) {
  Calibration c;
  c.parameters["device.gemm_efficiency"] = {0.55, 0.0125, {}};
  c.parameters["network.infiniband.bandwidth"] = {20.5e9, 0.3e9, {}};
  c.parameters["network.infiniband.latency"] = {7.25e-6, std::nullopt, {}};
  c.parameters["plan.workspace"] = {1.5 * core::kGiB, std::numeric_limits<double>::infinity(), {}};
  const std::string text = write_calibration(c);
  EXPECT_NE(text.find("network.infiniband.bandwidth: {value: 20.5GB/s, std_error: 0.3GB/s}"), std::string::npos) << text;
  EXPECT_EQ(text.find("device:"), std::string::npos) << text;  // runs only: no benchmarked device
  const Calibration back = parse_calibration(text, "cal.yaml");
  ASSERT_EQ(back.parameters.size(), 4u);
  for (const auto& [name, f] : c.parameters) {
    const FittedParameter& b = back.parameters.at(name);
    EXPECT_NEAR(b.value / f.value, 1.0, 1e-9) << name;
    EXPECT_GT(b.where.line, 0) << name;
  }
  EXPECT_NEAR(*back.parameters.at("device.gemm_efficiency").std_error, 0.0125, 1e-12);
  EXPECT_NEAR(*back.parameters.at("network.infiniband.bandwidth").std_error / 0.3e9, 1.0, 1e-9);
  EXPECT_FALSE(back.parameters.at("network.infiniband.latency").std_error.has_value());
  EXPECT_FALSE(back.parameters.at("plan.workspace").std_error.has_value());  // not identifiable: a comment

  auto s = dgx();
  apply_parameters(back, s);
  EXPECT_NEAR(s.cluster.device.gemm_efficiency, 0.55, 1e-12);
  EXPECT_NEAR(s.cluster.levels[1].link_bandwidth.value() / 20.5e9, 1.0, 1e-9);
  EXPECT_NEAR(s.cluster.levels[1].latency.value() / 7.25e-6, 1.0, 1e-9);
  EXPECT_NEAR(s.plan.workspace.value() / (1.5 * core::kGiB), 1.0, 1e-9);
}

TEST(CalibrationParameters, ShortFormAndDeviceFitsTogether) {
  const Calibration c = parse_calibration(
      "device: {name: NVIDIA H100 80GB HBM3, backend: cuda, date: d}\n"
      "copies:\n  h2d_pinned: {latency: 9us, bandwidth: 50GB/s}\n"
      "parameters:\n  device.gemm_efficiency: 0.6\n  device.attention_efficiency: 0.3\n",
      "cal.yaml");
  auto s = dgx();
  apply_to_scenario(c, s);
  EXPECT_DOUBLE_EQ(s.cluster.device.gemm_efficiency, 0.6);
  EXPECT_DOUBLE_EQ(s.cluster.device.attention_efficiency, 0.3);
  EXPECT_DOUBLE_EQ(s.cluster.host.link_bandwidth.value(), 50e9);
  EXPECT_NE(s.cluster.device.efficiency_source.find("calibrated on NVIDIA H100 80GB HBM3"), std::string::npos)
      << s.cluster.device.efficiency_source;
}

TEST(CalibrationParameters, RefusesACalibrationMeasuredOnAnotherDevice) {
  const Calibration c = parse_calibration(
      "device: {name: NVIDIA A100-SXM4-80GB, backend: cuda, date: d}\nparameters:\n  device.gemm_efficiency: 0.6\n",
      "cal.yaml");
  auto s = dgx();
  const double before = s.cluster.device.gemm_efficiency;
  try {
    apply_to_scenario(c, s);
    FAIL() << "an A100's calibration applied to an H100";
  } catch (const core::ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cal.yaml"), std::string::npos) << what;
    EXPECT_NE(what.find("NVIDIA A100-SXM4-80GB"), std::string::npos) << what;
    EXPECT_NE(what.find("dgx-a100"), std::string::npos) << what;
    EXPECT_NE(what.find("H100 SXM 80GB"), std::string::npos) << what;
  }
  EXPECT_DOUBLE_EQ(s.cluster.device.gemm_efficiency, before);  // nothing applied
}

// Parsing `yaml` as the calibration file cal.yaml.
std::function<void()> parsing(std::string yaml) {
  return [yaml] { (void)parse_calibration(yaml, "cal.yaml"); };
}

TEST(CalibrationParameters, UnknownNamesAreErrorsAtTheirLine) {
  expect_config_error(parsing("parameters:\n  device.gemm_efficiency: 0.6\n  device.gemm_eficiency: 0.5\n"), 3,
                      "parameters.device.gemm_eficiency", "did you mean 'device.gemm_efficiency'");
  expect_config_error(parsing("parameters:\n  network.slingshot.bandwith: {value: 10GB/s}\n"), 2,
                      "parameters.network.slingshot.bandwith", "did you mean 'network.slingshot.bandwidth'");
  expect_config_error(parsing("parameters:\n  network.slingshot.bandwidth: {value: 10}\n"), 2,
                      "parameters.network.slingshot.bandwidth.value", "bare number");
  expect_config_error(parsing("parameters:\n  device.gemm_efficiency: {value: 0.5, std_eror: 0.1}\n"), 2,
                      "parameters.device.gemm_efficiency.std_eror", "did you mean 'std_error'");
  expect_config_error(parsing("parameters:\n  device.gemm_efficiency: 0.5\n  device.gemm_efficiency: 0.6\n"), 3,
                      "parameters.device.gemm_efficiency", "duplicate");
  // A level the scenario's machine lacks is found when applying, at the file's line, with the alternatives.
  const Calibration c = parse_calibration("parameters:\n  device.gemm_efficiency: 0.6\n"
                                          "  network.slingshot.latency: 3us\n",
                                          "cal.yaml");
  auto s = dgx();
  const double before = s.cluster.device.gemm_efficiency;
  expect_config_error([&] { apply_parameters(c, s); }, 3, "parameters.network.slingshot.latency",
                      "cluster 'dgx-h100' has no such parameter");
  EXPECT_DOUBLE_EQ(s.cluster.device.gemm_efficiency, before);  // nothing was set
}

TEST(CalibrationParameters, ValuesOutsideTheRangeAreErrorsAtTheirLine) {
  auto s = dgx();
  const Calibration eff = parse_calibration("parameters:\n  device.gemm_efficiency: {value: 0.99}\n", "cal.yaml");
  expect_config_error([&] { apply_parameters(eff, s); }, 2, "parameters.device.gemm_efficiency",
                      "expected a value in [0.2, 0.95] on cluster 'dgx-h100', got 0.99");
  // 80 GB/s is more than the datasheet's 50 GB/s per NIC.
  const Calibration bw = parse_calibration("# fitted\nparameters:\n  network.infiniband.bandwidth: 80GB/s\n", "cal.yaml");
  expect_config_error([&] { apply_parameters(bw, s); }, 3, "parameters.network.infiniband.bandwidth",
                      "expected a value in [5GB/s, 50GB/s]");
  expect_config_error(parsing("parameters:\n  device.memory_efficiency: 1.5\n"), 2, "parameters.device.memory_efficiency",
                      "fraction");
}

}  // namespace
}  // namespace shardsim::validate
