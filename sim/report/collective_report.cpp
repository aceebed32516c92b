#include "sim/report/collective_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "sim/core/units.hpp"
#include "sim/engine/analytical_engine.hpp"

namespace shardsim::report {
namespace {

std::string call_seconds(double s) { return core::format_seconds(core::Seconds(s)); }

std::string call_bytes_range(const CollectiveRow& r) {
  const std::string lo = core::format_bytes(core::Bytes(r.min_call_bytes));
  if (r.max_call_bytes <= r.min_call_bytes * (1.0 + 1e-9)) return lo;
  return fmt::format("{}-{}", lo, core::format_bytes(core::Bytes(r.max_call_bytes)));
}

// A point-to-point send and an all-to-all have no algorithm to pick: each rank sends to its peers directly.
bool runs_direct(graph::CollectiveOp op) { return op == graph::CollectiveOp::kSendRecv || op == graph::CollectiveOp::kAllToAll; }

std::string call_choice(const CollectiveRow& r) {
  std::string a(runs_direct(r.op) ? "direct" : core::algorithm_name(r.algorithm));
  if (r.protocol) a += fmt::format(" {}", engine::protocol_name(*r.protocol));
  return a;
}

// The roles "where the time goes" shows: every one, or a long pipeline's first and last stage.
bool role_shown(std::size_t role, std::size_t roles) { return roles <= 2 || role == 0 || role + 1 == roles; }

}  // namespace

std::vector<CollectiveRow> collective_rows(const scenario::Scenario& s, const scenario::Evaluation& ev,
                                           std::uint16_t role) {
  const graph::TaskGraph& g = ev.graph;
  // The analytical engine's price of each call (the library model: algorithm, protocol, latency) whatever engine
  // ran the iteration; the run's own timings give the busy time.
  const engine::AnalyticalEngine pricer(s.cluster, s.plan.algorithm);
  std::vector<CollectiveRow> rows;
  const auto& tasks = g.tasks();
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const graph::Task& t = tasks[i];
    if (t.kind != graph::TaskKind::kCollective || t.role != role) continue;
    const graph::CommGroup& group = g.groups()[t.group];
    const engine::CollectiveEstimate e = pricer.collective(g, t);
    const auto key = std::make_tuple(t.purpose, t.op, group.name, e.algorithm, e.protocol);
    auto it = std::find_if(rows.begin(), rows.end(), [&](const CollectiveRow& r) {
      return std::make_tuple(r.purpose, r.op, r.group, r.algorithm, r.protocol) == key;
    });
    const double per_call = t.bytes / t.calls;
    if (it == rows.end()) {
      CollectiveRow r;
      r.purpose = t.purpose;
      r.op = t.op;
      r.group = group.name;
      r.ranks = group.shape.size;
      r.nodes = engine::nodes_spanned(s.cluster, group.shape);
      r.algorithm = e.algorithm;
      r.protocol = e.protocol;
      r.min_call_bytes = per_call;
      r.max_call_bytes = per_call;
      rows.push_back(r);
      it = rows.end() - 1;
    }
    it->calls += t.calls;
    it->bytes += t.bytes;
    it->min_call_bytes = std::min(it->min_call_bytes, per_call);
    it->max_call_bytes = std::max(it->max_call_bytes, per_call);
    it->priced_s += e.time.value();
    it->latency_s += std::min(e.latency_s, e.time.value());
    it->paced_s += e.paced_s;
    if (i < ev.run.timings.size()) it->busy_s += ev.run.timings[i].end_s - ev.run.timings[i].start_s;
    if (i < ev.run.exposed.size()) it->exposed_s += ev.run.exposed[i];
  }
  // The busiest first; ties in a fixed order (purpose, operation, group) so the output is deterministic.
  std::stable_sort(rows.begin(), rows.end(), [](const CollectiveRow& a, const CollectiveRow& b) {
    if (a.busy_s != b.busy_s) return a.busy_s > b.busy_s;
    return std::make_tuple(a.purpose, a.op, a.group) < std::make_tuple(b.purpose, b.op, b.group);
  });
  return rows;
}

std::string render_collectives(const scenario::Scenario& s, const scenario::Evaluation& ev) {
  std::string o;
  const auto& roles = ev.graph.roles();
  for (std::size_t ri = 0; ri < roles.size(); ++ri) {
    if (!role_shown(ri, roles.size())) continue;
    const auto rows = collective_rows(s, ev, static_cast<std::uint16_t>(ri));
    if (rows.empty()) continue;
    o += fmt::format("\ncollectives per iteration (rank role '{}'): each call as {} runs it, alone on the links\n",
                     roles[ri], s.cluster.library.family == core::CollectiveLibrarySpec::Family::kAlphaBeta
                                    ? "the network levels' alpha-beta model"
                                    : "the cluster's collective library");
    std::size_t gw = 5;  // the group column as wide as its longest name
    for (const auto& r : rows) gw = std::max(gw, r.group.size());
    o += fmt::format("  {:<22} {:<15} {:<{}} {:>6} {:>5} {:>6}  {:<23} {:<12} {:>10} {:>8} {:>11} {:>11}\n", "purpose",
                     "op", "group", gw, "ranks", "nodes", "calls", "bytes per call", "runs as", "per call", "latency", "busy",
                     "exposed");
    for (const auto& r : rows) {
      const double per_call = r.priced_s / static_cast<double>(r.calls);
      o += fmt::format("  {:<22} {:<15} {:<{}} {:>6} {:>5} {:>6}  {:<23} {:<12} {:>10} {:>7.1f}% {:>11} {:>11}\n",
                       graph::purpose_name(r.purpose), graph::collective_name(r.op), r.group, gw, r.ranks, r.nodes, r.calls,
                       call_bytes_range(r), call_choice(r), call_seconds(per_call), r.priced_s > 0 ? 100.0 * r.latency_s / r.priced_s : 0.0,
                       call_seconds(r.busy_s), call_seconds(r.exposed_s));
    }
  }
  if (!o.empty()) {
    o += "  per call: the mean of the calls' prices; latency: the share of that price that does not shrink with bytes\n"
         "  (the library's steps, a paced ring's floor); busy: the calls' time in this run, hidden or not; exposed: the\n"
         "  part of it no compute hid (their share of \"exposed communication\" above)\n";
  }
  return o;
}

nlohmann::ordered_json collectives_json(const scenario::Scenario& s, const scenario::Evaluation& ev) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  const auto& roles = ev.graph.roles();
  for (std::size_t ri = 0; ri < roles.size(); ++ri) {
    for (const auto& r : collective_rows(s, ev, static_cast<std::uint16_t>(ri))) {
      nlohmann::ordered_json j;
      j["role"] = roles[ri];
      j["purpose"] = graph::purpose_name(r.purpose);
      j["op"] = graph::collective_name(r.op);
      j["group"] = r.group;
      j["ranks"] = r.ranks;
      j["nodes"] = r.nodes;
      j["algorithm"] = runs_direct(r.op) ? "direct" : core::algorithm_name(r.algorithm);
      j["protocol"] = r.protocol ? nlohmann::ordered_json(engine::protocol_name(*r.protocol)) : nlohmann::ordered_json();
      j["calls"] = r.calls;
      j["bytes"] = r.bytes;
      j["min_call_bytes"] = r.min_call_bytes;
      j["max_call_bytes"] = r.max_call_bytes;
      j["priced_s"] = r.priced_s;
      j["latency_s"] = r.latency_s;
      j["paced_s"] = r.paced_s;
      j["busy_s"] = r.busy_s;
      j["exposed_s"] = r.exposed_s;
      out.push_back(std::move(j));
    }
  }
  return out;
}

}  // namespace shardsim::report
