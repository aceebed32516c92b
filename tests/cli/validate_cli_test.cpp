// `shardsim validate` and `shardsim calibrate --runs` end to end: every shipped validation set runs and no row that
// ran is refused; what the seed papers claim is checked against the model (within tolerance, or a known miss
// pinned at its current figure so that any move is seen); the error bands that `run` quotes are current;
// outputs are deterministic; bad sets exit with 2 and name the line; a fit through the CLI recovers the value
// the runs were made with.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <map>
#include <string>

#include "tests/cli/cli_support.hpp"

namespace {

using namespace shardsim::test;

Outcome run(const std::string& args, bool with_stderr = true) { return run_shardsim(args, with_stderr); }

nlohmann::json validate_json(const std::string& args) {
  const fs::path d = temp_dir("validate-cli");
  const fs::path out = d / "v.json";
  const Outcome r = run("validate " + args + " --json '" + out.string() + "'");
  EXPECT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(read(out));
  fs::remove_all(d);
  return j;
}

TEST(Validate, EveryShippedSetRunsAndNoRowThatRanIsRefused) {
  const auto j = validate_json("");
  // Rows per set as shipped; a row the model starts refusing (a crash, an input that used to run) fails here.
  const std::map<std::string, int> compared = {{"vtrain-single", 1440}, {"vtrain-multi", 109}, {"amsp-v2", 66},
                                               {"offload-polaris", 32}, {"offload-single", 10}, {"offload-polaris-ga", 24},
                                               {"offload-polaris-scale", 15}, {"nemo-h100", 8}, {"seed-ratios", 0}, {"megatron-selene", 10},
                                               {"llm-runs-a100", 5}, {"h100-llama-steps", 36},
                                               {"h100-fsdp-steps", 12}, {"h100-deepspeed-fit", 33},
                                               {"h100-deepspeed-steps", 36}, {"torchtitan-fsdp", 8},
                                               {"mosaic-mpt-a100", 31}, {"mosaic-mpt-a100-long", 28},
                                               {"mosaic-mpt-h100", 63}, {"mosaic-mpt-h100-long", 14},
                                               {"mosaic-mpt-a100-40gb", 78},
                                               {"zeropp-v100-fit", 2}, {"zeropp-v100", 10},
                                               {"h200-llama-steps", 36}, {"h200-fsdp-steps", 12},
                                               {"torchtitan-h100", 16}, {"torchtitan-h200", 4}, {"fsdp-paper", 3},
                                               {"frontier-deepspeed-zero3", 6}, {"perlmutter-deepspeed-zero3", 3},
                                               {"internevo-a100", 46}, {"fms-fsdp", 2},
                                               {"lumi-megatron", 4}, {"lumi-megatron-scaling", 5},
                                               {"lumi-gpt-neox", 1}};
  // Gaps the model has today, each with the reason it gives: a row that ran but that the model cannot take.
  const std::map<std::string, std::string> known_refused = {};

  for (const auto& s : j["sets"]) {
    const std::string id = s["set"];
    ASSERT_TRUE(compared.count(id)) << "new set " << id << ": add it here";
    EXPECT_EQ(s["compared"].get<int>(), compared.at(id)) << id;
    EXPECT_EQ(s["claims_refused"].get<int>(), 0) << id;
  }
  EXPECT_EQ(j["sets"].size(), compared.size());
  int refused = 0;
  for (const auto& row : j["rows"]) {
    if (!row.contains("refused")) continue;
    ++refused;
    const std::string key = row["set"].get<std::string>() + "/" + row["id"].get<std::string>();
    ASSERT_TRUE(known_refused.count(key)) << "refused: " << row.dump();
    EXPECT_NE(row["refused"].get<std::string>().find(known_refused.at(key)), std::string::npos) << row.dump();
  }
  EXPECT_EQ(refused, static_cast<int>(known_refused.size()));
  // The collective benchmarks come with the whole suite: every file, its rows, a summary of those rows.
  ASSERT_EQ(j["collective_checks"].size(), 101u);
  for (const auto& c : j["collective_checks"]) {
    ASSERT_GT(c["rows"].size(), 0u) << c["file"];
    double worst = 0.0;
    for (const auto& r : c["rows"]) {
      const double e = r["error"].get<double>();
      EXPECT_NEAR(e, (r["predicted_s"].get<double>() - r["measured_s"].get<double>()) / r["measured_s"].get<double>(), 1e-12);
      worst = std::max(worst, std::abs(e));
    }
    EXPECT_EQ(c["summary"]["rows"].get<std::size_t>(), c["rows"].size());
    EXPECT_DOUBLE_EQ(c["summary"]["max_abs_error"].get<double>(), worst);
  }
}

// What the seed papers say, next to what the model predicts. A claim either holds (a ratio within 25% that, where
// the paper reports an effect of 10% or more, shows half to twice that effect; an ordering as published) or is a
// known miss, pinned at the model's current figure: the
// next model changes must move these deliberately (and move them to "holds").
TEST(Validate, PaperClaims) {
  struct Expect {
    bool holds;
    double figure;  // known miss: the predicted ratio today (orders: unused)
  };
  const std::map<std::string, Expect> expect = {
      // AMSP v2 (arXiv 2311.00257): ZeRO-3 collapses from 47% to 4% MFU; AMSP 1.46-1.58x MiCS at 1,024 GPUs.
      // 0.60x -> 0.45x and 1.35x -> 1.93x once DeepSpeed's host waits for the third-last reduction and fetch;
      // 0.42x and 1.83x with its coordinator's coalesced prefetches, live bound, reuse distance and gather splits;
      // 0.46x and 1.72x with the A100's flash attention fitted (the one-node run slows more than the 1,024-GPU one).
      // 0.47x and 1.82x once ZeRO-3 gathers its persistent parameters one by one after the step (81 all-gathers
      // over 1,024 ranks per iteration for 13B) and MiCS all-reduces its partitions tensor by tensor.
      {"zero3-13b-8-to-1024", {false, 0.459}},  // 0.468x before DeepSpeed's buckets closed at a tensor's edge
      // MiCS runs as DeepSpeed's ZeRO-3 (its optimizer's step and host work): 0.98-1.00x before; 1.01-1.09x with
      // AMSP's plans on InternEvo's fused model code.
      // 1.10x (7B, inside the band), 1.10x, 1.02x with MiCS's replica all-reduce tensor by tensor. The 7B's 1.10x
      // is a quarter of the published 1.46x's effect: a miss once claims must show half of a published effect.
      // 1.22x (7B, holds: half the published effect), 1.14x, 1.10x once a tree all-reduce across nodes pays its
      // pipeline's fill: MiCS's replica all-reduces over 128 nodes. 1.17x (7B) once AMSP's 7B plan, InternEvo's zero1
      // = 8, all-reduces its gradients and broadcasts each owner's parameters as InternEvo does (its row +8.4% ->
      // +4.7%; MiCS's stays +30%); 1.24x (holds) once those all-reduces are InternEvo's one over every rank, not a
      // reduction inside the owners and another across their replicas (its row +10.9%).
      {"amsp-over-mics-7b", {true, 0}},
      // 1.22x and 1.13x (13B, 30B) once a tree across more nodes than a group of the fabric keeps its share of the
      // bandwidth (the a800's first tier a [guess] of 20 nodes): MiCS's replica all-reduces over 128 nodes.
      {"amsp-over-mics-13b", {false, 1.218}},
      {"amsp-over-mics-30b", {false, 1.130}},
      {"amsp-over-zeropp-13b", {false, 1.867}},
      {"overlap-13b-m1", {true, 0}},
      {"overlap-30b-m1", {true, 0}},
      {"rank-7b-1024", {false, 0}},
      {"rank-13b-1024", {true, 0}},
      {"amsp-v1-scaling-13b", {true, 0}},
      // Table V's other overlap levels (7B at M = 1) and Sec. VI-B2's memory ratios. MiCS over ZeRO-3 at 30B comes
      // out 3.85x for "approximately double": MiCS's 8 x 2 partition holds 30 GiB of model states, and ZeRO-3's 30B
      // is predicted 25% below its published 15 GB.
      {"overlap-7b-m1", {true, 0}},
      {"sync-overlap-7b-m1", {true, 0}},
      {"allreduce-overlap-7b-m1", {true, 0}},
      {"amsp-over-mics-memory-7b", {true, 0}},
      {"mics-over-zero3-memory-7b", {true, 0}},
      {"mics-over-zero3-memory-13b", {true, 0}},
      {"mics-over-zero3-memory-30b", {false, 3.846}},
      // Table V's third level (the gradients reduced after the pass: overlap_sync_grad off) against the second.
      {"allreduce-overlap-13b-m1", {true, 0}},
      {"allreduce-overlap-30b-m1", {true, 0}},
      // Frontier (arXiv 2501.04266): ZeRO++ 1.405x ZeRO-3, the 3-level scheme 1.71x ZeRO++, efficiency 0.94.
      // 1.07x, inside the 25% band by a hair, with RCCL's network steps over Slingshot as NCCL's were measured on
      // Polaris (1.03x with RCCL's own table); 1.035x once ZeRO-3 prefetches as DeepSpeed's coordinator does
      // (coalesced gathers: fewer ring latencies over 384 ranks; the end of the forward kept for the backward);
      // 1.07x with the GCD's compute slowed beside RCCL's kernels as the H100's beside NCCL's (not assumed).
      // 1.066x and inside the band once RCCL's network is the fit to LUMI-G's all-reduce (faster LL steps, slower
      // Simple ones, 2.5x its table's in-node hops: 336 of them in each 384-rank ring).
      // 1.053x, just outside, once both gather their 354 persistent parameters (the 20B GPT's norms and biases) one
      // by one over 384 ranks after the step, as DeepSpeed does: about 1 s that neither scheme shortens.
      // 1.09x once RCCL's rings are paced by their Simple step as its all-gathers on Frontier measure (Singh et al.):
      // ZeRO++'s backward gathers in the node no longer pay 383 steps of 62.6 us each.
      // 1.004x once the MI250X GCD's GEMM ceiling is the fit to Megatron-DeepSpeed on LUMI-G (0.458 for a guessed 0.60):
      // each layer's compute, 31% longer, now hides ZeRO-3's paced gathers about as well as ZeRO++'s.
      {"frontier-zeropp-over-zero3", {false, 1.004}},
      {"frontier-3level-over-zeropp", {false, 1.000}},
      // Held (0.78x) until the rings were paced: every plan that gathers over all 384 GCDs per layer, the 3-level
      // scheme as shardsim reads it included, then loses 46% from 8 to 48 nodes (0.54x), where the paper's scheme
      // keeps 94%: its gathers cannot be global RCCL rings, and the paper's body, which would say, is not at hand.
      // 0.61x with the GCD's fitted GEMM ceiling: longer compute hides more of the 48-node gathers.
      {"frontier-3level-scaling", {false, 0.611}},
      // Lassen (arXiv 2409.02423): naive compression +22.5%, hybrid +17.3% TFLOPS/GPU.
      // (0.99x / 0.98x with codec speeds a fraction of HBM bandwidth; the kernels measured on an H100, scaled to the
      // V100's 80 SMs, are slower)
      // 0.977x / 0.945x since the V100's GEMM ceiling is the DGX-2 fit (0.967x / 0.923x at the 0.70 guess).
      // 1.002x / 0.999x once only messages of 1 MB or more across nodes are compressed (MVAPICH2-GDR's inter-node
      // path): the tensor-parallel pairs inside a node no longer pay the codec. Naive "held" by the band's rule
      // (within 25%, on the published side of 1) with 0.2% of the measured 22.5%: a miss by the effect rule. The
      // baseline here is compute-bound. The same for samples per second (+23.6% / +12.7% published).
      {"lassen-naive-over-baseline", {false, 1.004}},
      {"lassen-hybrid-over-baseline", {false, 0.999}},
      {"lassen-naive-samples-over-baseline", {false, 1.004}},
      {"lassen-hybrid-samples-over-baseline", {false, 0.999}},
      // ZeRO++ (DeepSpeed's blog, 384 V100s): ZeRO++ / ZeRO-3 from 100 to 400 Gb/s per node. Within the band once a
      // process group's collectives run one at a time (ZeRO-3's gathers and reductions share one NCCL stream); the
      // 1K-token runs at 400 Gb/s are still far slower than predicted, ZeRO-3 too little slower at 100 Gb/s. At
      // 400 Gb/s the predicted gain is a third to a half of the published one (1.18x for 1.40x, 1.09x for 1.32x);
      // 1.19x for 1.40x, half the effect, once compute slows beside ZeRO-3's copy and layout kernels too.
      {"zeropp-over-zero3-ib1-1k", {true, 0}},
      {"zeropp-over-zero3-ib1-2k", {true, 0}},
      {"zeropp-over-zero3-ib2-2k", {true, 0}},
      {"zeropp-over-zero3-ib4-1k", {true, 0}},
      // Closing DeepSpeed's 1e7-element buckets at a tensor's edge (about 8 reduce-scatters of each 18B block over
      // 384 ranks, not one) and qgZ's tensor-by-tensor reduction, the V100's GEMM ceiling refitted with them:
      // 1.15x for 1.32x at 400 Gb/s and 2K tokens (less than half the effect); ZeRO-3 slows 2.19x from 400 to
      // 100 Gb/s at 1K tokens for 1.79x measured, inside the band now (2.47x before).
      // 1.16x (holds: half the effect) once hpZ's gathers inside the node are quantised as qwZ's are (DeepSpeed passes
      // zero_quantized_weights for every fetch, the secondary copy's included).
      {"zeropp-over-zero3-ib4-2k", {true, 0}},
      {"zero3-ib4-over-ib1-1k", {true, 0}},
  };
  const auto j = validate_json("amsp-v2 seed-ratios zeropp-v100");
  int seen = 0;
  for (const auto& c : j["claims"]) {
    const std::string id = c["id"];
    ASSERT_TRUE(expect.count(id)) << "new claim " << id << ": add it here";
    ++seen;
    const Expect& e = expect.at(id);
    const bool holds = c["holds"].get<bool>();
    if (e.holds) {
      EXPECT_TRUE(holds) << id << " no longer holds: " << c.dump();
    } else if (holds) {
      ADD_FAILURE() << id << " holds now: mark it so here (" << c.dump() << ")";
    } else if (c.contains("predicted_ratio")) {
      EXPECT_NEAR(c["predicted_ratio"].get<double>(), e.figure, 0.02 * e.figure)
          << id << " (a known miss, measured " << c["measured_ratio"] << ") moved: update its figure here";
    }
  }
  EXPECT_EQ(seen, static_cast<int>(expect.size()));
}

TEST(Validate, ErrorBandsThatRunQuotesAreCurrent) {
  const fs::path d = temp_dir("validate-bands");
  const Outcome r = run("validate --write-bands '" + (d / "bands.yaml").string() + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read(d / "bands.yaml"), read(kSource / "validate" / "error_bands.yaml"))
      << "the model's errors changed: rerun `shardsim validate --write-bands validate/error_bands.yaml`";
  fs::remove_all(d);
  // A run quotes the band of the set that covers its machine and kind of plan, and says where none does.
  const Outcome h100 = run("run scenarios/dgx_llama13b_stages.yaml");
  EXPECT_NE(h100.out.find("validation  validated on "), std::string::npos) << h100.out;
  EXPECT_NE(h100.out.find("validated on mosaic-mpt-h100 (check"), std::string::npos) << h100.out;
  const Outcome lassen = run("run scenarios/lassen_neox20b_3d.yaml");
  EXPECT_NE(lassen.out.find("validation  unvalidated: no validation set covers lassen"), std::string::npos) << lassen.out;
}

TEST(Validate, OutputsAreDeterministicWhateverTheThreads) {
  const fs::path d = temp_dir("validate-det");
  const Outcome one = run("validate amsp-v2 vtrain-multi --rows --threads 1 --csv '" + (d / "a.csv").string() + "'");
  const Outcome two = run("validate amsp-v2 vtrain-multi --rows --threads 2 --csv '" + (d / "b.csv").string() + "'");
  ASSERT_EQ(one.code, 0) << one.out;
  EXPECT_EQ(one.out, two.out);
  EXPECT_EQ(read(d / "a.csv"), read(d / "b.csv"));
  EXPECT_EQ(read(d / "a.csv").rfind("set,id,metric,measured,predicted,error,covers,refused\n", 0), 0u);
  EXPECT_NE(one.out.find("zero3-13b-1024"), std::string::npos);
  fs::remove_all(d);
}

// A small set of our own: inline rows, a CSV table, a refused row, claims.
fs::path write_set(const fs::path& d, const std::string& extra_row = "") {
  std::ofstream(d / "runs.csv") << "gpus,mb,time (ms)\n8,1,5000\n16,2,\"9000\"\n";
  const fs::path f = d / "mine.yaml";
  std::ofstream(f) << "set: mine\nrole: check\ntitle: t\nsource: s\n"
                      "base:\n  model: llama2-7b\n  cluster: {preset: dgx-h100, nodes: 1}\n"
                      "  plan: {zero_stage: 3, micro_batch: 1, global_batch: 64, recompute: full}\n"
                      "rows:\n"
                      "  - {id: a, keys: {devices: 8}, measured: {iteration_time: 2s, mfu: 0.5}, cite: c}\n"
                      "  - {id: b, keys: {devices: 16, plan.zero_stage: 1}, measured: {iteration_time: 1s}, cite: c}\n"
                      "  - {id: refused, keys: {plan: {pp: 2}}, measured: {iteration_time: 1s}, cite: c}\n"
                   << extra_row
                   << "table:\n  file: runs.csv\n  id: \"t{row}\"\n  cite: csv\n"
                      "  columns: {gpus: devices, mb: plan.micro_batch, \"time (ms)\": {measured: iteration_time, unit: ms}}\n"
                      "claims:\n  - {id: ab, ratio: [a, b], metric: iteration_time, measured: 2.0, cite: c}\n"
                      "  - {id: order, order: [b, a], metric: iteration_time, cite: c}\n";
  return f;
}

TEST(Validate, ASetOfOurOwnRowsTableAndRefusal) {
  const fs::path d = temp_dir("validate-own");
  const fs::path f = write_set(d);
  const Outcome r = run("validate '" + f.string() + "' --rows");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("  t2 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("refused: mine.yaml:"), std::string::npos) << r.out;  // named relative to the set's folder
  EXPECT_NE(r.out.find("pipeline parallelism runs with DDP or ZeRO-1 only"), std::string::npos) << r.out;
  // The table's predictions are those of `shardsim run` for the same scenario.
  const auto j = validate_json("'" + f.string() + "'");
  EXPECT_EQ(j["sets"][0]["compared"].get<int>(), 5);
  EXPECT_EQ(j["sets"][0]["refused"].get<int>(), 1);
  std::ofstream(d / "a.yaml") << "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1}\n"
                                 "plan: {zero_stage: 3, micro_batch: 1, global_batch: 64, recompute: full}\n";
  ASSERT_EQ(run("run '" + (d / "a.yaml").string() + "' --json '" + (d / "a.json").string() + "'").code, 0);
  const auto ja = nlohmann::json::parse(read(d / "a.json"))["results"][0];
  EXPECT_DOUBLE_EQ(j["rows"][0]["predicted"].get<double>(), ja["performance"]["iteration_time_s"].get<double>());
  EXPECT_DOUBLE_EQ(j["rows"][0]["error"].get<double>(), (ja["performance"]["iteration_time_s"].get<double>() - 2.0) / 2.0);
  fs::remove_all(d);
}

// --scenario prints a row as a scenario file: run, it predicts what the validation predicted for the row (a table's
// row, its devices key made whole nodes, included); a row id that is not there, or that two sets share without the
// set named, and a row the model refuses are usage errors.
TEST(Validate, ARowAsAScenarioRunsAsTheValidationRanIt) {
  const fs::path d = temp_dir("validate-row");
  const fs::path f = write_set(d);
  const auto j = validate_json("'" + f.string() + "'");
  for (const std::string id : {"b", "t2"}) {
    const Outcome r = run("validate '" + f.string() + "' --scenario " + id, false);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out.rfind("# validation set mine (check), row " + id + ": ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("name: mine/" + id + "\n"), std::string::npos) << r.out;
    std::ofstream(d / "row.yaml") << r.out;
    ASSERT_EQ(run("run '" + (d / "row.yaml").string() + "' --json '" + (d / "row.json").string() + "'").code, 0);
    const auto jr = nlohmann::json::parse(read(d / "row.json"))["results"][0];
    bool seen = false;
    for (const auto& row : j["rows"]) {
      if (row["id"] != id || row["metric"] != "iteration_time") continue;
      EXPECT_DOUBLE_EQ(row["predicted"].get<double>(), jr["performance"]["iteration_time_s"].get<double>()) << id;
      seen = true;
    }
    EXPECT_TRUE(seen) << id;
  }
  EXPECT_EQ(run("validate '" + f.string() + "' --scenario mine/a", false).code, 0);
  for (const std::string bad : {"nope", "other/a", "refused"}) {
    const Outcome r = run("validate '" + f.string() + "' --scenario " + bad);
    EXPECT_EQ(r.code, 2) << bad << r.out;
    EXPECT_NE(r.out.find("--scenario"), std::string::npos) << r.out;
  }
  fs::remove_all(d);
}

// --by groups each set's numeric rows by the values of scenario axes: every numeric row lands in exactly one group,
// each group's statistics are those of its rows, and an unknown axis is a usage error (exit 2) naming the axes.
TEST(Validate, ErrorsGroupedByAxes) {
  const fs::path d = temp_dir("validate-by");
  const fs::path out = d / "v.json";
  const Outcome r = run("validate h100-fsdp-steps vtrain-multi --by tp,hidden --json '" + out.string() + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("errors by tp, hidden"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(read(out));
  std::map<std::string, std::map<std::string, std::vector<double>>> by_hand;  // set -> "tp/hidden" -> errors
  std::map<std::string, int> numeric;
  for (const auto& row : j["rows"]) {
    if (row.contains("refused") || row["metric"] == "memory" || row["metric"] == "fits") continue;
    ++numeric[row["set"].get<std::string>()];
  }
  std::map<std::string, int> grouped;
  for (const auto& g : j["error_groups"]) {
    const std::string set = g["set"];
    grouped[set] += g["rows"].get<int>();
    EXPECT_LE(g["min_error"].get<double>(), g["bias"].get<double>());
    EXPECT_GE(g["max_error"].get<double>(), g["bias"].get<double>());
    EXPECT_GE(g["mean_abs_error"].get<double>(), std::fabs(g["bias"].get<double>()) - 1e-12);
    EXPECT_TRUE(g["values"].contains("tp") && g["values"].contains("hidden"));
  }
  EXPECT_EQ(grouped, numeric);
  EXPECT_EQ(grouped.size(), 2u);
  // The one-GPU set has tensor parallelism 1 throughout; vTrain's multi-node runs span several degrees.
  int fsdp_groups = 0, multi_tp = 0;
  std::string last_tp;
  for (const auto& g : j["error_groups"]) {
    if (g["set"] == "h100-fsdp-steps") {
      ++fsdp_groups;
      EXPECT_EQ(g["values"]["tp"], "1");
    } else if (g["values"]["tp"] != last_tp) {
      ++multi_tp;
      last_tp = g["values"]["tp"];
    }
  }
  EXPECT_GE(fsdp_groups, 2);
  EXPECT_GE(multi_tp, 3);
  // The metric a row measures is an axis too: each of the one-GPU DeepSpeed set's phases has its group.
  const auto phases = validate_json("h100-deepspeed-steps --by metric");
  std::map<std::string, int> by_metric;
  for (const auto& g : phases["error_groups"]) by_metric[g["values"]["metric"].get<std::string>()] += g["rows"].get<int>();
  EXPECT_EQ(by_metric.size(), 3u);
  EXPECT_EQ(by_metric["forward_time"], by_metric["step_time"]);
  const Outcome bad = run("validate h100-fsdp-steps --by tpx");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("unknown axis 'tpx'"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("micro_batch"), std::string::npos) << bad.out;
  fs::remove_all(d);
}

TEST(Validate, BadSetsExitWithTwoAndNameTheLine) {
  const fs::path d = temp_dir("validate-bad");
  struct Case {
    std::string row;
    std::string message;
  };
  const Case cases[] = {
      {"  - {id: x, measured: {iteration_time: 2}, cite: c}\n", "mine.yaml:13:"},                       // no unit
      {"  - {id: x, measured: {iteration_tme: 2s}, cite: c}\n", "did you mean 'iteration_time'"},      // misspelt
      {"  - {id: a, measured: {mfu: 0.4}, cite: c}\n", "row ids used once"},                            // repeated id
      {"  - {id: x, cite: c}\n", "a measured value for row 'x'"},                                       // nothing measured
      {"  - {id: x, keys: {devices: 12}, measured: {mfu: 0.4}, cite: c}\n", "whole nodes of 8 devices"},  // 1.5 nodes
      {"  - {id: x, keys: {frobnicate: 1}, measured: {mfu: 0.4}, cite: c}\n", "keys are model, cluster, plan"},
  };
  for (const auto& c : cases) {
    const Outcome r = run("validate '" + write_set(d, c.row).string() + "'");
    EXPECT_EQ(r.code, 2) << c.row << r.out;
    EXPECT_NE(r.out.find(c.message), std::string::npos) << c.row << r.out;
  }
  std::ofstream(d / "runs.csv") << "gpus,mb\n8,1\n";
  EXPECT_EQ(run("validate '" + (d / "mine.yaml").string() + "'").code, 2);  // the table's columns changed
  EXPECT_EQ(run("validate no-such-set").code, 2);
  // Several sets in one argument, comma-separated (as --by takes its axes); an unknown one among them is named.
  const Outcome two = run("validate offload-single,zeropp-v100-fit");
  EXPECT_EQ(two.code, 0) << two.out;
  EXPECT_NE(two.out.find("offload-single "), std::string::npos) << two.out;
  EXPECT_NE(two.out.find("zeropp-v100-fit "), std::string::npos) << two.out;
  const Outcome typo = run("validate --sets offload-single,no-such-set");
  EXPECT_EQ(typo.code, 2);
  EXPECT_NE(typo.out.find("no validation set 'no-such-set'"), std::string::npos) << typo.out;
  EXPECT_EQ(run("validate --role maybe").code, 2);
  fs::remove_all(d);
}

// The Done-when of the calibration: runs made with a known GEMM efficiency, fitted through the CLI from the
// preset's default, give that efficiency back, and `run --calibration` then reproduces the runs.
TEST(Calibrate, RunsRecoverTheParameterTheyWereMadeWith) {
  const fs::path d = temp_dir("calibrate-runs");
  std::ofstream(d / "truth.yaml") << "parameters:\n  device.gemm_efficiency: 0.55\n  device.memory_efficiency: 0.7\n";
  std::string csv = "scenario,metric,measured,role\n";
  int k = 0;
  // Runs whose GEMM and memory-bound shares differ (4,096 and 2,048 tokens, standard attention and FlashAttention),
  // so that the two efficiencies are told apart.
  for (const auto& [model, plan] : std::vector<std::pair<const char*, const char*>>{
           {"llama2-7b", "{zero_stage: 3, micro_batch: 1, global_batch: 64, recompute: full}"},
           {"llama-7b", "{zero_stage: 1, micro_batch: 2, global_batch: 64, recompute: full, flash_attention: true}"},
           {"llama2-7b", "{zero_stage: 3, micro_batch: 4, global_batch: 128, recompute: full}"},
           {"llama2-7b", "{zero_stage: 2, micro_batch: 1, global_batch: 32, recompute: full}"}}) {
    std::string name = "s";
    name += std::to_string(k++);
    name += ".yaml";
    std::ofstream(d / name) << "model: " << model << "\ncluster: {preset: dgx-h100, nodes: 2}\nplan: " << plan << "\n";
    const fs::path json = d / (name + ".json");
    const Outcome r = run("run '" + (d / name).string() + "' --calibration '" + (d / "truth.yaml").string() +
                          "' --json '" + json.string() + "'");
    ASSERT_EQ(r.code, 0) << r.out;
    const double t = nlohmann::json::parse(read(json))["results"][0]["performance"]["iteration_time_s"].get<double>();
    std::ostringstream line;
    line << name << ",iteration_time," << std::setprecision(17) << t << "s," << (k == 4 ? "check" : "fit") << "\n";
    csv += line.str();
  }
  std::ofstream(d / "runs.csv") << csv;
  const fs::path cal = d / "cal.yaml";
  const Outcome fit = run("calibrate --runs '" + (d / "runs.csv").string() +
                          "' --fit device.gemm_efficiency,device.memory_efficiency -o '" + cal.string() + "'");
  ASSERT_EQ(fit.code, 0) << fit.out;
  EXPECT_NE(fit.out.find("0.55 (+-"), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("0.7 (+-"), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("held-out (check) runs      1 runs"), std::string::npos) << fit.out;
  EXPECT_NE(fit.out.find("->   0.0%"), std::string::npos) << fit.out;
  // The written calibration reproduces the runs.
  const Outcome again = run("run '" + (d / "s0.yaml").string() + "' --calibration '" + cal.string() + "'");
  const Outcome truth = run("run '" + (d / "s0.yaml").string() + "' --calibration '" + (d / "truth.yaml").string() + "'");
  auto line = [](const std::string& out, const std::string& head) {
    const auto at = out.find(head);
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  EXPECT_FALSE(line(again.out, "  iteration time").empty()) << again.out;
  EXPECT_EQ(line(again.out, "  iteration time"), line(truth.out, "  iteration time"));
  // The report says where the device's numbers come from.
  EXPECT_NE(again.out.find("(fitted to runs: " + cal.string() + ")"), std::string::npos) << again.out;
  // Bad input: an unknown parameter, a measurement without its unit.
  const Outcome unknown = run("calibrate --runs '" + (d / "runs.csv").string() + "' --fit device.gemm_eficiency");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.out.find("did you mean 'device.gemm_efficiency'"), std::string::npos) << unknown.out;
  std::ofstream(d / "bad.csv") << "scenario,metric,measured\ns0.yaml,iteration_time,3.5\n";
  const Outcome bad = run("calibrate --runs '" + (d / "bad.csv").string() + "' --fit device.gemm_efficiency");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("bad.csv:2:1: measured:"), std::string::npos) << bad.out;
  fs::remove_all(d);
}

TEST(Validate, ACalibrationAppliesToEveryRow) {
  const fs::path d = temp_dir("validate-cal");
  std::ofstream(d / "slow.yaml") << "parameters:\n  device.gemm_efficiency: 0.35\n";
  const auto plain = validate_json("megatron-selene");
  const auto slow = validate_json("megatron-selene --calibration '" + (d / "slow.yaml").string() + "'");
  ASSERT_EQ(plain["rows"].size(), slow["rows"].size());
  for (std::size_t i = 0; i < plain["rows"].size(); ++i) {
    EXPECT_LT(slow["rows"][i]["predicted"].get<double>(), plain["rows"][i]["predicted"].get<double>());
  }
  EXPECT_EQ(run("validate megatron-selene --calibration '" + (d / "none.yaml").string() + "'").code, 2);
  fs::remove_all(d);
}

TEST(Calibrate, CollectivesFitANetworkLevelFromTheCommandLine) {
  const std::string files = "validate/data/vtrain/allreduce/a100_4gpu.csv:4 validate/data/vtrain/allreduce/a100_8gpu.csv:8";
  const Outcome r = run("calibrate --collectives " + files + " --op all_reduce --cluster dgx-a100 --fit network.nvswitch.latency");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("read\n  validate/data/vtrain/allreduce/a100_4gpu.csv: 1024 x all-reduce, 4 ranks\n"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2048 samples on dgx-a100 (2048 fitted, 0 held out"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("network.nvswitch.latency"), std::string::npos) << r.out;
  EXPECT_EQ(run("calibrate --collectives " + files + " --op all_reduce --fit network.nvswitch.latency").code, 2);  // no --cluster
  EXPECT_EQ(run("calibrate --collectives " + files + " --cluster dgx-a100 --op allreduce --fit network.nvswitch.latency").code, 2);
  EXPECT_EQ(run("calibrate --collectives " + files + " --cluster dgx-a100 --fit network.nvswitch.latency").code, 2);  // a CSV does not say its collective
  EXPECT_EQ(run("calibrate --collectives validate/data/vtrain/allreduce/a100_4gpu.csv --op all_reduce --cluster dgx-a100 "
                "--fit network.nvswitch.latency").code, 2);  // nor its ranks
}

// A user's nccl-tests log as it comes (two tests, one rank on each of two hosts): read test by test, the run's
// placement kept (the network, not the NVSwitch, carries it), a reduce (not modelled) skipped with its line; --op
// must agree.
TEST(Calibrate, CollectivesFromALogOfSeveralTests) {
  const fs::path d = temp_dir("calibrate-log");
  std::string log;
  for (const std::string test : {"alltoall_perf", "reduce_perf", "sendrecv_perf"}) {
    log += "# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807\n# Collective test starting: " + test +
           "\n# Using devices\n"
           "#  Rank  0 Group  0 Pid 440010 on cnode2-001 device  0 [0000:1b:00] NVIDIA H100 80GB HBM3\n"
           "#  Rank  1 Group  0 Pid 381003 on cnode2-002 device  0 [0000:1b:00] NVIDIA H100 80GB HBM3\n"
           "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n";
    const bool a2a = test == "alltoall_perf";
    for (double mib = 32; mib <= 1024; mib *= 2) {
      const double bytes = mib * 1048576.0;
      // About 13.5 GB/s per GPU, as such a cluster measured (half of it for all-to-all's each way)
      const double us = (a2a ? bytes / 2 : bytes) / 13.5e9 * 1e6 + 20.0;
      char row[160];
      std::snprintf(row, sizeof row, "  %.0f  %.0f  double  sum  -1  %.2f  1.0  1.0  0  %.2f  1.0  1.0  N/A\n", bytes,
                    bytes / 8, us, us);
      log += row;
    }
    log += "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 13.4\n#\n# Collective test concluded: " + test + "\n\n";
  }
  std::ofstream(d / "log.txt") << log;
  const std::string file = (d / "log.txt").string();
  const Outcome r = run("calibrate --collectives '" + file + "' --cluster dgx-h100 --fit network.infiniband.bandwidth");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(": 6 x all-to-all, 2 ranks (1 per node), NVIDIA H100 80GB HBM3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(": 6 x send-recv, 2 ranks (1 per node), NVIDIA H100 80GB HBM3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reduce_perf (shardsim models"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("12 samples on dgx-h100 (12 fitted"), std::string::npos) << r.out;
  EXPECT_EQ(run("calibrate --collectives '" + file + "' --op all_reduce --cluster dgx-h100 --fit network.infiniband.bandwidth").code, 2);
  fs::remove_all(d);
}

// What a DeepSpeed run's comms logger timed fits a network too: the lines of the collective named (--op), one sample
// per size at the median of its calls, the group as the user says it (FILE:RANKS:PER_NODE: 2 ranks, one per node,
// here the 2-replica data-parallel all-reduces of a LUMI-G run of 2023, 4.77 GB/s per GCD of each NIC's two GCDs).
TEST(Calibrate, CollectivesFromADeepSpeedCommsLog) {
  const fs::path d = temp_dir("calibrate-ds");
  std::string log;
  for (const double ms : {614.47, 613.98, 618.07, 1287.0}) {
    log += fmt::format("  0: [2023-06-10 09:44:34,814] [INFO] [logging.py:75:log_dist] [Rank 0] rank=0 | comm op: "
                       "all_reduce | time (ms): {:.2f} | msg size: 2.73 GB | algbw (Gbps): 76.26  | busbw (Gbps): 75.66 \n"
                       "  0: [2023-06-10 09:44:35,930] [INFO] [logging.py:75:log_dist] [Rank 0] rank=0 | comm op: send | "
                       "time (ms): 2.47 | msg size: 14.0 MB | algbw (Gbps): 47.52  | busbw (Gbps): 47.52 \n",
                       ms);
  }
  std::ofstream(d / "ds.out") << log;
  const std::string file = (d / "ds.out").string();
  const Outcome r = run("calibrate --collectives '" + file + ":2:1' --op all_reduce --cluster frontier "
                        "--fit network.slingshot.bandwidth");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("ds.out: 1 x all-reduce, 2 ranks (1 per node)"), std::string::npos) << r.out;
  const auto at = r.out.find("network.slingshot.bandwidth     24.72GB/s");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("9.5", at), std::string::npos) << r.out;  // 2 x 2.73 GiB / 0.616 s: each NIC's two GCDs
  // The log names no collective and no group: both are the user's to give; a placement that does not divide is refused.
  EXPECT_EQ(run("calibrate --collectives '" + file + ":2:1' --cluster frontier --fit network.slingshot.bandwidth").code, 2);
  EXPECT_EQ(run("calibrate --collectives '" + file + "' --op all_reduce --cluster frontier "
                "--fit network.slingshot.bandwidth").code, 2);
  EXPECT_EQ(run("calibrate --collectives '" + file + ":3:2' --op all_reduce --cluster frontier "
                "--fit network.slingshot.bandwidth").code, 2);
  fs::remove_all(d);
}

TEST(Calibrate, FitsTheA100OnVtrainsFitRowsAndReportsTheHeldOutSet) {
  const Outcome r = run("calibrate --set vtrain-single vtrain-multi --fit device.gemm_efficiency");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("fitted runs             1440 runs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("held-out (check) runs    109 runs"), std::string::npos) << r.out;
  // ... and each set apart, the fitted one first.
  const auto per_set = r.out.find("  per set:\n    vtrain-single            fit    1440 runs: mean |error|");
  EXPECT_NE(per_set, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    vtrain-multi             check   109 runs: mean |error|", per_set), std::string::npos) << r.out;
}

// A calibration fitted to runs names the machines they ran on and applies there only: run refuses it on another
// device (exit 2, at fitted_on), validate applies it to those machines' rows and says so; listing the other machine
// under fitted_on applies it there too.
TEST(Calibrate, AFitToRunsAppliesToTheMachinesItWasFittedOn) {
  const fs::path d = temp_dir("calibrate-machines");
  const std::string cal = (d / "a100.yaml").string();
  ASSERT_EQ(run("calibrate --set mosaic-mpt-a100-long --fit device.gemm_efficiency -o '" + cal + "'").code, 0);
  const std::string text = read(cal);
  EXPECT_NE(text.find("fitted_on:"), std::string::npos) << text;
  EXPECT_NE(text.find("{cluster: \"dgx-a100\", device: \"A100 SXM4 80GB\"}"), std::string::npos) << text;

  const std::string h100 = (d / "h100.yaml").string();
  std::ofstream(h100) << "model: {preset: llama2-7b}\ncluster: {preset: dgx-h100, nodes: 1}\nplan: {zero_stage: 3}\n";
  const Outcome refused = run("run '" + h100 + "' --calibration '" + cal + "'");
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.out.find("fitted_on: a calibration for the machines it was fitted on"), std::string::npos)
      << refused.out;
  EXPECT_NE(refused.out.find("'H100 SXM 80GB'"), std::string::npos) << refused.out;

  const Outcome mixed = run("validate megatron-selene h100-fsdp-steps --calibration '" + cal + "'");
  ASSERT_EQ(mixed.code, 0) << mixed.out;
  EXPECT_NE(mixed.out.find("applied to 10 of 22 rows: the rows on dgx-a100 (A100 SXM4 80GB)"), std::string::npos)
      << mixed.out;
  // A GPU's own measurements (shardsim-validate bench) apply to that device's rows alike.
  const std::string h100_cal = (d / "h100.cal.yaml").string();
  ASSERT_EQ(run("calibrate validate/results/NVIDIA-H100-80GB-HBM3-2026-11-23.yaml -o '" + h100_cal + "'").code, 0);
  const Outcome gpu = run("validate megatron-selene h100-fsdp-steps --calibration '" + h100_cal + "'");
  ASSERT_EQ(gpu.code, 0) << gpu.out;
  EXPECT_NE(gpu.out.find("applied to 12 of 22 rows: the rows on 'NVIDIA H100 80GB HBM3'"), std::string::npos) << gpu.out;

  std::string widened = text;
  widened.insert(widened.find("parameters:"), "  - {cluster: dgx-h100, device: H100 SXM 80GB}\n");
  std::ofstream(cal) << widened;
  EXPECT_EQ(run("run '" + h100 + "' --calibration '" + cal + "'").code, 0);
  std::ofstream(cal) << "fitted_on: {cluster: dgx-a100}\nparameters:\n  device.gemm_efficiency: 0.7\n";
  EXPECT_EQ(run("run '" + h100 + "' --calibration '" + cal + "'").code, 2);  // not a list
  fs::remove_all(d);
}

// `shardsim collective` prints a machine's collective as nccl-tests would and writes the same rows as JSON.
TEST(Collective, PrintsAndWritesTheLibrarysChoiceSizeBySize) {
  const fs::path d = temp_dir("collective-json");
  const Outcome r = run("collective dgx-h100 --ranks 16 --min-size 1MB --max-size 4MB --json '" + (d / "c.json").string() + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("all_reduce on dgx-h100: 16 ranks (2 nodes x 8), library nccl"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(read(d / "c.json"));
  EXPECT_EQ(j["ranks"], 16);
  EXPECT_EQ(j["nodes"], 2);
  ASSERT_EQ(j["rows"].size(), 3u);  // 1, 2 and 4 MB
  for (const auto& row : j["rows"]) {
    const double bytes = row["bytes"].get<double>();
    const double t = row["time_s"].get<double>();
    ASSERT_GT(t, row["latency_s"].get<double>());
    EXPECT_NEAR(row["algbw_GBps"].get<double>(), bytes / t / 1e9, 1e-9);
    EXPECT_NEAR(row["busbw_GBps"].get<double>(), row["algbw_GBps"].get<double>() * 2.0 * 15.0 / 16.0, 1e-9);
    EXPECT_NE(r.out.find(row["protocol"].get<std::string>()), std::string::npos);
  }
  for (const auto& row : j["rows"]) EXPECT_EQ(row["paced_s"].get<double>(), 0.0);  // NCCL's rings are not paced
  EXPECT_EQ(r.out.find("rings paced:"), std::string::npos);
  EXPECT_EQ(r.out.find("protocols:"), std::string::npos) << r.out;  // every protocol runs on a DGX H100
  EXPECT_EQ(run("collective dgx-h100 --ranks 1").code, 2);
  EXPECT_EQ(run("collective dgx-h100 --op reduce").code, 2);
  EXPECT_EQ(run("collective no-such-machine").code, 2);
  fs::remove_all(d);
}

// NCCL_ALGO=PAT as a what-if: on Leonardo's machine (NCCL 2.30) over one GPU per node the command runs PAT at every
// size; where NCCL has no PAT (two ranks per node, NCCL 2.18's DGX H100, an all-reduce) it is refused with exit 2.
TEST(Collective, RunsPatWhereNcclHasIt) {
  const std::string leonardo =
      std::string(SHARDSIM_SOURCE_DIR) + "/validate/data/collectives/machines/leonardo-booster.yaml";
  const Outcome r = run("collective '" + leonardo +
                        "' --op all_gather --ranks 16 --stride 4 --algorithm pat --min-size 1GiB --max-size 1GiB");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("16 ranks (16 nodes x 1)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pat    Simple"), std::string::npos) << r.out;
  const Outcome two = run("collective '" + leonardo + "' --op all_gather --ranks 16 --stride 2 --algorithm pat");
  EXPECT_EQ(two.code, 2);
  EXPECT_NE(two.out.find("--algorithm pat"), std::string::npos) << two.out;
  EXPECT_EQ(run("collective dgx-h100 --op all_gather --ranks 16 --stride 8 --algorithm pat").code, 2);
  EXPECT_EQ(run("collective '" + leonardo + "' --op all_reduce --ranks 16 --stride 4 --algorithm pat").code, 2);
}

// A broadcast (InternEvo's parameter sync) is a ring however it is asked for, its bus bandwidth its algorithm
// bandwidth (every rank but the root receives the buffer once), and --algorithm tree or pat changes nothing or is
// refused as for an all-gather.
TEST(Collective, BroadcastsAsARing) {
  const fs::path d = temp_dir("collective-broadcast");
  const Outcome r = run("collective dgx-a100 --op broadcast --ranks 64 --min-size 64MiB --max-size 64MiB --json '" +
                        (d / "b.json").string() + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("broadcast on dgx-a100: 64 ranks (8 nodes x 8)"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(read(d / "b.json"));
  ASSERT_EQ(j["rows"].size(), 1u);
  EXPECT_EQ(j["rows"][0]["algorithm"], "ring");
  EXPECT_DOUBLE_EQ(j["rows"][0]["busbw_GBps"].get<double>(), j["rows"][0]["algbw_GBps"].get<double>());
  EXPECT_EQ(run("collective dgx-a100 --op broadcast --ranks 64 --algorithm tree").code, 0);
  EXPECT_EQ(run("collective dgx-h100 --op broadcast --ranks 16 --stride 8 --algorithm pat").code, 2);
  fs::remove_all(d);
}

// RCCL's paced rings on Frontier: the command says what floor a Simple ring across nodes puts under a call, and a
// latency-bound all-gather over 2,048 GCDs takes exactly that (2,047 steps of the fitted step); inside one node
// nothing is paced.
TEST(Collective, SaysWhereRingsArePaced) {
  const fs::path d = temp_dir("collective-paced");
  const Outcome r = run("collective frontier --op all_gather --ranks 2048 --min-size 64MiB --max-size 64MiB --json '" +
                        (d / "c.json").string() + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("rings paced: under Simple a ring takes at least its 2047 steps x 62.6 us"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("protocols: LL, Simple (LL128 not run on this machine)"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(read(d / "c.json"));
  ASSERT_EQ(j["rows"].size(), 1u);
  const auto& row = j["rows"][0];
  EXPECT_EQ(row["protocol"], "Simple");
  EXPECT_NEAR(row["paced_s"].get<double>(), 2047 * 62.56032364e-6, 1e-9);
  EXPECT_DOUBLE_EQ(row["time_s"].get<double>(), row["paced_s"].get<double>());
  const Outcome node = run("collective frontier --op all_gather --ranks 8 --min-size 64MiB --max-size 64MiB");
  ASSERT_EQ(node.code, 0) << node.out;
  EXPECT_EQ(node.out.find("rings paced:"), std::string::npos) << node.out;
  fs::remove_all(d);
}

// An all-reduce over more nodes than one of the fabric's groups (Frontier's dragonfly groups of 128 nodes): the command
// says what a tree keeps there; an all-gather (rings) and a job inside one group say nothing.
TEST(Collective, SaysWhereTreesLeaveAGroup) {
  const Outcome r = run("collective frontier --ranks 2048 --min-size 1GiB --max-size 1GiB");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("trees past a group: 256 nodes span more than the fabric's groups of 128; a tree keeps 0.634 of "
                       "its bandwidth"),
            std::string::npos)
      << r.out;
  for (const char* args : {"collective frontier --ranks 1024 --min-size 1GiB --max-size 1GiB",
                           "collective frontier --op all_gather --ranks 2048 --min-size 1GiB --max-size 1GiB"}) {
    const Outcome o = run(args);
    ASSERT_EQ(o.code, 0) << o.out;
    EXPECT_EQ(o.out.find("trees past a group"), std::string::npos) << args << "\n" << o.out;
  }
}

}  // namespace
