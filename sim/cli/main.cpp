// shardsim command-line interface: run scenarios, list presets, print benchmarks.
// Exit codes: 0 success, 2 bad input (file:line:col, key, what was expected), 1 internal error.
#include <boost/program_options.hpp>
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <algorithm>
#include <vector>

#include "sim/cli/bench.hpp"
#include "sim/cli/simgrid_bench.hpp"
#include "sim/core/dtype.hpp"
#include "sim/core/errors.hpp"
#include "sim/core/model_spec.hpp"
#include "sim/report/network_report.hpp"
#include "sim/report/report.hpp"
#include "sim/report/trace.hpp"
#include "sim/scenario/evaluate.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/text_file.hpp"
#include "sim/search/plan_search.hpp"
#include "validate/calibration.hpp"
#include "validate/collective_runs.hpp"
#include "validate/model_parameters.hpp"
#include "validate/run_fit.hpp"
#include "validate/validation_runner.hpp"
#include "validate/validation_set.hpp"
#include "topology/cluster_presets.hpp"
#include "topology/link_topology.hpp"

namespace po = boost::program_options;
using namespace shardsim;

namespace {

constexpr int kOk = 0;
constexpr int kInternal = 1;
constexpr int kBadInput = 2;

const char* kUsage =
    "usage: shardsim <command> [options]\n"
    "\n"
    "Simulates sharded LLM training: iteration time, TFLOPS per GPU, memory per device, where the time goes.\n"
    "\n"
    "commands:\n"
    "  run SCENARIO.yaml   evaluate a scenario (or each variant of its sweep)\n"
    "  search SCENARIO.yaml  rank the plans that fit around a scenario (shard factors, ZeRO++, tp, batch)\n"
    "  validate [SET...]   predicted next to measured for published training runs (validate/data/)\n"
    "  calibrate RESULTS.yaml  fit model parameters to hardware measurements\n"
    "  models              list the built-in model presets\n"
    "  clusters            list the built-in clusters\n"
    "  topology NAME       a built-in machine link by link (--export platform.xml for SimGrid, --dot for Graphviz)\n"
    "  bench               print the analytical engine's speed figures\n"
    "\n"
    "`shardsim <command> --help` describes each command's options.\n";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

po::variables_map parse(const std::vector<std::string>& args, const po::options_description& opts,
                        const po::positional_options_description& pos) {
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return vm;
}

// Parses a command's options (with at most one positional argument); prints the command's help and returns
// nothing when --help was given.
std::optional<po::variables_map> parse_command(const std::vector<std::string>& args, const po::options_description& opts,
                                               const char* positional = nullptr) {
  po::positional_options_description pos;
  if (positional) pos.add(positional, 1);
  auto vm = parse(args, opts, pos);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return std::nullopt;
  }
  return vm;
}

// The SimGrid engine's network section (stdout, deterministic) and the simulation's cost (stderr).
void print_network(const scenario::Scenario& s, const scenario::Evaluation& ev) {
  scenario::Scenario analytical = s;
  analytical.engine = "analytical";
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
      "memory-csv", po::value<std::string>(), "write memory over time per rank role as CSV (a scenario without sweep)");
  const auto parsed = parse_command(args, opts, "scenario");
  if (!parsed) return kOk;
  const auto& vm = *parsed;
  if (!vm.count("scenario")) throw UsageError("missing the scenario file (shardsim run SCENARIO.yaml)");
  if (vm.count("engine") && vm["engine"].as<std::string>() != "analytical" && vm["engine"].as<std::string>() != "simgrid") {
    throw UsageError(fmt::format("unknown engine '{}'; available: analytical, simgrid", vm["engine"].as<std::string>()));
  }
  engine::EngineOptions engine_options;
  if (vm.count("topology")) engine_options.topology = topology::parse_topology_kind(vm["topology"].as<std::string>(), "--topology");
  std::vector<scenario::PlanOverride> overrides;
  if (vm.count("deepspeed")) {
    const auto ds = scenario::load_deepspeed_config(vm["deepspeed"].as<std::string>());
    overrides = ds.overrides;
    for (const auto& key : ds.ignored) {
      std::cerr << fmt::format("shardsim: note: {}: {} is not modelled; ignored\n", vm["deepspeed"].as<std::string>(), key);
    }
  }
  auto scenarios = scenario::load_scenarios(vm["scenario"].as<std::string>(), overrides);
  if (vm.count("calibration")) {
    const std::string path = vm["calibration"].as<std::string>();
    const auto cal = validate::parse_calibration(scenario::read_text_file(path, "calibration file"), path);
    for (auto& s : scenarios) {
      validate::apply_calibration(cal, s.cluster);
      validate::apply_parameters(cal, s);
    }
  }
  if ((vm.count("trace") || vm.count("memory-csv")) && scenarios.size() != 1) {
    throw UsageError("--trace and --memory-csv take a scenario without a sweep: section");
  }
  const auto bands = load_error_bands();
  std::vector<scenario::Evaluation> evals;
  evals.reserve(scenarios.size());
  for (auto& s : scenarios) {
    if (vm.count("engine")) s.engine = vm["engine"].as<std::string>();
    evals.push_back(scenario::evaluate(s, engine_options));
  }
  // Everything computed: now write outputs (JSON first, atomically, so a failure leaves nothing behind).
  if (vm.count("json")) {
    nlohmann::ordered_json j;
    if (scenarios.size() == 1) {
      j = report::to_json(scenarios[0], evals[0]);
      j["validation"] = validate::describe_validation(scenarios[0], bands);
    } else {
      j = nlohmann::ordered_json::array();
      for (std::size_t i = 0; i < scenarios.size(); ++i) {
        j.push_back(report::to_json(scenarios[i], evals[i]));
        j.back()["validation"] = validate::describe_validation(scenarios[i], bands);
      }
    }
    report::write_file_atomic(vm["json"].as<std::string>(), j.dump(2) + "\n");
  }
  if (vm.count("trace")) report::write_file_atomic(vm["trace"].as<std::string>(), report::chrome_trace(evals[0]));
  if (vm.count("memory-csv")) report::write_file_atomic(vm["memory-csv"].as<std::string>(), report::memory_csv(evals[0]));
  if (scenarios.size() == 1) {
    std::cout << report::render_table(scenarios[0], evals[0]);
    std::cout << "\nvalidation  " << validate::describe_validation(scenarios[0], bands) << "\n";
    if (scenarios[0].engine == "simgrid") print_network(scenarios[0], evals[0]);
  } else {
    std::cout << report::render_sweep(scenarios, evals);
    std::vector<std::string> seen;
    for (const auto& v : scenarios) {
      const std::string line = validate::describe_validation(v, bands);
      if (std::find(seen.begin(), seen.end(), line) != seen.end()) continue;
      std::cout << (seen.empty() ? "\nvalidation  " : "            ") << line << "\n";
      seen.push_back(line);
    }
    if (std::any_of(scenarios.begin(), scenarios.end(), [](const auto& v) { return v.engine == "simgrid"; })) {
      std::vector<scenario::Evaluation> analytical;
      for (auto v : scenarios) {
        v.engine = "analytical";
        analytical.push_back(scenario::evaluate(v));
      }
      std::cout << report::render_network_sweep(scenarios, evals, analytical);
    }
    if (vm.count("details")) {
      for (std::size_t i = 0; i < scenarios.size(); ++i) std::cout << "\n" << report::render_table(scenarios[i], evals[i]);
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
  if (vm.count("export")) report::write_file_atomic(vm["export"].as<std::string>(), topo.to_simgrid_xml());
  if (vm.count("dot")) report::write_file_atomic(vm["dot"].as<std::string>(), topo.node_to_dot());
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
      "rescore", po::value<std::string>(), "simgrid: run the top plans again on the SimGrid engine and re-rank them");
  const auto parsed = parse_command(args, opts, "scenario");
  if (!parsed) return kOk;
  const auto& vm = *parsed;
  if (!vm.count("scenario")) throw UsageError("missing the scenario file (shardsim search SCENARIO.yaml)");
  const auto scenarios = scenario::load_scenarios(vm["scenario"].as<std::string>());
  if (scenarios.size() != 1) throw UsageError("search takes a scenario without a sweep: section");
  const auto& base = scenarios[0];
  const int top = vm.count("top") ? vm["top"].as<int>() : base.search.top;
  if (top < 1) throw UsageError("--top must be at least 1");
  if (vm.count("rescore") && vm["rescore"].as<std::string>() != "simgrid") {
    throw UsageError(fmt::format("--rescore takes 'simgrid' (got '{}')", vm["rescore"].as<std::string>()));
  }
  const auto result = search::search(base, search::default_space(base), top, vm["threads"].as<int>());
  const std::string rescored = vm.count("rescore") ? search::rescore_on_simgrid(result) : std::string();
  if (vm.count("json")) {
    nlohmann::ordered_json j;
    j["scenario"] = base.name;
    j["plans"] = result.feasible + result.infeasible;
    j["feasible"] = result.feasible;
    j["ranking"] = nlohmann::ordered_json::array();
    for (const auto& k : result.best) j["ranking"].push_back(report::to_json(k.scenario, k.evaluation));
    report::write_file_atomic(vm["json"].as<std::string>(), j.dump(2) + "\n");
  }
  std::cout << search::render_search(base, result) << rescored;
  // Timing goes to stderr so that stdout stays byte-identical between runs.
  std::cerr << fmt::format("searched {} plans in {:.2f} s ({:.0f} plans/s)\n", result.feasible + result.infeasible,
                           result.wall_s, (result.feasible + result.infeasible) / result.wall_s);
  return kOk;
}

// Loads the validation sets named by id (every set in `dir` when `names` is empty).
std::vector<validate::ValidationSet> load_sets(const std::vector<std::string>& names, const std::string& dir) {
  std::vector<validate::ValidationSet> all, out;
  for (const auto& name : names) {
    if (name.ends_with(".yaml") || name.ends_with(".yml")) {
      out.push_back(validate::load_validation_set(name));
      continue;
    }
    if (all.empty()) {
      for (const auto& f : validate::validation_set_files(dir)) all.push_back(validate::load_validation_set(f));
    }
    auto it = std::find_if(all.begin(), all.end(), [&](const auto& s) { return s.id == name; });
    if (it == all.end()) {
      std::vector<std::string> ids;
      for (const auto& s : all) ids.push_back(s.id);
      throw UsageError(fmt::format("no validation set '{}' in {}; available: {}", name, dir, scenario::join(ids)));
    }
    out.push_back(*it);
  }
  if (names.empty()) {
    for (const auto& f : validate::validation_set_files(dir)) out.push_back(validate::load_validation_set(f));
  }
  return out;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, ',');) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

int cmd_calibrate(const std::vector<std::string>& args) {
  po::options_description opts(
      "shardsim calibrate RESULTS.yaml [options]\n"
      "shardsim calibrate (--runs RUNS.csv | --set SET ...) --fit PARAM[,PARAM...] [options]\n\n"
      "With RESULTS.yaml: fits latency + size/bandwidth per copy path and kernel and GEMM efficiency against size to "
      "device measurements (as shardsim-validate bench writes them) and prints measured next to predicted.\n"
      "With --runs or --set: fits the named model parameters to measured training runs by bounded least squares, "
      "prints each value with its 1-sigma uncertainty and the error before and after on the fitted runs and on the "
      "held-out ones (role check), which the fit never sees.\n"
      "Either way -o writes a calibration file for shardsim run --calibration.\n\noptions");
  opts.add_options()("help,h", "show this help")("results", po::value<std::string>(), "device measurements YAML")(
      "runs", po::value<std::string>(), "measured runs CSV: scenario or row (SET/ROW), metric, measured[, id, role]")(
      "set", po::value<std::vector<std::string>>()->multitoken(),
      "validation sets whose rows are the runs (fit sets fitted, check sets held out)")(
      "fit", po::value<std::string>(), "the parameters to fit, comma-separated (e.g. device.gemm_efficiency)")(
      "data", po::value<std::string>()->default_value(SHARDSIM_VALIDATION_DATA), "folder of the validation sets")(
      "engine", po::value<std::string>()->default_value("analytical"), "engine: analytical or simgrid")(
      "threads", po::value<int>()->default_value(0), "worker threads (0: one per core)")(
      "output,o", po::value<std::string>(), "write the calibration here (for shardsim run --calibration)")(
      "parameters", po::value<std::string>(), "list the parameters a calibration may fit for this scenario's machine")(
      "collectives", po::value<std::vector<std::string>>()->multitoken(),
      "collective benchmarks (nccl-tests / rccl-tests output, or CSV as FILE:RANKS) to fit network parameters to")(
      "op", po::value<std::string>()->default_value("all_reduce"),
      "the benchmarks' collective: all_reduce, all_gather, reduce_scatter, alltoall, sendrecv")(
      "cluster", po::value<std::string>(), "with --collectives: the machine (a preset or a scenario file's cluster)");
  const auto parsed = parse_command(args, opts, "results");
  if (!parsed) return kOk;
  const auto& vm = *parsed;
  if (vm.count("parameters")) {
    const auto scenarios = scenario::load_scenarios(vm["parameters"].as<std::string>());
    const auto& s = scenarios.front();
    std::cout << fmt::format("parameters of {} ({}):\n  {:<28} {:>12} {:>26}  {}\n", s.name, s.cluster.name, "name",
                             "value", "range", "source");
    for (const auto& p : validate::model_parameters(s)) {
      std::cout << fmt::format("  {:<28} {:>12} {:>26}  {}{}\n", p.name, validate::format_parameter_value(p.get(s), p.unit, 4),
                               validate::format_parameter_value(p.lower, p.unit, 4) + " .. " +
                                   validate::format_parameter_value(p.upper, p.unit, 4),
                               p.source, p.affects_time ? "" : " (memory only)");
    }
    return kOk;
  }
  if (vm.count("collectives")) {
    if (!vm.count("fit")) throw UsageError("--fit names the parameters to fit (e.g. --fit network.nvswitch.latency)");
    if (!vm.count("cluster")) throw UsageError("--cluster names the machine the collectives ran on");
    scenario::Scenario machine;
    const std::string c = vm["cluster"].as<std::string>();
    if (c.ends_with(".yaml") || c.ends_with(".yml")) {
      machine = scenario::load_scenarios(c).front();
    } else {
      const auto* preset = topology::find_cluster_preset(c);
      if (!preset) throw UsageError(fmt::format("unknown cluster '{}'", c));
      machine.cluster = *preset;
      machine.name = c;
    }
    const auto op = validate::parse_collective_op(vm["op"].as<std::string>());
    std::vector<validate::CollectiveSample> samples;
    for (const auto& spec : vm["collectives"].as<std::vector<std::string>>()) {
      // FILE or FILE:RANKS
      std::string file = spec;
      int ranks = 0;
      const auto colon = spec.rfind(':');
      if (colon != std::string::npos && colon + 1 < spec.size() &&
          spec.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
        file = spec.substr(0, colon);
        ranks = std::stoi(spec.substr(colon + 1));
      }
      auto more = validate::load_collective_samples(file, op, ranks);
      samples.insert(samples.end(), more.begin(), more.end());
    }
    const int most = std::max_element(samples.begin(), samples.end(), [](const auto& a, const auto& b) {
                       return a.ranks < b.ranks;
                     })->ranks;
    machine.cluster.nodes = std::max(machine.cluster.nodes, (most + machine.cluster.devices_per_node - 1) /
                                                                machine.cluster.devices_per_node);
    const auto fit = validate::fit_collectives(samples, machine, split_commas(vm["fit"].as<std::string>()));
    if (vm.count("output")) {
      report::write_file_atomic(vm["output"].as<std::string>(), validate::write_calibration(validate::run_fit_calibration(fit)));
    }
    std::cout << fmt::format("{} samples of {} on {}\n", samples.size(), vm["op"].as<std::string>(), machine.cluster.name)
              << validate::render_run_fit(fit);
    return kOk;
  }
  const bool runs = vm.count("runs") || vm.count("set");
  if (runs == (vm.count("results") > 0)) {
    throw UsageError("give either the device results file or runs (--runs RUNS.csv or --set SET)");
  }
  if (runs) {
    if (!vm.count("fit")) throw UsageError("--fit names the parameters to fit (e.g. --fit device.gemm_efficiency)");
    const std::string engine = vm["engine"].as<std::string>();
    if (engine != "analytical" && engine != "simgrid") {
      throw UsageError(fmt::format("unknown engine '{}'; available: analytical, simgrid", engine));
    }
    const std::string dir = vm["data"].as<std::string>();
    std::vector<validate::Observation> obs;
    if (vm.count("runs")) obs = validate::load_runs(vm["runs"].as<std::string>(), dir);
    if (vm.count("set")) {
      for (const auto& set : load_sets(vm["set"].as<std::vector<std::string>>(), dir)) {
        auto more = validate::observations_of(set);
        obs.insert(obs.end(), more.begin(), more.end());
      }
    }
    const auto fit = validate::fit_runs(obs, split_commas(vm["fit"].as<std::string>()), engine, vm["threads"].as<int>());
    if (vm.count("output")) {
      report::write_file_atomic(vm["output"].as<std::string>(), validate::write_calibration(validate::run_fit_calibration(fit)));
    }
    std::cout << validate::render_run_fit(fit);
    return kOk;
  }
  const std::string path = vm["results"].as<std::string>();
  const auto results = validate::parse_results(scenario::read_text_file(path, "results file"), path);
  const auto cal = validate::calibrate(results, path);
  if (vm.count("output")) report::write_file_atomic(vm["output"].as<std::string>(), validate::write_calibration(cal));
  std::cout << validate::render_comparison(results, cal);
  return kOk;
}

int cmd_validate(const std::vector<std::string>& args) {
  po::options_description opts("shardsim validate [SET...] [options]\n\nRuns every row of the validation sets (published "
                               "measurements of real training runs, each with its citation) and prints measured next to "
                               "predicted with the signed error, per set the count, mean and max |error| and the bias, "
                               "and the claims (ratios, orderings) the sources make. Rows the model refuses are listed "
                               "with the reason and counted apart.\n\noptions");
  opts.add_options()("help,h", "show this help")("sets", po::value<std::vector<std::string>>(),
                                                 "set ids or set files (default: every set in the data folder)")(
      "data", po::value<std::string>()->default_value(SHARDSIM_VALIDATION_DATA), "folder of the validation sets")(
      "role", po::value<std::string>(), "only sets of this role: fit or check")(
      "engine", po::value<std::string>()->default_value("analytical"), "engine: analytical or simgrid")(
      "rows", "print every row and claim, not only the per-set table")(
      "threads", po::value<int>()->default_value(0), "worker threads (0: one per core)")(
      "json", po::value<std::string>(), "also write rows, claims and summaries as JSON to this file")(
      "csv", po::value<std::string>(), "also write one line per row and metric as CSV to this file")(
      "calibration", po::value<std::string>(), "apply this calibration file to every row (shardsim calibrate -o)")(
      "write-bands", po::value<std::string>(), "write the error bands that shardsim run quotes to this file "
                                               "(validate/error_bands.yaml)");
  po::positional_options_description pos;
  pos.add("sets", -1);
  const auto vm = parse(args, opts, pos);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return kOk;
  }
  const std::string engine = vm["engine"].as<std::string>();
  if (engine != "analytical" && engine != "simgrid") {
    throw UsageError(fmt::format("unknown engine '{}'; available: analytical, simgrid", engine));
  }
  const std::string dir = vm["data"].as<std::string>();
  auto sets = load_sets(vm.count("sets") ? vm["sets"].as<std::vector<std::string>>() : std::vector<std::string>{}, dir);
  if (vm.count("role")) {
    const std::string role = vm["role"].as<std::string>();
    if (role != "fit" && role != "check") throw UsageError(fmt::format("--role takes fit or check (got '{}')", role));
    std::erase_if(sets, [&](const auto& s) { return s.role != role; });
  }
  if (sets.empty()) throw UsageError(fmt::format("no validation sets to run (folder {})", dir));
  if (vm.count("calibration")) {
    const std::string path = vm["calibration"].as<std::string>();
    const auto cal = validate::parse_calibration(scenario::read_text_file(path, "calibration file"), path);
    for (auto& set : sets) {
      for (auto& row : set.rows) {
        if (!row.scenario) continue;
        validate::apply_calibration(cal, row.scenario->cluster);
        validate::apply_parameters(cal, *row.scenario);
      }
    }
  }
  const auto report = validate::run_validation(sets, engine, vm["threads"].as<int>());
  if (vm.count("json")) report::write_file_atomic(vm["json"].as<std::string>(), validate::validation_to_json(report).dump(2) + "\n");
  if (vm.count("csv")) report::write_file_atomic(vm["csv"].as<std::string>(), validate::validation_to_csv(report));
  if (vm.count("write-bands")) {
    report::write_file_atomic(vm["write-bands"].as<std::string>(), validate::write_error_bands(validate::error_bands(report)));
  }
  std::cout << validate::render_validation(report, vm.count("rows") > 0);
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
    std::cout << fmt::format("{}: {} x {} per node, {:.0f} GiB HBM at {:.0f} GB/s, max {} nodes\n", c->name,
                             c->devices_per_node, c->device.name, c->device.hbm.value() / core::kGiB,
                             c->device.hbm_bandwidth.value() / 1e9, c->max_nodes);
    for (const auto& l : c->levels) {
      std::cout << fmt::format("  level {:<12} {:>8} ranks  {:>7.1f} GB/s per link, shared by {}  ({:.1f} GB/s per "
                               "rank)  latency {:.1f} us  [{}]\n",
                               l.name, l.domain_ranks, l.link_bandwidth.value() / 1e9, l.shared_by,
                               l.per_rank_bandwidth().value() / 1e9, l.latency.value() * 1e6, l.source);
    }
  }
  return kOk;
}

int cmd_bench(const std::vector<std::string>& args) {
  po::options_description opts("shardsim bench [options]\n\nPrints the analytical engine's speed figures.\n\noptions");
  opts.add_options()("help,h", "show this help")("seconds", po::value<double>()->default_value(2.0),
                                                 "time to spend on each figure")(
      "simgrid", "print the SimGrid engine's scale curve instead (GPT-20B ZeRO-3 on Frontier, 8 GCDs up)")(
      "max-gcds", po::value<int>()->default_value(8192), "largest job of the SimGrid scale curve (up to 8192)");
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
    const std::string cmd = args[0];
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (cmd == "run") return cmd_run(rest);
    if (cmd == "search") return cmd_search(rest);
    if (cmd == "calibrate") return cmd_calibrate(rest);
    if (cmd == "validate") return cmd_validate(rest);
    if (cmd == "models") return cmd_models(rest);
    if (cmd == "clusters") return cmd_clusters(rest);
    if (cmd == "topology") return cmd_topology(rest);
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
