#include "sim/report/collective_report.hpp"

#include <gtest/gtest.h>

#include <string>

#include "sim/scenario/evaluate.hpp"
#include "sim/scenario/scenario.hpp"

namespace shardsim::report {
namespace {

scenario::Scenario parse(const std::string& yaml) { return scenario::parse_scenarios(yaml, "<test>").front(); }

double purpose_busy(const std::vector<CollectiveRow>& rows, graph::Purpose p) {
  double s = 0.0;
  for (const auto& r : rows) {
    if (r.purpose == p) s += r.busy_s;
  }
  return s;
}

// DeepSpeed ZeRO-3 across two Polaris nodes: every collective of the iteration is in one row, the rows' calls and
// bytes add up, each row's latency is part of its price, and on the analytical engine (no shared links) the
// run's busy time is the price. The persistent norms are gathered one call each after the step (stage3.py
// _post_step): LLaMA's 2 per block and the final one.
TEST(CollectiveReport, ZeroThreeCallByCall) {
  const auto s = parse(
      "model: {preset: llama2-7b, layers: 8}\ncluster: {preset: polaris, nodes: 2}\n"
      "plan: {zero_stage: 3, micro_batch: 1, global_batch: 8, recompute: full}\n");
  const auto ev = scenario::evaluate(s);
  const auto rows = collective_rows(s, ev, 0);
  ASSERT_FALSE(rows.empty());
  std::uint64_t collectives = 0;
  for (const auto& t : ev.graph.tasks()) {
    if (t.kind == graph::TaskKind::kCollective && t.role == 0) collectives += t.calls;
  }
  std::uint64_t calls = 0;
  for (const auto& r : rows) {
    calls += r.calls;
    EXPECT_EQ(r.ranks, 8);
    EXPECT_EQ(r.nodes, 2);
    EXPECT_LE(r.min_call_bytes, r.bytes / static_cast<double>(r.calls) * (1 + 1e-12));
    EXPECT_GE(r.max_call_bytes, r.bytes / static_cast<double>(r.calls) * (1 - 1e-12));
    EXPECT_GE(r.latency_s, 0.0);
    EXPECT_LE(r.latency_s, r.priced_s);
    EXPECT_NEAR(r.busy_s, r.priced_s, 1e-9 * r.priced_s);
    ASSERT_TRUE(r.protocol.has_value());  // NCCL's tuning model picked it
  }
  EXPECT_EQ(calls, collectives);
  // The busiest row first.
  for (std::size_t i = 1; i < rows.size(); ++i) EXPECT_GE(rows[i - 1].busy_s, rows[i].busy_s);
  std::uint64_t persistent = 0;
  for (const auto& r : rows) {
    if (r.purpose == graph::Purpose::kParamUpdateGather) persistent += r.calls;
  }
  EXPECT_EQ(persistent, 2U * 8U + 1U);
  // Collectives are part of each purpose's communication and of its exposed time (which also count the gathers'
  // copy kernels); what is exposed is part of what is busy.
  const auto& role = ev.run.roles[0];
  double exposed = 0.0;
  for (const auto& r : rows) {
    EXPECT_GE(r.exposed_s, 0.0);
    EXPECT_LE(r.exposed_s, r.busy_s * (1 + 1e-12));
    exposed += r.exposed_s;
  }
  EXPECT_GT(exposed, 0.0);
  EXPECT_LE(exposed, role.exposed_comm.value() * (1 + 1e-12));
  for (auto p : {graph::Purpose::kParamGatherFwd, graph::Purpose::kParamGatherBwd, graph::Purpose::kGradReduce,
                 graph::Purpose::kParamUpdateGather}) {
    const auto i = static_cast<std::size_t>(p);
    const double busy = purpose_busy(rows, p);
    EXPECT_GT(busy, 0.0) << graph::purpose_name(p);
    EXPECT_LE(busy, role.comm_by_purpose[i].value() * (1 + 1e-12)) << graph::purpose_name(p);
    double e = 0.0;
    for (const auto& r : rows) e += r.purpose == p ? r.exposed_s : 0.0;
    EXPECT_LE(e, role.exposed_by_purpose[i].value() * (1 + 1e-12) + 1e-15) << graph::purpose_name(p);
  }
  // After the step nothing computes: the persistent gathers are exposed whole.
  for (const auto& r : rows) {
    if (r.purpose == graph::Purpose::kParamUpdateGather) {
      EXPECT_NEAR(r.exposed_s, r.busy_s, 1e-9 * r.busy_s);
    }
  }
  const std::string text = render_collectives(s, ev);
  EXPECT_NE(text.find("collectives per iteration (rank role 'rank')"), std::string::npos) << text;
  EXPECT_NE(text.find("updated-param gather   all-gather"), std::string::npos) << text;
  const auto j = collectives_json(s, ev);
  ASSERT_EQ(j.size(), rows.size());
  EXPECT_EQ(j[0]["role"], "rank");
  EXPECT_EQ(j[0]["calls"].get<std::uint64_t>(), rows[0].calls);
}

// Megatron-style tensor parallelism: the tensor-parallel all-reduces run in the node's group; a plan without
// collectives (one device) has no section.
TEST(CollectiveReport, TensorParallelAndNone) {
  const auto tp = parse(
      "model: {preset: llama2-7b, layers: 4}\ncluster: {preset: dgx-a100, nodes: 1}\n"
      "plan: {framework: megatron, tp: 8, zero_stage: 0, micro_batch: 1, global_batch: 4, recompute: none}\n");
  const auto ev = scenario::evaluate(tp);
  const auto rows = collective_rows(tp, ev, 0);
  bool found = false;
  for (const auto& r : rows) {
    if (r.purpose != graph::Purpose::kTensorParallel) continue;
    found = true;
    EXPECT_EQ(r.ranks, 8);
    EXPECT_EQ(r.nodes, 1);
    EXPECT_GT(r.calls, 4U * 4U);  // at least two per block in forward and two in backward, 4 micro-batches
  }
  EXPECT_TRUE(found);
  const auto one = parse(
      "model: {preset: llama2-7b, layers: 4}\ncluster: {preset: dgx-a100, nodes: 1, devices_per_node: 1}\n"
      "plan: {zero_stage: 0, micro_batch: 1, global_batch: 1, recompute: none}\n");
  const auto ev1 = scenario::evaluate(one);
  EXPECT_TRUE(collective_rows(one, ev1, 0).empty());
  EXPECT_EQ(render_collectives(one, ev1), "");
}

}  // namespace
}  // namespace shardsim::report
