// The validation-set reader and runner as a library: CSV cells with their lines, rows from inline keys and from
// a table (devices as whole nodes or part of one, scaled columns), the model's refusals kept with their reason,
// predictions equal to evaluate()'s, error statistics, claims and error bands.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "sim/scenario/evaluate.hpp"
#include "validate/csv_table.hpp"
#include "validate/validation_runner.hpp"
#include "validate/validation_set.hpp"

namespace {

using namespace shardsim;
using validate::CsvTable;
using validate::Metric;

TEST(CsvTable, CellsHeaderAndLines) {
  const auto t = CsvTable::parse("\xEF\xBB\xBF" "a, b ,c\n1,\"x, y\",3\n\n4,\"multi\nline\",6\n", "t.csv");
  ASSERT_EQ(t.columns().size(), 3u);
  EXPECT_EQ(t.columns()[1], "b");
  ASSERT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.cell(0, 1), "x, y");
  EXPECT_EQ(t.line(0), 2);
  EXPECT_EQ(t.line(1), 4);
  EXPECT_EQ(t.cell(1, 1), "multi\nline");
  EXPECT_DOUBLE_EQ(t.number(1, 2), 6.0);
  EXPECT_EQ(*t.column("c"), 2u);
  EXPECT_FALSE(t.column("d"));
}

TEST(CsvTable, ErrorsNameFileLineAndColumn) {
  auto message = [](const std::string& text) {
    try {
      const auto t = CsvTable::parse(text, "t.csv");
      (void)t.number(0, 1);
    } catch (const core::ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("a,b\n1,2,3\n").find("t.csv:2:1"), std::string::npos);
  EXPECT_NE(message("a,b\n1,2,3\n").find("2 cells as in the header (got 3)"), std::string::npos);
  EXPECT_NE(message("a,b\n1,x\n").find("t.csv:2:1: b: a number (got 'x')"), std::string::npos) << message("a,b\n1,x\n");
  EXPECT_NE(message("a,a\n1,2\n").find("column names used once"), std::string::npos);
  EXPECT_NE(message("").find("a header row"), std::string::npos);
  EXPECT_NE(message("a,b\n1,\"2\n").find("quoted cell is not closed"), std::string::npos);
}

struct TempDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("shardsim-vset-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
                                ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
};

const char* kSet =
    "set: s\nrole: fit\ntitle: t\nsource: src\nassumptions: [one]\n"
    "base:\n  model: {preset: llama2-7b, seq_len: 2048}\n  cluster: {preset: dgx-a100, nodes: 1}\n"
    "  plan: {zero_stage: 1, micro_batch: 1, global_batch: 64, recompute: full}\n"
    "rows:\n"
    "  - {id: half-node, keys: {devices: 4}, measured: {iteration_time: 10s}, cite: c}\n"
    "  - {id: two-nodes, keys: {devices: 16, plan.zero_stage: 3}, measured: {mfu: 0.5, memory: 20GB}, cite: c}\n"
    "  - {id: no, keys: {plan.tp: 3}, measured: {iteration_time: 1s}, cite: c}\n"
    "table:\n  file: t.csv\n  id: \"r{row}\"\n  cite: tab\n"
    "  columns: {gpus: devices, h: [model.hidden, {key: model.ffn_hidden, scale: 3}], ms: {measured: iteration_time, unit: ms}}\n"
    "claims:\n  - {id: ratio, ratio: [two-nodes, half-node], metric: mfu, measured: 1.0, cite: c}\n";

// The error a set file's text gives with `from` replaced by `to` ("no error" where it parses).
std::string parse_error(std::string text, const std::string& from, const std::string& to,
                        const std::filesystem::path& dir) {
  text.replace(text.find(from), from.size(), to);
  try {
    (void)validate::parse_validation_set(text, (dir / "s.yaml").string());
  } catch (const core::ConfigError& e) {
    return std::string(e.what());
  }
  return std::string("no error");
}

TEST(ValidationSet, RowsFromKeysAndTable) {
  TempDir d;
  std::ofstream(d.path / "t.csv") << "gpus,h,ms\n8,2048,1500\n2,1024,800\n";
  const auto set = validate::parse_validation_set(kSet, (d.path / "s.yaml").string());
  EXPECT_EQ(set.id, "s");
  EXPECT_EQ(set.role, "fit");
  ASSERT_EQ(set.rows.size(), 5u);
  const auto& half = *set.rows[0].scenario;
  EXPECT_EQ(half.cluster.nodes, 1);
  EXPECT_EQ(half.cluster.devices_per_node, 4);  // part of a DGX: the NVSwitch level shrinks to 4 GPUs
  EXPECT_EQ(half.cluster.levels[0].domain_ranks, 4);
  EXPECT_EQ(half.plan.dp, 4);
  const auto& two = *set.rows[1].scenario;
  EXPECT_EQ(two.cluster.nodes, 2);
  EXPECT_EQ(two.plan.zero_stage, 3);
  ASSERT_EQ(set.rows[1].measured.size(), 2u);
  EXPECT_DOUBLE_EQ(set.rows[1].measured[1].value, 20e9);
  EXPECT_FALSE(set.rows[2].scenario);
  EXPECT_NE(set.rows[2].refused.find("s.yaml:"), std::string::npos) << set.rows[2].refused;
  EXPECT_EQ(set.rows[2].refused.find(d.path.string()), std::string::npos) << "named relative to the set";
  const auto& r1 = *set.rows[3].scenario;
  EXPECT_EQ(set.rows[3].id, "r1");
  EXPECT_EQ(r1.model.hidden, 2048);
  EXPECT_EQ(r1.model.ffn_hidden, 6144);
  EXPECT_DOUBLE_EQ(set.rows[3].measured[0].value, 1.5);
  EXPECT_EQ(set.rows[3].where.line, 2);
  EXPECT_EQ(set.rows[4].scenario->cluster.devices_per_node, 2);
}

TEST(ValidationSet, RunnerMatchesEvaluateAndSummarises) {
  TempDir d;
  std::ofstream(d.path / "t.csv") << "gpus,h,ms\n8,2048,1500\n2,1024,800\n";
  const auto set = validate::parse_validation_set(kSet, (d.path / "s.yaml").string());
  const auto report = validate::run_validation({set}, engine::EngineKind::kAnalytical, 2);
  ASSERT_EQ(report.sets.size(), 1u);
  const auto& sum = report.sets[0];
  EXPECT_EQ(sum.refused, 1);  // the tp 3 row
  EXPECT_EQ(sum.compared, 5);  // half-node, two-nodes x (mfu, memory), r1, r2
  const auto ev = scenario::evaluate(*set.rows[0].scenario);
  const auto& first = report.rows[0];
  EXPECT_DOUBLE_EQ(first.predicted, ev.run.iteration_time.value());
  EXPECT_DOUBLE_EQ(first.error, (ev.run.iteration_time.value() - 10.0) / 10.0);
  EXPECT_EQ(first.family, "dgx-a100 / data parallel (ddp/zero)");
  double mean_abs = 0.0, bias = 0.0;
  int n = 0;
  for (const auto& r : report.rows) {
    if (!r.refused.empty()) continue;
    mean_abs += std::fabs(r.error);
    bias += r.error;
    ++n;
  }
  EXPECT_NEAR(sum.mean_abs, mean_abs / n, 1e-12);
  EXPECT_NEAR(sum.bias, bias / n, 1e-12);
  ASSERT_EQ(report.claims.size(), 1u);
  const auto ev2 = scenario::evaluate(*set.rows[1].scenario);
  EXPECT_NEAR(report.claims[0].predicted, ev2.mfu / ev.mfu, 1e-12);
  // Bands: throughput errors become time errors (a throughput x too high is a time 1/x too short).
  const auto bands = validate::error_bands(report);
  ASSERT_FALSE(bands.empty());
  const auto round = validate::parse_error_bands(validate::write_error_bands(bands), "b.yaml");
  ASSERT_EQ(round.size(), bands.size());
  EXPECT_EQ(round[0].covers, bands[0].covers);
  EXPECT_NEAR(round[0].p90, bands[0].p90, 1e-4);
  EXPECT_NE(validate::describe_validation(*set.rows[0].scenario, bands).find("validated on s (fit"), std::string::npos);
  // Whatever the thread count, the same report.
  EXPECT_EQ(validate::validation_to_json(validate::run_validation({set}, engine::EngineKind::kAnalytical, 1)).dump(),
            validate::validation_to_json(report).dump());
}

TEST(ValidationSet, StructuralErrorsAreTheFilesErrors) {
  TempDir d;
  std::ofstream(d.path / "t.csv") << "gpus,h,ms\n8,2048,1500\n";
  auto message = [&](const std::string& from, const std::string& to) { return parse_error(kSet, from, to, d.path); };
  EXPECT_NE(message("role: fit", "role: train").find("s.yaml:2:7: role:"), std::string::npos);
  EXPECT_NE(message("ratio: [two-nodes, half-node]", "ratio: [two-node, half-node]").find("did you mean 'two-nodes'"),
            std::string::npos);
  EXPECT_NE(message("{measured: iteration_time, unit: ms}", "{measured: iteration_time}").find("unit"), std::string::npos);
  EXPECT_NE(message("gpus: devices, ", "").find("'gpus' is not"), std::string::npos);
  EXPECT_NE(message("preset: llama2-7b", "preset: llama2-8b").find("base.model.preset"), std::string::npos);
  std::ofstream(d.path / "t.csv") << "gpus,h,ms\n8,2048,fast\n";
  EXPECT_NE(message("role: fit", "role: fit").find("t.csv:2:1: ms: a number (got 'fast')"), std::string::npos);
}

// A metric measured in several runs is their median (the mean of the middle two of an even count); the report
// says where the prediction falls against the runs' range; a claim's ratio from several runs is their median too.
TEST(ValidationSet, RepeatedRunsCompareAgainstTheirMedianAndReportTheRange) {
  TempDir d;
  std::ofstream(d.path / "t.csv") << "gpus,h,ms\n8,2048,1500\n";
  std::string text = kSet;
  auto swap = [&](const std::string& from, const std::string& to) { text.replace(text.find(from), from.size(), to); };
  swap("measured: {iteration_time: 10s}", "measured: {iteration_time: [12s, 8s, 9s]}");
  swap("measured: 1.0, cite", "measured: [1.0, 2.0], cite");
  const auto set = validate::parse_validation_set(text, (d.path / "s.yaml").string());
  ASSERT_EQ(set.rows[0].measured[0].runs.size(), 3u);
  EXPECT_DOUBLE_EQ(set.rows[0].measured[0].value, 9.0);
  EXPECT_DOUBLE_EQ(set.claims[0].measured, 1.5);
  const auto report = validate::run_validation({set}, engine::EngineKind::kAnalytical, 1);
  const auto& first = report.rows[0];
  EXPECT_DOUBLE_EQ(first.error, (first.predicted - 9.0) / 9.0);
  EXPECT_DOUBLE_EQ(validate::run_spread(first), 4.0 / 9.0);
  EXPECT_EQ(validate::inside_runs(first), first.predicted >= 8.0 && first.predicted <= 12.0);
  EXPECT_EQ(report.sets[0].repeated, 1);
  EXPECT_EQ(report.sets[0].inside_runs, validate::inside_runs(first) ? 1 : 0);
  EXPECT_NE(validate::render_validation(report, true).find("median of 3 runs 8.000 s..12.000 s"), std::string::npos)
      << validate::render_validation(report, true);
  EXPECT_NE(validate::render_validation(report, false).find("repeated runs"), std::string::npos);
  EXPECT_EQ(validate::validation_to_json(report)["rows"][0]["measured_runs"].size(), 3u);
  // A row without runs has neither.
  EXPECT_FALSE(validate::inside_runs(report.rows[1]));
  EXPECT_DOUBLE_EQ(validate::run_spread(report.rows[1]), 0.0);

  // One run in brackets, a run without its unit, one ratio in brackets, a negative ratio: the file's errors.
  auto message = [&](const std::string& from, const std::string& to) { return parse_error(text, from, to, d.path); };
  EXPECT_NE(message("[12s, 8s, 9s]", "[12s]").find("two or more runs"), std::string::npos);
  EXPECT_NE(message("[12s, 8s, 9s]", "[12s, 8]").find("unit"), std::string::npos);
  EXPECT_NE(message("[1.0, 2.0]", "[1.0]").find("two or more runs"), std::string::npos);
  EXPECT_NE(message("[1.0, 2.0]", "[1.0, -2.0]").find("a positive ratio"), std::string::npos);
}

// The step's share of forward + backward + step, from rows that give all three phases: measured 2 / (1 + 1 + 2) =
// 50%, predicted 3 / (1 + 1 + 3) = 60%: +10 points; a row missing a phase (or refused) does not count.
TEST(ValidationReport, StepShareInPointsFromRowsWithThreePhases) {
  validate::ValidationReport r;
  auto row = [&](const char* id, Metric m, double measured, double predicted, const char* refused = "") {
    validate::RowResult x;
    x.set = "s";
    x.id = id;
    x.metric = m;
    x.measured = measured;
    x.predicted = predicted;
    x.refused = refused;
    r.rows.push_back(x);
  };
  row("a", Metric::kForwardTime, 1.0, 1.0);
  row("a", Metric::kBackwardTime, 1.0, 1.0);
  row("a", Metric::kStepTime, 2.0, 3.0);
  row("b", Metric::kForwardTime, 1.0, 1.0);
  row("b", Metric::kStepTime, 1.0, 1.0);
  row("c", Metric::kForwardTime, 1.0, 1.0);
  row("c", Metric::kBackwardTime, 1.0, 1.0);
  row("c", Metric::kStepTime, 2.0, 0.0, "does not fit");
  const auto shares = validate::step_shares(r);
  ASSERT_EQ(shares.size(), 1U);
  EXPECT_EQ(shares[0].rows, 1);
  EXPECT_NEAR(shares[0].mean_abs_points, 10.0, 1e-9);
  EXPECT_NEAR(shares[0].bias_points, 10.0, 1e-9);
  EXPECT_NE(validate::render_validation(r, false).find("step share"), std::string::npos);
  const auto j = validate::validation_to_json(r);
  ASSERT_EQ(j["step_shares"].size(), 1U);
  EXPECT_NEAR(j["step_shares"][0]["bias_points"].get<double>(), 10.0, 1e-9);
}

// A ratio claim holds within 25% of the published ratio; where the paper reports an effect of 10% or more, the
// prediction must show half to twice that effect (by log ratio), on the same side of 1.
TEST(ValidationClaims, RatiosMustReproduceThePublishedEffect) {
  EXPECT_TRUE(validate::ratio_claim_holds(1.40, 1.40));
  EXPECT_TRUE(validate::ratio_claim_holds(1.40, 1.25));   // 66% of the effect, 11% off
  EXPECT_FALSE(validate::ratio_claim_holds(1.40, 1.18));  // within 25%, a half of the effect: 49%
  EXPECT_FALSE(validate::ratio_claim_holds(1.225, 1.002));
  EXPECT_FALSE(validate::ratio_claim_holds(1.20, 0.95));  // the other side of 1
  EXPECT_FALSE(validate::ratio_claim_holds(1.20, 1.48));  // more than twice the effect
  EXPECT_TRUE(validate::ratio_claim_holds(0.74, 0.71));   // a slowdown, likewise
  EXPECT_FALSE(validate::ratio_claim_holds(0.80, 0.97));
  // No clear effect published (under 10%): the 25% band alone.
  EXPECT_TRUE(validate::ratio_claim_holds(1.07, 1.00));
  EXPECT_TRUE(validate::ratio_claim_holds(0.97, 1.05));
  EXPECT_FALSE(validate::ratio_claim_holds(1.00, 1.30));
  // Outside the band whatever the effect.
  EXPECT_FALSE(validate::ratio_claim_holds(8.67, 1.82));
}

}  // namespace

// Every shipped row written as a scenario file (validate --scenario) reads back to the scenario the validation runs:
// the same model, machine and plan, and the same prediction (every 25th row evaluated, the whole of each set's
// keys checked through the parse).
TEST(ValidationSet, EveryShippedRowWritesAScenarioThatReadsBackTheSame) {
  const auto sets = validate::load_validation_sets(std::string(SHARDSIM_SOURCE_DIR) + "/validate/data");
  std::size_t rows = 0;
  for (const auto& set : sets) {
    for (const auto& row : set.rows) {
      if (!row.scenario) continue;
      const std::string yaml = validate::scenario_yaml(row, set.id);
      const auto back = scenario::parse_scenarios(yaml, "row.yaml");
      ASSERT_EQ(back.size(), 1u) << set.id << "/" << row.id;
      const auto& s = back[0];
      const auto& r = *row.scenario;
      const std::string where = set.id + "/" + row.id;
      EXPECT_EQ(s.name, where);
      EXPECT_DOUBLE_EQ(s.model.total_params(), r.model.total_params()) << where;
      EXPECT_EQ(s.cluster.total_devices(), r.cluster.total_devices()) << where;
      EXPECT_EQ(s.cluster.name, r.cluster.name) << where;
      EXPECT_EQ(s.plan.dp, r.plan.dp) << where;
      EXPECT_EQ(s.plan.tp, r.plan.tp) << where;
      EXPECT_EQ(s.plan.pp, r.plan.pp) << where;
      EXPECT_EQ(s.plan.global_batch, r.plan.global_batch) << where;
      if (rows++ % 25 == 0) {
        EXPECT_DOUBLE_EQ(scenario::evaluate(s).run.iteration_time.value(),
                         scenario::evaluate(r).run.iteration_time.value()) << where;
      }
    }
  }
  EXPECT_GT(rows, 1900u);
}

// backward_reduce_time is the backward's epilogue, DeepSpeed's bwd_allreduce: on a ZeRO-3 offload run, the last
// bucket's reduction and staging after the pass, a part of the backward; where no epilogue reduces (FSDP), nothing.
TEST(ValidationRunner, TheBackwardsEpilogueIsWhatFollowsThePass) {
  const auto sets = validate::load_validation_sets(std::string(SHARDSIM_SOURCE_DIR) + "/validate/data");
  const validate::Row* tp2 = nullptr;
  const validate::Row* fsdp = nullptr;
  for (const auto& set : sets) {
    for (const auto& row : set.rows) {
      if (set.id == "offload-polaris" && row.id == "7b-tp2") tp2 = &row;
      if (set.id == "h100-fsdp-steps" && row.id == "fsdp-h3072-l6-s4096-mb1") fsdp = &row;
    }
  }
  ASSERT_TRUE(tp2 && fsdp);
  const auto reduce = validate::predict_metric(*tp2->scenario, Metric::kBackwardReduceTime, engine::EngineKind::kAnalytical);
  const auto backward = validate::predict_metric(*tp2->scenario, Metric::kBackwardTime, engine::EngineKind::kAnalytical);
  ASSERT_TRUE(reduce && backward);
  EXPECT_GT(*reduce, 0.0);
  EXPECT_LT(*reduce, 0.1 * *backward);  // the word embedding's bucket alone, not the 429 M one its hook reduced
  const auto none = validate::predict_metric(*fsdp->scenario, Metric::kBackwardReduceTime, engine::EngineKind::kAnalytical);
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, 0.0);
}

// host_iteration_time stops the clock where the host returns from its last call: on DeepSpeed ZeRO-3 over 2,048
// ranks, after the step's wait for the gradients, before the persistent parameters' all-gathers that step() leaves
// queued (one call each over every rank: seconds of the iteration); without partitioned parameters (ZeRO-1 on one
// node), little after the host's step but the optimizer's kernels and the updated parameters' gather.
TEST(ValidationRunner, AHostClockStopsWhenTheStepReturns) {
  const auto sets = validate::load_validation_sets(std::string(SHARDSIM_SOURCE_DIR) + "/validate/data");
  const validate::Row* row = nullptr;
  for (const auto& set : sets) {
    for (const auto& r : set.rows) {
      if (set.id == "perlmutter-deepspeed-zero3" && r.id == "gpt7b-2048") row = &r;
    }
  }
  ASSERT_TRUE(row);
  const auto host = validate::predict_metric(*row->scenario, Metric::kHostIterationTime, engine::EngineKind::kAnalytical);
  const auto device = validate::predict_metric(*row->scenario, Metric::kIterationTime, engine::EngineKind::kAnalytical);
  const auto step = validate::predict_metric(*row->scenario, Metric::kStepTime, engine::EngineKind::kAnalytical);
  ASSERT_TRUE(host && device && step);
  EXPECT_LT(*host, *device - 0.5 * *step);  // most of the step's span is the queued gathers
  EXPECT_GT(*host, *device - *step);        // the host's step() itself is counted
  const scenario::Scenario one = scenario::parse_scenarios(R"(
model: {preset: llama-7b, seq_len: 2048}
cluster: {preset: dgx-h100, nodes: 1}
plan: {zero_stage: 1, micro_batch: 1, global_batch: 8}
)", "zero1.yaml").at(0);
  const auto one_host = validate::predict_metric(one, Metric::kHostIterationTime, engine::EngineKind::kAnalytical);
  const auto one_device = validate::predict_metric(one, Metric::kIterationTime, engine::EngineKind::kAnalytical);
  ASSERT_TRUE(one_host && one_device);
  EXPECT_LE(*one_host, *one_device);
  EXPECT_GT(*one_host, 0.8 * *one_device);
}
