// End-to-end tests of the `shardsim` binary: golden reports of the shipped scenarios (diffed byte for byte
// against tests/golden/), determinism, exit codes, and that bad input writes nothing.
// Set SHARDSIM_UPDATE_GOLDEN=1 to rewrite the golden files after an intended change.
#include <gtest/gtest.h>

#include "sim/engine/simgrid_adapter.hpp"
#include "tests/cli/cli_support.hpp"
#include "validate/csv_table.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>

namespace {

using namespace shardsim::test;

Outcome run(const std::string& args, bool with_stderr = true) { return run_shardsim(args, with_stderr); }
fs::path temp_dir() { return shardsim::test::temp_dir("cli-test"); }

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, ReportMatchesTheGoldenFile) {
  const std::string name = GetParam();
  // The report is stdout: a sweep slower than a second (a loaded or instrumented build) also prints its progress
  // on stderr, which is not part of what the golden file pins.
  const Outcome r = run("run scenarios/" + name + ".yaml", false);
  ASSERT_EQ(r.code, 0) << r.out;
  const fs::path golden = kSource / "tests" / "golden" / (name + ".txt");
  if (std::getenv("SHARDSIM_UPDATE_GOLDEN")) {
    std::ofstream(golden, std::ios::binary) << r.out;
    GTEST_SKIP() << "rewrote " << golden;
  }
  ASSERT_TRUE(fs::exists(golden)) << "missing " << golden << "; run with SHARDSIM_UPDATE_GOLDEN=1";
  EXPECT_EQ(r.out, read(golden)) << "report of " << name << " changed; if intended, rerun with SHARDSIM_UPDATE_GOLDEN=1";
}

// Whole reports pin the output format. The paper scenarios (Frontier partitionings and scaling, Lassen
// compression, the AMSP-scale search) are not pinned here: what their papers say is checked against the model
// in validate_cli_test.cpp (PaperClaims), with tolerances and known misses.
INSTANTIATE_TEST_SUITE_P(Scenarios, Golden,
                         ::testing::Values("frontier_gpt20b_zero3", "lassen_neox20b_3d", "dgx_llama13b_stages",
                                           "dgx_llama13b_offload", "dgx_gpt175b_nvme", "jeanzay_bloom176b",
                                           "dgx2_gpt18b_zeropp", "dgx_llama3_8b_float8"));

TEST(Cli, SearchRanksDeterministicallyAndExplainsTheWinner) {
  const Outcome a = run("search scenarios/search_llama13b_1024.yaml", false);
  ASSERT_EQ(a.code, 0) << a.out;
  EXPECT_NE(a.out.find("why #1"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("  rank  layout"), std::string::npos) << a.out;
  EXPECT_EQ(run("search scenarios/search_llama13b_1024.yaml --threads 1", false).out, a.out);
}

TEST(Cli, VersionIsPrinted) {
  const Outcome r = run("--version", false);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("shardsim ", 0), 0u) << r.out;
}

TEST(Cli, CalibrateFitsAndRunUsesTheFit) {
  const fs::path d = temp_dir();
  const fs::path cal = d / "cal.yaml";
  Outcome r = run("calibrate tests/data/results_synthetic.yaml -o '" + cal.string() + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("bandwidth 1500.0 GB/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("device.gemm_efficiency                       0.75 +- "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("-0.00%"), std::string::npos) << r.out;
  const Outcome plain = run("run scenarios/dgx_llama13b_stages.yaml");
  const Outcome fitted = run("run scenarios/dgx_llama13b_stages.yaml --calibration '" + cal.string() + "'");
  ASSERT_EQ(fitted.code, 0) << fitted.out;
  EXPECT_NE(plain.out, fitted.out);  // the fitted GEMM ceiling (0.75) replaces the preset's
  // A calibration measured on another device is refused, not applied.
  EXPECT_EQ(run("run scenarios/lassen_neox20b_3d.yaml --calibration '" + cal.string() + "'").code, 2);
  EXPECT_EQ(run("run scenarios/dgx_llama13b_stages.yaml --calibration no/such.yaml").code, 2);
  fs::remove_all(d);
}

TEST(Cli, TraceAndMemoryCsvDescribeTheIteration) {
  const fs::path d = temp_dir();
  const std::string args = "run scenarios/lassen_neox20b_3d.yaml --trace '" + (d / "t.json").string() +
                           "' --memory-csv '" + (d / "m.csv").string() + "'";
  ASSERT_EQ(run(args).code, 0);
  const auto trace = nlohmann::json::parse(read(d / "t.json"));
  int complete = 0, counters = 0, stages = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      EXPECT_GE(e["dur"].get<double>(), 0.0);
    }
    if (e["ph"] == "C") ++counters;
    if (e["ph"] == "M" && e["name"] == "process_name") ++stages;
  }
  EXPECT_EQ(stages, 4);  // one track group per pipeline stage
  EXPECT_GT(complete, 1000);
  EXPECT_GT(counters, 100);
  const std::string csv = read(d / "m.csv");
  EXPECT_EQ(csv.rfind("role,time_s,bytes,params,grads,optimizer,reserved,activations,gathered_params,grad_buffers,"
                      "gather_buffers,logits,host\n",
                      0),
            0u);
  EXPECT_NE(csv.find("stage 3,"), std::string::npos);
  // The categories add up to the bytes in use at every sample, and activations come and go.
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  double most_activations = 0.0;
  int samples = 0;
  while (std::getline(lines, line)) {
    std::vector<double> cells;
    std::istringstream row(line.substr(line.find(',') + 1));
    for (std::string cell; std::getline(row, cell, ',');) cells.push_back(std::stod(cell));
    ASSERT_EQ(cells.size(), 12u) << line;
    EXPECT_EQ(cells[11], 0.0) << line;  // no offload: no host memory
    double parts = 0.0;
    for (std::size_t i = 2; i + 1 < cells.size(); ++i) parts += cells[i];
    EXPECT_NEAR(parts, cells[1], 16.0) << line;
    most_activations = std::max(most_activations, cells[6]);
    ++samples;
  }
  EXPECT_GT(samples, 100);
  EXPECT_GT(most_activations, 1e9);
  // Deterministic.
  const std::string first = read(d / "t.json");
  ASSERT_EQ(run(args).code, 0);
  EXPECT_EQ(read(d / "t.json"), first);
  EXPECT_EQ(run("run scenarios/dgx_llama13b_stages.yaml --trace '" + (d / "x.json").string() + "'").code, 2);
  fs::remove_all(d);
}

// One variant of a sweep, by its number or (part of) its label, is a scenario of its own: its report, and the
// trace and CSVs a sweep cannot give; a number out of range, a part naming several or none, or a scenario without a
// sweep is bad input (exit 2) that lists what there is.
TEST(Cli, RunOneVariantOfASweep) {
  const fs::path d = temp_dir();
  const std::string sweep = "run scenarios/lassen_neox20b_compression.yaml";
  // stdout alone: a run slower than a second also prints its progress on stderr.
  const Outcome by_label = run(sweep + " --variant naive --trace '" + (d / "t.json").string() + "'", false);
  ASSERT_EQ(by_label.code, 0) << by_label.out;
  EXPECT_EQ(by_label.out.rfind("scenario  lassen-neox20b-compression  [naive (ZFP everywhere)]", 0), 0U) << by_label.out;
  EXPECT_TRUE(fs::exists(d / "t.json"));
  const Outcome by_number = run(sweep + " --variant 2", false);
  ASSERT_EQ(by_number.code, 0) << by_number.out;
  EXPECT_EQ(by_number.out, by_label.out);
  const Outcome whole = run(sweep + " --variant 'hybrid (ZFP on DP, MPC on TP/PP)'");
  ASSERT_EQ(whole.code, 0) << whole.out;
  EXPECT_NE(whole.out.find("[hybrid (ZFP on DP, MPC on TP/PP)]"), std::string::npos) << whole.out;
  const Outcome out_of_range = run(sweep + " --variant 4");
  EXPECT_EQ(out_of_range.code, 2);
  EXPECT_NE(out_of_range.out.find("the sweep has variants 1 to 3"), std::string::npos) << out_of_range.out;
  EXPECT_NE(out_of_range.out.find("  3  hybrid (ZFP on DP, MPC on TP/PP)"), std::string::npos) << out_of_range.out;
  const Outcome several = run(sweep + " --variant ZFP");
  EXPECT_EQ(several.code, 2);
  EXPECT_NE(several.out.find("names 2 of the sweep's variants"), std::string::npos) << several.out;
  EXPECT_EQ(run(sweep + " --variant nothing-like-it").code, 2);
  const Outcome no_sweep = run("run scenarios/frontier_gpt20b_zero3.yaml --variant 1");
  EXPECT_EQ(no_sweep.code, 2);
  EXPECT_NE(no_sweep.out.find("the scenario has no sweep"), std::string::npos) << no_sweep.out;
  fs::remove_all(d);
}

// The iteration's collectives call by call (--collectives): in the report after "where the time goes" and in the
// JSON, only when asked; the persistent parameters' one-by-one gathers after the step show as their own row.
TEST(Cli, RunListsTheCollectivesCallByCall) {
  const fs::path d = temp_dir();
  const std::string scenario = "run scenarios/frontier_gpt20b_zero3.yaml";
  const Outcome with = run(scenario + " --collectives --json '" + (d / "c.json").string() + "'");
  ASSERT_EQ(with.code, 0) << with.out;
  EXPECT_NE(with.out.find("collectives per iteration (rank role 'rank'): each call as the cluster's collective library"),
            std::string::npos) << with.out;
  EXPECT_NE(with.out.find("updated-param gather"), std::string::npos) << with.out;
  const auto j = nlohmann::json::parse(read(d / "c.json"));
  const auto& rows = j["results"][0]["collectives"];
  ASSERT_TRUE(rows.is_array());
  ASSERT_FALSE(rows.empty());
  double latency = 0.0, priced = 0.0;
  for (const auto& r : rows) {
    if (r["op"] != "all-reduce") {
      EXPECT_EQ(r["algorithm"], "ring") << r;  // RCCL's gathers and reduce-scatters: rings
    }
    latency += r["latency_s"].get<double>();
    priced += r["priced_s"].get<double>();
  }
  EXPECT_GT(priced, latency);
  // The README's excerpt of this output is the output.
  const std::string readme = read(kSource / "README.md");
  const std::string head = "$ shardsim run scenarios/frontier_gpt20b_zero3.yaml --collectives\n...\n";
  const auto at = readme.find(head);
  ASSERT_NE(at, std::string::npos);
  const auto body = at + head.size();
  const std::string excerpt = readme.substr(body, readme.find("```\n", body) - body);
  EXPECT_NE(with.out.find(excerpt), std::string::npos) << "update the README's --collectives excerpt:\n" << with.out;
  const Outcome without = run(scenario + " --json '" + (d / "p.json").string() + "'");
  ASSERT_EQ(without.code, 0) << without.out;
  EXPECT_EQ(without.out.find("collectives per iteration"), std::string::npos);
  EXPECT_FALSE(nlohmann::json::parse(read(d / "p.json"))["results"][0].contains("collectives"));
  fs::remove_all(d);
}

// The host link over the iteration (ZeRO-3 with the optimizer offloaded): every copy with its direction and the
// phase it serves (gradients to the host in backward, the parameters' upload in the step), and a trace counter of
// the rate per direction.
TEST(Cli, HostLinkActivityByPhase) {
  const fs::path d = temp_dir();
  std::ofstream(d / "offload.yaml") << "model: {preset: llama2-7b, layers: 8}\ncluster: {preset: polaris, nodes: 2}\n"
                                       "plan: {zero_stage: 3, micro_batch: 1, global_batch: 8, recompute: full,\n"
                                       "       offload_optimizer: {device: cpu}}\n";
  const Outcome r = run("run '" + (d / "offload.yaml").string() + "' --host-link-csv '" + (d / "l.csv").string() +
                        "' --trace '" + (d / "t.json").string() + "' --memory-csv '" + (d / "m.csv").string() + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  // The report: bytes per direction, how much compute hides, and where the step's time goes.
  EXPECT_NE(r.out.find("host link and optimizer step (offload)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hidden behind compute (backward 100%)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("after the last backward: host CPU"), std::string::npos) << r.out;
  std::istringstream lines(read(d / "l.csv"));
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "role,direction,phase,purpose,start_s,end_s,bytes,GBps");
  // A strict CSV reader takes it whole: the purposes ("param gather (fwd)", ...) are cells like any other.
  const auto table = shardsim::validate::CsvTable::parse(read(d / "l.csv"), "l.csv");
  EXPECT_GT(table.rows(), 0U);
  for (std::size_t row = 0; row < table.rows(); ++row) EXPECT_GT(table.number(row, *table.column("bytes")), 0.0);
  std::map<std::string, int> kinds;
  while (std::getline(lines, line)) {
    const auto a = line.find(','), b = line.find(',', a + 1), c = line.find(',', b + 1);
    ++kinds[line.substr(a + 1, c - a - 1)];
  }
  EXPECT_GT(kinds["d2h,backward"], 0);
  EXPECT_EQ(kinds["h2d,optimizer"], 1);  // the updated parameters, once per iteration
  int counters = 0;
  const auto trace = nlohmann::json::parse(read(d / "t.json"));
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "C" && e["name"] == "host link d2h (GB/s)") ++counters;
  }
  EXPECT_GT(counters, 2);
  // Host memory beside the device's: the offloaded optimizer states (12 B per parameter of the rank's shard, and
  // more), in the memory timeline's last column.
  const std::string mem = read(d / "m.csv");
  const std::string first_row = mem.substr(mem.find('\n') + 1, mem.find('\n', mem.find('\n') + 1) - mem.find('\n') - 1);
  EXPECT_GT(std::stod(first_row.substr(first_row.rfind(',') + 1)), 1e9) << first_row;
  fs::remove_all(d);
}

// A step the host sets the pace of says so (a small model with FSDP2 on one H100: Python, not the GPU, takes the
// time); a GPU-bound one does not.
TEST(Cli, HostBoundRolesAreFlagged) {
  const fs::path d = temp_dir();
  auto report = [&](const char* hidden, const char* layers) {
    std::ofstream(d / "s.yaml") << "model: {preset: llama2-7b, hidden: " << hidden << ", heads: 8, kv_heads: 8, layers: "
                                << layers << ", ffn_hidden: 1408, seq_len: 1024}\n"
                                   "cluster: {preset: dgx-h100, nodes: 1, devices_per_node: 1}\n"
                                   "plan: {zero_stage: 3, framework: fsdp, micro_batch: 1, global_batch: 1, recompute: none}\n";
    const Outcome r = run("run '" + (d / "s.yaml").string() + "'");
    EXPECT_EQ(r.code, 0) << r.out;
    return r.out;
  };
  const std::string small = report("512", "24");
  EXPECT_NE(small.find("host-bound: the least certain part"), std::string::npos) << small;
  std::ofstream(d / "s.yaml") << "model: {preset: llama2-7b, seq_len: 4096}\n"
                                 "cluster: {preset: dgx-h100, nodes: 1}\n"
                                 "plan: {zero_stage: 3, framework: fsdp, micro_batch: 2, global_batch: 16}\n";
  const Outcome big = run("run '" + (d / "s.yaml").string() + "'");
  ASSERT_EQ(big.code, 0) << big.out;
  EXPECT_EQ(big.out.find("host-bound"), std::string::npos) << big.out;
  fs::remove_all(d);
}

TEST(Cli, SameInputGivesByteIdenticalJson) {
  const fs::path d = temp_dir();
  // stdout alone: a run slower than a second also prints its progress on stderr.
  const Outcome a = run("run scenarios/dgx_llama13b_stages.yaml --json '" + (d / "a.json").string() + "'", false);
  const Outcome b = run("run scenarios/dgx_llama13b_stages.yaml --json '" + (d / "b.json").string() + "'", false);
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_EQ(a.out, b.out);
  const std::string ja = read(d / "a.json");
  EXPECT_FALSE(ja.empty());
  EXPECT_EQ(ja, read(d / "b.json"));
  EXPECT_NE(ja.find("\"iteration_time_s\""), std::string::npos);
  fs::remove_all(d);
}

// Every JSON document starts with the same head (schema version, shardsim's version, the command), and a run's
// results are an array whether the scenario has a sweep or not.
TEST(Cli, JsonDocumentsShareOneHeadAndRunResultsAreAlwaysAnArray) {
  const fs::path d = temp_dir();
  struct Case {
    std::string command, args;
  };
  const Case cases[] = {
      {"run", "run scenarios/frontier_gpt20b_zero3.yaml"},
      {"run", "run scenarios/dgx_llama13b_offload.yaml"},
      {"search", "search scenarios/search_llama13b_1024.yaml --top 2"},
      {"validate", "validate megatron-selene"},
      {"collective", "collective a800 --ranks 16 --min-size 1MB --max-size 2MB"},
  };
  const std::string version = run("--version").out;
  std::vector<std::size_t> results;
  for (const auto& c : cases) {
    const fs::path out = d / (c.command + ".json");
    const Outcome r = run(c.args + " --json '" + out.string() + "'");
    ASSERT_EQ(r.code, 0) << c.args << "\n" << r.out;
    const auto j = nlohmann::json::parse(read(out));
    EXPECT_EQ(j["schema_version"], 1) << c.args;
    EXPECT_EQ(j["command"], c.command) << c.args;
    EXPECT_EQ("shardsim " + j["shardsim"].get<std::string>() + "\n", version) << c.args;
    if (c.command == "run") {
      ASSERT_TRUE(j["results"].is_array()) << c.args;
      results.push_back(j["results"].size());
      for (const auto& x : j["results"]) EXPECT_TRUE(x["performance"].contains("iteration_time_s"));
      // DeepSpeed ZeRO-3 on 384 GCDs says what its fetch coordinator does; ZeRO-2 gathers nothing.
      const auto& first = j["results"][0]["plan"];
      if (c.args.find("frontier") != std::string::npos) {
        ASSERT_TRUE(first.contains("deepspeed_fetches")) << first.dump();
        EXPECT_GT(first["deepspeed_fetches"]["all_gathers_per_micro_batch"].get<int>(), 0);
        EXPECT_GE(first["deepspeed_fetches"]["units_ahead"].get<int>(), 1);
      } else {
        EXPECT_FALSE(first.contains("deepspeed_fetches")) << first.dump();
      }
    }
  }
  EXPECT_EQ(results, (std::vector<std::size_t>{1, 3}));
  fs::remove_all(d);
}

// `search --emit-scenario` writes the winner as a scenario that runs as is, to the winner's time; with no plan
// that fits, nothing is written and the exit code says so.
TEST(Cli, SearchWritesItsWinnerAsAScenarioThatRunsAsIs) {
  const fs::path d = temp_dir();
  const fs::path out = d / "best.yaml";
  const Outcome s = run("search scenarios/search_llama13b_1024.yaml --top 1 --json '" + (d / "s.json").string() +
                        "' --emit-scenario '" + out.string() + "'");
  ASSERT_EQ(s.code, 0) << s.out;
  const auto j = nlohmann::json::parse(read(d / "s.json"));
  const Outcome r = run("run '" + out.string() + "' --json '" + (d / "r.json").string() + "'");
  ASSERT_EQ(r.code, 0) << r.out << read(out);
  const auto jr = nlohmann::json::parse(read(d / "r.json"))["results"][0];
  EXPECT_EQ(jr["performance"]["iteration_time_s"], j["ranking"][0]["performance"]["iteration_time_s"]);
  EXPECT_EQ(jr["plan"]["strategy"], j["ranking"][0]["plan"]["strategy"]);
  EXPECT_EQ(jr["scenario"], "search-llama13b-1024-best");
  // --emit-deepspeed: the winner's ZeRO part as a ds_config.json that gives the same plan and time read back onto
  // the scenario searched around.
  const Outcome e = run("search scenarios/search_llama13b_1024.yaml --top 3 --emit-deepspeed '" +
                        (d / "best.json").string() + "'");
  ASSERT_EQ(e.code, 0) << e.out;
  const auto emitted = nlohmann::json::parse(read(d / "best.json"));
  EXPECT_EQ(emitted["zero_optimization"]["mics_shard_size"], 8) << emitted.dump();
  const Outcome back = run("run scenarios/search_llama13b_1024.yaml --deepspeed '" + (d / "best.json").string() +
                           "' --json '" + (d / "back.json").string() + "'");
  ASSERT_EQ(back.code, 0) << back.out;
  const auto jb = nlohmann::json::parse(read(d / "back.json"))["results"][0];
  EXPECT_EQ(jb["performance"]["iteration_time_s"], j["ranking"][0]["performance"]["iteration_time_s"]);
  EXPECT_EQ(jb["plan"]["strategy"], j["ranking"][0]["plan"]["strategy"]);
  // Around a Hugging Face Trainer's DeepSpeed config ("auto" filled in from the scenario) as well.
  std::ofstream(d / "ds.json") << R"({"train_batch_size": "auto", "gradient_clipping": "auto",
      "zero_optimization": {"stage": 3, "reduce_bucket_size": "auto", "overlap_comm": true}})";
  const Outcome ds = run("search scenarios/search_llama13b_1024.yaml --top 1 --deepspeed '" + (d / "ds.json").string() + "'");
  EXPECT_EQ(ds.code, 0) << ds.out;
  EXPECT_NE(ds.out.find("gradient_clipping is not modelled"), std::string::npos) << ds.out;
  // Nothing fits with a margin larger than the device: nothing written, exit 1.
  const fs::path none = d / "none.yaml";
  const Outcome n = run("search scenarios/search_llama13b_1024.yaml --top 1 --memory-margin 1TiB --emit-scenario '" +
                        none.string() + "'");
  EXPECT_EQ(n.code, 1) << n.out;
  EXPECT_FALSE(fs::exists(none));
  EXPECT_NE(n.out.find("no plan fits"), std::string::npos) << n.out;
  fs::remove_all(d);
}

TEST(Cli, BadInputExitsWithTwoAndWritesNothing) {
  const fs::path d = temp_dir();
  const fs::path bad = d / "bad.yaml";
  std::ofstream(bad) << "model: llama2-7b\ncluster: dgx-h100\nplan:\n  zero_stage: 3\n  reduce_bucket: 500\n";
  const fs::path out = d / "out.json";
  std::ofstream(d / "keep.json") << "previous";
  Outcome r = run("run '" + bad.string() + "' --json '" + out.string() + "'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(bad.string() + ":5:18: plan.reduce_bucket:"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
  // An existing output is left alone when the input is bad.
  r = run("run '" + bad.string() + "' --json '" + (d / "keep.json").string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(read(d / "keep.json"), "previous");
  fs::remove_all(d);
}

// Outputs that are not regular files are written in place, never replaced by one: a FIFO (as /dev/stdout or a
// pipe would be) and a symbolic link, which keeps pointing at its target. (As root, --json /dev/null used to
// replace the device node with a regular file.) A regular file is replaced whole, with no temporary left.
TEST(Cli, OutputsThatAreNotRegularFilesAreWrittenInPlace) {
  const fs::path d = temp_dir();
  const fs::path fifo = d / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string through_fifo;
  std::thread reader([&] {
    std::ifstream in(fifo, std::ios::binary);
    std::ostringstream all;
    all << in.rdbuf();
    through_fifo = all.str();
  });
  Outcome r = run("run scenarios/frontier_gpt20b_zero3.yaml --json '" + fifo.string() + "'");
  reader.join();
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
  EXPECT_NE(through_fifo.find("\"scenario\": \"frontier-gpt20b-zero3\""), std::string::npos);
  std::ofstream(d / "real.json") << "old";
  fs::create_symlink("real.json", d / "link.json");
  r = run("run scenarios/frontier_gpt20b_zero3.yaml --json '" + (d / "link.json").string() + "'");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(d / "link.json")));
  EXPECT_EQ(read(d / "real.json"), through_fifo);
  r = run("run scenarios/frontier_gpt20b_zero3.yaml --json '" + (d / "real.json").string() + "'");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read(d / "real.json"), through_fifo);
  int left = 0;
  for (const auto& e : fs::directory_iterator(d)) left += e.path().extension() == ".tmp" ? 1 : 0;
  EXPECT_EQ(left, 0);
  fs::remove_all(d);
}

// shardsim sweep: every point a row in point order, invalid ones with their reason; the same bytes whatever the
// thread count, after a kill -9 and a resume, or split into shards and merged; a journal of another sweep refused.
TEST(Sweep, RowsAreTheSameWhateverTheThreadsKillsOrShards) {
  const fs::path d = temp_dir();
  std::ofstream(d / "sweep.yaml") << "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1}\n"
                                     "plan: {zero_stage: 1, micro_batch: 1, global_batch: 64, recompute: full}\n"
                                     "sweep:\n  plan.zero_stage: [1, 2, 3]\n  plan.micro_batch: [1, 2, 3, 4, 8]\n"
                                     "  cluster.nodes: [1, 2, 4, 8]\n  plan.global_batch: [64, 128, 256, 512, 1024, 2048]\n";
  const std::string sweep = "sweep '" + (d / "sweep.yaml").string() + "' -o ";
  Outcome r = run(sweep + "'" + (d / "one").string() + "' -j 1");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string csv = read(d / "one" / "results.csv");
  const std::string jsonl = read(d / "one" / "results.jsonl");
  std::istringstream lines(csv);
  std::string line;
  int rows = -1, invalid = 0;
  while (std::getline(lines, line)) {
    ++rows;
    invalid += line.find(",invalid,") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(rows, 3 * 5 * 4 * 6);
  EXPECT_GT(invalid, 0);  // micro-batch 3 divides no global batch here: rows with the reason, not an abort
  EXPECT_NE(csv.find("is not a multiple of micro_batch x dp"), std::string::npos);
  {
    std::istringstream rows_jsonl(jsonl);
    std::string first;
    ASSERT_TRUE(std::getline(rows_jsonl, first));
    EXPECT_EQ(nlohmann::json::parse(first)["schema_version"], 1);  // each row says its schema
  }
  r = run(sweep + "'" + (d / "four").string() + "' -j 4");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read(d / "four" / "results.csv"), csv);
  EXPECT_EQ(read(d / "four" / "results.jsonl"), jsonl);
  // Killed part-way (kill -9), then the same command: no row lost, none twice.
  const std::string killed = "timeout -s KILL 0.3 " + kBinary + " " + sweep + "'" + (d / "killed").string() + "' -j 1 > /dev/null 2>&1";
  (void)std::system(killed.c_str());
  r = run(sweep + "'" + (d / "killed").string() + "' -j 2");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read(d / "killed" / "results.csv"), csv);
  // A journal cut in the middle of a line (a kill while writing) resumes too.
  {
    const std::string journal = read(d / "one" / "journal.jsonl");
    fs::create_directories(d / "cut");
    std::ofstream(d / "cut" / "journal.jsonl") << journal.substr(0, journal.size() / 2);
  }
  r = run(sweep + "'" + (d / "cut").string() + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read(d / "cut" / "results.csv"), csv);
  // Shards, merged.
  ASSERT_EQ(run(sweep + "'" + (d / "s1").string() + "' --shard 1/3").code, 0);
  ASSERT_EQ(run(sweep + "'" + (d / "s2").string() + "' --shard 2/3").code, 0);
  ASSERT_EQ(run(sweep + "'" + (d / "s3").string() + "' --shard 3/3").code, 0);
  r = run("merge '" + (d / "s1").string() + "' '" + (d / "s2").string() + "' '" + (d / "s3").string() + "' -o '" +
          (d / "merged").string() + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read(d / "merged" / "results.csv"), csv);
  // The folder of another sweep is not resumed into.
  std::ofstream(d / "sweep.yaml", std::ios::app) << "  plan.recompute: [full]\n";
  r = run(sweep + "'" + (d / "one").string() + "'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("holds the journal of another sweep"), std::string::npos) << r.out;
  EXPECT_EQ(run(sweep + "'" + (d / "x").string() + "' --shard 4/3").code, 2);
  EXPECT_EQ(run(sweep + "'" + (d / "x").string() + "' -j -1").code, 2);
  fs::remove_all(d);
}

// Under mpirun the points are handed out over MPI (rank 0 keeps the folder): the same bytes as on threads, a
// resume included; a failure of rank 0 lets the other ranks go (no hang) and exits 2.
TEST(Sweep, UnderMpirunTheRowsAreTheSame) {
#ifndef SHARDSIM_MPIEXEC
  GTEST_SKIP() << "shardsim built without MPI (Debian: libopenmpi-dev)";
#else
  const fs::path d = temp_dir();
  std::ofstream(d / "sweep.yaml") << "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 1}\n"
                                     "plan: {zero_stage: 1, micro_batch: 1, global_batch: 64, recompute: full}\n"
                                     "sweep:\n  plan.zero_stage: [1, 2, 3]\n  plan.micro_batch: [1, 2, 3, 4]\n"
                                     "  cluster.nodes: [1, 2, 4]\n";
  const std::string sweep = "sweep '" + (d / "sweep.yaml").string() + "' -o ";
  Outcome r = run(sweep + "'" + (d / "threads").string() + "' -j 2");
  ASSERT_EQ(r.code, 0) << r.out;
  // Open MPI as CI runs it: as root, two ranks on two cores, no single-copy shared memory in containers.
  const std::string mpirun = std::string("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                                         "OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1 ") +
                             SHARDSIM_MPIEXEC + " -np 2 --oversubscribe '" + kBinary + "' ";
  auto under_mpi = [&](const std::string& args) {
    return run_shell("cd '" + kSource.string() + "' && " + mpirun + args + " 2>&1");
  };
  r = under_mpi(sweep + "'" + (d / "mpi").string() + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read(d / "mpi" / "results.csv"), read(d / "threads" / "results.csv"));
  EXPECT_EQ(read(d / "mpi" / "results.jsonl"), read(d / "threads" / "results.jsonl"));
  // A journal cut part-way resumes under MPI as on threads.
  {
    const std::string journal = read(d / "threads" / "journal.jsonl");
    fs::create_directories(d / "cut");
    std::ofstream(d / "cut" / "journal.jsonl") << journal.substr(0, journal.size() / 3);
  }
  r = under_mpi(sweep + "'" + (d / "cut").string() + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(read(d / "cut" / "results.jsonl"), read(d / "threads" / "results.jsonl"));
  // Rank 0 refuses another sweep's folder: every rank ends, the exit code is 2.
  std::ofstream(d / "sweep.yaml", std::ios::app) << "  plan.recompute: [full]\n";
  r = under_mpi(sweep + "'" + (d / "mpi").string() + "'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("holds the journal of another sweep"), std::string::npos) << r.out;
  fs::remove_all(d);
#endif
}

// Several outputs asked for: all written or none (exit 2), nothing left beside them.
TEST(Cli, SeveralOutputsAreWrittenAllOrNone) {
  const fs::path d = temp_dir();
  const Outcome r = run("run scenarios/frontier_gpt20b_zero3.yaml --json '" + (d / "r.json").string() + "' --trace '" +
                        (d / "no" / "t.json").string() + "' --memory-csv '" + (d / "m.csv").string() + "'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_FALSE(fs::exists(d / "r.json"));
  EXPECT_FALSE(fs::exists(d / "m.csv"));
  EXPECT_TRUE(fs::is_empty(d));
  fs::remove_all(d);
}

TEST(Cli, UsageErrorsExitWithTwo) {
  EXPECT_EQ(run("").code, 2);
  EXPECT_EQ(run("frobnicate").code, 2);
  EXPECT_EQ(run("run").code, 2);
  EXPECT_EQ(run("run scenarios/frontier_gpt20b_zero3.yaml --engine nope").code, 2);
  EXPECT_EQ(run("run no/such/file.yaml").code, 2);
  EXPECT_EQ(run("run scenarios/frontier_gpt20b_zero3.yaml --bogus").code, 2);
  EXPECT_EQ(run("run scenarios/frontier_gpt20b_zero3.yaml --json /nonexistent/dir/out.json").code, 2);
}

// Budgets: what would size work without bound is refused before anything is built, naming the key, the value and
// the limit (a hundred million layers or micro-batches ran for minutes; a hundred million threads aborted).
TEST(Cli, BudgetsRefuseUnboundedWorkUpFront) {
  const fs::path d = temp_dir();
  std::ofstream(d / "layers.yaml") << "model: {preset: llama-7b, layers: 100000000}\ncluster: dgx-a100\nplan: {zero_stage: 1}\n";
  std::ofstream(d / "batch.yaml") << "model: llama-7b\ncluster: dgx-a100\nplan: {zero_stage: 1, global_batch: 800000000}\n";
  Outcome r = run("run '" + (d / "layers.yaml").string() + "'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("model.layers: at most 100000 layers"), std::string::npos) << r.out;
  r = run("run '" + (d / "batch.yaml").string() + "'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("plan.global_batch: this plan lowers to about 1.09e+11 tasks"), std::string::npos) << r.out;
  r = run("search scenarios/search_llama13b_1024.yaml --threads 100000000");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--threads: 0 (one per core) to 1024, got 100000000"), std::string::npos) << r.out;
  EXPECT_EQ(run("validate --threads -1").code, 2);
  // A search space past a million plans is counted and refused before it is built (values listed twice count once).
  std::ofstream(d / "space.yaml") << "model: llama2-7b\ncluster: {preset: dgx-h100, nodes: 512}\nplan: {global_batch: 65536}\n"
                                     "search:\n  shard_factors: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]\n"
                                     "  micro_batch: [1, 2, 4, 8, 16]\n  tp: [1, 2, 4, 8, 1, 2]\n";
  r = run("search '" + (d / "space.yaml").string() + "'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("search: the plan space holds 1.02e+06 plans"), std::string::npos) << r.out;
  // An input without end (/dev/zero) or beyond 64 MiB is refused after reading that much, not read forever.
  r = run("run /dev/zero");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("larger than 64 MiB"), std::string::npos) << r.out;
  // The SimGrid engine's platform grows with the devices: 800,000 took 6 GB and a minute; refused up front.
  std::ofstream(d / "huge.yaml") << "model: llama-7b\ncluster: {preset: dgx-a100, nodes: 100000}\nplan: {zero_stage: 3}\n";
  r = run("run '" + (d / "huge.yaml").string() + "' --engine simgrid");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--engine simgrid for huge: 100000 nodes x 8 = 800000 devices, over the SimGrid engine's limit "
                       "of 131072"),
            std::string::npos)
      << r.out;
  // ... and where the scenario asks for it, at its engine key.
  std::ofstream(d / "huge2.yaml") << "model: llama-7b\ncluster: {preset: dgx-a100, nodes: 100000}\nplan: {zero_stage: 3}\n"
                                     "engine: simgrid\n";
  r = run("run '" + (d / "huge2.yaml").string() + "'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("huge2.yaml:4:9: engine: 100000 nodes x 8 = 800000 devices"), std::string::npos) << r.out;
  fs::remove_all(d);
}

TEST(Cli, HelpEverywhere) {
  for (const char* cmd : {"--help", "run --help", "search --help", "calibrate --help", "validate --help", "models --help",
                          "clusters --help", "bench --help"}) {
    const Outcome r = run(cmd);
    EXPECT_EQ(r.code, 0) << cmd << "\n" << r.out;
    EXPECT_NE(r.out.find("shardsim"), std::string::npos) << cmd;
  }
}

TEST(Cli, ListsPresets) {
  const Outcome m = run("models");
  EXPECT_EQ(m.code, 0);
  EXPECT_NE(m.out.find("gpt-neox-20b"), std::string::npos);
  EXPECT_NE(m.out.find("20.55B"), std::string::npos);
  const Outcome c = run("clusters");
  EXPECT_EQ(c.code, 0);
  for (const char* name : {"frontier", "lassen", "dgx-h100", "dgx-a100", "a800", "polaris"}) {
    EXPECT_NE(c.out.find(name), std::string::npos) << name;
  }
}

TEST(Cli, InfeasiblePlanIsAResultNotACrash) {
  const fs::path d = temp_dir();
  const fs::path f = d / "big.yaml";
  std::ofstream(f) << "model: gpt3-175b\ncluster: {preset: dgx-h100, nodes: 1}\nplan: {zero_stage: 0}\n";
  const Outcome r = run("run '" + f.string() + "'");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("DOES NOT FIT"), std::string::npos) << r.out;
  fs::remove_all(d);
}

}  // namespace

namespace {

// The README's examples (each marked "<!-- golden: NAME -->") must be the program's real output, and so must its
// validation table.
TEST(Readme, ExamplesAreTheRealOutput) {
  const std::string readme = read(kSource / "README.md");
  const std::string tag = "<!-- golden: ";
  int examples = 0;
  for (auto at = readme.find(tag); at != std::string::npos; at = readme.find(tag, at + 1)) {
    const auto name_end = readme.find(" -->\n```\n", at);
    ASSERT_NE(name_end, std::string::npos);
    // "<!-- golden: NAME -->" is `shardsim run`, "<!-- golden: search NAME -->" is `shardsim search`.
    std::string name = readme.substr(at + tag.size(), name_end - at - tag.size());
    std::string command = "run";
    if (name.rfind("search ", 0) == 0) {
      command = "search";
      name = name.substr(7);
    }
    if (name == "validate") {  // "<!-- golden: validate -->" is the validation table of every set
      const auto body = name_end + std::string(" -->\n```\n").size();
      const auto end = readme.find("```\n", body);
      ASSERT_NE(end, std::string::npos);
      const Outcome r = run("validate", false);
      ASSERT_EQ(r.code, 0);
      EXPECT_EQ(readme.substr(body, end - body), r.out) << "update the README's validation table";
      ++examples;
      continue;
    }
    const auto body = name_end + std::string(" -->\n```\n").size();
    const auto end = readme.find("```\n", body);
    ASSERT_NE(end, std::string::npos);
    const auto end_check = readme.find("```\n", name_end + std::string(" -->\n```\n").size());
    if (!shardsim::engine::simgrid_available() &&
        read(kSource / "scenarios" / (name + ".yaml")).find("\nengine: simgrid") != std::string::npos) {
      at = end_check;  // a SimGrid example in a build without SimGrid
      ++examples;
      continue;
    }
    const Outcome r = run(command + " scenarios/" + name + ".yaml", false);
    ASSERT_EQ(r.code, 0) << name;
    EXPECT_EQ(readme.substr(body, end - body), r.out) << "update the README's example " << name;
    ++examples;
  }
  EXPECT_GE(examples, 2) << "README lost its worked examples";
}

}  // namespace

namespace {

// A .npy file (format 1.0) of `values`, dtype `descr` ('<f4', '<f2', ...), raw little-endian `data`.
void write_npy(const fs::path& path, const std::string& descr, const std::string& shape, const std::string& data) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  std::ofstream(path, std::ios::binary) << out << header << data;
}

std::string floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

}  // namespace

// A compressed plan's report measures what its codecs do to the values (shardsim's ZFP and MPC on representative
// tensors, the reduced sum along the group's ring) beside its speed-up over the same plan uncompressed; a user's
// .npy sample adds its own rows.
TEST(Cli, CompressionErrorBesideTheSpeedUp) {
  const fs::path d = temp_dir();
  std::ofstream(d / "c.yaml") << "model: {preset: gpt-neox-20b, layers: 4}\ncluster: {preset: lassen, nodes: 4}\n"
                                 "plan: {tp: 2, pp: 2, zero_stage: 1, micro_batch: 1, global_batch: 16, recompute: full,\n"
                                 "  compression: {gradients: {codec: zfp, rate: 8}, tensor: {codec: mpc}}}\n";
  std::vector<float> sample(1000);
  for (std::size_t i = 0; i < sample.size(); ++i) sample[i] = 0.001f * static_cast<float>((i * 37) % 101) - 0.05f;
  write_npy(d / "grads.npy", "<f4", "(10, 100)", floats(sample));
  const std::string scenario = "'" + (d / "c.yaml").string() + "'";
  const Outcome r = run("run " + scenario + " --compression-sample '" + (d / "grads.npy").string() + "' --json '" +
                        (d / "r.json").string() + "'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("the speed of the same plan uncompressed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ring, 4 ranks"), std::string::npos) << r.out;  // dp = 16 / (2 x 2)
  EXPECT_NE(r.out.find("grads.npy"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(read(d / "r.json"))["results"][0]["compression_error"];
  // The gradients, on their representative tensor and the sample; the tensor-parallel pairs sit inside a node,
  // whose messages go uncompressed.
  ASSERT_EQ(j["streams"].size(), 2u);
  for (const auto& s : j["streams"]) {
    EXPECT_EQ(s["stream"], "gradients");
    EXPECT_DOUBLE_EQ(s["bits_per_value"].get<double>(), 8.0);
    EXPECT_EQ(s["simulated_ranks"], 4);
    EXPECT_GT(s["sum_rel_rms"].get<double>(), s["value_rel_rms"].get<double>() * 0.5);
  }
  EXPECT_GT(j["speedup"].get<double>(), 0.0);
  EXPECT_EQ(r.out.find("LOST"), std::string::npos) << r.out;
  for (const auto& s : j["streams"]) EXPECT_FALSE(s["sum_lost"].get<bool>());
  // At 4 bits per value the ring's sum over 24 ranks is noise: the report says so, and the JSON flags it.
  std::ofstream(d / "lost.yaml") << "model: {preset: gpt-neox-20b, layers: 4}\ncluster: {preset: lassen, nodes: 24}\n"
                                    "plan: {zero_stage: 1, micro_batch: 1, global_batch: 96, recompute: full,\n"
                                    "  compression: {gradients: {codec: zfp, rate: 4}}}\n";
  const Outcome l = run("run '" + (d / "lost.yaml").string() + "' --json '" + (d / "l.json").string() + "'");
  ASSERT_EQ(l.code, 0) << l.out;
  EXPECT_NE(l.out.find("LOST: a sum error of 1 or more"), std::string::npos) << l.out;
  const auto lj = nlohmann::json::parse(read(d / "l.json"))["results"][0]["compression_error"]["streams"];
  ASSERT_EQ(lj.size(), 1u);
  EXPECT_TRUE(lj[0]["sum_lost"].get<bool>());
  EXPECT_GT(lj[0]["sum_rel_rms"].get<double>(), 1.0);
  // Tensor parallelism across two nodes is compressed: MPC, lossless, over the 8 ranks of the group.
  std::ofstream(d / "t.yaml") << "model: {preset: gpt-neox-20b, layers: 4}\ncluster: {preset: lassen, nodes: 4}\n"
                                 "plan: {tp: 8, zero_stage: 1, micro_batch: 1, global_batch: 16, recompute: full,\n"
                                 "  compression: {tensor: {codec: mpc}}}\n";
  ASSERT_EQ(run("run '" + (d / "t.yaml").string() + "' --json '" + (d / "t.json").string() + "'").code, 0);
  const auto t = nlohmann::json::parse(read(d / "t.json"))["results"][0]["compression_error"];
  ASSERT_EQ(t["streams"].size(), 1u);
  EXPECT_EQ(t["streams"][0]["stream"], "tensor");
  EXPECT_EQ(t["streams"][0]["value_rel_rms"].get<double>(), 0.0);  // MPC is lossless
  EXPECT_EQ(t["streams"][0]["simulated_ranks"], 8);
  // The sample's problems are the user's input errors: exit 2, naming the file, nothing written.
  std::ofstream(d / "bad.npy") << "not numpy at all";
  write_npy(d / "big_endian.npy", ">f4", "(4,)", floats({1, 2, 3, 4}));
  write_npy(d / "short.npy", "<f4", "(8,)", floats({1, 2, 3, 4}));
  write_npy(d / "nan.npy", "<f4", "(2,)", floats({1.0f, std::nanf("")}));
  write_npy(d / "ints.npy", "<i4", "(2,)", floats({1, 2}));
  for (const auto& [file, expect] : std::vector<std::pair<std::string, std::string>>{
           {"bad.npy", "a NumPy .npy file"},
           {"big_endian.npy", "little-endian float16, float32 or float64"},
           {"short.npy", "8 values of 4 bytes"},
           {"nan.npy", "finite float values"},
           {"ints.npy", "not '<i4'"}}) {
    const Outcome b = run("run " + scenario + " --compression-sample '" + (d / file).string() + "' --json '" +
                          (d / "b.json").string() + "'");
    EXPECT_EQ(b.code, 2) << file << ": " << b.out;
    EXPECT_NE(b.out.find(file), std::string::npos) << b.out;
    EXPECT_NE(b.out.find(expect), std::string::npos) << file << ": " << b.out;
    EXPECT_FALSE(fs::exists(d / "b.json")) << file;
  }
  // float16 samples are read too.
  write_npy(d / "half.npy", "<f2", "(4,)", std::string("\x00\x3c\x00\x40\x00\xc2\x00\x00", 8));  // 1, 2, -3, 0
  EXPECT_EQ(run("run " + scenario + " --compression-sample '" + (d / "half.npy").string() + "'").code, 0);
  // A sample for a plan that compresses nothing is a usage error.
  std::ofstream(d / "plain.yaml") << "model: {preset: gpt-neox-20b, layers: 4}\ncluster: {preset: lassen, nodes: 4}\n"
                                     "plan: {tp: 2, pp: 2, zero_stage: 1, micro_batch: 1, global_batch: 16}\n";
  const Outcome p = run("run '" + (d / "plain.yaml").string() + "' --compression-sample '" + (d / "grads.npy").string() + "'");
  EXPECT_EQ(p.code, 2) << p.out;
  EXPECT_NE(p.out.find("compresses nothing"), std::string::npos) << p.out;
  fs::remove_all(d);
}
