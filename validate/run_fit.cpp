#include "validate/run_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <thread>

#include "sim/core/units.hpp"
#include "validate/csv_table.hpp"
#include "validate/model_parameters.hpp"
#include "validate/validation_runner.hpp"

namespace shardsim::validate {
namespace {

// Runs `fn(i)` for i in [0, n) on `threads` workers; each i is independent, so results do not depend on them.
template <typename Fn>
void parallel_for(std::size_t n, int threads, Fn fn) {
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) fn(i);
  };
  const int t = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int k = 1; k < t && static_cast<std::size_t>(k) < n; ++k) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
}

// Predictions of every observation under parameter values `x` (nullopt where the model refuses it).
std::vector<std::optional<double>> predict_all(const std::vector<const Observation*>& obs,
                                               const std::vector<std::string>& names, const std::vector<double>& x,
                                               engine::EngineKind engine, int threads) {
  std::vector<std::optional<double>> out(obs.size());
  parallel_for(obs.size(), threads, [&](std::size_t i) {
    scenario::Scenario s = obs[i]->scenario;
    for (std::size_t k = 0; k < names.size(); ++k) {
      if (auto p = find_model_parameter(s, names[k])) p->set(s, x[k]);
    }
    out[i] = predict_metric(s, obs[i]->metric, engine);
  });
  return out;
}

// The measured values of `obs`, in order.
std::vector<double> measured_of(const std::vector<const Observation*>& obs) {
  std::vector<double> m;
  m.reserve(obs.size());
  for (const auto* o : obs) m.push_back(o->measured);
  return m;
}

// The group of an observation: the set of a "set/row" id, the file of a "runs.csv:line" one.
std::string group_of(const std::string& id) {
  const auto cut = id.find_first_of("/:");
  return cut == std::string::npos ? id : id.substr(0, cut);
}

}  // namespace

ErrorStats error_stats(const std::vector<std::optional<double>>& predicted, const std::vector<double>& measured) {
  ErrorStats e;
  for (std::size_t i = 0; i < predicted.size(); ++i) {
    if (!predicted[i]) {
      ++e.refused;
      continue;
    }
    const double err = (*predicted[i] - measured[i]) / measured[i];
    ++e.count;
    e.mean_abs += std::fabs(err);
    e.bias += err;
  }
  if (e.count) {
    e.mean_abs /= e.count;
    e.bias /= e.count;
  }
  return e;
}

void add_groups(RunFit& f, const std::vector<const Observation*>& obs, const std::vector<std::optional<double>>& before,
                const std::vector<std::optional<double>>& after, bool held_out) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::size_t>> members;
  for (std::size_t i = 0; i < obs.size(); ++i) {
    const std::string g = group_of(obs[i]->id);
    auto [it, fresh] = members.try_emplace(g);
    if (fresh) order.push_back(g);
    it->second.push_back(i);
  }
  for (const auto& g : order) {
    std::vector<std::optional<double>> b, a;
    std::vector<double> m;
    for (const std::size_t i : members[g]) {
      b.push_back(before[i]);
      a.push_back(after[i]);
      m.push_back(obs[i]->measured);
    }
    f.groups.push_back({g, held_out, error_stats(b, m), error_stats(a, m)});
  }
}

void fit_log_ratio(RunFit& f, const std::function<std::vector<std::optional<double>>(const std::vector<double>&)>& predict,
                   const std::vector<double>& measured, double difference_step) {
  FitProblem problem;
  problem.names = f.names;
  problem.initial = f.initial;
  problem.lower = f.lower;
  problem.upper = f.upper;
  problem.difference_step = difference_step;
  problem.residuals = [&](const std::vector<double>& x) {
    const auto pred = predict(x);
    std::vector<double> r(measured.size());
    for (std::size_t i = 0; i < measured.size(); ++i) {
      // A plan that stops fitting in memory under some values counts as a factor-e miss rather than vanishing.
      r[i] = pred[i] ? std::log(*pred[i] / measured[i]) : 1.0;
    }
    return r;
  };
  f.fit = fit_least_squares(problem);
}

std::vector<Observation> observations_of(const ValidationSet& set) {
  std::vector<Observation> out;
  for (const auto& row : set.rows) {
    if (!row.scenario) continue;
    for (const auto& m : row.measured) {
      if (m.metric == Metric::kFits) continue;
      out.push_back({set.id + "/" + row.id, *row.scenario, m.metric, m.value, set.role == "check"});
    }
  }
  return out;
}

std::vector<Observation> load_runs(const std::string& path, const std::string& data_dir) {
  const CsvTable csv = CsvTable::load(path);
  const auto col_scenario = csv.column("scenario");
  const auto col_row = csv.column("row");
  const auto col_metric = csv.column("metric");
  const auto col_measured = csv.column("measured");
  const auto col_id = csv.column("id");
  const auto col_role = csv.column("role");
  const core::SourceLocation header{path, 1, 1};
  if (!col_metric || !col_measured || (!col_scenario && !col_row)) {
    throw core::ConfigError(header, "", "columns metric, measured and scenario or row (optionally id and role)");
  }
  for (const auto& c : csv.columns()) {
    if (c != "scenario" && c != "row" && c != "metric" && c != "measured" && c != "id" && c != "role") {
      throw core::ConfigError(header, c, "only the columns scenario, row, metric, measured, id, role");
    }
  }
  std::map<std::string, ValidationSet> sets;  // loaded when a row names them
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::vector<Observation> out;
  for (std::size_t r = 0; r < csv.rows(); ++r) {
    Observation o;
    const std::string metric = csv.cell(r, *col_metric);
    const auto m = metric_from_key(metric);
    if (!m || *m == Metric::kFits) csv.fail(r, *col_metric, fmt::format("a metric such as iteration_time (got '{}')", metric));
    o.metric = *m;
    const std::string& measured = csv.cell(r, *col_measured);
    try {
      o.measured = is_duration(o.metric)       ? core::parse_duration(measured).value()
                   : o.metric == Metric::kMemory ? core::parse_bytes(measured).value()
                                                 : csv.number(r, *col_measured);
    } catch (const core::UnitError& e) {
      csv.fail(r, *col_measured, e.what());
    }
    if (!(o.measured > 0.0)) csv.fail(r, *col_measured, "a positive measurement");
    if (col_role) {
      const std::string& role = csv.cell(r, *col_role);
      if (role != "fit" && role != "check" && !role.empty()) csv.fail(r, *col_role, "fit or check");
      o.held_out = role == "check";
    }
    const std::string scen = col_scenario ? csv.cell(r, *col_scenario) : std::string();
    const std::string row = col_row ? csv.cell(r, *col_row) : std::string();
    if (scen.empty() == row.empty()) csv.fail(r, col_scenario ? *col_scenario : *col_row, "a scenario file or a SET/ROW, one of them");
    if (!scen.empty()) {
      const std::string file = (dir / scen).string();
      auto scenarios = scenario::load_scenarios(file);
      if (scenarios.size() != 1) csv.fail(r, *col_scenario, "a scenario without a sweep: section");
      o.scenario = std::move(scenarios[0]);
      o.id = fmt::format("{}:{}", std::filesystem::path(path).filename().string(), csv.line(r));
    } else {
      const auto slash = row.find('/');
      if (slash == std::string::npos) csv.fail(r, *col_row, fmt::format("SET/ROW (got '{}')", row));
      const std::string set_id = row.substr(0, slash), row_id = row.substr(slash + 1);
      if (sets.empty()) {
        for (auto& s : load_validation_sets(data_dir)) sets.emplace(s.id, std::move(s));
      }
      const auto it = sets.find(set_id);
      if (it == sets.end()) csv.fail(r, *col_row, fmt::format("a validation set of {} (no '{}')", data_dir, set_id));
      const auto rit = std::find_if(it->second.rows.begin(), it->second.rows.end(), [&](const Row& x) { return x.id == row_id; });
      if (rit == it->second.rows.end()) csv.fail(r, *col_row, fmt::format("a row of set {} (no '{}')", set_id, row_id));
      if (!rit->scenario) csv.fail(r, *col_row, fmt::format("a row the model takes ({})", rit->refused));
      o.scenario = *rit->scenario;
      o.id = row;
    }
    if (col_id && !csv.cell(r, *col_id).empty()) o.id = csv.cell(r, *col_id);
    out.push_back(std::move(o));
  }
  return out;
}

RunFit fit_runs(const std::vector<Observation>& observations, const std::vector<std::string>& names,
                engine::EngineKind engine, int threads) {
  RunFit f;
  f.names = names;
  std::vector<const Observation*> fit_obs, check_obs;
  for (const auto& o : observations) (o.held_out ? check_obs : fit_obs).push_back(&o);
  if (names.empty()) throw core::ConfigError({"<command line>", 0, 0}, "--fit", "at least one parameter to fit");
  // Each parameter's range and starting value come from the first observation whose machine has it.
  for (const auto& name : names) {
    std::optional<ModelParameter> p;
    for (const auto* o : fit_obs) {
      if ((p = find_model_parameter(o->scenario, name))) {
        f.initial.push_back(p->get(o->scenario));
        break;
      }
    }
    if (!p) {
      std::vector<std::string> known;
      if (!fit_obs.empty()) {
        for (const auto& q : model_parameters(fit_obs.front()->scenario)) known.push_back(q.name);
      }
      throw core::ConfigError({"<command line>", 0, 0}, "--fit",
                              fmt::format("parameters of the fitted runs' machines{}; '{}' is none (known: {})",
                                          scenario::suggest(name, known), name, scenario::join(known)));
    }
    f.units.push_back(p->unit);
    f.sources.push_back(p->source);
    f.lower.push_back(p->lower);
    f.upper.push_back(p->upper);
  }
  const auto before_fit = predict_all(fit_obs, names, f.initial, engine, threads);
  // Observations the model refuses at the start stay out of the fit (they are counted as refused).
  std::vector<const Observation*> used;
  for (std::size_t i = 0; i < fit_obs.size(); ++i) {
    if (before_fit[i]) used.push_back(fit_obs[i]);
  }
  if (used.size() < names.size()) {
    throw core::ConfigError({"<command line>", 0, 0}, "--fit",
                            fmt::format("at least as many fit observations as parameters ({} usable for {})",
                                        used.size(), names.size()));
  }
  for (const auto* o : used) f.machines.push_back({o->scenario.cluster.name, o->scenario.cluster.device.name});
  std::sort(f.machines.begin(), f.machines.end());
  f.machines.erase(std::unique(f.machines.begin(), f.machines.end()), f.machines.end());
  fit_log_ratio(f, [&](const std::vector<double>& x) { return predict_all(used, names, x, engine, threads); },
                measured_of(used), kScheduleDifferenceStep);
  // Report the fitted set whole, refused runs included.
  const auto after_fit = predict_all(fit_obs, names, f.fit.values, engine, threads);
  const auto check_before = predict_all(check_obs, names, f.initial, engine, threads);
  const auto check_after = predict_all(check_obs, names, f.fit.values, engine, threads);
  f.fit_before = error_stats(before_fit, measured_of(fit_obs));
  f.fit_after = error_stats(after_fit, measured_of(fit_obs));
  f.check_before = error_stats(check_before, measured_of(check_obs));
  f.check_after = error_stats(check_after, measured_of(check_obs));
  add_groups(f, fit_obs, before_fit, after_fit, false);
  add_groups(f, check_obs, check_before, check_after, true);
  return f;
}

std::string render_run_fit(const RunFit& f) {
  std::string o = fmt::format("fit of {} parameter{} ({} residual evaluations, {}): rms of log(predicted/measured) "
                              "{:.4f} -> {:.4f}\n",
                              f.names.size(), f.names.size() == 1 ? "" : "s", f.fit.evaluations,
                              f.fit.converged ? std::string("converged") : f.fit.message, f.fit.rms_before,
                              f.fit.rms_after);
  o += fmt::format("  {:<28} {:>12} {:>24} {:>26}  {}\n", "parameter", "was", "fitted (1 sigma)", "range", "source");
  for (std::size_t k = 0; k < f.names.size(); ++k) {
    const auto& u = f.units[k];
    const double err = f.fit.std_errors[k];
    const std::string fitted = fmt::format(
        "{} ({}){}", format_parameter_value(f.fit.values[k], u, 4),
        std::isfinite(err) ? "+-" + format_parameter_value(err, u, 2) : std::string("not identifiable"),
        f.fit.at_bound[k] ? " at bound" : "");
    o += fmt::format("  {:<28} {:>12} {:>24} {:>26}  {}\n", f.names[k], format_parameter_value(f.initial[k], u, 4), fitted,
                     format_parameter_value(f.lower[k], u, 4) + " .. " + format_parameter_value(f.upper[k], u, 4),
                     f.sources[k]);
  }
  // One wording for the summary lines and the per-set lines: the runs counted, their errors before -> after.
  auto change = [](const ErrorStats& b, const ErrorStats& a) {
    return fmt::format("{:>5} runs{}: mean |error| {:5.1f}% -> {:5.1f}%, bias {:+6.1f}% -> {:+6.1f}%", a.count,
                       a.refused ? fmt::format(" ({} refused)", a.refused) : std::string(), 100.0 * b.mean_abs,
                       100.0 * a.mean_abs, 100.0 * b.bias, 100.0 * a.bias);
  };
  auto line = [&](const char* what, const ErrorStats& b, const ErrorStats& a) {
    if (b.count + b.refused == 0) return fmt::format("  {:<22} none\n", what);
    return fmt::format("  {:<22} {}\n", what, change(b, a));
  };
  o += line("fitted runs", f.fit_before, f.fit_after);
  o += line("held-out (check) runs", f.check_before, f.check_after);
  if (f.groups.size() > 1) {
    o += "  per set:\n";
    for (const auto& g : f.groups) {
      o += fmt::format("    {:<24} {:<5} {}{}\n", g.group, g.held_out ? "check" : "fit", change(g.before, g.after),
                       g.after.mean_abs > g.before.mean_abs + 5e-4 ? "  (worse)" : "");
    }
  }
  return o;
}

Calibration run_fit_calibration(const RunFit& f) {
  Calibration c;
  c.fitted_on = f.machines;
  for (std::size_t k = 0; k < f.names.size(); ++k) {
    FittedParameter p;
    p.value = f.fit.values[k];
    p.std_error = f.fit.std_errors[k];
    c.parameters[f.names[k]] = p;
  }
  return c;
}

}  // namespace shardsim::validate
