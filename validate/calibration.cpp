#include "validate/calibration.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "sim/core/errors.hpp"
#include "sim/scenario/config_node.hpp"

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

GemmFit fit_gemm(const std::vector<std::pair<double, double>>& pts) {
  SHARDSIM_ASSERT(pts.size() >= 2, "a GEMM fit needs two points");
  // 1/eff = 1/e_max + (F_half/e_max) (1/F): linear in 1/F; relative weighting by eff.
  Eigen::MatrixXd a(static_cast<Eigen::Index>(pts.size()), 2);
  Eigen::VectorXd y(static_cast<Eigen::Index>(pts.size()));
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto row = static_cast<Eigen::Index>(i);
    const double w = pts[i].second;  // d(1/eff) = -d(eff)/eff^2: weight by eff for relative error
    a(row, 0) = w;
    a(row, 1) = w / pts[i].first;
    y(row) = w / pts[i].second;
  }
  const Eigen::Vector2d sol = a.colPivHouseholderQr().solve(y);
  GemmFit f;
  f.max_efficiency = 1.0 / sol(0);
  f.half_flops = std::max(0.0, sol(1) * f.max_efficiency);
  f.points = static_cast<int>(pts.size());
  for (const auto& [flops, eff] : pts) {
    f.max_relative_error = std::max(f.max_relative_error, std::fabs(f.efficiency(flops) - eff) / eff);
  }
  return f;
}

Calibration calibrate(const Results& r, const std::string& file) {
  Calibration c;
  c.device = r.device;
  c.peak = r.peak;
  std::map<std::string, std::vector<std::pair<double, double>>> copies, kernels;
  std::vector<std::pair<double, double>> gemm;
  for (const auto& m : r.measurements) {
    if (m.kind == "copy") copies[m.name].emplace_back(m.bytes, m.seconds);
    if (m.kind == "kernel") kernels[m.name].emplace_back(m.bytes, m.seconds);
    if (m.kind == "gemm" && r.peak) gemm.emplace_back(m.flops, m.flops / m.seconds / r.peak->value());
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
      out[name] = fit_latency_bandwidth(pts);
    }
  };
  fit_all(copies, c.copies, "copy");
  fit_all(kernels, c.kernels, "kernel");
  if (gemm.size() >= 2) c.gemm = fit_gemm(gemm);
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
  root.expect_map({"device", "peak", "measurements"});
  Results r;
  r.device = parse_device(root.get("device"));
  if (auto v = root.find("peak")) r.peak = v->as_flop_rate();
  for (const ConfigNode& m : root.get("measurements").items()) {
    m.expect_map({"kind", "name", "bytes", "m", "n", "k", "seconds"});
    Measurement x;
    x.kind = m.get("kind").as_choice({"copy", "kernel", "gemm"});
    x.name = m.get("name").as_string();
    x.seconds = m.get("seconds").as_duration().value();
    if (x.seconds <= 0.0) m.get("seconds").fail("expected a positive duration");
    if (x.kind == "gemm") {
      x.m = m.get("m").as_positive_int();
      x.n = m.get("n").as_positive_int();
      x.k = m.get("k").as_positive_int();
      x.flops = 2.0 * static_cast<double>(x.m) * x.n * x.k;
    } else {
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

}  // namespace

std::string write_calibration(const Calibration& c) {
  std::string o = "# shardsim calibration: fitted model parameters (see validate/calibration.hpp)\n";
  o += fmt::format("device: {{name: \"{}\", driver: \"{}\", backend: {}, date: \"{}\"}}\n", c.device.name, c.device.driver,
                   c.device.backend, c.device.date);
  if (c.peak) o += fmt::format("peak: {:.6g}TFLOP/s\n", c.peak->value() / 1e12);
  o += "copies:\n";
  for (const auto& [name, f] : c.copies) o += fmt::format("  {}: {}\n", name, fit_line(f));
  o += "kernels:\n";
  for (const auto& [name, f] : c.kernels) o += fmt::format("  {}: {}\n", name, fit_line(f));
  if (c.gemm) {
    o += fmt::format("gemm: {{max_efficiency: {:.6g}, half_flops: {:.6g}GFLOP, points: {}, max_relative_error: {:.4f}}}\n",
                     c.gemm->max_efficiency, c.gemm->half_flops / 1e9, c.gemm->points, c.gemm->max_relative_error);
  }
  return o;
}

Calibration parse_calibration(const std::string& text, const std::string& file) {
  const ConfigNode root = ConfigNode::parse(text, file);
  root.expect_map({"device", "peak", "copies", "kernels", "gemm"});
  Calibration c;
  c.device = parse_device(root.get("device"));
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
  if (auto g = root.find("gemm")) {
    g->expect_map({"max_efficiency", "half_flops", "points", "max_relative_error"});
    GemmFit f;
    f.max_efficiency = g->get("max_efficiency").as_fraction();
    try {
      f.half_flops = core::parse_flops(g->get("half_flops").as_string()).value();
    } catch (const core::UnitError& e) {
      g->get("half_flops").fail(e.what());
    }
    if (auto p = g->find("points")) f.points = p->as_positive_int();
    if (auto e = g->find("max_relative_error")) f.max_relative_error = e->as_double();
    c.gemm = f;
  }
  return c;
}

void apply_calibration(const Calibration& c, core::ClusterSpec& cluster) {
  auto& d = cluster.device;
  if (c.gemm) d.gemm_efficiency = std::clamp(c.gemm->max_efficiency, 0.01, 1.0);
  if (auto it = c.copies.find("d2d"); it != c.copies.end()) {
    // A device copy reads and writes every byte: the memory system moves 2x the copied bytes.
    d.memory_efficiency = std::clamp(2.0 * it->second.bandwidth.value() / d.hbm_bandwidth.value(), 0.01, 1.0);
  }
  if (auto it = c.copies.find("h2d_pinned"); it != c.copies.end()) cluster.host.link_bandwidth = it->second.bandwidth;
}

std::string render_comparison(const Results& r, const Calibration& c) {
  std::string o = fmt::format("calibration of {} ({}, {})\n", c.device.name, c.device.backend, c.device.date);
  o += fmt::format("  {:<8} {:<18} {:>14} {:>14} {:>14} {:>9}\n", "kind", "name", "size", "measured", "predicted", "error");
  for (const auto& m : r.measurements) {
    double predicted = 0.0;
    std::string size;
    if (m.kind == "gemm") {
      if (!c.gemm || !c.peak) continue;
      predicted = m.flops / (c.gemm->efficiency(m.flops) * c.peak->value());
      size = fmt::format("{:.3g} GFLOP", m.flops / 1e9);
    } else {
      const auto& fits = m.kind == "copy" ? c.copies : c.kernels;
      const auto it = fits.find(m.name);
      if (it == fits.end()) continue;
      predicted = it->second.predict(m.bytes).value();
      size = core::format_bytes(core::Bytes(m.bytes));
    }
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
  if (c.gemm) {
    o += fmt::format("  gemm   efficiency up to {:.3f}, half of it at {:.3g} GFLOP\n", c.gemm->max_efficiency,
                     c.gemm->half_flops / 1e9);
  }
  return o;
}

}  // namespace shardsim::validate
