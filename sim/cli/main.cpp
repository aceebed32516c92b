// shardsim command-line interface: run scenarios, list presets, print benchmarks.
// Exit codes: 0 success, 2 bad input (file:line:col, key, what was expected), 1 internal error.
#include <boost/program_options.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <algorithm>
#include <vector>

#include "sim/cli/bench.hpp"
#include "sim/cli/codec_error_report.hpp"
#include "sim/cli/simgrid_bench.hpp"
#include "sim/core/dtype.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/model_spec.hpp"
#include "sim/engine/simgrid_engine.hpp"
#include "sim/report/collective_report.hpp"
#include "sim/report/network_report.hpp"
#include "sim/report/report.hpp"
#include "sim/report/trace.hpp"
#include "sim/scenario/evaluate.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/npy_file.hpp"
#include "sim/scenario/text_file.hpp"
#include "sim/search/plan_search.hpp"
#include "sim/cli/collective_command.hpp"
#include "sim/cli/sweep_command.hpp"
#include "sim/cli/command_support.hpp"
#include "sim/cli/validation_commands.hpp"
#include "validate/calibration.hpp"
#include "validate/validation_runner.hpp"
#include "topology/cluster_presets.hpp"
#include "topology/link_topology.hpp"

using namespace shardsim;
using namespace shardsim::cli;

namespace {

const char* kUsage =
    "usage: shardsim <command> [options]\n"
    "\n"
    "Simulates sharded LLM training: iteration time, TFLOPS per GPU, memory per device, where the time goes.\n"
    "\n"
    "commands:\n"
    "  run SCENARIO.yaml   evaluate a scenario (or each variant of its sweep)\n"
    "  sweep SCENARIO.yaml -o DIR  every point of a sweep, in parallel, resumable, to CSV and JSON Lines\n"
    "  merge DIR... -o DIR  join the folders of a sweep's shards (sweep --shard i/N)\n"
    "  search SCENARIO.yaml  rank the plans that fit around a scenario (shard factors, ZeRO++, tp, batch)\n"
    "  validate [SET...]   predicted next to measured for published training runs (validate/data/)\n"
    "  calibrate RESULTS.yaml  fit model parameters to hardware measurements\n"
    "  models              list the built-in model presets\n"
    "  clusters            list the built-in clusters\n"
    "  topology NAME       a built-in machine link by link (--export platform.xml for SimGrid, --dot for Graphviz)\n"
    "  collective CLUSTER  one collective size by size as the cluster's library runs it (as nccl-tests prints)\n"
    "  bench               print the analytical engine's speed figures\n"
    "  --version           print the version\n"
    "\n"
    "`shardsim <command> --help` describes each command's options.\n";

// The SimGrid engine's network section (stdout, deterministic) and the simulation's cost (stderr).
void print_network(const scenario::Scenario& s, const scenario::Evaluation& ev) {
  scenario::Scenario analytical = s;
  analytical.engine = engine::EngineKind::kAnalytical;
  std::cout << report::render_network(ev, scenario::evaluate(analytical));
  std::cerr << fmt::format("simgrid engine: {:.2f} s wall, {:.0f} MB peak, {} flows\n", ev.run.network.wall_s,
                           ev.run.network.peak_rss_mb, ev.run.network.flows);
}

// The validation sets' error bands (validate/error_bands.yaml), which a prediction quotes; none when the file is
// not where the build put it.
std::vector<validate::ErrorBand> load_error_bands() {
  const std::string path = SHARDSIM_ERROR_BANDS;
  std::ifstream probe(path);
  if (!probe) return {};
  return validate::parse_error_bands(scenario::read_text_file(path, "error bands"), path);
}

// The command's scenarios, the ZeRO part of their plan from --deepspeed when given (its keys shardsim does not
// model named on stderr).
std::vector<scenario::Scenario> load_with_deepspeed(const po::variables_map& vm) {
  const std::string path = vm["scenario"].as<std::string>();
  if (!vm.count("deepspeed")) return scenario::load_scenarios(path);
  const auto ds = scenario::load_deepspeed_config(vm["deepspeed"].as<std::string>());
  for (const auto& key : ds.ignored) {
    std::cerr << fmt::format("shardsim: note: {}: {} is not modelled; ignored\n", vm["deepspeed"].as<std::string>(), key);
  }
  return scenario::load_scenarios_with_deepspeed(path, ds);
}

// The one variant of a sweep that `wanted` names: its 1-based number as `run` lists the sweep, its label, or a part
// of exactly one label; a usage error listing the variants otherwise.
scenario::Scenario select_variant(const std::vector<scenario::Scenario>& variants, const std::string& wanted) {
  if (variants.empty() || variants.front().variant.empty()) {
    throw UsageError("--variant: the scenario has no sweep: section");
  }
  auto listing = [&] {
    std::string o;
    for (std::size_t i = 0; i < variants.size(); ++i) o += fmt::format("\n  {}  {}", i + 1, variants[i].variant);
    return o;
  };
  for (const auto& v : variants) {
    if (v.variant == wanted) return v;
  }
  if (!wanted.empty() && std::all_of(wanted.begin(), wanted.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    const auto n = wanted.size() > 9 ? 0ULL : std::stoull(wanted);
    if (n >= 1 && n <= variants.size()) return variants[n - 1];
    throw UsageError(
        fmt::format("--variant {}: the sweep has variants 1 to {}:{}", wanted, variants.size(), listing()));
  }
  std::vector<std::size_t> hits;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    if (!wanted.empty() && variants[i].variant.find(wanted) != std::string::npos) hits.push_back(i);
  }
  if (hits.size() == 1) return variants[hits[0]];
  throw UsageError(fmt::format("--variant '{}': {} of the sweep's variants; give its number or more of its label:{}",
                               wanted, hits.empty() ? "names none" : fmt::format("names {}", hits.size()), listing()));
}

int cmd_run(const std::vector<std::string>& args) {
  po::options_description opts("shardsim run SCENARIO.yaml [options]\n\nEvaluates one scenario (or every variant of its "
                               "sweep) and prints a report.\n\noptions");
  opts.add_options()("help,h", "show this help")("scenario", po::value<std::string>(), "scenario YAML file")(
      "json", po::value<std::string>(), "also write the results as JSON to this file")(
      "engine", po::value<std::string>(), "engine to use: analytical or simgrid (default: the scenario's engine key)")(
      "topology", po::value<std::string>(), "simgrid engine platform: auto (link by link for built-in machines), links, levels, ideal")(
      "details", "for a sweep, print the full report of every variant")(
      "deepspeed", po::value<std::string>(), "take the ZeRO part of the plan from this DeepSpeed config (ds_config.json)")(
      "calibration", po::value<std::string>(), "use the fitted device numbers of this calibration file (shardsim calibrate)")(
      "trace", po::value<std::string>(), "write the iteration as a Chrome/Perfetto trace (a scenario without sweep)")(
      "memory-csv", po::value<std::string>(), "write memory over time per rank role as CSV (a scenario without sweep)")(
      "host-link-csv", po::value<std::string>(),
      "write every host <-> device copy (direction, phase, start, end, bytes) as CSV (a scenario without sweep)")(
      "variant", po::value<std::string>(),
      "evaluate only this variant of the sweep: its number (1 = the first the sweep prints) or its label, whole or "
      "a part that names one (then --trace and the CSVs take it)")(
      "compression-sample", po::value<std::string>(),
      "also measure the plan's compression error on this tensor (.npy of float16/32/64 values)")(
      "collectives",
      "also list the iteration's collectives call by call: how many calls of each kind, their sizes, the library's "
      "algorithm and protocol, the price per call and its latency share (in the report and in --json)");
  const auto parsed = parse_command(args, opts, "scenario");
  if (!parsed) return kOk;
  const auto& vm = *parsed;
  if (!vm.count("scenario")) throw UsageError("missing the scenario file (shardsim run SCENARIO.yaml)");
  const bool engine_given = vm.count("engine") > 0;
  const engine::EngineKind engine_kind =
      engine_given ? engine_of(vm["engine"].as<std::string>()) : engine::EngineKind::kAnalytical;
  engine::EngineOptions engine_options;
  if (vm.count("topology")) engine_options.topology = topology::parse_topology_kind(vm["topology"].as<std::string>(), "--topology");
  auto scenarios = load_with_deepspeed(vm);
  if (vm.count("calibration")) {
    const std::string path = vm["calibration"].as<std::string>();
    const auto cal = validate::load_calibration(path);
    for (auto& s : scenarios) validate::apply_to_scenario(cal, s);
  }
  if (vm.count("variant")) scenarios = {select_variant(scenarios, vm["variant"].as<std::string>())};
  if ((vm.count("trace") || vm.count("memory-csv") || vm.count("host-link-csv")) && scenarios.size() != 1) {
    throw UsageError("--trace, --memory-csv and --host-link-csv take a scenario without a sweep: section, or one of "
                     "its variants (--variant)");
  }
  if (engine_given && engine_kind == engine::EngineKind::kSimGrid) {
    for (const auto& s : scenarios) {
      if (const auto why = engine::simgrid_refusal(s.cluster)) {
        throw UsageError(fmt::format("--engine simgrid for {}: {}", s.name, *why));
      }
    }
  }
  const auto bands = load_error_bands();
  std::vector<scenario::Evaluation> evals;
  evals.reserve(scenarios.size());
  // Long runs (the SimGrid engine at scale, long sweeps of variants) say how far they are after a second.
  ProgressLine progress("run", 1.0);
  for (std::size_t v = 0; v < scenarios.size(); ++v) {
    auto& s = scenarios[v];
    if (engine_given) s.engine = engine_kind;
    const double n = static_cast<double>(scenarios.size());
    engine_options.progress = [&, v, n](std::size_t done, std::size_t total) {
      const double here = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
      progress.update((static_cast<double>(v) + here) / n,
                      n > 1 ? fmt::format("variant {}/{}, {}/{} tasks simulated", v + 1, scenarios.size(), done, total)
                            : fmt::format("{}/{} tasks simulated", done, total));
    };
    evals.push_back(scenario::evaluate(s, engine_options));
    progress.update(static_cast<double>(v + 1) / n, fmt::format("{}/{} variants", v + 1, scenarios.size()));
  }
  progress.finish(fmt::format("{} of {} evaluated", scenarios.size(), scenarios.size()));
  // What each compressed plan's codecs do to the values, next to its speed-up over the plan uncompressed.
  std::vector<float> user_sample;
  std::string user_name;
  if (vm.count("compression-sample")) {
    const std::string path = vm["compression-sample"].as<std::string>();
    user_sample = scenario::read_npy_values(path);
    user_name = std::filesystem::path(path).filename().string();
  }
  std::vector<std::vector<CodecErrorRow>> codec_rows(scenarios.size());
  std::vector<double> uncompressed_s(scenarios.size(), 0.0);
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    codec_rows[i] = codec_error_rows(scenarios[i], user_sample.empty() ? nullptr : &user_sample, user_name);
    if (!codec_rows[i].empty()) {
      uncompressed_s[i] = scenario::evaluate(without_compression(scenarios[i]), engine_options).run.iteration_time.value();
    }
  }
  if (!user_sample.empty() && std::all_of(codec_rows.begin(), codec_rows.end(), [](const auto& r) { return r.empty(); })) {
    throw UsageError("--compression-sample: the plan compresses nothing (plan.compression, ZeRO++'s quantisation)");
  }
  // Everything computed: now the outputs, all or none.
  report::OutputFiles outputs;
  if (vm.count("json")) {
    // One result per scenario or sweep variant, always in an array.
    auto j = json_document<nlohmann::ordered_json>("run");
    j["results"] = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < scenarios.size(); ++i) {
      j["results"].push_back(report::to_json(scenarios[i], evals[i]));
      j["results"].back()["validation"] = validate::describe_validation(scenarios[i], bands);
      if (vm.count("collectives")) j["results"].back()["collectives"] = report::collectives_json(scenarios[i], evals[i]);
      if (!codec_rows[i].empty()) {
        j["results"].back()["compression_error"] =
            codec_errors_json(codec_rows[i], evals[i].run.iteration_time.value(), uncompressed_s[i]);
      }
    }
    outputs.add(vm["json"].as<std::string>(), j.dump(2) + "\n");
  }
  if (vm.count("trace")) outputs.add(vm["trace"].as<std::string>(), report::chrome_trace(evals[0]));
  if (vm.count("memory-csv")) outputs.add(vm["memory-csv"].as<std::string>(), report::memory_csv(evals[0]));
  if (vm.count("host-link-csv")) outputs.add(vm["host-link-csv"].as<std::string>(), report::host_link_csv(evals[0]));
  outputs.commit();
  if (scenarios.size() == 1) {
    std::cout << report::render_table(scenarios[0], evals[0]);
    if (vm.count("collectives")) std::cout << report::render_collectives(scenarios[0], evals[0]);
    std::cout << render_codec_errors(codec_rows[0], evals[0].run.iteration_time.value(), uncompressed_s[0]);
    std::cout << "\nvalidation  " << validate::describe_validation(scenarios[0], bands) << "\n";
    if (scenarios[0].engine == engine::EngineKind::kSimGrid) print_network(scenarios[0], evals[0]);
  } else {
    std::cout << report::render_sweep(scenarios, evals);
    std::string codecs;
    for (std::size_t i = 0; i < scenarios.size(); ++i) {
      codecs += render_codec_error_summary(scenarios[i].variant, codec_rows[i], evals[i].run.iteration_time.value(),
                                           uncompressed_s[i]);
    }
    if (!codecs.empty()) {
      std::cout << "\ncompression  speed-up over the same plan uncompressed; relative rms error of the values after one "
                   "round trip, and of the sum where the collective reduces (shardsim's codecs, representative "
                   "tensors; run one variant for the table)\n"
                << codecs;
    }
    std::vector<std::string> seen;
    for (const auto& v : scenarios) {
      const std::string line = validate::describe_validation(v, bands);
      if (std::find(seen.begin(), seen.end(), line) != seen.end()) continue;
      std::cout << (seen.empty() ? "\nvalidation  " : "            ") << line << "\n";
      seen.push_back(line);
    }
    if (std::any_of(scenarios.begin(), scenarios.end(),
                    [](const auto& v) { return v.engine == engine::EngineKind::kSimGrid; })) {
      std::vector<scenario::Evaluation> analytical;
      for (auto v : scenarios) {
        v.engine = engine::EngineKind::kAnalytical;
        analytical.push_back(scenario::evaluate(v));
      }
      std::cout << report::render_network_sweep(scenarios, evals, analytical);
    }
    if (vm.count("details")) {
      for (std::size_t i = 0; i < scenarios.size(); ++i) {
        std::cout << "\n" << report::render_table(scenarios[i], evals[i]);
        if (vm.count("collectives")) std::cout << report::render_collectives(scenarios[i], evals[i]);
      }
    } else if (vm.count("collectives")) {
      std::cout << "\n--collectives: each variant's table with --details, or one variant with --variant (and in --json)\n";
    }
  }
  return kOk;
}

int cmd_topology(const std::vector<std::string>& args) {
  po::options_description opts("shardsim topology NAME [options]\n\nShows a built-in machine link by link (every link with "
                               "its source or [guess]); writes it as a SimGrid platform or one node as Graphviz.\n\noptions");
  opts.add_options()("help,h", "show this help")("name", po::value<std::string>(), "frontier, lassen, dgx-h100, or a scenario file (its cluster)")(
      "nodes", po::value<int>()->default_value(1), "nodes in the job (a scenario file: its own unless given)")(
      "kind", po::value<std::string>()->default_value("links"), "links (link by link), levels or ideal (from the network levels)")(
      "export", po::value<std::string>(), "write the SimGrid platform XML here")(
      "dot", po::value<std::string>(), "write one node as Graphviz here");
  const auto parsed = parse_command(args, opts, "name");
  if (!parsed) return kOk;
  const auto& vm = *parsed;
  if (!vm.count("name")) throw UsageError("missing the machine (shardsim topology NAME)");
  const std::string name = vm["name"].as<std::string>();
  core::ClusterSpec c;
  const bool file = name.size() > 5 && (name.ends_with(".yaml") || name.ends_with(".yml"));
  if (file) {
    // A scenario's cluster: its own node graph and fabric (cluster.topology) or a preset, at its node count.
    const auto scenarios = scenario::load_scenarios(name);
    c = scenarios.front().cluster;
    if (!vm["nodes"].defaulted()) c.nodes = vm["nodes"].as<int>();
  } else {
    const auto* preset = topology::find_cluster_preset(name);
    if (!preset) throw UsageError(fmt::format("unknown cluster '{}'", name));
    c = *preset;
    c.nodes = vm["nodes"].as<int>();
  }
  const auto topo = topology::LinkTopology::build(c, topology::parse_topology_kind(vm["kind"].as<std::string>(), "--kind"));
  topo.validate();
  report::OutputFiles outputs;
  if (vm.count("export")) outputs.add(vm["export"].as<std::string>(), topo.to_simgrid_xml());
  if (vm.count("dot")) outputs.add(vm["dot"].as<std::string>(), topo.node_to_dot());
  outputs.commit();
  std::cout << topo.describe();
  return kOk;
}

int cmd_search(const std::vector<std::string>& args) {
  po::options_description opts("shardsim search SCENARIO.yaml [options]\n\nEnumerates plans around the scenario (P/G/OS "
                               "shard factors, ZeRO++ switches, tp, micro-batch, recomputation; narrowed by its search: "
                               "section), drops those that do not fit, ranks the rest by iteration time.\n\noptions");
  opts.add_options()("help,h", "show this help")("scenario", po::value<std::string>(), "scenario YAML file")(
      "top", po::value<int>(), "how many plans to list (default: the scenario's search.top, else 10)")(
      "threads", po::value<int>()->default_value(0), "worker threads (0: one per core)")(
      "json", po::value<std::string>(), "also write the ranking as JSON to this file")(
      "deepspeed", po::value<std::string>(),
      "search around the plan of this DeepSpeed config (ds_config.json) instead of the scenario's")(
      "emit-scenario", po::value<std::string>(),
      "write the winning plan as a scenario file that runs as is (the scenario's model and cluster, the winner's plan)")(
      "emit-deepspeed", po::value<std::string>(),
      "write the winning plan's ZeRO part as a DeepSpeed config (ds_config.json): the best listed plan DeepSpeed has "
      "where the winner is an AMSP layout or another framework's")(
      "memory-margin", po::value<std::string>(),
      "memory each plan must leave free per device (default: the scenario's search.memory_margin, else 2 GiB)")(
      "rescore", po::value<std::string>(), "simgrid: run the top plans again on the SimGrid engine and re-rank them");
  const auto parsed = parse_command(args, opts, "scenario");
  if (!parsed) return kOk;
  const auto& vm = *parsed;
  if (!vm.count("scenario")) throw UsageError("missing the scenario file (shardsim search SCENARIO.yaml)");
  const auto scenarios = load_with_deepspeed(vm);
  if (scenarios.size() != 1) throw UsageError("search takes a scenario without a sweep: section");
  const auto& base = scenarios[0];
  const int top = vm.count("top") ? vm["top"].as<int>() : base.search.top;
  if (top < 1) throw UsageError("--top must be at least 1");
  if (vm.count("rescore") && vm["rescore"].as<std::string>() != "simgrid") {
    throw UsageError(fmt::format("--rescore takes 'simgrid' (got '{}')", vm["rescore"].as<std::string>()));
  }
  auto space = search::default_space(base);
  if (vm.count("memory-margin")) space.memory_margin = size_option("--memory-margin", vm["memory-margin"].as<std::string>());
  ProgressLine progress("search", 1.0);
  const auto result = search::search(base, space, top, thread_count(vm), [&](std::size_t done, std::size_t total) {
    progress.update(static_cast<double>(done) / static_cast<double>(total), fmt::format("{}/{} plans", done, total));
  });
  progress.finish("ranked");
  const std::string rescored = vm.count("rescore") ? search::rescore_on_simgrid(result) : std::string();
  report::OutputFiles outputs;  // --json, --emit-deepspeed and --emit-scenario: all or none
  if (vm.count("json")) {
    auto j = json_document<nlohmann::ordered_json>("search");
    j["scenario"] = base.name;
    j["plans"] = result.feasible + result.infeasible;
    j["feasible"] = result.feasible;
    j["memory_margin_bytes"] = result.memory_margin.value();
    j["ranking"] = nlohmann::ordered_json::array();
    for (const auto& k : result.best) {
      auto row = report::to_json(k.scenario, k.evaluation);
      // Near-identical plans listed under this one (other ZeRO++ switches or offload, within search.group_within).
      row["similar"] = nlohmann::ordered_json::array();
      for (const auto& x : k.similar) {
        row["similar"].push_back({{"strategy", x.strategy}, {"iteration_time_s", x.iteration_time_s}});
      }
      j["ranking"].push_back(row);
    }
    j["group_within"] = space.group_within;
    outputs.add(vm["json"].as<std::string>(), j.dump(2) + "\n");
  }
  // No plan fits: the winner's files cannot be written (the search's own JSON can: an empty ranking is a result).
  if (result.best.empty() && (vm.count("emit-deepspeed") || vm.count("emit-scenario"))) {
    outputs.commit();
    std::cout << search::render_search(base, result) << rescored;
    for (const char* option : {"emit-deepspeed", "emit-scenario"}) {
      if (vm.count(option)) {
        std::cerr << fmt::format("shardsim: no plan fits, so none was written to {}\n", vm[option].as<std::string>());
      }
    }
    return 1;
  }
  // The DeepSpeed config is made before any file is written: a refusal leaves nothing half-way.
  std::optional<scenario::DeepSpeedExport> ds_out;
  if (vm.count("emit-deepspeed")) {
    // The best listed plan that DeepSpeed has: the winner itself unless that is an AMSP layout or another framework.
    std::string first_refusal;
    for (std::size_t i = 0; i < result.best.size() && !ds_out; ++i) {
      auto e = scenario::deepspeed_config_of(result.best[i].scenario);
      if (e.refusal.empty()) {
        if (i > 0) {
          e.notes.insert(e.notes.begin(),
                         fmt::format("the winner ({}) has no DeepSpeed config ({}); wrote #{} ({}, {:.4g} s per iteration "
                                     "against {:.4g} s), the best listed plan that does",
                                     result.best[0].evaluation.strategy, first_refusal, i + 1,
                                     result.best[i].evaluation.strategy,
                                     result.best[i].evaluation.run.iteration_time.value(),
                                     result.best[0].evaluation.run.iteration_time.value()));
        }
        ds_out = std::move(e);
      } else if (i == 0) {
        first_refusal = e.refusal;
      }
    }
    if (!ds_out) {
      throw UsageError(fmt::format("--emit-deepspeed: none of the {} plans listed has a DeepSpeed config (the winner: "
                                   "{}); --emit-scenario writes the winner as a scenario, --top lists more plans",
                                   result.best.size(), first_refusal));
    }
  }
  if (ds_out) {
    outputs.add(vm["emit-deepspeed"].as<std::string>(), ds_out->json);
    for (const auto& n : ds_out->notes) std::cerr << "shardsim: note: " << n << "\n";
  }
  if (vm.count("emit-scenario")) {
    const std::string out = vm["emit-scenario"].as<std::string>();
    const auto& win = result.best.front().scenario;
    outputs.add(out, fmt::format("# shardsim search's winner for {} ({}): {:.4g} s per iteration\n",
                                               base.name, result.best.front().evaluation.strategy,
                                               result.best.front().evaluation.run.iteration_time.value()) +
                                       scenario::scenario_with_plan(vm["scenario"].as<std::string>(), win.plan,
                                                                    win.cluster, base.name + "-best"));
  }
  outputs.commit();
  std::cout << search::render_search(base, result) << rescored;
  // Timing goes to stderr so that stdout stays byte-identical between runs.
  std::cerr << fmt::format("searched {} plans in {:.2f} s ({:.0f} plans/s)\n", result.feasible + result.infeasible,
                           result.wall_s, (result.feasible + result.infeasible) / result.wall_s);
  return kOk;
}

int cmd_models(const std::vector<std::string>& args) {
  po::options_description opts("shardsim models [--show NAME]\n\nLists the built-in model presets; --show prints one "
                               "as a scenario's model: section to copy and edit.\n\noptions");
  opts.add_options()("help,h", "show this help")("show", po::value<std::string>(), "print this model as YAML");
  const auto parsed = parse_command(args, opts);
  if (!parsed) return kOk;
  const auto& vm = *parsed;
  if (vm.count("show")) {
    const auto* m = core::find_model_preset(vm["show"].as<std::string>());
    if (!m) throw UsageError(fmt::format("unknown model '{}'", vm["show"].as<std::string>()));
    std::cout << "model:\n";
    std::istringstream lines(scenario::model_to_yaml(*m));
    for (std::string line; std::getline(lines, line);) std::cout << "  " << line << "\n";
    return kOk;
  }
  std::cout << fmt::format("{:<18}{:>10}{:>8}{:>8}{:>7}{:>5}{:>8}{:>8}{:>7}{:>6}  {}\n", "name", "params", "layers",
                           "hidden", "heads", "kv", "ffn", "vocab", "seq", "dtype", "source");
  for (const auto& name : core::model_preset_names()) {
    const auto* m = core::find_model_preset(name);
    std::cout << fmt::format("{:<18}{:>9.2f}B{:>8}{:>8}{:>7}{:>5}{:>8}{:>8}{:>7}{:>6}  {}\n", m->name,
                             m->total_params() / 1e9, m->layers, m->hidden, m->heads, m->kv_heads, m->ffn_hidden,
                             m->vocab, m->seq_len, core::dtype_name(m->param_dtype), m->source);
  }
  return kOk;
}

int cmd_clusters(const std::vector<std::string>& args) {
  po::options_description opts("shardsim clusters [--show NAME]\n\nLists the built-in clusters and their network "
                               "levels; --show prints one as a scenario's cluster: section to copy and edit.\n\noptions");
  opts.add_options()("help,h", "show this help")("show", po::value<std::string>(), "print this cluster as YAML");
  const auto parsed = parse_command(args, opts);
  if (!parsed) return kOk;
  const auto& vm = *parsed;
  if (vm.count("show")) {
    const auto* c = topology::find_cluster_preset(vm["show"].as<std::string>());
    if (!c) throw UsageError(fmt::format("unknown cluster '{}'", vm["show"].as<std::string>()));
    std::cout << "cluster:\n";
    std::istringstream lines(scenario::cluster_to_yaml(*c));
    for (std::string line; std::getline(lines, line);) std::cout << "  " << line << "\n";
    return kOk;
  }
  for (const auto& name : topology::cluster_preset_names()) {
    const auto* c = topology::find_cluster_preset(name);
    std::cout << fmt::format("{}: {} x {} per node, {:.0f} GiB HBM at {:.0f} GB/s, {}\n", c->name,
                             c->devices_per_node, c->device.name, c->device.hbm.value() / core::kGiB,
                             c->device.hbm_bandwidth.value() / 1e9,
                             c->max_nodes > 0 ? fmt::format("max {} nodes", c->max_nodes)
                                              : std::string("any number of nodes (built to order)"));
    for (const auto& l : c->levels) {
      std::cout << fmt::format("  level {:<12} {:>8} ranks  {:>7.1f} GB/s per link, shared by {}  ({:.1f} GB/s per "
                               "rank)  latency {:.1f} us{}  [{}]\n",
                               l.name, l.domain_ranks, l.link_bandwidth.value() / 1e9, l.shared_by,
                               l.per_rank_bandwidth().value() / 1e9, l.latency.value() * 1e6,
                               l.group_nodes > 0 ? fmt::format("  groups of {} nodes", l.group_nodes) : std::string(),
                               l.source);
    }
  }
  return kOk;
}

int cmd_bench(const std::vector<std::string>& args) {
  po::options_description opts("shardsim bench [options]\n\nPrints the analytical engine's speed figures.\n\noptions");
  opts.add_options()("help,h", "show this help")("seconds", po::value<double>()->default_value(2.0),
                                                 "time to spend on each figure")(
      "simgrid", "print the SimGrid engine's scale curve instead (GPT-20B ZeRO-3 on Frontier, 8 GCDs up)")(
      "max-gcds", po::value<int>()->default_value(75264), "largest job of the SimGrid scale curve (up to the full Frontier, 75,264 GCDs)");
  const auto parsed = parse_command(args, opts);
  if (!parsed) return kOk;
  const auto& vm = *parsed;
  if (vm.count("simgrid")) {
    cli::run_simgrid_benchmarks(std::cout, vm["max-gcds"].as<int>());
    return kOk;
  }
  cli::run_benchmarks(std::cout, vm["seconds"].as<double>());
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      std::cout << kUsage;
      return args.empty() ? kBadInput : kOk;
    }
    if (args[0] == "--version" || args[0] == "version") {
      std::cout << "shardsim " << SHARDSIM_VERSION << "\n";
      return kOk;
    }
    const std::string cmd = args[0];
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (cmd == "run") return cmd_run(rest);
    if (cmd == "search") return cmd_search(rest);
    if (cmd == "sweep") return cmd_sweep(rest);
    if (cmd == "merge") return cmd_merge(rest);
    if (cmd == "calibrate") return cmd_calibrate(rest);
    if (cmd == "validate") return cmd_validate(rest);
    if (cmd == "models") return cmd_models(rest);
    if (cmd == "clusters") return cmd_clusters(rest);
    if (cmd == "topology") return cmd_topology(rest);
    if (cmd == "collective") return cmd_collective(rest);
    if (cmd == "bench") return cmd_bench(rest);
    throw UsageError(fmt::format("unknown command '{}'", cmd));
  } catch (const UsageError& e) {
    std::cerr << "shardsim: " << e.what() << "\n\n" << kUsage;
    return kBadInput;
  } catch (const core::ConfigError& e) {
    std::cerr << "shardsim: error: " << e.what() << "\n";
    return kBadInput;
  } catch (const report::OutputError& e) {
    std::cerr << "shardsim: error: " << e.what() << "\n";
    return kBadInput;
  } catch (const core::InternalError& e) {
    std::cerr << "shardsim: " << e.what() << "\n";
    return kInternal;
  } catch (const std::exception& e) {
    std::cerr << "shardsim: error: " << e.what() << "\n";
    return kInternal;
  }
}
