#include "sim/report/network_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace shardsim::report {

std::string render_network(const scenario::Evaluation& simgrid, const scenario::Evaluation& analytical) {
  const engine::NetworkReport& n = simgrid.run.network;
  const double ts = simgrid.run.iteration_time.value();
  const double ta = analytical.run.iteration_time.value();
  std::string o = "\nnetwork (simgrid engine)\n";
  o += fmt::format("  platform                 {}\n", n.topology);
  o += fmt::format("  iteration time           {}  (analytical {}, {:+.2f}%)\n",
                   core::format_seconds(simgrid.run.iteration_time), core::format_seconds(analytical.run.iteration_time),
                   ta > 0.0 ? 100.0 * (ts - ta) / ta : 0.0);
  if (!simgrid.run.roles.empty() && !analytical.run.roles.empty()) {
    o += fmt::format("  exposed communication    {}  (analytical {})\n",
                     core::format_seconds(simgrid.run.roles[0].exposed_comm),
                     core::format_seconds(analytical.run.roles[0].exposed_comm));
  }
  o += fmt::format("  collectives simulated    {} as transfers ({} flows), {} replayed from an identical one\n",
                   n.live_collectives, n.flows, n.cached_collectives);
  o += fmt::format("  collective time, summed  {} per-step latency, {} moving bytes over each one's bounding link\n",
                   core::format_seconds(core::Seconds(n.step_latency_s)), core::format_seconds(core::Seconds(n.bandwidth_s)));
  if (!n.bounding.empty()) {
    o += fmt::format("  bottleneck link          {}  (bounds {} of collective time)\n", n.bounding[0].name,
                     core::format_seconds(core::Seconds(n.bounding[0].bound_s)));
    o += "  links that bound collectives (one per kind)            GB/s        GB moved    bounds\n";
    for (const auto& l : n.bounding) {
      o += fmt::format("    {:<50} {:>8.1f} {:>13.3f} {:>10}\n", l.name, l.bandwidth_Bps / 1e9, l.bytes / 1e9,
                       core::format_seconds(core::Seconds(l.bound_s)));
    }
  }
  if (!n.busiest.empty()) {
    o += "  busiest links (one per kind)                           GB/s        GB moved    busy\n";
    for (const auto& l : n.busiest) {
      o += fmt::format("    {:<50} {:>8.1f} {:>13.3f} {:>6.1f}%\n", l.name, l.bandwidth_Bps / 1e9, l.bytes / 1e9,
                       100.0 * l.utilisation);
    }
  }
  if (ta > 0.0 && std::abs(ts - ta) > 0.02 * ta) {
    const bool latency = n.step_latency_s > n.bandwidth_s;
    o += "  why the engines differ\n";
    o += "    the analytical engine gives each collective its levels' full per-rank bandwidth and each step the\n"
         "    level's latency; here concurrent transfers share links and each step pays its route's latency\n";
    o += fmt::format("    here collectives spend more time in {} ({} vs {}); the link bounding most is {}\n",
                     latency ? "per-step latency than moving bytes" : "moving bytes than in per-step latency",
                     core::format_seconds(core::Seconds(latency ? n.step_latency_s : n.bandwidth_s)),
                     core::format_seconds(core::Seconds(latency ? n.bandwidth_s : n.step_latency_s)),
                     n.bounding.empty() ? std::string("none") : n.bounding[0].name);
  }
  return o;
}

std::string render_network_sweep(const std::vector<scenario::Scenario>& scenarios,
                                 const std::vector<scenario::Evaluation>& simgrid,
                                 const std::vector<scenario::Evaluation>& analytical) {
  std::size_t w = 7;
  for (const auto& s : scenarios) w = std::max(w, s.variant.size());
  std::string o = "\nnetwork (simgrid engine vs analytical)\n";
  o += fmt::format("  {:<{}}  {:>10}  {:>10}  {:>8}  {}\n", "variant", w, "simgrid", "analytic", "diff",
                   "link bounding most");
  for (std::size_t i = 0; i < scenarios.size(); ++i) {
    if (scenarios[i].engine != engine::EngineKind::kSimGrid) continue;
    const double ts = simgrid[i].run.iteration_time.value();
    const double ta = analytical[i].run.iteration_time.value();
    const auto& b = simgrid[i].run.network.bounding;
    o += fmt::format("  {:<{}}  {:>10}  {:>10}  {:>+7.2f}%  {}\n", scenarios[i].variant, w,
                     core::format_seconds(simgrid[i].run.iteration_time),
                     core::format_seconds(analytical[i].run.iteration_time), ta > 0.0 ? 100.0 * (ts - ta) / ta : 0.0,
                     b.empty() ? std::string("-") : b[0].name);
  }
  return o;
}

}  // namespace shardsim::report
