// The validation and calibration commands of the `shardsim` CLI: `shardsim validate` (published runs, predicted
// next to measured) and `shardsim calibrate` (device measurements, measured runs or collective benchmarks ->
// a calibration file).
#include "sim/cli/validation_commands.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "sim/cli/command_support.hpp"
#include "sim/report/report.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/text_file.hpp"
#include "topology/cluster_presets.hpp"
#include "validate/calibration.hpp"
#include "validate/device_fit.hpp"
#include "validate/collective_checks.hpp"
#include "validate/collective_runs.hpp"
#include "validate/model_parameters.hpp"
#include "validate/run_fit.hpp"
#include "validate/validation_runner.hpp"
#include "validate/validation_set.hpp"

namespace shardsim::cli {
namespace {

// A calibration file is written only as run --calibration reads it back: whatever the fit, never a file that is
// then refused.
void write_calibration_file(const std::string& path, const validate::Calibration& cal) {
  const std::string text = validate::write_calibration(cal);
  (void)validate::parse_calibration(text, path);
  report::write_file_atomic(path, text);
}

// Loads the validation sets named by id or file (every set in `dir` when `names` is empty); a name may list several,
// comma-separated, as --by and --fit take theirs.
std::vector<validate::ValidationSet> load_sets(const std::vector<std::string>& given, const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& g : given) {
    if (g.find(',') == std::string::npos || std::filesystem::exists(g)) {
      names.push_back(g);
      continue;
    }
    for (auto& name : split_commas(g)) names.push_back(std::move(name));
  }
  std::vector<validate::ValidationSet> all, out;
  for (const auto& name : names) {
    if (name.ends_with(".yaml") || name.ends_with(".yml")) {
      out.push_back(validate::load_validation_set(name));
      continue;
    }
    if (all.empty()) {
      all = validate::load_validation_sets(dir);
    }
    auto it = std::find_if(all.begin(), all.end(), [&](const auto& s) { return s.id == name; });
    if (it == all.end()) {
      std::vector<std::string> ids;
      for (const auto& s : all) ids.push_back(s.id);
      throw UsageError(fmt::format("no validation set '{}' in {}; available: {}", name, dir, scenario::join(ids)));
    }
    out.push_back(*it);
  }
  if (given.empty()) {
    out = validate::load_validation_sets(dir);
  }
  return out;
}

// The parameters a calibration may fit for a scenario's machine, with value, range and source.
int list_parameters(const std::string& scenario_file) {
  const auto scenarios = scenario::load_scenarios(scenario_file);
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

// Network parameters fitted to collective benchmarks (nccl-tests / rccl-tests output or CSV).
int calibrate_collectives(const po::variables_map& vm) {
  if (!vm.count("fit")) throw UsageError("--fit names the parameters to fit (e.g. --fit network.nvswitch.latency)");
  if (!vm.count("cluster")) throw UsageError("--cluster names the machine the collectives ran on");
  scenario::Scenario machine = load_machine(vm["cluster"].as<std::string>());
  std::optional<graph::CollectiveOp> op;
  if (vm.count("op")) op = validate::parse_collective_op(vm["op"].as<std::string>());
  std::vector<validate::CollectiveSample> samples;
  std::vector<std::string> skipped;
  for (const auto& spec : vm["collectives"].as<std::vector<std::string>>()) {
    // FILE, FILE:RANKS or FILE:RANKS:PER_NODE
    std::string file = spec;
    std::vector<int> numbers;
    for (int k = 0; k < 2; ++k) {
      const auto colon = file.rfind(':');
      if (colon == std::string::npos || colon + 1 >= file.size() ||
          file.find_first_not_of("0123456789", colon + 1) != std::string::npos || file.size() - colon > 7) {
        break;
      }
      numbers.insert(numbers.begin(), std::stoi(file.substr(colon + 1)));
      file = file.substr(0, colon);
    }
    const int ranks = numbers.empty() ? 0 : numbers[0];
    const int per_node = numbers.size() > 1 ? numbers[1] : 0;
    if (per_node > 0 && ranks % per_node != 0) {
      throw UsageError(fmt::format("--collectives {}: {} ranks are not {} on each of whole nodes", spec, ranks, per_node));
    }
    // A file with a `# shardsim:` line says its collective, ranks, what it forced and its role itself.
    auto more = ranks == 0 && validate::has_collective_tag(file)
                    ? validate::tagged_samples(validate::load_collective_check(file))
                    : validate::load_collective_samples(file, op, ranks, &skipped, per_node);
    samples.insert(samples.end(), more.begin(), more.end());
  }
  // What was read, test by test: the collective, sizes, ranks and their placement, the GPU the run names.
  std::string read;
  for (std::size_t i = 0; i < samples.size();) {
    const auto& a = samples[i];
    const std::string file = a.where.substr(0, a.where.rfind(':'));
    std::size_t j = i;
    while (j < samples.size() && samples[j].op == a.op && samples[j].ranks == a.ranks &&
           samples[j].per_node == a.per_node && samples[j].where.substr(0, samples[j].where.rfind(':')) == file) {
      ++j;
    }
    read += fmt::format("  {}: {} x {}, {} ranks{}{}\n", file, j - i, graph::collective_name(a.op), a.ranks,
                        a.per_node > 0 ? fmt::format(" ({} per node)", a.per_node) : "",
                        a.device.empty() ? "" : fmt::format(", {}", a.device));
    i = j;
  }
  for (const auto& s : skipped) read += fmt::format("  skipped {}\n", s);
  // Enough nodes for the widest run, its ranks placed as it placed them.
  long long most = 0;
  for (const auto& c : samples) {
    if (c.per_node > 0 && machine.cluster.devices_per_node % c.per_node != 0) continue;  // refused by the fit
    most = std::max(most, validate::sample_devices(machine.cluster, c.ranks, c.per_node));
  }
  machine.cluster.nodes = std::max<int>(machine.cluster.nodes, static_cast<int>(machine.cluster.nodes_for(most)));
  const auto fit = validate::fit_collectives(samples, machine, split_commas(vm["fit"].as<std::string>()));
  if (vm.count("output")) {
    write_calibration_file(vm["output"].as<std::string>(), validate::run_fit_calibration(fit));
  }
  const auto held_out = std::count_if(samples.begin(), samples.end(), [](const auto& c) { return c.check; });
  std::cout << "read\n"
            << read
            << fmt::format("{} samples on {} ({} fitted, {} held out: files marked role=check)\n", samples.size(),
                           machine.cluster.name, samples.size() - static_cast<std::size_t>(held_out), held_out)
            << validate::render_run_fit(fit);
  return kOk;
}

// Model parameters fitted to measured runs (a runs CSV and/or validation sets).
int calibrate_runs(const po::variables_map& vm) {
  if (!vm.count("fit")) throw UsageError("--fit names the parameters to fit (e.g. --fit device.gemm_efficiency)");
  const engine::EngineKind engine = engine_of(vm["engine"].as<std::string>());
  const std::string dir = vm["data"].as<std::string>();
  std::vector<validate::Observation> obs;
  if (vm.count("runs")) obs = validate::load_runs(vm["runs"].as<std::string>(), dir);
  if (vm.count("set")) {
    for (const auto& set : load_sets(vm["set"].as<std::vector<std::string>>(), dir)) {
      auto more = validate::observations_of(set);
      obs.insert(obs.end(), more.begin(), more.end());
    }
  }
  const auto fit = validate::fit_runs(obs, split_commas(vm["fit"].as<std::string>()), engine, thread_count(vm));
  if (vm.count("output")) {
    write_calibration_file(vm["output"].as<std::string>(), validate::run_fit_calibration(fit));
  }
  std::cout << validate::render_run_fit(fit);
  return kOk;
}

}  // namespace

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
      "collective benchmarks to fit network parameters to: nccl-tests / rccl-tests output, CSV as FILE:RANKS, or a "
      "DeepSpeed comms log as FILE:RANKS (with --op; FILE:RANKS:PER_NODE places the group's ranks so many to a node)")(
      "op", po::value<std::string>(),
      "the benchmarks' collective: all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, broadcast (nccl-tests output "
      "names its own tests; a CSV needs it)")(
      "cluster", po::value<std::string>(), "with --collectives: the machine (a preset or a scenario file's cluster)");
  const auto parsed = parse_command(args, opts, "results");
  if (!parsed) return kOk;
  const auto& vm = *parsed;
  if (vm.count("parameters")) return list_parameters(vm["parameters"].as<std::string>());
  if (vm.count("collectives")) return calibrate_collectives(vm);
  const bool runs = vm.count("runs") || vm.count("set");
  if (runs == (vm.count("results") > 0)) {
    throw UsageError("give either the device results file or runs (--runs RUNS.csv or --set SET)");
  }
  if (runs) return calibrate_runs(vm);
  const std::string path = vm["results"].as<std::string>();
  const auto results = validate::parse_results(scenario::read_text_file(path, "results file"), path);
  validate::DeviceFit fit;
  const auto cal = validate::calibrate(results, path, &fit);
  if (vm.count("output")) write_calibration_file(vm["output"].as<std::string>(), cal);
  std::cout << validate::render_comparison(results, cal);
  if (!fit.preset.empty()) {
    std::cout << "\n" << validate::render_device_fit(fit);
  } else if (results.device.backend != "cpu") {
    std::cout << "\n" << results.device.name << " is none of the built-in devices: the compute model is not fitted\n";
  }
  return kOk;
}

namespace {

// `validate --scenario`: the row named `which` (ROW or SET/ROW) as a scenario file, with where it comes from.
std::string row_scenario(const std::vector<validate::ValidationSet>& sets, const std::string& which) {
  const auto slash = which.find('/');
  const std::string set_id = slash == std::string::npos ? "" : which.substr(0, slash);
  const std::string row_id = slash == std::string::npos ? which : which.substr(slash + 1);
  std::vector<std::pair<const validate::ValidationSet*, const validate::Row*>> found;
  for (const auto& set : sets) {
    if (!set_id.empty() && set.id != set_id) continue;
    for (const auto& row : set.rows) {
      if (row.id == row_id) found.emplace_back(&set, &row);
    }
  }
  if (found.empty()) throw UsageError(fmt::format("--scenario: no row '{}' in the sets run", which));
  if (found.size() > 1) {
    std::vector<std::string> names;
    for (const auto& [set, row] : found) names.push_back(set->id + "/" + row->id);
    throw UsageError(fmt::format("--scenario: '{}' names rows of several sets; name one of {}", which,
                                 scenario::join(names)));
  }
  const auto& [set, row] = found.front();
  if (!row->scenario) throw UsageError(fmt::format("--scenario: the model refuses {}/{}: {}", set->id, row->id,
                                                   row->refused));
  return fmt::format("# validation set {} ({}), row {}: {}\n", set->id, set->role, row->id, row->cite) +
         validate::scenario_yaml(*row, set->id);
}

}  // namespace

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
      "by", po::value<std::string>(),
      "also group each set's errors by these axes, comma-separated (e.g. tp,micro_batch; see the README)")(
      "threads", po::value<int>()->default_value(0), "worker threads (0: one per core)")(
      "json", po::value<std::string>(), "also write rows, claims and summaries as JSON to this file")(
      "csv", po::value<std::string>(), "also write one line per row and metric as CSV to this file")(
      "calibration", po::value<std::string>(), "apply this calibration file to every row (shardsim calibrate -o)")(
      "write-bands", po::value<std::string>(), "write the error bands that shardsim run quotes to this file "
                                               "(validate/error_bands.yaml)")(
      "scenario", po::value<std::string>(),
      "print this row (ROW, or SET/ROW where sets share row ids) as a scenario file that `shardsim run` takes, and "
      "run nothing: a validated run's report, trace or collectives, or a what-if from it");
  po::positional_options_description pos;
  pos.add("sets", -1);
  const auto vm = parse(args, opts, pos);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return kOk;
  }
  const engine::EngineKind engine = engine_of(vm["engine"].as<std::string>());
  const std::string dir = vm["data"].as<std::string>();
  auto sets = load_sets(vm.count("sets") ? vm["sets"].as<std::vector<std::string>>() : std::vector<std::string>{}, dir);
  if (vm.count("role")) {
    const std::string role = vm["role"].as<std::string>();
    if (role != "fit" && role != "check") throw UsageError(fmt::format("--role takes fit or check (got '{}')", role));
    std::erase_if(sets, [&](const auto& s) { return s.role != role; });
  }
  if (sets.empty()) throw UsageError(fmt::format("no validation sets to run (folder {})", dir));
  if (vm.count("scenario")) {
    std::cout << row_scenario(sets, vm["scenario"].as<std::string>());
    return kOk;
  }
  std::string calibrated;  // which rows took the calibration, printed above the table
  if (vm.count("calibration")) {
    const std::string path = vm["calibration"].as<std::string>();
    const auto cal = validate::load_calibration(path);
    // A calibration fitted on some machines applies to their rows; the others run as they are.
    std::size_t applied = 0, rows = 0;
    for (auto& set : sets) {
      for (auto& row : set.rows) {
        if (!row.scenario) continue;
        ++rows;
        if (validate::fitted_elsewhere(cal, row.scenario->cluster)) continue;
        validate::apply_to_scenario(cal, *row.scenario);
        ++applied;
      }
    }
    if (applied < rows) {
      std::vector<std::string> on;
      for (const auto& m : cal.fitted_on) on.push_back(fmt::format("{} ({})", m.cluster, m.device));
      if (on.empty()) on.push_back(fmt::format("'{}'", cal.device.name));  // a GPU's own measurements
      calibrated = fmt::format("calibration {} applied to {} of {} rows: the rows on {}, where it was made; the "
                               "others as the presets have them\n",
                               path, applied, rows, scenario::join(on));
    }
  }
  std::vector<std::string> axes;
  if (vm.count("by")) {
    for (auto& a : split_commas(vm["by"].as<std::string>())) {
      try {
        validate::check_group_axis(a);
      } catch (const std::invalid_argument& e) {
        throw UsageError(fmt::format("--by: {}", e.what()));
      }
      axes.push_back(a);
    }
  }
  const auto report = validate::run_validation(sets, engine, thread_count(vm));
  const auto groups = axes.empty() ? std::vector<validate::ErrorGroup>{} : validate::group_errors(report, sets, axes);
  // The collective library model against published collective benchmarks, with the whole suite.
  const bool whole_suite = !vm.count("sets") && (!vm.count("role") || vm["role"].as<std::string>() == "check");
  const auto checks = whole_suite ? validate::load_collective_checks(dir + "/collectives")
                                  : std::vector<validate::CollectiveCheck>{};
  report::OutputFiles outputs;  // --json, --csv and --write-bands: all or none
  if (vm.count("json")) {
    auto j = json_document<nlohmann::json>("validate");
    j.update(validate::validation_to_json(report));
    j["collective_checks"] = validate::collective_checks_to_json(checks);
    if (!axes.empty()) j["error_groups"] = validate::error_groups_to_json(groups, axes);
    outputs.add(vm["json"].as<std::string>(), j.dump(2) + "\n");
  }
  if (vm.count("csv")) outputs.add(vm["csv"].as<std::string>(), validate::validation_to_csv(report));
  if (vm.count("write-bands")) {
    outputs.add(vm["write-bands"].as<std::string>(), validate::write_error_bands(validate::error_bands(report)));
  }
  outputs.commit();
  std::cout << calibrated << validate::render_validation(report, vm.count("rows") > 0);
  if (!axes.empty()) std::cout << "\n" << validate::render_error_groups(groups, axes);
  if (!checks.empty()) std::cout << "\n" << validate::render_collective_checks(checks, vm.count("rows") > 0);
  return kOk;
}

}  // namespace shardsim::cli
