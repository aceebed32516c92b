#include "validate/calibration.hpp"

#include <nlohmann/json.hpp>
#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>

#include "sim/core/errors.hpp"
#include "sim/scenario/config_node.hpp"
#include "sim/scenario/text_file.hpp"
#include "topology/cluster_presets.hpp"
#include "validate/device_fit.hpp"
#include "validate/model_parameters.hpp"

namespace shardsim::validate {

using scenario::ConfigNode;

LinearFit fit_latency_bandwidth(const std::vector<std::pair<double, double>>& pts) {
  SHARDSIM_ASSERT(pts.size() >= 2, "a latency/bandwidth fit needs two points");
  // Minimise sum(((a + b x) - t)^2 / t^2): rows [1/t, x/t] . [a, b] = 1.
  Eigen::MatrixXd a(static_cast<Eigen::Index>(pts.size()), 2);
  Eigen::VectorXd y = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(pts.size()));
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto row = static_cast<Eigen::Index>(i);
    a(row, 0) = 1.0 / pts[i].second;
    a(row, 1) = pts[i].first / pts[i].second;
  }
  const Eigen::Vector2d sol = a.colPivHouseholderQr().solve(y);
  LinearFit f;
  f.latency = core::Seconds(std::max(0.0, sol(0)));
  f.bandwidth = core::BytesPerSec(sol(1) > 0.0 ? 1.0 / sol(1) : 0.0);
  f.points = static_cast<int>(pts.size());
  for (const auto& [x, t] : pts) f.max_relative_error = std::max(f.max_relative_error, std::fabs(f.predict(x).value() - t) / t);
  return f;
}

Calibration calibrate(const Results& r, const std::string& file, DeviceFit* fit) {
  Calibration c;
  c.device = r.device;
  c.peak = r.peak;
  c.file = file;
  std::map<std::string, std::vector<std::pair<double, double>>> copies, kernels;
  for (const auto& m : r.measurements) {
    if (m.kind == "copy") copies[m.name].emplace_back(m.bytes, m.seconds);
    if (m.kind == "kernel") kernels[m.name].emplace_back(m.bytes, m.seconds);
  }
  auto fit_all = [&](const auto& groups, std::map<std::string, LinearFit>& out, const char* what) {
    for (const auto& [name, pts] : groups) {
      std::vector<double> sizes;
      for (const auto& p : pts) sizes.push_back(p.first);
      std::sort(sizes.begin(), sizes.end());
      if (std::unique(sizes.begin(), sizes.end()) - sizes.begin() < 2) {
        throw core::ConfigError(core::SourceLocation{file, 0, 0}, fmt::format("measurements.{}", name),
                                fmt::format("a {} needs measurements at two or more sizes to fit", what));
      }
      const LinearFit f = fit_latency_bandwidth(pts);
      // A calibration run --calibration would refuse is not written: measurements where a larger size took no
      // longer (or a time that is no time) fit no latency + size / bandwidth.
      if (!(f.bandwidth.value() > 0.0) || !std::isfinite(f.bandwidth.value()) || !std::isfinite(f.max_relative_error)) {
        std::string points;
        for (const auto& [bytes, seconds] : pts) {
          points += fmt::format("{}{:.4g} B in {}", points.empty() ? "" : ", ", bytes, core::format_seconds(core::Seconds(seconds)));
        }
        throw core::ConfigError(core::SourceLocation{file, 0, 0}, fmt::format("measurements.{}", name),
                                fmt::format("the {} times do not grow with size ({}): no latency + size / bandwidth "
                                            "fits them; measure again",
                                            what, points));
      }
      out[name] = f;
    }
  };
  // GEMMs faster than the device's peak are not measurements of this device (or of this dtype).
  if (r.peak) {
    for (const auto& m : r.measurements) {
      if (m.kind != "gemm" || !(m.seconds > 0.0)) continue;
      const double rate = 2.0 * static_cast<double>(m.m) * static_cast<double>(m.n) * static_cast<double>(m.k) / m.seconds;
      if (rate > 1.05 * r.peak->value()) {
        throw core::ConfigError(core::SourceLocation{file, 0, 0}, fmt::format("measurements.{}", m.name),
                                fmt::format("a {}x{}x{} GEMM in {} is {:.4g} TFLOP/s, above the peak of {:.4g} TFLOP/s "
                                            "(peak:): not a measurement of this device at this dtype",
                                            m.m, m.n, m.k, core::format_seconds(core::Seconds(m.seconds)), rate / 1e12,
                                            r.peak->value() / 1e12));
      }
    }
  }
  fit_all(copies, c.copies, "copy");
  fit_all(kernels, c.kernels, "kernel");
  if (r.device.backend != "cpu" && topology::find_preset_for_device(r.device.name)) {
    DeviceFit f = fit_device(r, file);
    c.parameters = f.parameters;
    if (fit) *fit = std::move(f);
  }
  return c;
}

namespace {

DeviceInfo parse_device(const ConfigNode& d) {
  d.expect_map({"name", "driver", "backend", "date"});
  DeviceInfo info;
  info.name = d.get("name").as_string();
  if (auto v = d.find("driver")) info.driver = v->as_string();
  info.backend = d.get("backend").as_choice({"cuda", "hip", "cpu"});
  info.date = d.get("date").as_string();
  return info;
}

}  // namespace

Results parse_results(const std::string& text, const std::string& file) {
  const ConfigNode root = ConfigNode::parse(text, file);
  root.expect_map({"device", "environment", "peak", "measurements"});
  Results r;
  r.device = parse_device(root.get("device"));
  if (auto e = root.find("environment")) {
    for (const auto& [key, value] : e->entries()) r.environment.emplace_back(key, value.as_string());
  }
  if (auto v = root.find("peak")) r.peak = v->as_flop_rate();
  for (const ConfigNode& m : root.get("measurements").items()) {
    m.expect_map({"kind", "name", "bytes", "m", "n", "k", "batch", "heads", "seq", "head_dim", "seconds"});
    Measurement x;
    x.kind = m.get("kind").as_choice({"copy", "kernel", "gemm", "attention", "memory", "overhead"});
    x.name = m.get("name").as_string();
    x.seconds = m.get("seconds").as_duration().value();
    if (x.seconds <= 0.0) m.get("seconds").fail("expected a positive duration");
    if (x.kind == "gemm") {
      x.m = m.get("m").as_positive_int();
      x.n = m.get("n").as_positive_int();
      x.k = m.get("k").as_positive_int();
      x.flops = 2.0 * static_cast<double>(x.m) * x.n * x.k;
    } else if (x.kind == "attention") {
      x.batch = m.get("batch").as_positive_int();
      x.heads = m.get("heads").as_positive_int();
      x.seq = m.get("seq").as_positive_int();
      x.head_dim = m.get("head_dim").as_positive_int();
    } else if (x.kind != "overhead") {
      x.bytes = m.get("bytes").as_bytes().value();
    }
    r.measurements.push_back(x);
  }
  return r;
}

namespace {

std::string fit_line(const LinearFit& f) {
  return fmt::format("{{latency: {:.6g}us, bandwidth: {:.6g}GB/s, points: {}, max_relative_error: {:.4f}}}",
                     f.latency.value() * 1e6, f.bandwidth.value() / 1e9, f.points, f.max_relative_error);
}

std::string parameter_line(const std::string& name, const FittedParameter& f) {
  const auto known = model_parameter_unit(name);
  SHARDSIM_ASSERT(known.has_value(), "a calibration parameter no machine has: " + name);
  const std::string& unit = *known;
  const std::string value = format_parameter_value(f.value, unit);
  if (!f.std_error) return fmt::format("  {}: {{value: {}}}\n", name, value);
  // A unit string cannot spell infinity: an undetermined error stays a comment.
  if (!std::isfinite(*f.std_error)) return fmt::format("  {}: {{value: {}}}  # std_error: not identifiable\n", name, value);
  return fmt::format("  {}: {{value: {}, std_error: {}}}\n", name, value, format_parameter_value(*f.std_error, unit));
}

// A parameter's value in its unit; `error`: a standard error, which may be zero.
double parameter_value(const ConfigNode& v, const std::string& unit, bool error) {
  if (unit == "B/s") return v.as_bandwidth().value();
  if (unit == "s") return v.as_duration().value();
  if (unit == "B") return v.as_bytes(true).value();
  if (unit == "x" && !error) {
    const double f = v.as_double();
    if (!(f > 0.0 && std::isfinite(f))) v.fail(fmt::format("expected a positive factor, got {}", f));
    return f;
  }
  if (unit == "tiles" && !error) {
    const double t = v.as_double();
    if (!(t >= 0.0 && std::isfinite(t))) v.fail(fmt::format("expected a non-negative number of tiles, got {}", t));
    return t;
  }
  if (!error) return v.as_fraction();
  const double e = v.as_double();
  if (e < 0.0) v.fail(fmt::format("expected a non-negative standard error, got {}", e));
  return e;
}

// Names a misspelt parameter may have meant: the patterns, with a network level's name taken from `name`.
std::vector<std::string> parameter_candidates(const std::string& name) {
  constexpr std::string_view kLevel = "<level>";
  std::vector<std::string> out = model_parameter_patterns();
  const std::size_t first = name.find('.'), last = name.rfind('.');
  if (name.starts_with("network.") && last > first) {
    for (auto& c : out) {
      if (const auto at = c.find(kLevel); at != std::string::npos) {
        c.replace(at, kLevel.size(), name.substr(first + 1, last - first - 1));
      }
    }
  }
  return out;
}

std::map<std::string, FittedParameter> parse_parameters(const ConfigNode& n) {
  if (!n.is_map()) n.fail("expected a map from model parameter names to values");
  std::vector<core::SourceLocation> key_at;  // the keys' own lines: a value may sit on the next one
  for (const auto& kv : n.yaml()) {
    const YAML::Mark m = kv.first.Mark();
    key_at.push_back(core::SourceLocation{n.file(), m.line + 1, m.column + 1});
  }
  std::map<std::string, FittedParameter> out;
  std::size_t i = 0;
  for (const auto& [name, v] : n.entries()) {
    const core::SourceLocation& at = key_at[i++];
    const std::string key = v.path();
    const auto unit = model_parameter_unit(name);
    if (!unit) {
      throw core::ConfigError(at, key, fmt::format("unknown model parameter{}; expected one of: {}",
                                                   scenario::suggest(name, parameter_candidates(name)),
                                                   scenario::join(model_parameter_patterns())));
    }
    if (out.count(name)) throw core::ConfigError(at, key, "duplicate parameter");
    FittedParameter f;
    f.where = at;
    if (v.is_map()) {
      v.expect_map({"value", "std_error"});
      f.value = parameter_value(v.get("value"), *unit, false);
      if (auto e = v.find("std_error")) f.std_error = parameter_value(*e, *unit, true);
    } else {
      f.value = parameter_value(v, *unit, false);
    }
    out[name] = f;
  }
  return out;
}

}  // namespace

std::string write_calibration(const Calibration& c) {
  std::string o = "# shardsim calibration: fitted model parameters (see validate/calibration.hpp)\n";
  if (!c.device.backend.empty()) {
    const auto q = [](const std::string& v) { return nlohmann::json(v).dump(); };
    o += fmt::format("device: {{name: {}, driver: {}, backend: {}, date: {}}}\n", q(c.device.name), q(c.device.driver),
                     q(c.device.backend), q(c.device.date));
  }
  if (c.peak) o += fmt::format("peak: {:.6g}TFLOP/s\n", c.peak->value() / 1e12);
  o += "copies:\n";
  // Names as YAML double-quoted strings (a JSON string is one): whatever characters a benchmark gave them.
  auto quoted = [](const std::string& name) { return nlohmann::json(name).dump(); };
  for (const auto& [name, f] : c.copies) o += fmt::format("  {}: {}\n", quoted(name), fit_line(f));
  o += "kernels:\n";
  for (const auto& [name, f] : c.kernels) o += fmt::format("  {}: {}\n", quoted(name), fit_line(f));
  if (!c.parameters.empty()) {
    if (!c.fitted_on.empty()) {
      o += "fitted_on:  # the machines of the runs these parameters were fitted to: they apply there only\n";
      for (const auto& m : c.fitted_on) {
        o += fmt::format("  - {{cluster: {}, device: {}}}\n", quoted(m.cluster), quoted(m.device));
      }
    }
    o += "parameters:\n";
    for (const auto& [name, f] : c.parameters) o += parameter_line(name, f);
  }
  return o;
}

Calibration parse_calibration(const std::string& text, const std::string& file) {
  const ConfigNode root = ConfigNode::parse(text, file);
  root.expect_map({"device", "peak", "copies", "kernels", "fitted_on", "parameters"});
  Calibration c;
  c.file = file;
  if (auto d = root.find("device")) c.device = parse_device(*d);
  if (auto v = root.find("peak")) c.peak = v->as_flop_rate();
  auto read_fits = [](const std::optional<ConfigNode>& n, std::map<std::string, LinearFit>& out) {
    if (!n) return;
    for (const auto& [name, v] : n->entries()) {
      v.expect_map({"latency", "bandwidth", "points", "max_relative_error"});
      LinearFit f;
      f.latency = v.get("latency").as_duration();
      f.bandwidth = v.get("bandwidth").as_bandwidth();
      if (auto p = v.find("points")) f.points = p->as_positive_int();
      if (auto e = v.find("max_relative_error")) f.max_relative_error = e->as_double();
      out[name] = f;
    }
  };
  read_fits(root.find("copies"), c.copies);
  read_fits(root.find("kernels"), c.kernels);
  if (auto p = root.find("parameters")) c.parameters = parse_parameters(*p);
  if (auto f = root.find("fitted_on")) {
    if (!f->is_sequence()) f->fail("expected a list of {cluster: NAME, device: NAME}");
    c.fitted_on_at = f->location();
    for (const auto& m : f->items()) {
      m.expect_map({"cluster", "device"});
      c.fitted_on.push_back({m.get("cluster").as_string(), m.get("device").as_string()});
    }
    if (c.fitted_on.empty()) f->fail("expected at least one machine (leave fitted_on out to apply the parameters anywhere)");
  }
  return c;
}

namespace {
// Why a calibration measured on a GPU (shardsim-validate bench) does not belong to `cluster`'s device, if it does not.
std::optional<std::string> measured_elsewhere(const Calibration& c, const core::ClusterSpec& cluster) {
  if (c.device.backend != "cuda" && c.device.backend != "hip") return std::nullopt;
  const core::ClusterSpec* measured = topology::find_preset_for_device(c.device.name);
  const bool same = c.device.name == cluster.device.name || (measured && measured->device.name == cluster.device.name);
  if (same) return std::nullopt;
  return fmt::format("this calibration was measured on '{}'{}; the scenario's device is '{}': calibrate on that "
                     "device, or run the scenario on the measured one",
                     c.device.name, measured ? fmt::format(" (the {} device)", measured->name) : "", cluster.device.name);
}
}  // namespace

void apply_calibration(const Calibration& c, core::ClusterSpec& cluster) {
  if (const auto why = measured_elsewhere(c, cluster)) {
    throw core::ConfigError(core::SourceLocation{c.file, 0, 0}, "device", *why);
  }
  if (auto it = c.copies.find("h2d_pinned"); it != c.copies.end()) cluster.host.link_bandwidth = it->second.bandwidth;
}

std::optional<std::string> fitted_elsewhere(const Calibration& c, const core::ClusterSpec& cluster) {
  if (auto why = measured_elsewhere(c, cluster)) return why;
  if (c.fitted_on.empty() || c.parameters.empty()) return std::nullopt;
  const bool device_params = std::any_of(c.parameters.begin(), c.parameters.end(),
                                         [](const auto& p) { return p.first.rfind("device.", 0) == 0; });
  const bool machine_params = std::any_of(c.parameters.begin(), c.parameters.end(),
                                          [](const auto& p) { return p.first.rfind("device.", 0) != 0; });
  const auto on = [&](auto field, const std::string& name) {
    return std::any_of(c.fitted_on.begin(), c.fitted_on.end(), [&](const FittedMachine& m) { return m.*field == name; });
  };
  std::vector<std::string> where;
  for (const auto& m : c.fitted_on) where.push_back(fmt::format("{} ({})", m.cluster, m.device));
  const std::string fitted = scenario::join(where);
  if (device_params && !on(&FittedMachine::device, cluster.device.name)) {
    return fmt::format("its device parameters were fitted to runs on {}; this machine's device is '{}'", fitted,
                       cluster.device.name);
  }
  if (machine_params && !on(&FittedMachine::cluster, cluster.name)) {
    return fmt::format("its host, network and collective parameters were fitted to runs on {}; this machine is '{}'",
                       fitted, cluster.name);
  }
  return std::nullopt;
}

void apply_parameters(const Calibration& c, scenario::Scenario& s) {
  if (const auto why = fitted_elsewhere(c, s.cluster)) {
    throw core::ConfigError(c.fitted_on_at, "fitted_on",
                            fmt::format("a calibration for the machines it was fitted on: {} (refit on this machine's "
                                        "runs, or list it under fitted_on to apply the values anyway)",
                                        *why));
  }
  const std::vector<ModelParameter> known = model_parameters(s);
  std::vector<std::string> names;
  for (const auto& p : known) names.push_back(p.name);
  // Check every value against the ranges of `s` as given before setting any, so an error leaves `s` unchanged.
  std::vector<std::pair<const ModelParameter*, double>> updates;
  for (const auto& [name, f] : c.parameters) {
    const std::string key = "parameters." + name;
    const auto it = std::find_if(known.begin(), known.end(), [&n = name](const auto& p) { return p.name == n; });
    if (it == known.end()) {
      throw core::ConfigError(f.where, key, fmt::format("cluster '{}' has no such parameter{}; it has: {}", s.cluster.name,
                                                        scenario::suggest(name, names), scenario::join(names)));
    }
    if (!(f.value >= it->lower && f.value <= it->upper)) {
      throw core::ConfigError(f.where, key,
                              fmt::format("expected a value in [{}, {}] on cluster '{}', got {}",
                                          format_parameter_value(it->lower, it->unit),
                                          format_parameter_value(it->upper, it->unit), s.cluster.name,
                                          format_parameter_value(f.value, it->unit)));
    }
    updates.emplace_back(&*it, f.value);
  }
  for (const auto& [p, v] : updates) p->set(s, v);
  auto fitted = [&](std::string_view prefix) {
    return std::any_of(updates.begin(), updates.end(), [&](const auto& u) { return u.first->name.rfind(prefix, 0) == 0; });
  };
  auto& d = s.cluster.device;
  if (fitted("device.") && !c.parameters.empty()) {
    d.efficiency_source = c.device.backend.empty() ? fmt::format("fitted to runs: {}", c.file)
                                                   : fmt::format("calibrated on {} ({}, {}): {}", c.device.name,
                                                                 c.device.backend, c.device.date, c.file);
  }
  // An attention family whose own rates were fitted cites the calibration, as the device's other figures do.
  for (const auto& [prefix, source] : {std::pair{"device.triton_attention", &d.triton_attention_source},
                                       std::pair{"device.cudnn_attention", &d.cudnn_attention_source}}) {
    if (fitted(prefix)) *source = d.efficiency_source;
  }
}

Calibration load_calibration(const std::string& path) {
  return parse_calibration(scenario::read_text_file(path, "calibration file"), path);
}

void apply_to_scenario(const Calibration& c, scenario::Scenario& s) {
  apply_calibration(c, s.cluster);
  apply_parameters(c, s);
}

std::string render_comparison(const Results& r, const Calibration& c) {
  std::string o = fmt::format("calibration of {} ({}, {})\n", c.device.name, c.device.backend, c.device.date);
  o += fmt::format("  {:<8} {:<18} {:>14} {:>14} {:>14} {:>9}\n", "kind", "name", "size", "measured", "predicted", "error");
  for (const auto& m : r.measurements) {
    if (m.kind != "copy" && m.kind != "kernel") continue;  // the compute model's fit reports those
    const auto& fits = m.kind == "copy" ? c.copies : c.kernels;
    const auto it = fits.find(m.name);
    if (it == fits.end()) continue;
    const double predicted = it->second.predict(m.bytes).value();
    const std::string size = core::format_bytes(core::Bytes(m.bytes));
    o += fmt::format("  {:<8} {:<18} {:>14} {:>14} {:>14} {:>8.2f}%\n", m.kind, m.name, size,
                     core::format_seconds(core::Seconds(m.seconds)), core::format_seconds(core::Seconds(predicted)),
                     // Round away -0.00 so equal numbers print the same either side of zero.
                     std::fabs(predicted - m.seconds) < 5e-5 * m.seconds ? 0.0 : 100.0 * (predicted - m.seconds) / m.seconds);
  }
  for (const auto& [name, f] : c.copies) {
    o += fmt::format("  copy   {:<18} latency {}, bandwidth {}\n", name, core::format_seconds(f.latency),
                     core::format_bandwidth(f.bandwidth));
  }
  for (const auto& [name, f] : c.kernels) {
    o += fmt::format("  kernel {:<18} latency {}, bandwidth {}\n", name, core::format_seconds(f.latency),
                     core::format_bandwidth(f.bandwidth));
  }
  return o;
}

}  // namespace shardsim::validate
