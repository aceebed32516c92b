#include "sim/report/network_report.hpp"

#include <fmt/format.h>

namespace shardsim::report {

std::string render_network(const scenario::Scenario& s, const scenario::Evaluation& simgrid,
                           const scenario::Evaluation& analytical, bool with_cost) {
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
  if (!n.busiest.empty()) {
    o += fmt::format("  bottleneck link          {}  ({:.1f}% busy)\n", n.busiest[0].name, 100.0 * n.busiest[0].utilisation);
    o += "  busiest links (one direction)                          GB/s        GB moved    busy\n";
    for (const auto& l : n.busiest) {
      o += fmt::format("    {:<50} {:>8.1f} {:>13.3f} {:>6.1f}%\n", l.name, l.bandwidth_Bps / 1e9, l.bytes / 1e9,
                       100.0 * l.utilisation);
    }
  }
  if (ts > ta * 1.02 && !n.busiest.empty()) {
    o += fmt::format("  the difference comes from links shared by concurrent transfers; the busiest is {}\n",
                     n.busiest[0].name);
  }
  if (with_cost) {
    o += fmt::format("  simulation cost          {:.2f} s wall, {:.0f} MB peak\n", n.wall_s, n.peak_rss_mb);
  }
  (void)s;
  return o;
}

}  // namespace shardsim::report
